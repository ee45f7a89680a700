// The zulip-agent command as a process of its own, killed without warning and started again:
// a trigger seen before the crash is neither started twice nor forgotten.
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SimRequestRecord } from '@zmcp/zulip-sim';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appDir, processAlive, type StubRecord, startWorld, type World } from './world.js';

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

interface Running {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Starts zulip-agent from its sources, as its own process. */
function startLauncher(extra: Record<string, string> = {}): Running {
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
        ZULIP_AGENT_MCP_CONFIG: mcpConfig,
        ZULIP_AGENT_ALLOWED_USERS: String(w.ann.userId),
        ZULIP_AGENT_STATE_DIR: w.stateDir,
        ZULIP_AGENT_WORKDIR: w.dir,
        ZULIP_AGENT_MAX_RUNNING: '1',
        ZULIP_AGENT_STOP_GRACE_MS: '5000',
        ZMCP_LOG_LEVEL: 'debug',
        ...extra,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  children.push(child);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, stderr: () => stderr, exited };
}

/** The launcher's own queue (every message, no narrow) is registered: it listens from here on. */
function launcherListening(): Promise<SimRequestRecord> {
  return w.nextRequest(
    (r) =>
      r.method === 'POST' &&
      r.path.endsWith('/register') &&
      r.userId === w.bot.userId &&
      r.params.narrow === undefined &&
      String(r.params.event_types).includes('message'),
  );
}

function botPost(topic: string, text: string): Promise<SimRequestRecord> {
  return w.nextRequest(
    (r) =>
      r.method === 'POST' &&
      r.path.endsWith('/messages') &&
      r.userId === w.bot.userId &&
      r.params.topic === topic &&
      String(r.params.content).includes(text),
  );
}

function reacted(messageId: number, emoji: string): Promise<SimRequestRecord> {
  return w.nextRequest(
    (r) =>
      r.method === 'POST' &&
      r.path.endsWith(`/messages/${messageId}/reactions`) &&
      r.userId === w.bot.userId &&
      r.params.emoji_name === emoji,
  );
}

function topicOf(record: StubRecord): unknown {
  return record.events.find((e) => e.step === 'set_context')?.topic;
}

describe('zulip-agent across a crash', () => {
  it('reports the agent that was running, starts the queued trigger and the one missed while down, once each', async () => {
    let listening = launcherListening();
    const first = startLauncher();
    await listening;

    const r1Listening = w.nextListen('r1');
    const m1 = w.mention(w.ann, 'r1');
    await r1Listening;
    const m2 = w.mention(w.ann, 'r2', '[stub:quick]');
    await reacted(m2, 'hourglass');

    // A crash: no clean-up at all. The agent it started is left running.
    first.child.kill('SIGKILL');
    await first.exited;
    const [orphan] = w.records();
    const orphanPids = [
      orphan?.pid as number,
      orphan?.events.find((e) => e.step === 'connected')?.serverPid as number,
    ];
    expect(orphanPids.every(processAlive)).toBe(true);
    const m3 = w.mention(w.ann, 'r3', '[stub:quick]');

    listening = launcherListening();
    const restartNotice = botPost('r1', 'The launcher restarted');
    const r2Done = reacted(m2, 'check');
    const r3Done = reacted(m3, 'check');
    const second = startLauncher({ ZULIP_AGENT_MAX_RUNNING: '2' });
    await listening;
    await restartNotice;
    await Promise.all([r2Done, r3Done]);
    // The crashed launcher's agent was stopped, found by its run marker.
    expect(orphanPids.some(processAlive)).toBe(false);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    expect(w.records().map(topicOf).sort()).toEqual(['r1', 'r2', 'r3']);
    expect(w.reactions(m1)).toEqual(['warning']);
    expect(w.reactions(m2)).toEqual(['check']);
    expect(w.reactions(m3)).toEqual(['check']);

    // Once more: nothing seen before starts again; a new mention does.
    listening = launcherListening();
    const third = startLauncher();
    await listening;
    const m4 = w.mention(w.ann, 'r4', '[stub:quick]');
    await reacted(m4, 'check');
    third.child.kill('SIGTERM');
    expect(await third.exited).toBe(0);
    expect(w.records().map(topicOf).sort()).toEqual(['r1', 'r2', 'r3', 'r4']);
    expect(second.stderr()).toContain('an agent was running when the launcher stopped');
    expect(second.stderr()).not.toContain(w.bot.apiKey);
    // Three launcher processes start from source here: give a loaded machine room.
  }, 90_000);
});
