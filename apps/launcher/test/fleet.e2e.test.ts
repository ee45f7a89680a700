// Launcher workers on several machines: three zulip-agent workers with one id share the
// triggers of one bot through PostgreSQL (ZULIP_STATE_URL). One of them is a process of its own,
// killed without warning mid-run: its work is taken over, nothing is lost or started twice.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dropAfterAll, freshDatabase, sql } from '../../../test/support/postgres.js';
import type { Launcher, LauncherEvent } from '../src/index.js';
import { appDir, startWorld, type World } from './world.js';

dropAfterAll();

let w: World;
const children: ChildProcess[] = [];

beforeEach(async () => {
  w = await startWorld();
});

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child.once('close', resolve));
      child.kill('SIGKILL');
      await gone;
    }
  }
  await w.close();
});

/** The events of one in-process worker, with a wait for the first that matches. */
function eventLog() {
  const seen: LauncherEvent[] = [];
  const waiters = new Set<() => void>();
  return {
    seen,
    onEvent(e: LauncherEvent) {
      seen.push(e);
      for (const wake of [...waiters]) wake();
    },
    wait<T extends LauncherEvent['type']>(
      type: T,
      match: (e: Extract<LauncherEvent, { type: T }>) => boolean,
    ): Promise<Extract<LauncherEvent, { type: T }>> {
      return new Promise((resolve) => {
        const check = () => {
          const found = seen.find(
            (e): e is Extract<LauncherEvent, { type: T }> =>
              e.type === type && match(e as Extract<LauncherEvent, { type: T }>),
          );
          if (found === undefined) return false;
          waiters.delete(wake);
          resolve(found);
          return true;
        };
        const wake = () => void check();
        if (!check()) waiters.add(wake);
      });
    },
  };
}

/**
 * Resolves when a worker puts `emoji` on the message `id()` names: registered before the
 * message is posted (the id is read when the reaction comes), so none is missed.
 */
function marked(id: () => number | undefined, emoji: string): Promise<void> {
  return new Promise((resolve) => {
    const off = w.sim.onRequest((r) => {
      if (
        r.method === 'POST' &&
        r.userId === w.bot.userId &&
        r.path.endsWith(`/messages/${id()}/reactions`) &&
        r.params.emoji_name === emoji
      ) {
        off();
        resolve();
      }
    });
  });
}

/** A zulip-agent worker as a process of its own (another machine, as far as the fleet knows). */
function startWorker(url: string, stateDir: string) {
  const mcpConfig = join(w.dir, '.mcp.json');
  writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { zulip: w.server } }));
  const creds = w.sim.credentials(w.bot.userId);
  const child = spawn(
    process.execPath,
    ['--conditions=@zmcp/source', '--import', 'tsx', join(appDir, 'src', 'cli.ts')],
    {
      cwd: appDir,
      env: {
        ...w.env,
        ZULIP_SITE: creds.site,
        ZULIP_EMAIL: creds.email,
        ZULIP_API_KEY: creds.apiKey,
        ZULIP_STATE_URL: url,
        ZULIP_AGENT_ID: 'fleet',
        ZULIP_AGENT_MCP_CONFIG: mcpConfig,
        ZULIP_AGENT_ALLOWED_USERS: String(w.ann.userId),
        ZULIP_AGENT_STATE_DIR: stateDir,
        ZULIP_AGENT_WORKDIR: w.dir,
        ZULIP_AGENT_MAX_RUNNING: '2',
        ZULIP_AGENT_WORKER_LEASE_MS: '900',
        ZULIP_AGENT_STOP_GRACE_MS: '5000',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  children.push(child);
  let stderr = '';
  const waiters = new Set<() => void>();
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
    for (const wake of [...waiters]) wake();
  });
  return {
    child,
    stderr: () => stderr,
    /** Resolves once a line of its log holds every one of `parts`. */
    logged: (...parts: string[]) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (stderr.split('\n').some((line) => parts.every((p) => line.includes(p)))) {
            waiters.delete(check);
            resolve();
          }
        };
        child.once('close', () => reject(new Error(`the worker exited:\n${stderr}`)));
        waiters.add(check);
        check();
      }),
  };
}

/**
 * Whether any process of group `pgid` still runs (Linux `/proc`; a zombie does not run: where
 * the process reaper of a container leaves dead orphans unreaped, they stay in the table).
 */
function groupAlive(pgid: number): boolean {
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
    } catch {
      continue;
    }
    // After the command's closing parenthesis: state, ppid, pgrp.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') return true;
  }
  return false;
}

/** The triggers agents were started for: the far worker's log lines, and the others' events. */
function startedFor(farLog: string, logs: { seen: LauncherEvent[] }[]): number[] {
  const far = farLog
    .split('\n')
    .filter((line) => line.includes('agent started'))
    .map((line) => Number(/messageId=(\d+)/.exec(line)?.[1]));
  const near = logs.flatMap((l) =>
    l.seen.flatMap((e) => (e.type === 'started' ? [e.trigger.messageId] : [])),
  );
  return [...far, ...near].sort((a, b) => a - b);
}

