// One Zulip event queue per realm and bot and kind of reader, shared through the database: one owner polls, every
// reader of every process reads the same events in the same order, a new owner resumes the
// queue, and a lost queue reaches every reader as a gap.
import { type EventQueueOptions, type QueueItem, ZulipClient } from '@zmcp/core';
import { type EventSource, stateAccount } from '@zmcp/delivery';
import type { StateBackend } from '@zmcp/fleet';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  dropAfterAll,
  freshDatabase,
  openTestBackend,
  sql,
  uniqueSchema,
} from '../../../test/support/postgres.js';

dropAfterAll();

let sim: ZulipSim;
let bot = 0;
let ann = 0;
let stream = '';
let bots = 0;
const closing: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  sim = await startZulipSim({ rateLimit: false });
  ann = sim.realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' }).userId;
});

// A bot (and a stream) of its own for each test: the queues Zulip keeps are counted per bot.
beforeEach(() => {
  bots += 1;
  bot = sim.realm.addUser({
    fullName: `Helper Bot ${bots}`,
    email: `helper${bots}@example.test`,
    isBot: true,
  }).userId;
  stream = `general${bots}`;
  sim.realm.addStream({ name: stream, subscribers: [ann, bot] });
});

afterAll(async () => {
  await sim.close();
});

afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c.close();
});

/** A "process": a backend on the shared schema and its own Zulip client of the bot. */
async function processOn(schema: string): Promise<{ backend: StateBackend; client: ZulipClient }> {
  const backend = await openTestBackend({
    schema,
    events: { electionIntervalMs: 100, pollIntervalMs: 200, heartbeatMs: 200 },
  });
  const client = new ZulipClient({ ...sim.credentials(bot), timeoutMs: 5_000 });
  closing.push(backend, client);
  return { backend, client };
}

function accountOf(): string {
  return stateAccount({ site: sim.url, userId: bot });
}

async function reader(
  p: { backend: StateBackend; client: ZulipClient },
  params: EventQueueOptions = { eventTypes: ['message'], applyMarkdown: false },
): Promise<EventSource> {
  const source = p.backend.events?.source(p.client, accountOf());
  if (source === undefined) throw new Error('no event hub');
  const opened = await source(params);
  closing.push(opened);
  return opened;
}

// What delivery's engine and the launcher register (engine.ts, launcher.ts): two kinds of reader.
const ENGINE_SHAPE: EventQueueOptions = {
  eventTypes: [
    'message',
    'update_message',
    'delete_message',
    'reaction',
    'subscription',
    'stream',
    'realm_user',
  ],
  fetchEventTypes: ['message', 'realm_user', 'subscription', 'stream'],
  clientCapabilities: { bulk_message_deletion: true },
  applyMarkdown: false,
};
const LAUNCHER_SHAPE: EventQueueOptions = {
  eventTypes: ['message', 'realm_user', 'update_message'],
  fetchEventTypes: ['message', 'realm_user', 'realm'],
  clientCapabilities: { empty_topic_name: true },
  applyMarkdown: false,
};

/** Reads until `count` message events (and any gaps) have come, in order. */
async function take(source: EventSource, count: number): Promise<{ ids: number[]; gaps: number }> {
  const ids: number[] = [];
  let gaps = 0;
  while (ids.length < count) {
    const batch = (await source.nextBatch()) as QueueItem[];
    for (const item of batch) {
      if (item.kind === 'gap') gaps += 1;
      if (item.kind === 'event' && item.event.type === 'message') ids.push(item.event.message.id);
    }
  }
  return { ids, gaps };
}

/** Reads until `count` events have come: their types, in order. */
async function eventTypes(source: EventSource, count: number): Promise<string[]> {
  const types: string[] = [];
  while (types.length < count) {
    for (const item of (await source.nextBatch()) as QueueItem[]) {
      if (item.kind === 'event') types.push(item.event.type);
    }
  }
  return types;
}

function post(content: string): number {
  return sim.realm.sendMessage({ senderId: ann, type: 'stream', stream, topic: 't', content });
}

function liveQueues(): number {
  return sim.queues(bot).length;
}

