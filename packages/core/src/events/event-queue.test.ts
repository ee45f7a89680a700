import { afterEach, describe, expect, it } from 'vitest';
import {
  fakeClock,
  mockClient,
  mockRealm,
  ok,
  paramsOf,
  streamMessage,
  zulipError,
} from '../../test/helpers/mock-realm.js';
import type { ZulipClient } from '../client/zulip-client.js';
import type { ZmcpError } from '../errors.js';
import { EventQueue, type QueueItem } from './event-queue.js';

type Reply = { status: number; body: unknown; delay?: number } | { error: Error };

// Scripted GET /events answers, with a record of what each poll acknowledged. Event-queue
// behaviour against a realm is covered in test/event-queue.test.ts on the simulator.
function scriptedRealm(script: Reply[]) {
  const { agent, pool } = mockRealm();
  const polls: { queueId: string | null; lastEventId: string | null }[] = [];
  const registrations: URLSearchParams[] = [];
  const deleted: string[] = [];
  let queues = 0;
  pool
    .intercept({ path: '/api/v1/register', method: 'POST' })
    .reply((req) => {
      registrations.push(paramsOf(req));
      queues += 1;
      return {
        statusCode: 200,
        data: ok({
          queue_id: `q${queues}`,
          last_event_id: -1,
          max_message_id: 100 * queues,
          event_queue_longpoll_timeout_seconds: 90,
          zulip_feature_level: 421,
        }),
      };
    })
    .persist();
  pool
    .intercept({ path: '/api/v1/events', method: 'DELETE' })
    .reply((req) => {
      deleted.push(paramsOf(req).get('queue_id') ?? '');
      return { statusCode: 200, data: ok() };
    })
    .persist();
  for (const reply of script) {
    const scope = pool.intercept({ path: (p) => p.startsWith('/api/v1/events?'), method: 'GET' });
    if ('error' in reply) {
      scope.replyWithError(reply.error);
      continue;
    }
    const s = scope.reply((req) => {
      const q = paramsOf(req);
      polls.push({ queueId: q.get('queue_id'), lastEventId: q.get('last_event_id') });
      return { statusCode: reply.status, data: reply.body as object };
    });
    if (reply.delay !== undefined) s.delay(reply.delay);
  }
  // After the script: hold the poll open until the test closes the queue.
  pool
    .intercept({ path: (p) => p.startsWith('/api/v1/events?'), method: 'GET' })
    .reply(200, ok({ events: [] }))
    .delay(60_000)
    .persist();
  return { agent, polls, registrations, deleted };
}

const clients: ZulipClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

async function take(queue: EventQueue, n: number): Promise<QueueItem[]> {
  const out: QueueItem[] = [];
  if (n === 0) return out;
  for await (const item of queue) {
    out.push(item);
    if (out.length >= n) break;
  }
  return out;
}

function setup(script: Reply[]) {
  const realm = scriptedRealm(script);
  const time = fakeClock();
  const client = mockClient(realm.agent, { clock: time.clock });
  clients.push(client);
  return { ...realm, client, time };
}

const events = (...evs: unknown[]) => ({ status: 200, body: ok({ events: evs }) });

