// Benchmarks of @zmcp/delivery. Every figure is printed with a baseline measured in the same run
// and their ratio. Run: pnpm --filter @zmcp/delivery bench
//   1. delivery throughput: messages through routing, tags and formatting to a null sink;
//   2. catch-up: Zulip requests of the start-up sweep for C channels x M messages;
//   3. memory: RSS after 1M deliveries vs after 10k;
//   4. a long randomized fault schedule (FAULT_SEED, FAULT_MESSAGES to change it).
// BENCH_RSS_MESSAGES shortens the memory run (default 1,000,000); FAULT_DEBUG=1 shows the
// engine's log of each run of the fault schedule on stderr.
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { AccessPolicy, createMessageLineFormatter, EventQueue, type Message, ZulipClient } from '@zmcp/core';
import { startZulipSim } from '@zmcp/zulip-sim';
import {
  DeliveryEngine,
  type DeliverySink,
  FileStateStore,
  MemoryFiltersPlane,
  MemoryStateStore,
} from '../src/index.js';
import { runFaultSchedule } from './fault/schedule.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function report(
  name: string,
  value: string,
  baselineName: string,
  baseline: string,
  ratio: number,
  target: string,
) {
  console.log(`${name}: ${value}`);
  console.log(`  baseline (${baselineName}): ${baseline}`);
  console.log(`  ratio: ${ratio.toFixed(3)}   target: ${target}`);
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** Resolves waiters as a count grows. */
class Counter {
  value = 0;
  readonly #waiters: { n: number; resolve: () => void }[] = [];
  add(n: number): void {
    this.value += n;
    for (let i = this.#waiters.length - 1; i >= 0; i--) {
      const w = this.#waiters[i] as { n: number; resolve: () => void };
      if (this.value >= w.n) {
        this.#waiters.splice(i, 1);
        w.resolve();
      }
    }
  }
  until(n: number): Promise<void> {
    if (this.value >= n) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ n, resolve }));
  }
}

// ---------------------------------------------------------------- the realm in its own process

