// Benchmarks of @zmcp/fleet: the state on PostgreSQL against the same work on files, measured in
// one run, each figure with its baseline, their ratio and a PASS/FAIL verdict against its target.
// Run: pnpm --filter @zmcp/fleet bench
//   1. state-store updates (read, change, validate, write, serialized per key): one key in a
//      row, then 8 keys at once;
//   2. delivery throughput: 100,000 messages on 10 open channels through the DeliveryEngine to a
//      null sink, the watermarks written to PostgreSQL vs files, with the engine's default write
//      spacing (100 ms) and with none (every acceptance written as soon as the last write ends);
//      then on PostgreSQL with the events read from the bot's shared event queue (the fleet's
//      path: one owner polls Zulip and logs, the engine reads the log) against files;
//   3. catch-up: an engine stopped while 5,000 messages arrive, started again: time until all are
//      delivered and the history requests it made, PostgreSQL (shared queue) vs files;
//   4. failover: two engine processes on one session, the delivering one killed (SIGKILL): time to
//      the next delivery by the standby (PostgreSQL), against a new process started after the
//      kill on files (what one machine does).
// PostgreSQL is a throwaway cluster started here with production durability (fsync on), unless
// ZMCP_BENCH_PG_URL names a server. BENCH_MESSAGES and BENCH_UPDATES change the sizes.
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AccessPolicy, ZulipClient } from '@zmcp/core';
import {
  DeliveryEngine,
  type DeliverySink,
  MemoryFiltersPlane,
  type StateStore,
  stateAccount,
} from '@zmcp/delivery';
import { z } from 'zod';
import { startPostgresCluster } from '../../../test/support/postgres-cluster.js';
import { openStateBackend, type StateBackend } from '../src/index.js';

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const verdicts: boolean[] = [];

function report(
  name: string,
  value: string,
  baselineName: string,
  baseline: string,
  ratio: number,
  target: string,
  pass: boolean,
) {
  verdicts.push(pass);
  console.log(`${name}: ${value}`);
  console.log(`  baseline (${baselineName}): ${baseline}`);
  console.log(`  ratio: ${ratio.toFixed(3)}   target: ${target}   ${pass ? 'PASS' : 'FAIL'}`);
}

const external = process.env.ZMCP_BENCH_PG_URL;
const cluster = external ? undefined : await startPostgresCluster({ durable: true });
const url = external ?? (cluster?.url as string);
console.log(
  `PostgreSQL: ${cluster?.version ?? 'external server'}${cluster ? ' (throwaway cluster, fsync on)' : ''}`,
);
const schema = `bench_${process.pid}_${Date.now().toString(36)}`;
const dir = await mkdtemp(join(tmpdir(), 'zmcp-fleet-bench-'));
const pgBackend = await openStateBackend({ url, schema });
const fileBackend = await openStateBackend({ dir });

// ---------------------------------------------------------------- 1. state-store updates

const Counter = z.object({ count: z.number().int(), by: z.string() });
const UPDATES = Number(process.env.BENCH_UPDATES ?? 2_000);

async function updates(backend: StateBackend, keys: number): Promise<number> {
  const per = Math.ceil(UPDATES / keys);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: keys }, async (_, k) => {
      const key = { session: `bench-${keys}-${k}`, kind: 'monitor' } as const;
      for (let i = 0; i < per; i++) {
        await backend.store.update(key, Counter, (prev) => ({ count: (prev?.count ?? 0) + 1, by: 'bench' }));
      }
    }),
  );
  return (per * keys) / ((performance.now() - t0) / 1000);
}

for (const keys of [1, 8]) {
  const files = await updates(fileBackend, keys);
  const postgres = await updates(pgBackend, keys);
  report(
    `state-store updates, ${keys === 1 ? 'one key in a row' : `${keys} keys at once`} (${fmt(UPDATES)} updates), PostgreSQL`,
    `${fmt(postgres)} updates/s`,
    'the file store, same work (temp file, fsync, rename, directory fsync)',
    `${fmt(files)} updates/s`,
    postgres / files,
    '>= 0.5 (within 2x of the file store: both make one durable write per update)',
    postgres / files >= 0.5,
  );
}

// ---------------------------------------------------------------- 2. delivery throughput

/** Resolves waiters as a count grows. */
class Counted {
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
const ready = nextFromSim<{
  credentials: { site: string; email: string; apiKey: string };
  streams: string[];
}>('ready');
simChild.send({ t: 'setup', streams: STREAMS });
const { credentials, streams } = await ready;
const client = new ZulipClient({ ...credentials, timeoutMs: 60_000 });
const account = stateAccount({ site: client.site, userId: (await client.getOwnUser()).user_id });
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 100_000);

