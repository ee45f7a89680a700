// Wake latency of zulip-mcpl: from a message posted in a simulated realm to `channels/incoming`
// reaching the host, against a bare long-poll client (GET /events on a registered queue) in the
// same run. Prints both medians and their ratio. `BENCH_ROUNDS` sets the measured rounds (default 60).

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ZulipClient } from '@zmcp/core';
import { McplHost } from '@zmcp/mcpl';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { createZulipMcpl, parseConfig } from '../src/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 60);
const WARMUP = 5;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

/** Spins the event loop (no timers) until a queue of `userId` matching `which` is blocked in a poll. */
async function polling(sim: ZulipSim, userId: number, which: (narrowed: boolean) => boolean): Promise<void> {
  const ready = () => sim.queues(userId).some((q) => q.polling && which(q.narrow.length > 0));
  while (!ready()) await new Promise((resolve) => setImmediate(resolve));
}

async function main(): Promise<void> {
  const sim = await startZulipSim({ rateLimit: false });
  const bot = sim.realm.addUser({
    fullName: 'Bench Bot',
    email: 'bench-bot@example.test',
    isBot: true,
  }).userId;
  const ann = sim.realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' }).userId;
  sim.realm.addStream({ name: 'general', subscribers: [ann, bot] });
  // The baseline's stream: the bot is not subscribed, so only the bare queue (narrowed to it) hears it.
  sim.realm.addStream({ name: 'bare', subscribers: [ann] });
  const post = (stream: string, content: string) =>
    sim.realm.sendMessage({ senderId: ann, type: 'stream', stream, topic: 'bench', content });

  const stateDir = await mkdtemp(join(tmpdir(), 'zulip-mcpl-bench-'));
  const creds = sim.credentials(bot);
  const config = parseConfig(
    {
      HOME: stateDir,
      ZULIP_SITE: creds.site,
      ZULIP_EMAIL: creds.email,
      ZULIP_API_KEY: creds.apiKey,
      ZULIP_STATE_DIR: stateDir,
      AGENT_TIMEZONE: 'UTC',
    },
    [],
  );
  const app = await createZulipMcpl({ config });
  const [hostSide, serverSide] = InMemoryTransport.createLinkedPair();
  const served = app.serve(serverSide);
  const host = await McplHost.connect(hostSide, { name: 'bench-host', version: '1' });
  const session = await served;
  await host.setPolicy({ effectiveCapabilities: ['tools', 'pushEvents', 'channels.*'] });
  await app.connection(session)?.started;
  await host.openChannel({ channelId: 'zulip:general' });
  // The moment the host has the message: taken as it arrives, before the host answers.
  let waitingFor = '';
  let arrivedAt = 0;
  let arrived: (() => void) | undefined;
  host.on('incoming', (messages) => {
    if (!messages.some((m) => m.messageId === waitingFor)) return;
    arrivedAt = performance.now();
    arrived?.();
  });

  const bare = new ZulipClient(creds);
  const registration = await bare.register({ eventTypes: ['message'], narrow: [['channel', 'bare']] });
  let lastEventId = registration.last_event_id;

  const mcplTimes: number[] = [];
  const bareTimes: number[] = [];
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    const measured = round >= WARMUP;

    const poll = bare.getEvents({ queueId: registration.queue_id, lastEventId }, { timeoutMs: 60_000 });
    await polling(sim, bot, (narrowed) => narrowed);
    const bareStart = performance.now();
    post('bare', `bare ${round}`);
    const events = await poll;
    const bareEnd = performance.now();
    for (const e of events.events) lastEventId = Math.max(lastEventId, e.id);
    if (measured) bareTimes.push(bareEnd - bareStart);

    await polling(sim, bot, (narrowed) => !narrowed);
    const heard = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const start = performance.now();
    waitingFor = String(post('general', `mcpl ${round}`));
    await heard;
    if (measured) mcplTimes.push(arrivedAt - start);
    // The host's answer is read and the watermark moves outside the timing.
    await app.connection(session)?.sink.settled('zulip:general');
  }

  const bareMedian = median(bareTimes);
  const mcplMedian = median(mcplTimes);
  const lines = [
    `zulip-mcpl wake latency over ${ROUNDS} rounds (${WARMUP} warm-up rounds each side), zulip-sim on loopback, host in process`,
    `  bare long-poll (GET /events)         median ${bareMedian.toFixed(3)} ms   p90 ${quantile(bareTimes, 0.9).toFixed(3)} ms`,
    `  zulip-mcpl to channels/incoming      median ${mcplMedian.toFixed(3)} ms   p90 ${quantile(mcplTimes, 0.9).toFixed(3)} ms`,
    `  ratio zulip-mcpl / bare              ${(mcplMedian / bareMedian).toFixed(2)} (target <= 1.5)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);

  await bare.deleteQueue(registration.queue_id).catch(() => undefined);
  await bare.close();
  await host.close();
  await app.close();
  await sim.close();
  await rm(stateDir, { recursive: true, force: true });
}

await main();
