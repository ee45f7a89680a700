import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../src/client/logger.js';
import { EventQueue, type QueueItem } from '../src/events/event-queue.js';
import { narrow } from '../src/history/narrow.js';
import { HistoryPager } from '../src/history/pager.js';
import { startProxy } from './helpers/proxy.js';
import { type SimRealmFixture, startSimRealm } from './helpers/sim.js';

let f: SimRealmFixture | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  await f?.close();
  f = undefined;
});

function send(fx: SimRealmFixture, content: string, topic = 'deploys'): number {
  return fx.sim.realm.sendMessage({
    senderId: fx.alice.userId,
    type: 'stream',
    stream: 'general',
    topic,
    content,
  });
}

async function next(it: AsyncIterator<QueueItem>): Promise<QueueItem> {
  const r = await it.next();
  if (r.done) throw new Error('the queue ended');
  return r.value;
}

function messageIdOf(item: QueueItem): number | undefined {
  return item.kind === 'event' && item.event.type === 'message' ? item.event.message.id : undefined;
}

/** A logger that resolves a promise the first time a line matching `pattern` is logged. */
function waitForLog(pattern: RegExp) {
  let resolve!: () => void;
  const seen = new Promise<void>((r) => (resolve = r));
  const hit = (message: string) => {
    if (pattern.test(message)) resolve();
  };
  const logger: Logger = { debug: hit, info: hit, warn: hit, error: hit };
  return { logger, seen };
}

