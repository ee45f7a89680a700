import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MonitorHarness, nextChange, startMonitorHarness } from './monitor-fixtures.js';

const SUMMARY = 'zulip://unread/summary';
const STATUS = 'zulip://monitoring/status';
const GENERAL = 'zulip://channel/general/unread';

describe('monitor resource changes', () => {
  let m: MonitorHarness;
  beforeAll(async () => {
    m = await startMonitorHarness();
    await m.call('start_monitoring', { streams: ['general', 'dev'] });
  });
  afterAll(async () => {
    await m.close();
  });

  /** Subscribes, and resolves once the watcher's event queue runs. */
  async function subscribeLive(test: (uri: string) => boolean) {
    let live!: () => void;
    const running = new Promise<void>((resolve) => {
      live = resolve;
    });
    const stop = m.catalog.changes.subscribe(() => {
      if (m.watcher.status.state === 'live') live();
    });
    const change = nextChange(m.catalog, test);
    await running;
    await stop();
    return change;
  }

  it('reports the URIs of a stream a human posts in, once the queue runs', async () => {
    const change = await subscribeLive((uri) => uri === GENERAL);
    expect(m.h.sim.queues(m.h.realm.bot.userId)).toHaveLength(1);
    m.post('general', 'hello');
    expect(await change.uri).toBe(GENERAL);
    expect(change.heard).toContain(SUMMARY);
    expect(change.heard.indexOf(SUMMARY)).toBeLessThan(change.heard.indexOf(GENERAL));
    expect(change.heard).not.toContain('zulip://channel/dev/unread');
    await change.unsubscribe();
    expect(m.h.sim.queues()).toEqual([]);
  });

  it('after a queue expiry still delivers the next change', async () => {
    const gap = await subscribeLive((uri) => uri === 'zulip://channel/dev/unread');
    m.h.sim.expireAllQueues();
    // A gap reports every monitored stream.
    expect(await gap.uri).toBe('zulip://channel/dev/unread');
    expect(gap.heard).toContain(GENERAL);
    const next = nextChange(m.catalog, (uri) => uri === GENERAL);
    m.post('general', 'after the gap');
    expect(await next.uri).toBe(GENERAL);
    await next.unsubscribe();
    expect(m.h.sim.queues()).toHaveLength(1);
    await gap.unsubscribe();
    expect(m.h.sim.queues()).toEqual([]);
  });

  it('reports what the monitor tools change', async () => {
    // Without live updates, tool changes are still reported.
    await m.watcher.close();
    const started = nextChange(m.catalog, (uri) => uri === 'zulip://channel/dev/unread');
    await m.call('stop_monitoring', { streams: ['dev'] });
    expect(await started.uri).toBe('zulip://channel/dev/unread');
    expect(started.heard.slice(0, 2)).toEqual([STATUS, SUMMARY]);
    const moved = nextChange(m.catalog, (uri) => uri === GENERAL);
    m.post('general', 'to read');
    await m.call('get_unread_messages', {});
    expect(await moved.uri).toBe(GENERAL);
    expect(moved.heard).toEqual([SUMMARY, STATUS, GENERAL]);
    // A peek moves nothing and reports nothing.
    const peek = nextChange(m.catalog, () => true);
    m.post('general', 'peeked');
    await m.call('get_unread_messages', { advance: false });
    expect(peek.heard).toEqual([]);
    for (const c of [started, moved, peek]) await c.unsubscribe();
    expect(m.catalog.changes.listenerCount).toBe(0);
    expect(m.h.sim.queues()).toEqual([]);
  });
});
