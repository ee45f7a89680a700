// What the wake-latency benches share (zulip-mcpl's channels/incoming, zulip-mcp's Claude Code
// channel events, the listen tool): the realm, the bare long-poll baseline, the alternating loop
// and the figures. Each bench supplies only how its own side hears a message, and hands in the
// simulator and a Zulip client (this folder depends on no workspace package; the types below are
// what the helpers use of them).

/** A queue as the simulator reports it. */
interface SimQueue {
  readonly polling: boolean;
  readonly narrow: readonly (readonly unknown[])[];
}

/** What these helpers use of a started `@zmcp/zulip-sim`. */
export interface WakeSim {
  readonly realm: {
    addUser(user: { fullName: string; email: string; isBot?: boolean }): { userId: number };
    addStream(stream: { name: string; subscribers: number[] }): unknown;
    sendMessage(message: {
      senderId: number;
      type: 'stream';
      stream: string;
      topic: string;
      content: string;
    }): number;
  };
  queues(userId: number): readonly SimQueue[];
}

/** What the baseline uses of `@zmcp/core`'s `ZulipClient`. */
export interface BareClient {
  register(options: { eventTypes: string[]; narrow: [string, string][] }): Promise<{
    queue_id: string;
    last_event_id: number;
  }>;
  getEvents(
    options: { queueId: string; lastEventId: number },
    call: { timeoutMs: number },
  ): Promise<{ events: readonly { id: number }[] }>;
  deleteQueue(queueId: string): Promise<unknown>;
  close(): Promise<void>;
}

/** The middle of `values` (the mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The `q` quantile of `values` (nearest rank). */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

/** Spins the event loop (no timers) until a queue of `userId` that `which` picks is blocked in a poll. */
export async function untilPolling(
  sim: WakeSim,
  userId: number,
  which: (queue: SimQueue) => boolean,
): Promise<void> {
  const ready = () => sim.queues(userId).some((q) => q.polling && which(q));
  while (!ready()) await new Promise((resolve) => setImmediate(resolve));
}

/** The realm of the channel benches: a bot and Ann in #general, and #bare, which only the baseline hears. */
export interface WakeRealm<S extends WakeSim = WakeSim> {
  sim: S;
  bot: number;
  ann: number;
  /** Ann posts to `stream` under topic `bench`; returns the message id. */
  post(stream: string, content: string): number;
}

/** Seeds a simulator started by the bench (`startZulipSim({ rateLimit: false })`). */
export function wakeRealm<S extends WakeSim>(sim: S): WakeRealm<S> {
  const bot = sim.realm.addUser({
    fullName: 'Bench Bot',
    email: 'bench-bot@example.test',
    isBot: true,
  }).userId;
  const ann = sim.realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' }).userId;
  sim.realm.addStream({ name: 'general', subscribers: [ann, bot] });
  // The baseline's stream: the bot is not subscribed, so only the bare queue (narrowed to it) hears it.
  sim.realm.addStream({ name: 'bare', subscribers: [ann] });
  return {
    sim,
    bot,
    ann,
    post: (stream, content) =>
      sim.realm.sendMessage({ senderId: ann, type: 'stream', stream, topic: 'bench', content }),
  };
}

/**
 * Times a message from its post to the moment the measured side hears it: the side's listener
 * calls `heard(id)` with each message id it receives, and `time(post)` posts (`post` returns the
 * message id) and resolves with the milliseconds between.
 */
export function arrivalClock(): { heard(id: string): void; time(post: () => number): Promise<number> } {
  let waitingFor = '';
  let arrivedAt = 0;
  let arrived: (() => void) | undefined;
  return {
    heard(id) {
      if (id !== waitingFor) return;
      arrivedAt = performance.now();
      arrived?.();
    },
    async time(post) {
      const heard = new Promise<void>((resolve) => {
        arrived = resolve;
      });
      const start = performance.now();
      waitingFor = String(post());
      await heard;
      return arrivedAt - start;
    },
  };
}

/**
 * Runs `warmup + rounds` rounds, each a bare long poll on #bare (posted once the poll blocks,
 * timed to its answer) and then one round of the measured side: `measured(round)` is called
 * once the product's own queue (the un-narrowed one) blocks in a poll, posts, and resolves with
 * the milliseconds from its post to its arrival. Warm-up rounds are left out of both lists.
 */
export async function alternateWithBare(
  realm: WakeRealm,
  options: {
    /** A Zulip client of the bot, for the baseline's own queue; closed at the end. */
    bare: BareClient;
    rounds: number;
    warmup: number;
    measured: (round: number) => Promise<number>;
  },
): Promise<{ bare: number[]; measured: number[] }> {
  const { sim, bot, post } = realm;
  const { bare } = options;
  const registration = await bare.register({ eventTypes: ['message'], narrow: [['channel', 'bare']] });
  let lastEventId = registration.last_event_id;
  const bareTimes: number[] = [];
  const measuredTimes: number[] = [];
  try {
    for (let round = 0; round < options.warmup + options.rounds; round++) {
      const counted = round >= options.warmup;
      const poll = bare.getEvents({ queueId: registration.queue_id, lastEventId }, { timeoutMs: 60_000 });
      await untilPolling(sim, bot, (q) => q.narrow.length > 0);
      const start = performance.now();
      post('bare', `bare ${round}`);
      const events = await poll;
      const end = performance.now();
      for (const e of events.events) lastEventId = Math.max(lastEventId, e.id);
      if (counted) bareTimes.push(end - start);

      await untilPolling(sim, bot, (q) => q.narrow.length === 0);
      const ms = await options.measured(round);
      if (counted) measuredTimes.push(ms);
    }
  } finally {
    await bare.deleteQueue(registration.queue_id).catch(() => undefined);
    await bare.close();
  }
  return { bare: bareTimes, measured: measuredTimes };
}

/** The bench's report: both medians and p90s, and their ratio against the target. */
export function wakeReport(
  title: string,
  labels: { bare: string; measured: string; ratio: string },
  times: { bare: readonly number[]; measured: readonly number[] },
  target: number,
): string {
  const width = Math.max(labels.bare.length, labels.measured.length, labels.ratio.length) + 2;
  const line = (label: string, values: readonly number[]) =>
    `  ${label.padEnd(width)} median ${median(values).toFixed(3)} ms   p90 ${quantile(values, 0.9).toFixed(3)} ms`;
  const ratio = median(times.measured) / median(times.bare);
  return [
    title,
    line(labels.bare, times.bare),
    line(labels.measured, times.measured),
    `  ${labels.ratio.padEnd(width)} ${ratio.toFixed(2)} (target <= ${target}) ${ratio <= target ? 'PASS' : 'FAIL'}`,
    '',
  ].join('\n');
}