/** Ends the owner's database session, as a killed owner's would end: its lock is freed at once. */
async function killOwner(schema: string): Promise<void> {
  const oid = await sql<{ oid: string }>('SELECT oid::text FROM pg_namespace WHERE nspname = $1', [schema]);
  const lockClass = ((Number(oid.rows[0]?.oid) & 0x7fffffff) ^ 0x40000000) & 0x7fffffff;
  const owners = await sql<{ pid: number }>(
    `SELECT l.pid FROM pg_locks l JOIN "${schema}".event_queues e ON l.objid = e.id::bigint::oid
      WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted AND l.classid = $1::bigint::oid`,
    [lockClass],
  );
  expect(owners.rows).toHaveLength(1);
  await sql('SELECT pg_terminate_backend($1)', [owners.rows[0]?.pid]);
}

describe('the shared event queue', () => {
  it('registers one Zulip queue for every reader of every process, and each reads every event in order', async () => {
    const schema = uniqueSchema();
    const [a, b] = [await processOn(schema), await processOn(schema)];
    const readers = [await reader(a), await reader(b), await reader(b)];
    expect(liveQueues()).toBe(1);
    const posted = [post('one'), post('two'), post('three')];
    for (const r of readers) expect((await take(r, 3)).ids).toEqual(posted);
    expect(liveQueues()).toBe(1);
    const owner = await a.backend.events?.owner(accountOf());
    expect(owner).toMatchObject({
      account: accountOf(),
      owned: true,
      pid: process.pid,
      queueId: sim.queues(bot)[0]?.queueId,
      logSize: 3,
    });
  });

  it('registers one Zulip queue per kind of reader: each gets its own registration and event types, the same kind shares', async () => {
    const schema = uniqueSchema();
    const [a, b] = [await processOn(schema), await processOn(schema)];
    const engine = await reader(a, ENGINE_SHAPE);
    const launcher = await reader(b, LAUNCHER_SHAPE);
    expect(liveQueues()).toBe(2);
    // The launcher reads the realm's settings from its registration, which the engine never asks for.
    expect(launcher.registration.realm_message_content_edit_limit_seconds).toBeDefined();
    expect(engine.registration.realm_message_content_edit_limit_seconds).toBeUndefined();
    expect(engine.registration.subscriptions).toBeDefined();
    // The same kind in another process (the keys in another order) shares the launchers' queue.
    const launcher2 = await reader(a, {
      clientCapabilities: { empty_topic_name: true },
      fetchEventTypes: ['realm', 'realm_user', 'message'],
      eventTypes: ['update_message', 'message', 'realm_user'],
      applyMarkdown: false,
    });
    expect(liveQueues()).toBe(2);
    const id = post('hello');
    sim.realm.addReaction(ann, id, 'smile');
    post('later');
    // The engine sees the reaction it asked for; the launchers, which did not, see only the messages.
    expect(await eventTypes(engine, 3)).toEqual(['message', 'reaction', 'message']);
    for (const r of [launcher, launcher2]) expect(await eventTypes(r, 2)).toEqual(['message', 'message']);
    // A kind nobody reads any more, its owner gone, taken last: the account still shows an owner.
    await sql(
      `INSERT INTO "${schema}".event_queues (account, owner_pid, owner_host, owner_since, queue_id)
       VALUES ($1, 1, 'web-2', now() + interval '1 hour', 'stale')`,
      [`${accountOf()}#0000000000000000`],
    );
    const owner = await a.backend.events?.owner(accountOf());
    expect(owner).toMatchObject({ account: accountOf(), owned: true, pid: process.pid });
    expect(sim.queues(bot).map((q) => q.queueId)).toContain(owner?.queueId);
  });

  it('hands the queue to another process when the owner dies, which resumes it: nothing lost, nothing twice', async () => {
    const schema = uniqueSchema();
    const [a, b] = [await processOn(schema), await processOn(schema)];
    const ra = await reader(a);
    const rb = await reader(b);
    const queueId = sim.queues(bot)[0]?.queueId;
    const before = [post('before 1'), post('before 2')];
    expect((await take(rb, 2)).ids).toEqual(before);
    await killOwner(schema);
    const after = [post('after 1'), post('after 2'), post('after 3')];
    // The surviving readers go on from where they were: a new owner resumed the same Zulip queue.
    const seenB = await take(rb, 3);
    expect(seenB).toEqual({ ids: after, gaps: 0 });
    expect((await take(ra, 5)).ids).toEqual([...before, ...after]);
    expect(sim.queues(bot).map((q) => q.queueId)).toEqual([queueId]);
    expect((await a.backend.events?.owner(accountOf()))?.owned).toBe(true);
  });

  it('hands a lost Zulip queue to every reader as a gap, after which a new queue is read', async () => {
    const schema = uniqueSchema();
    const [a, b] = [await processOn(schema), await processOn(schema)];
    const ra = await reader(a);
    const rb = await reader(b);
    const first = post('first');
    expect((await take(ra, 1)).ids).toEqual([first]);
    expect((await take(rb, 1)).ids).toEqual([first]);
    sim.expireAllQueues();
    const lost = post('while the queue was lost');
    for (const r of [ra, rb]) {
      let items: QueueItem[] = [];
      while (!items.some((i) => i.kind === 'gap')) items = (await r.nextBatch()) as QueueItem[];
      const gap = items.find((i) => i.kind === 'gap');
      // The gap says which history to read: the message posted while the queue was lost is in it.
      expect(gap).toMatchObject({ kind: 'gap', lastMessageId: first });
      expect(gap?.kind === 'gap' && (gap.newMaxMessageId ?? 0) >= lost).toBe(true);
    }
    const later = post('later');
    for (const r of [ra, rb]) expect((await take(r, 1)).ids).toEqual([later]);
    expect(liveQueues()).toBe(1);
  });

  it('starts a reader that joins later at the log’s end, and heals one that fell behind the log’s bound', async () => {
    const schema = uniqueSchema();
    const backend = await openTestBackend({ schema, events: { pollIntervalMs: 200, logLimit: 3 } });
    const client = new ZulipClient({ ...sim.credentials(bot), timeoutMs: 5_000 });
    closing.push(backend, client);
    const p = { backend, client };
    const slow = await reader(p);
    const quick = await reader(p);
    const ids: number[] = [];
    for (const text of ['a', 'b', 'c', 'd', 'e']) {
      ids.push(post(text));
      expect(await take(quick, 1)).toEqual({ ids: ids.slice(-1), gaps: 0 });
    }
    // Joining now is registering now: what came before is history, its position the newest message.
    const late = await reader(p);
    expect(late.registration.max_message_id).toBe(ids.at(-1));
    // The log keeps the newest 3 positions: the reader that read nothing finds the rest gone,
    // and is told to heal from history, as for a lost queue.
    const batch = (await slow.nextBatch()) as QueueItem[];
    expect(batch[0]).toMatchObject({ kind: 'gap', newMaxMessageId: ids.at(-1) });
    const kept = batch.flatMap((i) =>
      i.kind === 'event' && i.event.type === 'message' ? [i.event.message.id] : [],
    );
    expect(kept.length).toBeLessThanOrEqual(3);
    expect(kept).toEqual(ids.slice(ids.length - kept.length));
    const next = post('f');
    expect(await take(late, 1)).toEqual({ ids: [next], gaps: 0 });
    expect(await take(slow, 1)).toEqual({ ids: [next], gaps: 0 });
  });

  it('carries on through the database dropping every connection: the owner takes its queue back, readers read on', async () => {
    const url = await freshDatabase();
    const { openStateBackend } = await import('@zmcp/fleet');
    const backend = await openStateBackend({
      url,
      events: { electionIntervalMs: 100, pollIntervalMs: 100, heartbeatMs: 100 },
    });
    const client = new ZulipClient({ ...sim.credentials(bot), timeoutMs: 5_000 });
    closing.push(backend, client);
    const r = await reader({ backend, client });
    const queueId = sim.queues(bot)[0]?.queueId;
    const first = post('before');
    expect((await take(r, 1)).ids).toEqual([first]);
    const database = new URL(url).pathname.slice(1);
    await sql('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [database]);
    const after = [post('after 1'), post('after 2')];
    expect(await take(r, 2)).toEqual({ ids: after, gaps: 0 });
    expect(sim.queues(bot).map((q) => q.queueId)).toEqual([queueId]);
  });
});
