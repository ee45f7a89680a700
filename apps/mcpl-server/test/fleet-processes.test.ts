// Two zulip-mcpl processes on one session and one PostgreSQL: the first delivers (it holds the
// session's delivery lock and owns the bot's event queue), the second waits. The first is killed
// (SIGKILL) mid-stream; the second takes the lock and the queue over, resuming the same Zulip
// queue: every message reaches a host, the second host gets each once and in order, and the
// realm never sees a second queue. Two processes serving two sessions of one bot deliver from
// one Zulip queue.
import { fileURLToPath } from 'node:url';
import { type ChildProcessTransport, McplHost, spawnStdioTransport } from '@zmcp/mcpl';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dropAfterAll, freshDatabase } from '../../../test/support/postgres.js';
import { FULL_GRANT, type Realm, startRealm } from './world.js';

dropAfterAll();

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
let realm: Realm;
const transports: ChildProcessTransport[] = [];

beforeEach(async () => {
  realm = await startRealm();
});

afterEach(async () => {
  for (const t of transports.splice(0)) {
    if (t.child.exitCode === null && t.child.signalCode === null) {
      const gone = new Promise((resolve) => t.child.once('exit', resolve));
      t.child.kill('SIGKILL');
      await gone;
    }
  }
  await realm.close();
});

/** One zulip-mcpl process on stdio, and a host on the other end that keeps every push. */
async function processWithHost(env: Record<string, string>) {
  const transport = await spawnStdioTransport({
    command: process.execPath,
    args: ['--import', 'tsx', '--conditions', '@zmcp/source', cli],
    env: { ...process.env, ...env },
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stderr: 'ignore',
  });
  transports.push(transport);
  const host = await McplHost.connect(transport, { name: 'fleet-host', version: '1' });
  const pushed: number[] = [];
  const waiters: (() => void)[] = [];
  host.on('push', (e) => {
    for (const m of JSON.stringify(e.payload).matchAll(/id=(\d+)\]/g)) pushed.push(Number(m[1]));
    for (const w of waiters.splice(0)) w();
  });
  const registered = new Promise<void>((resolve) => host.on('channels', () => resolve()));
  await host.setPolicy({ effectiveCapabilities: [...FULL_GRANT] });
  return {
    transport,
    host,
    pushed,
    registered,
    async until(ids: readonly number[]) {
      while (!ids.every((id) => pushed.includes(id))) await new Promise<void>((r) => waiters.push(r));
    },
  };
}

describe('two zulip-mcpl processes on one session, on PostgreSQL', () => {
  it('lose nothing when the delivering process is killed mid-stream, and share one Zulip queue', async () => {
    const env = { ...realm.env, ZULIP_STATE_URL: await freshDatabase(), ZMCP_LOG_LEVEL: 'info' };
    const mention = (n: number) => realm.say('random', `m${n} @**Helper Bot**`);
    const first = await processWithHost(env);
    await first.registered;
    const queueId = realm.sim.queues(realm.bot)[0]?.queueId;
    expect(realm.sim.queues(realm.bot)).toHaveLength(1);
    // The second waits for the session's delivery lock; it registers no queue of its own.
    const second = await processWithHost(env);
    const before = [1, 2, 3].map(mention);
    await first.until(before);
    expect(realm.sim.queues(realm.bot)).toHaveLength(1);

    // Killed while messages are coming.
    const during = [4, 5, 6].map(mention);
    first.transport.child.kill('SIGKILL');
    const after = [7, 8, 9].map(mention);
    const all = [...before, ...during, ...after];
    await second.until(all.filter((id) => !first.pushed.includes(id)));
    await second.until(after);

    // Every message reached a host; the second got each once, in order.
    for (const id of all) expect([...first.pushed, ...second.pushed]).toContain(id);
    expect(new Set(second.pushed).size).toBe(second.pushed.length);
    expect([...second.pushed].sort((x, y) => x - y)).toEqual(second.pushed);
    // The second process resumed the first one's Zulip queue: still one, the same.
    expect(realm.sim.queues(realm.bot).map((q) => q.queueId)).toEqual([queueId]);
    await second.host.close();
  }, 40_000);

  it('deliver to two sessions from one Zulip queue, read through the database', async () => {
    const env = { ...realm.env, ZULIP_STATE_URL: await freshDatabase(), ZMCP_LOG_LEVEL: 'info' };
    const first = await processWithHost({ ...env, ZULIP_SESSION_ID: 'agent-a' });
    const second = await processWithHost({ ...env, ZULIP_SESSION_ID: 'agent-b' });
    await Promise.all([first.registered, second.registered]);
    const ids = [1, 2, 3].map((n) => realm.say('random', `to both ${n} @**Helper Bot**`));
    await Promise.all([first.until(ids), second.until(ids)]);
    expect(first.pushed).toEqual(ids);
    expect(second.pushed).toEqual(ids);
    // Two engines in two processes, one queue on the realm.
    expect(realm.sim.queues(realm.bot)).toHaveLength(1);
    await Promise.all([first.host.close(), second.host.close()]);
  }, 30_000);
});