/** Sends `total` messages in chunks, keeping at most two chunks ahead of what was delivered. */
async function drive(total: number, delivered: Counted): Promise<{ wallMs: number; cpuMs: number }> {
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

interface Run {
  rate: number;
  cpuRate: number;
  writes: number;
}

async function delivery(backend: StateBackend, gapMs: number, session: string, shared = false): Promise<Run> {
  const delivered = new Counted();
  let writes = 0;
  // Counts the watermark writes the engine makes (each one transaction on PostgreSQL).
  const inner = backend.store;
  const store: StateStore = {
    read: (key, schema) => inner.read(key, schema),
    write: (key, value) => {
      writes += 1;
      return inner.write(key, value);
    },
    update: (key, schema, fn) => inner.update(key, schema, fn),
    delete: (key) => inner.delete(key),
    lock: (key) => inner.lock(key),
  };
  const sink: DeliverySink = {
    incoming: async (batch) => {
      delivered.add(batch.items.length);
      return { kind: 'answered', accepted: batch.items.map((i) => i.id) };
    },
    push: async () => ({ kind: 'answered', accepted: true }),
  };
  const engine = new DeliveryEngine({
    client,
    policy: new AccessPolicy({ readOnly: false }),
    store,
    session,
    filters: new MemoryFiltersPlane({}),
    sink,
    recentDms: 0,
    stateWriteGapMs: gapMs,
    events: shared ? backend.events?.source(client, account) : undefined,
  });
  await engine.start({ open: streams.map((s) => `zulip:${s}`) });
  await drive(2_000, delivered); // warm-up
  const before = writes;
  const run = await drive(MESSAGES, delivered);
  await engine.flush();
  const made = writes - before;
  await engine.close();
  return { rate: MESSAGES / (run.wallMs / 1000), cpuRate: MESSAGES / (run.cpuMs / 1000), writes: made };
}

for (const gapMs of [100, 0]) {
  const files = await delivery(fileBackend, gapMs, `files-${gapMs}`);
  const postgres = await delivery(pgBackend, gapMs, `postgres-${gapMs}`);
  const spacing =
    gapMs === 0 ? 'watermarks written back to back' : `the engine's default write spacing (${gapMs} ms)`;
  report(
    `delivery throughput on PostgreSQL (${fmt(MESSAGES)} messages, ${STREAMS} open channels, null sink, ${spacing})`,
    `${fmt(postgres.rate)} msgs/s wall clock (${fmt(postgres.cpuRate)} per CPU-second of the engine's process), ${fmt(postgres.writes)} watermark writes, ${fmt(MESSAGES / Math.max(1, postgres.writes))} messages a write`,
    'the file store, same feed',
    `${fmt(files.rate)} msgs/s wall clock (${fmt(files.cpuRate)} per CPU-second), ${fmt(files.writes)} writes`,
    postgres.rate / files.rate,
    '>= 5,000 msgs/s',
    postgres.rate >= 5_000,
  );
}

{
  const files = await delivery(fileBackend, 100, 'files-own-queue');
  const postgres = await delivery(pgBackend, 100, 'postgres-shared-queue', true);
  report(
    `delivery throughput on PostgreSQL through the bot's shared event queue (${fmt(MESSAGES)} messages: the owner logs every event, the engine reads the log)`,
    `${fmt(postgres.rate)} msgs/s wall clock (${fmt(postgres.cpuRate)} per CPU-second of the process), ${fmt(postgres.writes)} watermark writes`,
    'files, the engine polling its own queue',
    `${fmt(files.rate)} msgs/s wall clock (${fmt(files.cpuRate)} per CPU-second)`,
    postgres.rate / files.rate,
    '>= 5,000 msgs/s',
    postgres.rate >= 5_000,
  );
}

// ---------------------------------------------------------------- 3. catch-up

interface Counts {
  history: number;
  registers: number;
  queues: number;
}
async function counts(): Promise<Counts> {
  const answer = nextFromSim<Counts>('counts');
  simChild.send({ t: 'counts' });
  return answer;
}

const MISSED = Number(process.env.BENCH_MISSED ?? 5_000);

/** Starts an engine, stops it, sends `MISSED` messages, starts one again: how long until all are delivered, and how many history pages. */
async function catchUp(backend: StateBackend, session: string, shared: boolean) {
  const delivered = new Counted();
  const make = () =>
    new DeliveryEngine({
      client,
      policy: new AccessPolicy({ readOnly: false }),
      store: backend.store,
      session,
      filters: new MemoryFiltersPlane({}),
      sink: {
        incoming: async (batch) => {
          delivered.add(batch.items.length);
          return { kind: 'answered', accepted: batch.items.map((i) => i.id) };
        },
        // What was missed comes as one block per channel, its messages as items.
        push: async (event) => {
          if (event.kind === 'missed') delivered.add(event.items.length);
          return { kind: 'answered', accepted: true };
        },
      },
      recentDms: 0,
      catchUp: { maxMessages: 100_000, maxBytes: 100_000_000 },
      events: shared ? backend.events?.source(client, account) : undefined,
    });
  const open = streams.map((s) => `zulip:${s}`);
  const first = make();
  await first.start({ open });
  await drive(100, delivered);
  await first.close();
  const sent = nextFromSim('sent');
  simChild.send({ t: 'send', count: MISSED });
  await sent;
  const before = await counts();
  const base = delivered.value;
  const t0 = performance.now();
  const second = make();
  await second.start({ open });
  await delivered.until(base + MISSED);
  const ms = performance.now() - t0;
  const after = await counts();
  await second.close();
  return { ms, history: after.history - before.history, registers: after.registers - before.registers };
}

{
  const files = await catchUp(fileBackend, 'catch-up-files', false);
  const postgres = await catchUp(pgBackend, 'catch-up-postgres', true);
  report(
    `catch-up on PostgreSQL (shared queue) after ${fmt(MISSED)} messages missed on ${STREAMS} open channels: start until all are delivered`,
    `${fmt(postgres.ms)} ms, ${postgres.history} history requests, ${postgres.registers} queue registrations`,
    'files, the engine registering its own queue',
    `${fmt(files.ms)} ms, ${files.history} history requests, ${files.registers} queue registrations`,
    postgres.history / Math.max(1, files.history),
    'history requests <= files; time <= 2x files + 250 ms (the shared queue is kept for the next owner: what it holds comes live, through the log)',
    postgres.history <= files.history && postgres.ms <= files.ms * 2 + 250,
  );
}

await client.close();

// ---------------------------------------------------------------- 4. failover

const engineChild = fileURLToPath(new URL('./engine-child.ts', import.meta.url));
interface EngineProcess {
  child: ChildProcess;
  /** When each message was delivered. */
  delivered: Map<number, number>;
  started: Promise<void>;
  /** When `id` is (or was) delivered. */
  next(id: number): Promise<number>;
}
function startEngine(state: { url?: string; schema?: string; dir?: string }): EngineProcess {
  const child = fork(engineChild, [], {
    execArgv: ['--import', 'tsx', '--conditions', '@zmcp/source'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const delivered = new Map<number, number>();
  const waiters = new Map<number, (at: number) => void>();
  let started!: () => void;
  const startedP = new Promise<void>((resolve) => {
    started = resolve;
  });
  child.on('message', (raw) => {
    const m = raw as { t: string; ids?: number[] };
    if (m.t === 'started') started();
    const at = performance.now();
    for (const id of m.ids ?? []) {
      delivered.set(id, at);
      waiters.get(id)?.(at);
    }
  });
  child.send({ credentials, ...state, open: streams.map((s) => `zulip:${s}`) });
  return {
    child,
    delivered,
    started: startedP,
    next: (id) =>
      new Promise((resolve) => {
        const at = delivered.get(id);
        if (at !== undefined) resolve(at);
        else waiters.set(id, resolve);
      }),
  };
}
const probe = new ZulipClient({ ...credentials, timeoutMs: 10_000 });
async function newestId(): Promise<number> {
  const sent = nextFromSim<{ total: number }>('sent');
  simChild.send({ t: 'send', count: 1 });
  await sent;
  const page = await probe.getMessages({
    anchor: 'newest',
    numBefore: 1,
    numAfter: 0,
  });
  return page.messages[0]?.id ?? 0;
}
async function kill(p: EngineProcess): Promise<void> {
  const gone = new Promise((resolve) => p.child.once('exit', resolve));
  p.child.kill('SIGKILL');
  await gone;
}

/** Kills the delivering process, sends one message and times its delivery by `takeOver()`. */
async function failover(active: EngineProcess, takeOver: () => EngineProcess): Promise<number> {
  await active.started;
  await active.next(await newestId());
  const t0 = performance.now();
  await kill(active);
  const next = takeOver();
  const id = await newestId();
  const at = await next.next(id);
  await kill(next);
  return at - t0;
}

{
  const failSchema = `${schema}_failover`;
  const pgState = { url, schema: failSchema };
  const pgActive = startEngine(pgState);
  await pgActive.started;
  const standby = startEngine(pgState);
  // The standby is up and waiting for the lock (its first try failed).
  await new Promise((r) => setTimeout(r, 3_000));
  const postgres = await failover(pgActive, () => standby);
  const fileDir = await mkdtemp(join(tmpdir(), 'zmcp-fleet-failover-'));
  const files = await failover(startEngine({ dir: fileDir }), () => startEngine({ dir: fileDir }));
  await rm(fileDir, { recursive: true, force: true });
  report(
    'failover on PostgreSQL: the delivering process killed (SIGKILL) to the next message delivered by the standby (it takes the lock and resumes the shared queue)',
    `${fmt(postgres)} ms`,
    'files: a new process started after the kill (cold start, own queue)',
    `${fmt(files)} ms`,
    postgres / files,
    '<= 3,000 ms',
    postgres <= 3_000,
  );
  await probe.close();
}

simChild.send({ t: 'stop' });
await pgBackend.close();
await fileBackend.close();
await rm(dir, { recursive: true, force: true });
await cluster?.stop();
const failed = verdicts.filter((v) => !v).length;
console.log(
  failed === 0 ? `all ${verdicts.length} figures PASS` : `${failed} of ${verdicts.length} figures FAIL`,
);
if (failed > 0) process.exitCode = 1;
