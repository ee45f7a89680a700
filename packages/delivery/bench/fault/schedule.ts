// A randomized fault schedule for the delivery engine: thousands of messages across streams and
// DMs while the host (this process) refuses, loses batches and times out, the event queue
// expires, the simulator restarts, and the engine's process is killed at random points, state
// writes included. The same seed gives the same schedule of faults and answers.
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import type { ChildMessage, FlushedState, ParentMessage, WireItem } from './protocol.js';

/** What a schedule does. */
export interface FaultOptions {
  seed: number;
  /** Messages sent in all. */
  messages: number;
  /** SIGKILLs of the engine's process. */
  kills: number;
  /** Event-queue expiries. */
  expiries: number;
  /** Simulator restarts (queues kept). */
  restarts: number;
  /** The engine's offer timeout; the host's "timeouts" never answer. */
  offerTimeoutMs?: number;
  /** A deadline for the whole run, after which it is reported stuck. */
  deadlineMs?: number;
  /** Another state store than files (see `ChildConfig.store`): a fleet's PostgreSQL, say. */
  store?: { module: string; options: Record<string, unknown> };
  /**
   * Two processes race: a standby always waits for the session's lock beside the running
   * engine and takes over when it is killed (instead of a new process started after the kill).
   */
  standby?: boolean;
}

