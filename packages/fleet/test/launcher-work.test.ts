// The shared work of zulip-agent workers (backend.launcherWork): each trigger claimed once however
// many workers race for it, one agent per conversation, a fleet-wide limit served oldest first,
// follow-ups to the worker that runs the conversation, and a dead worker's triggers taken over.
import type { LauncherWork } from '@zmcp/fleet';
import { afterEach, describe, expect, it } from 'vitest';
import { dropAfterAll, openTestBackend, sql } from '../../../test/support/postgres.js';

dropAfterAll();

const closing: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c.close();
});

async function workers(
  names: string[],
  leaseMs = 60_000,
): Promise<{ works: LauncherWork[]; schema: string }> {
  const backend = await openTestBackend({});
  closing.push(backend);
  const open = backend.launcherWork;
  if (open === undefined) throw new Error('PostgreSQL has launcher work');
  const works = names.map((worker) => open({ account: 'realm@1', launcher: 'agent', worker, leaseMs }));
  for (const w of works) await w.join();
  return { works, schema: backend.schema };
}

const trigger = (messageId: number, conversation: string) => ({
  messageId,
  conversation,
  trigger: { messageId, conversation },
});
const limits = { maxRunning: 2, maxQueued: 2 };

describe('launcher work in PostgreSQL', () => {
  it('records a trigger once when every worker sees it at the same moment, and says what was decided', async () => {
    const { works } = await workers(['a', 'b', 'c']);
    const seen = await Promise.all(works.map((w) => w.intake(trigger(10, 's1'), limits)));
    expect(seen.filter((s) => s.inserted)).toHaveLength(1);
    const first = seen.find((s) => s.inserted);
    expect(first?.action).toBe('start');
    // Each of them reads the same decision: running, on the worker that recorded it.
    expect(new Set(seen.map((s) => `${s.row.status}/${s.row.worker}`)).size).toBe(1);
  });

  it('holds the limit fleet-wide, keeps one agent per conversation, and serves the queue in order', async () => {
    const { works } = await workers(['a', 'b', 'c']);
    const [a, b, c] = works as [LauncherWork, LauncherWork, LauncherWork];
    expect((await a.intake(trigger(1, 's1'), limits)).action).toBe('start');
    expect((await b.intake(trigger(2, 's2'), limits)).action).toBe('start');
    expect((await c.intake(trigger(3, 's3'), limits)).action).toBe('queue');
    // A mention where an agent runs goes to that agent's worker; one where a trigger waits joins it.
    const follow = await c.intake(trigger(4, 's1'), limits);
    expect([follow.action, follow.row.worker, follow.row.into]).toEqual(['followup', 'a', 1]);
    expect((await a.intake(trigger(5, 's3'), limits)).action).toBe('merge');
    expect((await a.intake(trigger(6, 's4'), limits)).action).toBe('queue');
    expect((await b.intake(trigger(7, 's5'), limits)).action).toBe('refuse');
    // No slot is free anywhere.
    expect(await c.claimNext(2)).toBeUndefined();
    // a's run ends without the agent taking its follow-up: the follow-up waits as a trigger of its own.
    expect(await a.finish(1, { status: 'done' }, [])).toBe(4);
    // The oldest waiting one goes first, to whichever worker asks.
    expect((await c.claimNext(2))?.messageId).toBe(3);
    expect(await b.claimNext(2)).toBeUndefined();
    await b.finish(2, { status: 'done' }, []);
    expect((await b.claimNext(2))?.messageId).toBe(4);
    expect((await a.active()).map((r) => [r.messageId, r.status, r.worker])).toEqual([
      [3, 'running', 'c'],
      [4, 'running', 'b'],
      [6, 'queued', undefined],
    ]);
  });

  it('takes over from a worker whose lease ran out: its running triggers fail, its follow-ups are merged, the queue stays', async () => {
    const { works, schema } = await workers(['a', 'b'], 60_000);
    const [a, b] = works as [LauncherWork, LauncherWork];
    await a.intake(trigger(1, 's1'), limits);
    await a.update(1, { runId: '1-abc', pid: 4242 });
    await b.intake(trigger(2, 's1'), limits);
    await b.intake(trigger(3, 's2'), limits);
    await b.intake(trigger(4, 's3'), limits);
    // b renews its lease; a is alive: nothing to take over.
    expect(await b.heartbeat()).toBe(true);
    expect(await b.reap()).toEqual([]);
    // a stops renewing (its process was killed): its lease runs out.
    await sql(
      `UPDATE "${schema}".launcher_workers SET expires_at = now() - interval '1 second' WHERE worker = 'a'`,
    );
    const taken = await b.reap();
    expect(taken.map((r) => [r.messageId, r.runId, r.pid])).toEqual([[1, '1-abc', 4242]]);
    expect(await b.reap()).toEqual([]);
    expect((await b.active()).map((r) => [r.messageId, r.status])).toEqual([
      [3, 'running'],
      [4, 'queued'],
    ]);
    // a comes back from a pause: its lease is gone, so it must not carry on.
    expect(await a.heartbeat()).toBe(false);
  });
});