describe('EventQueue against the simulator', () => {
  it('delivers messages live, with their flags', async () => {
    f = await startSimRealm();
    const queue = await EventQueue.open(f.client, { eventTypes: ['message'], applyMarkdown: false });
    const it = queue[Symbol.asyncIterator]();
    const pending = next(it);
    const id = send(f, 'hello @**Helper Bot**');
    const item = await pending;
    expect(messageIdOf(item)).toBe(id);
    if (item.kind === 'event' && item.event.type === 'message') {
      expect(item.event.message.content).toBe('hello @**Helper Bot**');
      expect(item.event.message.flags).toContain('mentioned');
    }
    await queue.close();
    expect(f.sim.queues(f.bot.userId)).toEqual([]);
  });

  it('nextBatch returns what one poll brought in a single call', async () => {
    f = await startSimRealm();
    const queue = await EventQueue.open(f.client, { eventTypes: ['message'], applyMarkdown: false });
    const fx = f;
    const ids = [send(fx, 'one'), send(fx, 'two'), send(fx, 'three')];
    const batch = await queue.nextBatch();
    expect(batch?.map(messageIdOf)).toEqual(ids);
    const pending = queue.nextBatch();
    const later = send(fx, 'four');
    expect((await pending)?.map(messageIdOf)).toEqual([later]);
    await queue.close();
    await expect(queue.nextBatch()).resolves.toBeUndefined();
  });

  it('acknowledges heartbeats without yielding them, or yields them on request', async () => {
    f = await startSimRealm({ heartbeatIntervalMs: 20 });
    const quiet = await EventQueue.open(f.client, { eventTypes: ['message'] });
    const it = quiet[Symbol.asyncIterator]();
    const pending = next(it);
    await vi.waitFor(() => expect(quiet.lastEventId).toBeGreaterThanOrEqual(1), { timeout: 5_000 });
    const id = send(f, 'after heartbeats');
    expect(messageIdOf(await pending)).toBe(id);
    await quiet.close();

    const loud = await EventQueue.open(f.client, { eventTypes: ['message'], yieldHeartbeats: true });
    const [first] = await (async () => {
      for await (const item of loud) return [item];
      return [];
    })();
    expect(first).toMatchObject({ kind: 'event', event: { type: 'heartbeat' } });
  });

  it('heals a queue that expired while the consumer was busy: a gap record to refetch from', async () => {
    f = await startSimRealm();
    const queue = await EventQueue.open(f.client, { eventTypes: ['message'], applyMarkdown: false });
    const it = queue[Symbol.asyncIterator]();
    const firstId = send(f, 'one');
    expect(messageIdOf(await next(it))).toBe(firstId);
    // The consumer holds; meanwhile the queue expires and a message arrives that it will never carry.
    f.sim.expireQueue(queue.queueId);
    const lostId = send(f, 'lost');
    const gap = await next(it);
    if (gap.kind !== 'gap') throw new Error(`expected a gap, got ${gap.kind}`);
    expect(gap.lastMessageId).toBe(firstId);
    expect(gap.newMaxMessageId).toBeGreaterThanOrEqual(lostId);
    expect(gap.error.code).toBe('CORE_QUEUE_LOST');
    // What the gap says is enough to heal from history.
    const pager = new HistoryPager(f.client, { narrow: narrow().channel('general').build() });
    const healed = await pager.since(gap.lastMessageId ?? 0, 100);
    expect(healed.messages.map((m) => m.id)).toEqual([lostId]);
    // And the new queue carries on.
    const laterId = send(f, 'later');
    expect(messageIdOf(await next(it))).toBe(laterId);
    await queue.close();
  });

  it('heals a queue that expires in the middle of a long poll', async () => {
    f = await startSimRealm();
    const queue = await EventQueue.open(f.client, { eventTypes: ['message'] });
    const lost = queue.queueId;
    const it = queue[Symbol.asyncIterator]();
    const pending = next(it);
    await vi.waitFor(() => expect(f?.sim.queues(f.bot.userId)[0]?.polling).toBe(true), { timeout: 5_000 });
    f.sim.expireQueue(lost);
    const gap = await pending;
    expect(gap).toMatchObject({ kind: 'gap', lostQueueId: lost, lastEventId: -1 });
    expect(queue.queueId).not.toBe(lost);
    await queue.close();
  });

  it('rides out a server restart: same queue if it survived, a gap if it did not', async () => {
    f = await startSimRealm();
    const queue = await EventQueue.open(f.client, {
      eventTypes: ['message'],
      backoff: { initialMs: 5, maxMs: 20 },
    });
    const it = queue[Symbol.asyncIterator]();
    let pending = next(it);
    await vi.waitFor(() => expect(f?.sim.queues(f.bot.userId)[0]?.polling).toBe(true), { timeout: 5_000 });
    await f.sim.restart({ keepQueues: true });
    const kept = send(f, 'after a restart');
    expect(messageIdOf(await pending)).toBe(kept);

    pending = next(it);
    await vi.waitFor(() => expect(f?.sim.queues(f.bot.userId)[0]?.polling).toBe(true), { timeout: 5_000 });
    await f.sim.restart({ keepQueues: false });
    expect((await pending).kind).toBe('gap');
    await queue.close();
  });

  it('keeps retrying while the realm refuses connections, and resumes when it is back', async () => {
    f = await startSimRealm();
    const proxy = await startProxy(Number(new URL(f.sim.url).port));
    cleanups.push(() => proxy.close());
    const failed = waitForLog(/event poll failed/);
    const client = f.clientFor(f.bot.userId, { site: proxy.url });
    const queue = await EventQueue.open(client, {
      eventTypes: ['message'],
      backoff: { initialMs: 5, maxMs: 20 },
      logger: failed.logger,
    });
    const it = queue[Symbol.asyncIterator]();
    const pending = next(it);
    await vi.waitFor(() => expect(f?.sim.queues(f.bot.userId)[0]?.polling).toBe(true), { timeout: 5_000 });
    await proxy.down();
    await failed.seen;
    const during = send(f, 'sent while the realm was unreachable');
    await proxy.up();
    // The queue survived on the server, so nothing is lost and no gap is reported.
    expect(messageIdOf(await pending)).toBe(during);
    await queue.close();
  });

  it('stops on the signal while the realm is down', async () => {
    f = await startSimRealm();
    const proxy = await startProxy(Number(new URL(f.sim.url).port));
    cleanups.push(() => proxy.close());
    const failed = waitForLog(/event poll failed/);
    const client = f.clientFor(f.bot.userId, { site: proxy.url });
    const controller = new AbortController();
    const queue = await EventQueue.open(client, {
      signal: controller.signal,
      backoff: { initialMs: 60_000, maxMs: 60_000 },
      logger: failed.logger,
    });
    const pending = queue[Symbol.asyncIterator]().next();
    await proxy.down();
    await failed.seen;
    controller.abort();
    await expect(pending).resolves.toMatchObject({ done: true });
  });
});