/** What a run saw, and what was wrong with it. */
export interface FaultReport {
  seed: number;
  sent: number;
  expected: number;
  accepted: number;
  epochs: number;
  kills: number;
  killsMidWrite: number;
  offers: number;
  refusals: number;
  losses: number;
  timeouts: number;
  partials: number;
  redeliveredAfterKill: number;
  /** Broken promises: each names the message and what was wrong. Empty when the run is good. */
  violations: string[];
  durationMs: number;
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const childScript = fileURLToPath(new URL('./child.ts', import.meta.url));
const packageDir = fileURLToPath(new URL('../..', import.meta.url));

interface Epoch {
  n: number;
  child: ChildProcess;
  ready: Promise<void>;
  exited: Promise<void>;
  /** The last state the child reported written. */
  flushed: FlushedState | undefined;
  killed: boolean;
  /** IPC messages seen; the kill lands at `killAt`. */
  seen: number;
  killAt: number;
  /** Kill only as a state write begins (the file is being replaced). */
  killOnWrite: boolean;
}

/** Runs one schedule and reports what it saw; `violations` lists every broken promise. */
export async function runFaultSchedule(options: FaultOptions): Promise<FaultReport> {
  const started = performance.now();
  const random = mulberry32(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const sim: ZulipSim = await startZulipSim({ rateLimit: false, heartbeatIntervalMs: 2_000 });
  const dir = await mkdtemp(join(tmpdir(), 'zmcp-fault-'));
  const bot = sim.realm.addUser({
    fullName: 'Fault Bot',
    email: 'fault-bot@zulip.example',
    isBot: true,
  }).userId;
  const ann = sim.realm.addUser({ fullName: 'Ann', email: 'ann@zulip.example' }).userId;
  const bo = sim.realm.addUser({ fullName: 'Bo', email: 'bo@zulip.example' }).userId;
  const openStreams = ['alpha', 'beta', 'gamma'];
  for (const name of [...openStreams, 'quiet']) sim.realm.addStream({ name, subscribers: [bot, ann, bo] });
  const credentials = sim.credentials(bot);
  const report: FaultReport = {
    seed: options.seed,
    sent: 0,
    expected: 0,
    accepted: 0,
    epochs: 0,
    kills: 0,
    killsMidWrite: 0,
    offers: 0,
    refusals: 0,
    losses: 0,
    timeouts: 0,
    partials: 0,
    redeliveredAfterKill: 0,
    violations: [],
    durationMs: 0,
  };
  const violation = (text: string) => {
    if (report.violations.length < 50) report.violations.push(text);
  };

  // What the host has accepted: the first acceptance of each message, per channel in order.
  const expected = new Map<number, string>();
  const firstAccepted = new Map<number, { channel: string; epoch: number }>();
  const orderByChannel = new Map<string, number[]>();
  let faulty = true;
  let epoch: Epoch | undefined;
  let previous: Epoch | undefined;
  /** With `standby`: the process waiting for the lock; it is promoted at its first word. */
  let standby: Epoch | undefined;
  const waiters: (() => void)[] = [];
  const wake = () => {
    for (const w of waiters.splice(0)) w();
  };
  const outstanding = () => {
    let n = 0;
    for (const id of expected.keys()) if (!firstAccepted.has(id)) n += 1;
    return n;
  };

  const accept = (items: readonly WireItem[], current: Epoch) => {
    for (const item of items) {
      if (item.kind !== 'message') continue;
      const id = item.messageId;
      const first = firstAccepted.get(id);
      if (first === undefined) {
        firstAccepted.set(id, { channel: item.channelId, epoch: current.n });
        if (expected.has(id)) {
          report.accepted += 1;
          const order = orderByChannel.get(item.channelId) ?? [];
          const last = order[order.length - 1];
          if (last !== undefined && last > id) {
            violation(`message ${id} on ${item.channelId} was accepted after ${last}: out of order`);
          }
          order.push(id);
          orderByChannel.set(item.channelId, order);
        }
        continue;
      }
      // Accepted twice. Only a crash between the host's acceptance and the state write can
      // explain it: the previous epoch was killed, this is the next one, and the last state
      // it wrote did not cover the message.
      report.redeliveredAfterKill += 1;
      const covered = previous?.flushed?.channels
        ? Object.values(previous.flushed.channels).some(
            (c) => c.id === item.channelId && (c.w >= id || (c.above ?? []).includes(id)),
          )
        : false;
      if (first.epoch === current.n) violation(`message ${id} was accepted twice in one run of the engine`);
      else if (previous?.killed !== true || previous.n !== current.n - 1)
        violation(`message ${id} was delivered again after a clean stop`);
      else if (covered) violation(`message ${id} was delivered again though its watermark was on disk`);
    }
  };

  const answer = (current: Epoch, n: number, outcome: unknown) => {
    const message: ParentMessage = { t: 'answer', n, outcome };
    if (current.child.connected) current.child.send(message);
  };

  const onMessage = (current: Epoch, message: ChildMessage) => {
    if (current === standby && message.t !== 'failed' && epoch?.killed === true) {
      // It has the lock: the one it waited beside is dead.
      previous = epoch;
      epoch = current;
      standby = undefined;
    }
    if (epoch !== current) {
      if (message.t === 'failed') violation(`the standby failed in run ${current.n}: ${message.error}`);
      return;
    }
    current.seen += 1;
    if (message.t === 'failed') violation(`the engine failed in run ${current.n}: ${message.error}`);
    if (message.t === 'flushed') current.flushed = message.state;
    if (message.t === 'incoming' || message.t === 'push') {
      report.offers += 1;
      const roll = faulty ? random() : 0;
      if (roll < 0.62) {
        accept(message.items, current);
        answer(
          current,
          message.n,
          message.t === 'incoming'
            ? { kind: 'answered', accepted: message.items.map((i) => i.id) }
            : { kind: 'answered', accepted: true },
        );
      } else if (roll < 0.72) {
        report.refusals += 1;
        answer(
          current,
          message.n,
          message.t === 'incoming' ? { kind: 'refused' } : { kind: 'answered', accepted: false },
        );
      } else if (roll < 0.8) {
        report.losses += 1;
        answer(current, message.n, { kind: 'lost' });
      } else if (roll < 0.86) {
        report.timeouts += 1; // never answered: the engine's offer timeout fires
      } else if (message.t === 'incoming' && message.items.length > 1) {
        // The host takes the first part of the batch.
        report.partials += 1;
        const k = 1 + Math.floor(random() * (message.items.length - 1));
        const taken = message.items.slice(0, k);
        accept(taken, current);
        answer(current, message.n, { kind: 'answered', accepted: taken.map((i) => i.id) });
      } else {
        accept(message.items, current);
        answer(
          current,
          message.n,
          message.t === 'incoming'
            ? { kind: 'answered', accepted: message.items.map((i) => i.id) }
            : { kind: 'answered', accepted: true },
        );
      }
    }
    const due = current.seen >= current.killAt && (!current.killOnWrite || message.t === 'writing');
    if (faulty && report.kills < options.kills && due && !current.killed) {
      if (message.t === 'writing') report.killsMidWrite += 1;
      current.killed = true;
      report.kills += 1;
      current.child.kill('SIGKILL');
    }
    wake();
  };

  const spawnEpoch = (waitForLock = false): Epoch => {
    const child = fork(childScript, [], {
      cwd: packageDir,
      execArgv: ['--import', 'tsx', '--conditions', '@zmcp/source'],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      if (process.env.FAULT_DEBUG !== undefined)
        process.stderr.write(`[run ${current.n}] ${chunk.toString()}`);
      if (stderr.length < 4_000) stderr += chunk.toString();
    });
    let resolveReady!: () => void;
    const ready = new Promise<void>((resolve) => {
      resolveReady = resolve;
    });
    const exited = new Promise<void>((resolve) => {
      child.on('exit', (code, signal) => {
        if (signal !== 'SIGKILL' && code !== 0)
          violation(`run ${current.n} exited with ${code}: ${stderr.slice(0, 500)}`);
        resolveReady();
        resolve();
        wake();
      });
    });
    const current: Epoch = {
      n: report.epochs,
      child,
      ready,
      exited,
      flushed: undefined,
      killed: false,
      seen: 0,
      killAt: 5 + Math.floor(random() * 60),
      killOnWrite: random() < 0.5,
    };
    report.epochs += 1;
    child.on('message', (raw) => {
      const message = raw as ChildMessage;
      if (message.t === 'ready') resolveReady();
      onMessage(current, message);
    });
    const config: ParentMessage = {
      t: 'config',
      config: {
        site: credentials.site,
        email: credentials.email,
        apiKey: credentials.apiKey,
        dir,
        open: openStreams.map((s) => `zulip:${s}`),
        offerTimeoutMs: options.offerTimeoutMs ?? 150,
        // The store learns whose state it keeps (a fleet keys its shared event queue by bot).
        store:
          options.store === undefined
            ? undefined
            : { module: options.store.module, options: { ...options.store.options, botId: bot } },
        waitForLock,
      },
    };
    child.send(config);
    return current;
  };

  /** Resolves at the next thing the child does, or once nothing is outstanding. */
  const progress = () =>
    new Promise<void>((resolve) => {
      if (outstanding() === 0) resolve();
      else waiters.push(resolve);
    });

  const deadline = new Promise<'stuck'>((resolve) => {
    const t = setTimeout(() => resolve('stuck'), options.deadlineMs ?? 120_000);
    t.unref();
  });

  const ensureRunning = async () => {
    if (options.standby === true) {
      if (epoch === undefined) {
        epoch = spawnEpoch();
        await epoch.ready;
      }
      // The standby takes over by itself; a new one waits beside it.
      while (epoch.killed) await new Promise<void>((resolve) => waiters.push(resolve));
      await epoch.ready;
      if (standby === undefined) standby = spawnEpoch(true);
      return;
    }
    if (epoch !== undefined && !epoch.killed) return;
    if (epoch !== undefined) {
      await epoch.exited;
      previous = epoch;
    }
    epoch = spawnEpoch();
    await epoch.ready;
  };

  const send = () => {
    const r = random();
    let id: number;
    let channel: string;
    let wanted: boolean;
    if (r < 0.7) {
      const stream = pick(openStreams);
      id = sim.realm.sendMessage({
        senderId: pick([ann, bo]),
        type: 'stream',
        stream,
        topic: pick(['t1', 't2']),
        content: `m${report.sent}`,
      });
      channel = `zulip:${stream}`;
      wanted = true;
    } else if (r < 0.85) {
      const mention = random() < 0.3;
      id = sim.realm.sendMessage({
        senderId: pick([ann, bo]),
        type: 'stream',
        stream: 'quiet',
        topic: 't',
        content: mention ? `@**Fault Bot** m${report.sent}` : `m${report.sent}`,
      });
      channel = 'zulip:quiet';
      wanted = mention;
    } else {
      const from = pick([ann, bo]);
      id = sim.realm.sendMessage({ senderId: from, type: 'direct', to: [bot], content: `dm ${report.sent}` });
      channel = `zulip:dm:${from}`;
      wanted = true;
    }
    report.sent += 1;
    if (wanted) expected.set(id, channel);
  };

  const rounds = Math.max(1, Math.ceil(options.messages / 4));
  const faultAt = new Map<number, 'expire' | 'restart'>();
  for (let i = 0; i < options.expiries; i++) faultAt.set(Math.floor(random() * rounds), 'expire');
  for (let i = 0; i < options.restarts; i++) faultAt.set(Math.floor(random() * rounds), 'restart');

  const run = async () => {
    await ensureRunning();
    // Past the planned messages, sending goes on until every planned kill has happened.
    for (
      let round = 0;
      report.sent < options.messages || (report.kills < options.kills && report.sent < options.messages * 3);
      round++
    ) {
      const burst = 1 + Math.floor(random() * 7);
      for (let i = 0; i < burst; i++) send();
      const fault = faultAt.get(round);
      if (fault === 'expire') sim.expireAllQueues();
      if (fault === 'restart') await sim.restart();
      if (epoch?.killed === true) await ensureRunning();
      else await progress();
    }
    // Drain: the host now answers everything, and the engine runs until nothing is missing.
    faulty = false;
    await ensureRunning();
    while (outstanding() > 0) {
      await progress();
      if (epoch?.killed === true) await ensureRunning();
    }
    const current = epoch as Epoch;
    const closed = new Promise<void>((resolve) => {
      current.child.on('message', (raw) => {
        if ((raw as ChildMessage).t === 'closed') resolve();
      });
    });
    current.child.send({ t: 'stop' } satisfies ParentMessage);
    await Promise.race([closed, current.exited]);
    await current.exited;
  };

  try {
    const outcome = await Promise.race([run().then(() => 'done' as const), deadline]);
    if (outcome === 'stuck') {
      const missing = [...expected.keys()].filter((id) => !firstAccepted.has(id));
      violation(
        `stuck: ${missing.length} expected messages never accepted (e.g. ${missing.slice(0, 5).join(', ')})`,
      );
    }
  } finally {
    for (const left of [epoch, standby]) {
      if (left !== undefined && left.child.exitCode === null && left.child.signalCode === null) {
        left.child.kill('SIGKILL');
        await left.exited;
      }
    }
    await sim.close();
    await rm(dir, { recursive: true, force: true });
  }
  report.expected = expected.size;
  for (const [id, channel] of expected) {
    const got = firstAccepted.get(id);
    if (got === undefined) violation(`message ${id} on ${channel} was never accepted`);
    else if (got.channel !== channel) violation(`message ${id} arrived on ${got.channel}, not ${channel}`);
  }
  report.durationMs = Math.round(performance.now() - started);
  return report;
}