describe('EventQueue', () => {
  it('yields events in order, skips heartbeats, folds flags in, and acknowledges by last_event_id', async () => {
    const { client, polls, registrations } = setup([
      events(
        {
          type: 'message',
          id: 0,
          flags: ['mentioned'],
          message: streamMessage({ id: 150, flags: undefined }),
        },
        { type: 'heartbeat', id: 1 },
      ),
      events({ type: 'presence', id: 4, email: 'x' }, { type: 'message', id: 5, message: { id: 'broken' } }),
      events({
        type: 'typing',
        op: 'start',
        id: 7,
        message_type: 'direct',
        sender: { user_id: 8, email: 'a@b' },
      }),
    ]);
    const queue = await EventQueue.open(client, { eventTypes: ['message', 'typing'], applyMarkdown: false });
    expect(queue.queueId).toBe('q1');
    expect(registrations[0]?.get('event_types')).toBe('["message","typing"]');
    expect(registrations[0]?.get('apply_markdown')).toBe('false');
    const items = await take(queue, 4);
    expect(items.map((i) => i.kind)).toEqual(['event', 'unknown', 'invalid', 'event']);
    const first = items[0];
    expect(first?.kind === 'event' && first.event.type === 'message' && first.event.message.flags).toEqual([
      'mentioned',
    ]);
    expect(polls.map((p) => p.lastEventId)).toEqual(['-1', '1', '5']);
    expect(queue.lastEventId).toBe(7);
    expect(queue.lastMessageId).toBe(150);
  });

  it('yields heartbeats when asked', async () => {
    const { client } = setup([events({ type: 'heartbeat', id: 0 })]);
    const queue = await EventQueue.open(client, { yieldHeartbeats: true });
    const [item] = await take(queue, 1);
    expect(item).toEqual({ kind: 'event', event: { type: 'heartbeat', id: 0 } });
  });

  it('re-registers on BAD_EVENT_QUEUE_ID and reports the gap before new events', async () => {
    const { client, polls, registrations } = setup([
      events({ type: 'message', id: 3, flags: [], message: streamMessage({ id: 160 }) }),
      { status: 400, body: zulipError('BAD_EVENT_QUEUE_ID', 'Bad event queue ID: q1', { queue_id: 'q1' }) },
      events({ type: 'message', id: 0, flags: [], message: streamMessage({ id: 205 }) }),
    ]);
    const queue = await EventQueue.open(client, { narrow: [['channel', 'general']] });
    const items = await take(queue, 3);
    expect(items.map((i) => i.kind)).toEqual(['event', 'gap', 'event']);
    const gap = items[1];
    if (gap?.kind !== 'gap') throw new Error('expected a gap');
    expect(gap).toMatchObject({
      lostQueueId: 'q1',
      lastEventId: 3,
      lastMessageId: 160,
      newQueueId: 'q2',
      newMaxMessageId: 200,
      error: { code: 'CORE_QUEUE_LOST' },
    });
    expect((gap.error.cause as ZmcpError).code).toBe('CORE_BAD_REQUEST');
    expect(registrations).toHaveLength(2);
    expect(registrations[1]?.get('narrow')).toBe('[["channel","general"]]');
    expect(polls.at(-1)).toEqual({ queueId: 'q2', lastEventId: '-1' });
    expect(queue.queueId).toBe('q2');
  });

  it('backs off with jittered, capped, growing delays through failures, then resumes', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const { client, time } = setup([
      { status: 502, body: 'bad gateway' },
      { error: refused },
      { error: refused },
      { error: refused },
      { status: 429, body: zulipError('RATE_LIMIT_HIT', 'limit', { 'retry-after': 7 }) },
      events({ type: 'heartbeat', id: 0 }, { type: 'presence', id: 1 }),
    ]);
    const queue = await EventQueue.open(client, {
      backoff: { initialMs: 100, maxMs: 500 },
      random: () => 0.5,
      clock: time.clock,
    });
    const items = await take(queue, 1);
    expect(items[0]?.kind).toBe('unknown');
    expect(time.sleeps).toEqual([75, 150, 300, 375, 7000]);
  });

  it('polls again at once after a long poll outlives its deadline', async () => {
    const { client, time, polls } = setup([
      { status: 200, body: ok({ events: [] }), delay: 2_000 },
      events({ type: 'presence', id: 0 }),
    ]);
    const queue = await EventQueue.open(client, { longPollTimeoutMs: 30, clock: time.clock });
    await take(queue, 1);
    expect(time.sleeps).toEqual([]);
    expect(polls.length).toBeGreaterThanOrEqual(1);
  });

  it('ends with the error when Zulip rejects the credentials', async () => {
    const { client } = setup([{ status: 401, body: zulipError('UNAUTHORIZED', 'Invalid API key') }]);
    const queue = await EventQueue.open(client);
    await expect(take(queue, 1)).rejects.toMatchObject({ code: 'CORE_UNAUTHORIZED' });
    expect(queue.closed).toBe(true);
  });

  it('close() ends a waiting iterator and deletes the queue', async () => {
    const { client, deleted } = setup([]);
    const queue = await EventQueue.open(client);
    const iterator = queue[Symbol.asyncIterator]();
    const pending = iterator.next();
    await queue.close();
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
    expect(deleted).toEqual(['q1']);
    await queue.close(); // idempotent
    expect(deleted).toEqual(['q1']);
  });

  it('an aborted signal stops the queue; leaving the loop deletes it', async () => {
    const { client, deleted } = setup([events({ type: 'presence', id: 0 })]);
    const controller = new AbortController();
    const queue = await EventQueue.open(client, { signal: controller.signal });
    await take(queue, 1); // breaks out of the loop
    expect(deleted).toEqual(['q1']);

    const { client: client2, deleted: deleted2 } = setup([]);
    const c2 = new AbortController();
    const q2 = await EventQueue.open(client2, { signal: c2.signal });
    const pending = q2[Symbol.asyncIterator]().next();
    c2.abort();
    await expect(pending).resolves.toMatchObject({ done: true });
    expect(deleted2).toEqual(['q1']);
    await expect(EventQueue.open(client2, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      code: 'CORE_ABORTED',
    });
  });

  it('can be iterated only once', async () => {
    const { client } = setup([]);
    const queue = await EventQueue.open(client);
    queue[Symbol.asyncIterator]();
    expect(() => queue[Symbol.asyncIterator]()).toThrow(
      expect.objectContaining({ code: 'CORE_INVALID_ARGUMENT' }),
    );
    await queue.close();
  });

  it('nextBatch hands over every buffered item in one call and polls again only when asked', async () => {
    const { client, polls } = setup([
      events(
        { type: 'message', id: 0, message: streamMessage({ id: 150 }) },
        { type: 'heartbeat', id: 1 },
        { type: 'message', id: 2, message: streamMessage({ id: 151 }) },
        { type: 'presence', id: 3 },
      ),
      events({ type: 'message', id: 4, message: streamMessage({ id: 152 }) }),
    ]);
    const queue = await EventQueue.open(client, { eventTypes: ['message'] });
    const first = await queue.nextBatch();
    expect(first?.map((i) => i.kind)).toEqual(['event', 'event', 'unknown']);
    // Nothing acknowledged yet: the second poll starts only with the next call.
    expect(polls.map((p) => p.lastEventId)).toEqual(['-1']);
    const second = await queue.nextBatch();
    expect(second).toHaveLength(1);
    expect(polls.map((p) => p.lastEventId)).toEqual(['-1', '3']);
    const waiting = queue.nextBatch();
    await queue.close();
    await expect(waiting).resolves.toBeUndefined();
    await expect(queue.nextBatch()).resolves.toBeUndefined();
  });

  it('nextBatch shares its position with the iterator, and serves concurrent calls in turn', async () => {
    const { client } = setup([
      events(
        { type: 'message', id: 0, message: streamMessage({ id: 150 }) },
        { type: 'message', id: 1, message: streamMessage({ id: 151 }) },
        { type: 'message', id: 2, message: streamMessage({ id: 152 }) },
      ),
      events({ type: 'message', id: 3, message: streamMessage({ id: 153 }) }),
    ]);
    const queue = await EventQueue.open(client, { eventTypes: ['message'] });
    const it = queue[Symbol.asyncIterator]();
    const one = await it.next();
    expect(one.done === false && one.value.kind === 'event' && one.value.event.id).toBe(0);
    const [rest, later] = await Promise.all([queue.nextBatch(), queue.nextBatch()]);
    const ids = (batch: QueueItem[] | undefined) =>
      (batch ?? []).map((i) => (i.kind === 'event' ? i.event.id : undefined));
    expect(ids(rest)).toEqual([1, 2]);
    expect(ids(later)).toEqual([3]);
    await queue.close();
  });

  it('nextBatch reports a gap in its batch and rethrows a fatal error once', async () => {
    const { client } = setup([
      { status: 400, body: zulipError('BAD_EVENT_QUEUE_ID', 'Bad event queue id: q1') },
      events({ type: 'message', id: 0, message: streamMessage({ id: 250 }) }),
      { status: 401, body: zulipError('UNAUTHORIZED', 'Invalid API key') },
    ]);
    const queue = await EventQueue.open(client);
    expect((await queue.nextBatch())?.map((i) => i.kind)).toEqual(['gap']);
    expect((await queue.nextBatch())?.map((i) => i.kind)).toEqual(['event']);
    await expect(queue.nextBatch()).rejects.toMatchObject({ code: 'CORE_UNAUTHORIZED' });
    await expect(queue.nextBatch()).resolves.toBeUndefined();
  });

  it('cannot register in read-only mode', async () => {
    const { agent } = scriptedRealm([]);
    const client = mockClient(agent, { readOnly: true });
    clients.push(client);
    await expect(EventQueue.open(client)).rejects.toMatchObject({ code: 'CORE_READ_ONLY' });
  });
});
