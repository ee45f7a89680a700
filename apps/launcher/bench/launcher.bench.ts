// Trigger latency: from a mention posted in zulip-sim to the backend process running (its first
// statement), against two baselines measured in the same run: the bare spawn of the same stub
// backend, and one event-queue long-poll wake (a message posted to a blocked GET /events).
// Target: trigger ≤ 1.5 × bare spawn + one long-poll wake.
//
// Run: pnpm --filter @zmcp/launcher bench
import { spawn } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EventQueue, ZulipClient } from '@zmcp/core';
import { startZulipSim } from '@zmcp/zulip-sim';
import { createLauncher, type LauncherEvent } from '../src/index.js';

const ROUNDS = 15;
const WARMUP = 3;
const now = () => performance.timeOrigin + performance.now();

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const dir = await mkdtemp(join(tmpdir(), 'zulip-agent-bench-'));
const bin = join(dir, 'bin');
const records = join(dir, 'records');
await mkdir(bin);
await mkdir(records);
const stub = pathToFileURL(join(import.meta.dirname, '..', 'test', 'stub', 'agent.mjs')).href;
writeFileSync(join(bin, 'claude'), `#!/usr/bin/env node\nimport(${JSON.stringify(stub)});\n`);
chmodSync(join(bin, 'claude'), 0o755);
const env = {
  ...process.env,
  PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`,
  STUB_MODE: 'bench',
  STUB_RECORD_DIR: records,
};
const startedAt = (pid: number) =>
  (JSON.parse(readFileSync(join(records, `claude-${pid}.json`), 'utf8')) as { startedAt: number }).startedAt;

let ids: { ann: number; bot: number; cy: number } | undefined;
const sim = await startZulipSim({
  rateLimit: false,
  seed(realm) {
    const ann = realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' });
    const bot = realm.addUser({ fullName: 'Helper Bot', email: 'helper-bot@example.test', isBot: true });
    // Cy watches a stream of his own, so his queue sees only the wake-up messages.
    const cy = realm.addUser({ fullName: 'Cy Park', email: 'cy@example.test' });
    realm.addStream({ name: 'general', subscribers: [ann.userId, bot.userId] });
    realm.addStream({ name: 'wake', subscribers: [cy.userId, bot.userId] });
    ids = { ann: ann.userId, bot: bot.userId, cy: cy.userId };
  },
});
const { ann, bot, cy } = ids as { ann: number; bot: number; cy: number };

/** Resolves once `user` has a long poll blocked on the simulator (checked each turn of the event loop). */
async function pollBlocked(user: number): Promise<void> {
  while (!sim.queues(user).some((q) => q.polling && q.narrow.length === 0)) {
    await new Promise((resolve) => setImmediate(resolve));
  }
}

// 1. The bare spawn of the stub backend: spawn() to its first statement.
async function bareSpawn(): Promise<number> {
  const t0 = now();
  const child = spawn('claude', [], { env, stdio: 'ignore' });
  const pid = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', () => resolve(child.pid as number));
  });
  return startedAt(pid) - t0;
}

// 2. One long-poll wake: a message posted while a GET /events is blocked, until it is yielded.
const watcher = new ZulipClient(sim.credentials(cy));
const queue = await EventQueue.open(watcher, { eventTypes: ['message'] });
const events = queue[Symbol.asyncIterator]();
async function longPollWake(i: number): Promise<number> {
  // The iterator polls when asked for the next item: ask, and let the poll block, then post.
  const next = events.next();
  await pollBlocked(cy);
  const t0 = now();
  sim.realm.sendMessage({
    senderId: bot,
    type: 'stream',
    stream: 'wake',
    topic: `wake ${i}`,
    content: 'tick',
  });
  await next;
  return now() - t0;
}

// 3. The launcher: a mention posted, to the backend's first statement.
const eventWaiters = new Set<(e: LauncherEvent) => void>();
const launcher = createLauncher({
  zulip: sim.credentials(bot),
  mcpServer: { command: 'zulip-mcp' },
  allowedUsers: [ann],
  stateDir: join(dir, 'state'),
  env,
  workdir: dir,
  directMessages: false,
  maxRunning: 1,
  onEvent: (e) => {
    for (const w of [...eventWaiters]) w(e);
  },
});
await launcher.start();
async function trigger(i: number): Promise<number> {
  await pollBlocked(bot);
  let pid = 0;
  const ended = new Promise<void>((resolve) => {
    const waiter = (e: LauncherEvent) => {
      if (e.type === 'started') pid = e.pid;
      if (e.type === 'ended') {
        eventWaiters.delete(waiter);
        resolve();
      }
    };
    eventWaiters.add(waiter);
  });
  const t0 = now();
  sim.realm.sendMessage({
    senderId: ann,
    type: 'stream',
    stream: 'general',
    topic: `bench ${i}`,
    content: '@**Helper Bot** go',
  });
  await ended;
  return startedAt(pid) - t0;
}

const bare: number[] = [];
const wake: number[] = [];
const launched: number[] = [];
for (let i = 0; i < WARMUP + ROUNDS; i++) {
  // Interleaved, so a busy moment of the machine weighs on every figure alike.
  const b = await bareSpawn();
  const w = await longPollWake(i);
  const t = await trigger(i);
  if (i >= WARMUP) {
    bare.push(b);
    wake.push(w);
    launched.push(t);
  }
}

await launcher.close();
await queue.close();
await watcher.close();
await sim.close();
await rm(dir, { recursive: true, force: true });

const b = median(bare);
const w = median(wake);
const t = median(launched);
const budget = 1.5 * b + w;
const fmt = (ms: number) => `${ms.toFixed(2)} ms`;
console.log(`zulip-agent trigger latency, median of ${ROUNDS} (after ${WARMUP} warm-up rounds)`);
console.log(`  bare spawn of the stub backend:        ${fmt(b)}`);
console.log(`  one event-queue long-poll wake:        ${fmt(w)}`);
console.log(`  mention posted → backend running:      ${fmt(t)}`);
console.log(`  trigger / bare spawn:                  ${(t / b).toFixed(2)}x`);
console.log(`  (trigger − wake) / bare spawn:         ${((t - w) / b).toFixed(2)}x   target ≤ 1.50x`);
console.log(
  `  trigger / (1.5 × bare + wake):         ${(t / budget).toFixed(2)}   target ≤ 1.00 (${t <= budget ? 'met' : 'missed'})`,
);
