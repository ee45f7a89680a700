import { ZulipClient } from '@zmcp/core';
import { type SimUser, startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MonitorStore } from './monitor-store.js';
import { MonitorWatcher, type MonitorWatcherEvent } from './monitor-watcher.js';
import { MemoryStateStore } from './state-store.js';

interface Realm {
  bot: SimUser;
  owner: SimUser;
  ann: SimUser;
  general: number;
  dev: number;
  random: number;
}

let sim: ZulipSim;
let realm: Realm;
let client: ZulipClient;
let readOnlyClient: ZulipClient;
const watchers: MonitorWatcher[] = [];

beforeAll(async () => {
  let seeded: Realm | undefined;
  sim = await startZulipSim({
    rateLimit: false,
    seed(r) {
      const ann = r.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' });
      const bot = r.addUser({ fullName: 'Watcher Bot', email: 'bot@example.test', isBot: true, botType: 1 });
      const owner = r.addUser({ fullName: 'Olu Owner', email: 'owner@example.test', role: 100 });
      const both = [ann.userId, bot.userId];
      seeded = {
        bot,
        owner,
        ann,
        general: r.addStream({ name: 'general', subscribers: both }).streamId,
        dev: r.addStream({ name: 'dev', subscribers: both }).streamId,
        random: r.addStream({ name: 'random', subscribers: both }).streamId,
      };
    },
  });
  realm = seeded as Realm;
  client = new ZulipClient(sim.credentials(realm.bot.userId));
  readOnlyClient = new ZulipClient({ ...sim.credentials(realm.bot.userId), readOnly: true });
});

afterEach(async () => {
  for (const w of watchers.splice(0)) await w.close();
});

afterAll(async () => {
  await client.close();
  await readOnlyClient.close();
  await sim.close();
});

/** A listener that queues what it hears, and lets a test wait for the next event matching a test. */
function recorder() {
  const seen: MonitorWatcherEvent[] = [];
  const waiting: { test: (e: MonitorWatcherEvent) => boolean; resolve: (e: MonitorWatcherEvent) => void }[] =
    [];
  let consumed = 0;
  const listener = (event: MonitorWatcherEvent) => {
    seen.push(event);
    for (const w of [...waiting]) {
      if (w.test(event)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(event);
      }
    }
  };
  return {
    seen,
    listener,
    /** The next event (after the ones already returned) matching `test`. */
    next(test: (e: MonitorWatcherEvent) => boolean): Promise<MonitorWatcherEvent> {
      for (let i = consumed; i < seen.length; i++) {
        const e = seen[i] as MonitorWatcherEvent;
        if (test(e)) {
          consumed = i + 1;
          return Promise.resolve(e);
        }
      }
      return new Promise((resolve) => {
        waiting.push({
          test,
          resolve: (e) => {
            consumed = seen.length;
            resolve(e);
          },
        });
      });
    },
  };
}

const isLive = (e: MonitorWatcherEvent) => e.kind === 'state' && e.status.state === 'live';
const isStreams = (e: MonitorWatcherEvent) => e.kind === 'streams';

function post(stream: string, content: string, sender: SimUser = realm.ann): number {
  return sim.realm.sendMessage({ senderId: sender.userId, type: 'stream', stream, topic: 't', content });
}

async function started(streams: string[] = ['general', 'dev']) {
  const monitor = new MonitorStore(new MemoryStateStore(), 'agent');
  const ids: Record<string, number> = { general: realm.general, dev: realm.dev, random: realm.random };
  await monitor.start(streams.map((name) => ({ name, streamId: ids[name] as number })));
  const watcher = new MonitorWatcher({ client, monitor, selfUserId: realm.bot.userId });
  watchers.push(watcher);
  return { monitor, watcher };
}