const simChild: ChildProcess = fork(fileURLToPath(new URL('./sim-child.ts', import.meta.url)), [], {
  execArgv: ['--import', 'tsx', '--conditions', '@zmcp/source'],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
function nextFromSim<T>(type: string): Promise<T> {
  return new Promise((resolve) => {
    const on = (raw: unknown) => {
      if ((raw as { t: string }).t === type) {
        simChild.off('message', on);
        resolve(raw as T);
      }
    };
    simChild.on('message', on);
  });
}
await nextFromSim('up');
const STREAMS = 10;
const setup = nextFromSim<{
  credentials: { site: string; email: string; apiKey: string };
  streams: string[];
}>('ready');
simChild.send({ t: 'setup', streams: STREAMS });
const { credentials, streams } = await setup;

/** Sends `total` messages in chunks, keeping at most two chunks ahead of what was delivered. */
async function drive(total: number, delivered: Counter): Promise<{ wallMs: number; cpuMs: number }> {
  const CHUNK = 1_000;
  const base = delivered.value;
  let requested = 0;
  const started = performance.now();
  const cpu = process.cpuUsage();
  while (requested < total) {
    await delivered.until(base + Math.max(0, requested - CHUNK));
    const n = Math.min(CHUNK, total - requested);
    requested += n;
    const sent = nextFromSim('sent');
    simChild.send({ t: 'send', count: n });
    await sent;
  }
  await delivered.until(base + total);
  const used = process.cpuUsage(cpu);
  return { wallMs: performance.now() - started, cpuMs: (used.user + used.system) / 1000 };
}

const client = new ZulipClient({ ...credentials, timeoutMs: 60_000 });
const policy = new AccessPolicy({ readOnly: false });

// ---------------------------------------------------------------- 1. throughput

const THROUGHPUT_MESSAGES = 100_000;

// Baseline A: the bare formatter over messages shaped like the realm's.
{
  const messages: Message[] = Array.from({ length: 10_000 }, (_, i) => ({
    id: 1_000 + i,
    type: 'stream',
    sender_id: 9,
    sender_email: 'ann@zulip.example',
    sender_full_name: 'Ann Lee',
    display_recipient: streams[i % STREAMS] as string,
    stream_id: 1 + (i % STREAMS),
    subject: `topic ${i % 7}`,
    content: `Message ${i}: **bold**, a [link](https://example.com/${i}) and \`code\`.`,
    timestamp: 1_780_000_000 + i,
    flags: [],
  }));
  const line = createMessageLineFormatter({ escape: true, selfUserId: 8 });
  let chars = 0;
  const t0 = performance.now();
  for (let round = 0; round < 10; round++) for (const m of messages) chars += line(m).length;
  const formatterRate = (messages.length * 10) / ((performance.now() - t0) / 1000);
  if (chars === 0) throw new Error('the formatter produced nothing');

  // The engine: routing, watermarks (file store), tags and message lines, to a sink that accepts all.
  const dir = await mkdtemp(join(tmpdir(), 'zmcp-delivery-bench-'));
  const delivered = new Counter();
  const nullSink: DeliverySink = {
    incoming: async (batch) => {
      delivered.add(batch.items.length);
      return { kind: 'answered', accepted: batch.items.map((i) => i.id) };
    },
    push: async () => ({ kind: 'answered', accepted: true }),
  };
  const engine = new DeliveryEngine({
    client,
    policy,
    store: new FileStateStore({ dir }),
    session: 'bench',
    filters: new MemoryFiltersPlane({}),
    sink: nullSink,
    recentDms: 0,
  });
  await engine.start({ open: streams.map((s) => `zulip:${s}`) });

  // RSS is measured with the pipeline drained, after a full collection.
  const RSS_SMALL = 10_000;
  const RSS_LARGE = Math.max(
    RSS_SMALL + THROUGHPUT_MESSAGES,
    Number(process.env.BENCH_RSS_MESSAGES ?? 1_000_000),
  );
  const memory = () => {
    gc();
    gc();
    return process.memoryUsage();
  };
  await drive(RSS_SMALL, delivered);
  const small = memory();
  const engineRun = await drive(THROUGHPUT_MESSAGES, delivered);
  await drive(RSS_LARGE - RSS_SMALL - THROUGHPUT_MESSAGES, delivered);
  const large = memory();
  await engine.close();
  await rm(dir, { recursive: true, force: true });

  // Baseline B: a bare event-queue consumer of the same realm, same pacing, doing nothing.
  const queue = await EventQueue.open(client, { eventTypes: ['message'], applyMarkdown: false });
  const bare = new Counter();
  const consuming = (async () => {
    while (true) {
      const batch = await queue.nextBatch();
      if (batch === undefined) return;
      bare.add(batch.filter((i) => i.kind === 'event' && i.event.type === 'message').length);
    }
  })();
  const bareRun = await drive(THROUGHPUT_MESSAGES, bare);
  await queue.close();
  await consuming;

  const rate = (ms: number) => THROUGHPUT_MESSAGES / (ms / 1000);
  // The realm runs in its own process and paces the feed, so the wall-clock rate is the feed's;
  // what one core of the engine's process carries is messages per CPU-second of that process.
  report(
    `delivery throughput on one core (${fmt(THROUGHPUT_MESSAGES)} messages, ${STREAMS} open channels, file store, null sink), per CPU-second of the engine's process`,
    `${fmt(rate(engineRun.cpuMs))} msgs/s (wall clock ${fmt(rate(engineRun.wallMs))} msgs/s, bounded by the realm's feed)`,
    'bare EventQueue consumer of the same feed, per CPU-second',
    `${fmt(rate(bareRun.cpuMs))} msgs/s (wall clock ${fmt(rate(bareRun.wallMs))} msgs/s)`,
    rate(engineRun.cpuMs) / rate(bareRun.cpuMs),
    '>= 20,000 msgs/s',
  );
  console.log(
    `  vs the bare formatter alone (${fmt(formatterRate)} lines/s): ${(rate(engineRun.cpuMs) / formatterRate).toFixed(3)}`,
  );
  report(
    `RSS after ${fmt(RSS_LARGE)} deliveries`,
    `${mib(large.rss)} (JS heap ${mib(large.heapUsed)}, external ${mib(large.external)})`,
    `RSS after the first ${fmt(RSS_SMALL)}`,
    `${mib(small.rss)} (JS heap ${mib(small.heapUsed)}, external ${mib(small.external)})`,
    large.rss / small.rss,
    '<= 1.10',
  );
}
await client.close();
simChild.send({ t: 'stop' });

// ---------------------------------------------------------------- 2. catch-up requests

{
  const CHANNELS = 20;
  const PER_CHANNEL = 1_500;
  const OPEN = 10;
  const sim = await startZulipSim({ rateLimit: false, requestLogSize: 0 });
  const bot = sim.realm.addUser({
    fullName: 'Bench Bot',
    email: 'bench-bot@zulip.example',
    isBot: true,
  }).userId;
  const ann = sim.realm.addUser({ fullName: 'Ann Lee', email: 'ann@zulip.example' }).userId;
  const names = Array.from({ length: CHANNELS }, (_, i) => `c${i}`);
  for (const name of names) sim.realm.addStream({ name, subscribers: [bot, ann] });
  const c = new ZulipClient(sim.credentials(bot));
  const store = new MemoryStateStore();
  const options = {
    client: c,
    policy,
    store,
    session: 'catchup',
    filters: new MemoryFiltersPlane({}),
    sink: {
      incoming: async () => ({ kind: 'answered' as const, accepted: [] }),
      push: async () => ({ kind: 'answered' as const, accepted: true }),
    },
    recentDms: 0,
  };
  const first = new DeliveryEngine(options);
  await first.start({ open: names.slice(0, OPEN).map((n) => `zulip:${n}`) });
  await first.close();
  for (let i = 0; i < PER_CHANNEL; i++) {
    for (const name of names) {
      sim.realm.sendMessage({
        senderId: ann,
        type: 'stream',
        stream: name,
        topic: 't',
        content: i % 50 === 0 ? `@**Bench Bot** ${i}` : `m${i}`,
      });
    }
  }
  let reads = 0;
  let all = 0;
  const off = sim.onRequest((r) => {
    all += 1;
    if (r.method === 'GET' && r.path.endsWith('/messages')) reads += 1;
  });
  const second = new DeliveryEngine(options);
  const t0 = performance.now();
  const started = await second.start();
  const ms = performance.now() - t0;
  off();
  const total = CHANNELS * PER_CHANNEL;
  const target = Math.ceil(total / 5_000) + OPEN;
  report(
    `catch-up: history requests for ${CHANNELS} channels x ${fmt(PER_CHANNEL)} messages (${OPEN} open), ${started.missedBlocks.length} <missed> blocks, ${Math.round(ms)} ms`,
    `${reads} GET /messages (${all} requests during start in all)`,
    'ceil(total / 5000) + open channels',
    `${target}`,
    reads / target,
    '<= 1.0',
  );
  await second.close();
  await c.close();
  await sim.close();
}

// ---------------------------------------------------------------- 4. a long fault schedule

{
  const seed =
    process.env.FAULT_SEED === undefined
      ? Math.floor(Math.random() * 2 ** 31)
      : Number(process.env.FAULT_SEED);
  const messages = Number(process.env.FAULT_MESSAGES ?? 3_000);
  const r = await runFaultSchedule({
    seed,
    messages,
    kills: 12,
    expiries: 8,
    restarts: 4,
    deadlineMs: 900_000,
  });
  console.log(
    `fault schedule FAULT_SEED=${seed}: ${fmt(r.sent)} sent, ${fmt(r.expected)} expected, ${fmt(r.accepted)} accepted once in order; ` +
      `${r.kills} kills (${r.killsMidWrite} mid-write) over ${r.epochs} runs, ${r.offers} offers: ${r.refusals} refused, ${r.losses} lost, ${r.timeouts} timed out, ${r.partials} partly accepted; ` +
      `${r.redeliveredAfterKill} redelivered after a kill (accepted, not yet on disk); ${Math.round(r.durationMs / 1000)} s`,
  );
  if (r.violations.length > 0) {
    console.log(`  VIOLATIONS (FAULT_SEED=${seed}):`);
    for (const v of r.violations) console.log(`  - ${v}`);
    process.exitCode = 1;
  } else {
    console.log('  no violations');
  }
}
