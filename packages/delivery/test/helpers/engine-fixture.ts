import { AccessPolicy, ZulipClient } from '@zmcp/core';
import {
  type ChannelAnnouncement,
  DeliveryEngine,
  type DeliveryEngineOptions,
  type DeliveryItem,
  type DeliverySink,
  type FiltersDocument,
  type IncomingBatch,
  type IncomingOutcome,
  MemoryFiltersPlane,
  MemoryStateStore,
  type PushEvent,
  type PushOutcome,
  type StateKey,
} from '@zmcp/delivery';
import { startZulipSim, type ZulipSim, type ZulipSimOptions } from '@zmcp/zulip-sim';
import type { DeliveryState } from '../../src/delivery-state.js';

/** What the test sink answers to one call; `hang` never answers (the engine's timeout fires). */
export type Answer<T> = T | 'hang' | 'throw';

/** A sink that records every call and answers as the test says (accept everything by default). */
export class TestSink implements DeliverySink {
  readonly batches: IncomingBatch[] = [];
  readonly pushes: PushEvent[] = [];
  readonly announcements: ChannelAnnouncement[] = [];
  /** Items the sink accepted, in the order it accepted them. */
  readonly accepted: DeliveryItem[] = [];
  /** Push events the sink accepted. */
  readonly acceptedPushes: PushEvent[] = [];
  /** Every accepted message id, incoming or pushed (blocks included), in the order accepted. */
  readonly sequence: number[] = [];
  onIncoming: (batch: IncomingBatch) => Answer<IncomingOutcome> = (b) => ({
    kind: 'answered',
    accepted: b.items.map((i) => i.id),
  });
  onPush: (event: PushEvent) => Answer<PushOutcome> = () => ({ kind: 'answered', accepted: true });
  onAnnounce:
    | ((
        change: ChannelAnnouncement,
      ) => Answer<{ kind: 'answered'; results: { id: string; accepted: boolean }[] }>)
    | undefined;
  readonly #waiters: (() => void)[] = [];

  async incoming(batch: IncomingBatch, signal: AbortSignal): Promise<IncomingOutcome> {
    this.batches.push(batch);
    const answer = this.onIncoming(batch);
    const outcome = await this.#settle(answer, signal);
    if (outcome.kind === 'answered') {
      const ok = new Set(outcome.accepted);
      for (const item of batch.items) {
        if (!ok.has(item.id)) continue;
        this.accepted.push(item);
        if (item.kind === 'message') this.sequence.push(item.messageId);
      }
    }
    this.#notify();
    return outcome;
  }

  async push(event: PushEvent, signal: AbortSignal): Promise<PushOutcome> {
    this.pushes.push(event);
    const outcome = await this.#settle(this.onPush(event), signal);
    if (outcome.kind === 'answered' && outcome.accepted) {
      this.acceptedPushes.push(event);
      for (const item of event.items) if (item.kind === 'message') this.sequence.push(item.messageId);
    }
    this.#notify();
    return outcome;
  }

  get announce() {
    const handler = this.onAnnounce;
    if (handler === undefined) return undefined;
    return async (change: ChannelAnnouncement, signal: AbortSignal) => {
      this.announcements.push(change);
      const outcome = await this.#settle(handler(change), signal);
      this.#notify();
      return outcome;
    };
  }

  /** Resolves once `check` holds (checked after every call the sink answers). */
  until(check: () => boolean): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve) => {
      const test = () => {
        if (check()) resolve();
        else this.#waiters.push(test);
      };
      this.#waiters.push(test);
    });
  }

  /** Message ids accepted on a channel (incoming items and pushed messages), in order. */
  acceptedIds(channelId: string): number[] {
    return this.accepted
      .filter((i) => i.channelId === channelId && i.kind === 'message')
      .map((i) => i.messageId);
  }

  #notify(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  async #settle<T>(answer: Answer<T>, signal: AbortSignal): Promise<T> {
    if (answer === 'throw') throw new Error('the transport broke');
    if (answer === 'hang') {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      throw new Error('aborted');
    }
    return answer;
  }
}

/** A memory store that reports every write, so a test can wait for a state to be written. */
export class RecordingStore extends MemoryStateStore {
  readonly #waiters: (() => void)[] = [];
  latest: DeliveryState | undefined;