describe('MonitorWatcher', () => {
  it('registers nothing until someone watches', async () => {
    const { watcher } = await started();
    expect(watcher.status).toEqual({ state: 'idle' });
    expect(sim.queues(realm.bot.userId)).toEqual([]);
  });

  it('reports a human message on a monitored stream, and only monitored streams', async () => {
    const { watcher } = await started();
    const rec = recorder();
    const unwatch = watcher.watch(rec.listener);
    await rec.next(isLive);
    expect(watcher.status.state).toBe('live');
    expect(sim.queues(realm.bot.userId)).toHaveLength(1);
    // Not monitored, then the bot's own message, then /nobots: none reported; the next one is.
    post('random', 'elsewhere');
    post('general', 'my own words', realm.bot);
    post('general', 'keep this away /nobots');
    post('dev', 'hello');
    expect(await rec.next(isStreams)).toEqual({
      kind: 'streams',
      streams: [{ name: 'dev', streamId: realm.dev }],
      cause: 'message',
    });
    await unwatch();
  });

  it('reports edits, moves and deletions', async () => {
    const { watcher } = await started();
    const rec = recorder();
    const unwatch = watcher.watch(rec.listener);
    await rec.next(isLive);
    const id = post('general', 'first');
    await rec.next(isStreams);
    sim.realm.editMessage(realm.ann.userId, id, { content: 'first, edited' });
    expect(await rec.next(isStreams)).toMatchObject({
      cause: 'update_message',
      streams: [{ name: 'general' }],
    });
    sim.realm.renderingUpdate(id, '<p>re-rendered</p>');
    sim.realm.editMessage(realm.ann.userId, id, {
      streamId: realm.dev,
      sendNotificationToOldThread: false,
      sendNotificationToNewThread: false,
    });
    expect(await rec.next(isStreams)).toMatchObject({
      cause: 'update_message',
      streams: [{ name: 'dev' }, { name: 'general' }],
    });
    sim.realm.deleteMessage(realm.owner.userId, id);
    expect(await rec.next(isStreams)).toMatchObject({ cause: 'delete_message', streams: [{ name: 'dev' }] });
    await unwatch();
  });

  it('follows the monitored set as it changes', async () => {
    const { watcher, monitor } = await started(['general']);
    const rec = recorder();
    const unwatch = watcher.watch(rec.listener);
    await rec.next(isLive);
    await monitor.start([{ name: 'random', streamId: realm.random }]);
    post('random', 'now watched');
    expect(await rec.next(isStreams)).toMatchObject({ streams: [{ name: 'random' }] });
    await unwatch();
  });

  it('after a queue expiry reports every monitored stream, then keeps reporting', async () => {
    const { watcher } = await started();
    const rec = recorder();
    const unwatch = watcher.watch(rec.listener);
    await rec.next(isLive);
    const before = sim.queues(realm.bot.userId)[0]?.queueId;
    sim.expireAllQueues();
    expect(await rec.next(isStreams)).toEqual({
      kind: 'streams',
      streams: [
        { name: 'dev', streamId: realm.dev },
        { name: 'general', streamId: realm.general },
      ],
      cause: 'gap',
    });
    const after = sim.queues(realm.bot.userId);
    expect(after).toHaveLength(1);
    expect(after[0]?.queueId).not.toBe(before);
    post('general', 'after the gap');
    expect(await rec.next(isStreams)).toMatchObject({ cause: 'message', streams: [{ name: 'general' }] });
    await unwatch();
  });

  it('keeps one queue for many listeners and deletes it when the last one leaves', async () => {
    const { watcher } = await started();
    const a = recorder();
    const b = recorder();
    const unwatchA = watcher.watch(a.listener);
    const unwatchB = watcher.watch(b.listener);
    await a.next(isLive);
    expect(watcher.listenerCount).toBe(2);
    expect(sim.queues(realm.bot.userId)).toHaveLength(1);
    await unwatchA();
    expect(sim.queues(realm.bot.userId)).toHaveLength(1);
    post('general', 'for b');
    expect(await b.next(isStreams)).toMatchObject({ streams: [{ name: 'general' }] });
    expect(a.seen.filter(isStreams)).toEqual([]);
    await unwatchB();
    expect(sim.queues(realm.bot.userId)).toEqual([]);
    expect(watcher.status).toEqual({ state: 'idle' });
  });

  it('starts again for a new listener after stopping', async () => {
    const { watcher } = await started();
    const first = recorder();
    const stop = watcher.watch(first.listener);
    await first.next(isLive);
    await stop();
    const second = recorder();
    const unwatch = watcher.watch(second.listener);
    await second.next(isLive);
    post('dev', 'again');
    expect(await second.next(isStreams)).toMatchObject({ streams: [{ name: 'dev' }] });
    await unwatch();
    expect(sim.queues(realm.bot.userId)).toEqual([]);
  });

  it('does not run in read-only mode, and says why', async () => {
    const monitor = new MonitorStore(new MemoryStateStore(), 'agent');
    await monitor.start(['general']);
    const watcher = new MonitorWatcher({ client: readOnlyClient, monitor });
    watchers.push(watcher);
    expect(watcher.status.state).toBe('unavailable');
    expect(watcher.status.detail).toMatch(/read-only/i);
    const rec = recorder();
    const unwatch = watcher.watch(rec.listener);
    expect(watcher.status.state).toBe('unavailable');
    expect(sim.queues(realm.bot.userId)).toEqual([]);
    await unwatch();
    expect(watcher.status.state).toBe('unavailable');
  });

  it('reports a failure it cannot recover from', async () => {
    const monitor = new MonitorStore(new MemoryStateStore(), 'agent');
    const bad = new ZulipClient({ ...sim.credentials(realm.bot.userId), apiKey: 'x'.repeat(32) });
    const watcher = new MonitorWatcher({ client: bad, monitor });
    watchers.push(watcher);
    const rec = recorder();
    const unwatch = watcher.watch(rec.listener);
    const failed = await rec.next((e) => e.kind === 'state' && e.status.state === 'failed');
    expect(failed).toMatchObject({ status: { code: 'CORE_UNAUTHORIZED' } });
    await unwatch();
    await bad.close();
  });

  it('close stops the queue and ignores later listeners', async () => {
    const { watcher } = await started();
    const rec = recorder();
    watcher.watch(rec.listener);
    await rec.next(isLive);
    await watcher.close();
    expect(sim.queues(realm.bot.userId)).toEqual([]);
    const late = recorder();
    await watcher.watch(late.listener)();
    expect(sim.queues(realm.bot.userId)).toEqual([]);
    expect(late.seen).toEqual([]);
  });
});