describe('zulip-agent workers sharing one bot through PostgreSQL', () => {
  it('runs each trigger once, holds the limit fleet-wide, routes follow-ups, and takes over from a killed worker', async () => {
    const url = await freshDatabase();
    // The worker that will be killed: alone at first, so the first agent is surely its.
    const far = startWorker(url, join(w.dir, 'far-state'));
    await far.logged('as one worker of the launcher fleet');
    let t1 = 0;
    const t1Working = marked(() => t1, 'working_on_it');
    // An agent that listens in its conversation, as a teammate does.
    t1 = w.mention(w.ann, 'alpha');
    await t1Working;

    // Two more workers, in this process.
    const logs = [eventLog(), eventLog()];
    const local: Launcher[] = [];
    for (const log of logs) {
      local.push(
        await w.launch({
          stateUrl: url,
          launcherId: 'fleet',
          maxRunning: 2,
          workerLeaseMs: 900,
          onEvent: (e) => log.onEvent(e),
        }),
      );
    }
    const anyEvent = <T extends LauncherEvent['type']>(
      type: T,
      match: (e: Extract<LauncherEvent, { type: T }>) => boolean,
    ) => Promise.race(logs.map((l) => l.wait(type, match)));

    // Three more conversations: one slot is free fleet-wide, two wait, in order.
    const ids: number[] = [];
    const t2Working = marked(() => ids[0], 'working_on_it');
    const queuedMarks = [1, 2].map((i) => marked(() => ids[i], 'hourglass'));
    ids.push(w.mention(w.ann, 'beta', '[stub:hang]'));
    ids.push(w.mention(w.ann, 'gamma', '[stub:hang]'));
    ids.push(w.mention(w.ann, 'delta', '[stub:hang]'));
    const [t2, t3, t4] = ids as [number, number, number];
    await t2Working;
    await Promise.all(queuedMarks);
    const rows = async () =>
      (
        await sql<{ message_id: string; status: string; worker: string | null }>(
          'SELECT message_id, status, worker FROM zmcp.launcher_triggers ORDER BY message_id',
          [],
          url,
        )
      ).rows.map((r) => [Number(r.message_id), r.status]);
    expect(await rows()).toEqual([
      [t1, 'running'],
      [t2, 'running'],
      [t3, 'queued'],
      [t4, 'queued'],
    ]);
    // The queue is visible, in order, on the worker that queued the last one.
    const lastQueuer = logs.find((l) =>
      l.seen.some((e) => e.type === 'trigger' && e.trigger.messageId === t4),
    );
    if (lastQueuer !== undefined) {
      const at = logs.indexOf(lastQueuer);
      expect(local[at]?.status().queued.map((t) => t.messageId)).toEqual([t3, t4]);
    }

    // A follow-up in the first conversation reaches the worker whose agent runs it: the far one.
    const follow = w.mention(w.ann, 'ALPHA', 'and the logs');
    await far.logged('follow-up handed to the running agent', String(follow));
    expect(logs.some((l) => l.seen.some((e) => e.type === 'trigger' && e.action === 'followup'))).toBe(false);

    // Killed without warning mid-run: the others count it dead when its lease runs out, report
    // its triggers as a restart does, stop its agents (this machine), and start the next in line.
    const held = await sql<{ message_id: string; worker: string }>(
      "SELECT message_id, worker FROM zmcp.launcher_triggers WHERE status = 'running' ORDER BY message_id",
      [],
      url,
    );
    const farWorker = held.rows.find((r) => Number(r.message_id) === t1)?.worker;
    // The far worker ran t1, and maybe t2 (whichever worker saw it first took it).
    const lost = held.rows.filter((r) => r.worker === farWorker).map((r) => Number(r.message_id));
    const next = [t3, t4].slice(0, lost.length);
    const nextWorking = next.map((id) => marked(() => id, 'working_on_it'));
    const farPids = far
      .stderr()
      .split('\n')
      .filter((line) => line.includes('agent started'))
      .map((line) => Number(/ pid=(\d+)/.exec(line)?.[1]));
    expect(farPids).toHaveLength(lost.length);
    const gone = new Promise((resolve) => far.child.once('close', resolve));
    far.child.kill('SIGKILL');
    await gone;
    for (const id of lost) {
      expect(await anyEvent('recovered', (e) => e.messageId === id)).toMatchObject({ action: 'failed' });
    }
    // Its agents, and whatever they started (their zulip servers): nothing of their process
    // groups runs on (stopped by the worker that took over, found by the run's marker, unless
    // the agents' pipes to the dead worker ended them first).
    expect(farPids.filter(groupAlive)).toEqual([]);
    await Promise.all(nextWorking);

    const status = new Map<number, string>([
      [t1, 'failed'],
      [t2, lost.includes(t2) ? 'failed' : 'running'],
      [t3, 'running'],
      [t4, next.includes(t4) ? 'running' : 'queued'],
      // The follow-up the dead agent had: reported with its trigger (mention me again).
      [follow, 'merged'],
    ]);
    expect(await rows()).toEqual([...status]);
    // Every trigger started once, by one worker; one still waiting by none.
    expect(startedFor(far.stderr(), logs)).toEqual([t1, t2, ...next]);
    for (const id of lost) expect(w.reactions(id)).toContain('warning');
    expect(w.messages({ topic: 'alpha', sender: w.bot.userId }).map((m) => m.content)).toContainEqual(
      expect.stringContaining('The launcher restarted while I was working on this'),
    );

    // The in-process workers stop their agents (each reported, once); nothing is left running.
    for (const l of local) await l.close();
    expect((await rows()).filter(([, st]) => st === 'running')).toEqual([]);
  }, 60_000);
});