  override async write<T>(key: StateKey, value: T): Promise<void> {
    await super.write(key, value);
    if (key.kind === 'delivery') this.latest = value as DeliveryState;
    for (const w of this.#waiters.splice(0)) w();
  }

  /** Resolves with the delivery state once a written one satisfies `check`. */
  until(check: (state: DeliveryState) => boolean): Promise<DeliveryState> {
    return new Promise((resolve) => {
      const test = () => {
        if (this.latest !== undefined && check(this.latest)) resolve(this.latest);
        else this.#waiters.push(test);
      };
      test();
    });
  }
}

export interface Fixture {
  sim: ZulipSim;
  bot: number;
  ann: number;
  bo: number;
  general: number;
  random: number;
  secret: number;
  client: ZulipClient;
  store: RecordingStore;
  filters: MemoryFiltersPlane;
  sink: TestSink;
  engine(options?: Partial<DeliveryEngineOptions>): DeliveryEngine;
  send(
    stream: 'general' | 'random' | 'secret',
    content: string,
    options?: { topic?: string; sender?: number },
  ): number;
  dm(from: number, content: string): number;
  close(): Promise<void>;
}

const fixtures: Fixture[] = [];

/** A realm with a bot, two people, public streams `general` and `random`, and a private `secret`. */
export async function startFixture(
  options: {
    sim?: ZulipSimOptions;
    filters?: FiltersDocument;
    baseline?: string[];
    store?: RecordingStore;
  } = {},
): Promise<Fixture> {
  const sim = await startZulipSim({ rateLimit: false, ...options.sim });
  const bot = sim.realm.addUser({
    fullName: 'Helper Bot',
    email: 'helper-bot@zulip.example',
    isBot: true,
  }).userId;
  const ann = sim.realm.addUser({ fullName: 'Ann Lee', email: 'ann@zulip.example' }).userId;
  const bo = sim.realm.addUser({ fullName: 'Bo', email: 'bo@zulip.example' }).userId;
  const general = sim.realm.addStream({ name: 'general', subscribers: [bot, ann, bo] }).streamId;
  const random = sim.realm.addStream({ name: 'random', subscribers: [bot, ann, bo] }).streamId;
  const secret = sim.realm.addStream({ name: 'secret', inviteOnly: true, subscribers: [bot, ann] }).streamId;
  const client = new ZulipClient({ ...sim.credentials(bot), retry: { baseDelayMs: 5, maxDelayMs: 50 } });
  const store = options.store ?? new RecordingStore();
  const filters = new MemoryFiltersPlane(options.filters ?? {}, options.baseline ?? []);
  const sink = new TestSink();
  const engines: DeliveryEngine[] = [];
  const fixture: Fixture = {
    sim,
    bot,
    ann,
    bo,
    general,
    random,
    secret,
    client,
    store,
    filters,
    sink,
    engine(extra = {}) {
      const engine = new DeliveryEngine({
        client,
        policy: new AccessPolicy({ readOnly: false, privateStreams: '__ALL__' }),
        store,
        session: 'agent',
        filters,
        sink,
        offerTimeoutMs: 2_000,
        stateWriteGapMs: 0,
        retry: { initialMs: 5, maxMs: 50 },
        queue: { backoff: { initialMs: 5, maxMs: 50 } },
        ...extra,
      });
      engines.push(engine);
      return engine;
    },
    send(stream, content, opts = {}) {
      return sim.realm.sendMessage({
        senderId: opts.sender ?? ann,
        type: 'stream',
        stream,
        topic: opts.topic ?? 'deploys',
        content,
      });
    },
    dm(from, content) {
      return sim.realm.sendMessage({ senderId: from, type: 'direct', to: [bot], content });
    },
    async close() {
      for (const e of engines.splice(0)) await e.close().catch(() => undefined);
      await client.close();
      await sim.close();
    },
  };
  fixtures.push(fixture);
  return fixture;
}

/** Closes every fixture started by the test (call from afterEach). */
export async function closeFixtures(): Promise<void> {
  for (const f of fixtures.splice(0)) await f.close();
}
