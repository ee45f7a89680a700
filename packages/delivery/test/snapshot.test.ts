// DeliveryEngine.snapshot and onProgress: the read-only figures a status page and metrics show.
import { afterEach, describe, expect, it } from 'vitest';
import type { DeliveryProgress } from '../src/index.js';
import { closeFixtures, startFixture } from './helpers/engine-fixture.js';

afterEach(closeFixtures);

describe('DeliveryEngine.snapshot', () => {
  it('reports a channel caught up, then its lag while the host does not accept, then caught up again', async () => {
    let now = Date.now();
    const f = await startFixture();
    const engine = f.engine({ now: () => now });
    await engine.start();
    await engine.openChannel('zulip:general');
    const first = f.send('general', 'one');
    await f.store.until((s) => s.channels[`s${f.general}`]?.w === first);
    const caughtUp = engine.snapshot().channels.find((c) => c.channel.id === 'zulip:general');
    expect(caughtUp).toMatchObject({
      open: true,
      watermark: first,
      newestId: first,
      pending: 0,
      lagSeconds: 0,
    });

    // The host stops accepting: the message waits, and its age is the channel's lag.
    let refusing = true;
    f.sink.onIncoming = (b) => ({ kind: 'answered', accepted: refusing ? [] : b.items.map((i) => i.id) });
    const second = f.send('general', 'two');
    await f.sink.until(() => f.sink.batches.some((b) => b.items.some((i) => i.messageId === second)));
    now += 90_000;
    const behind = engine.snapshot().channels.find((c) => c.channel.id === 'zulip:general');
    expect(behind?.watermark).toBe(first);
    expect(behind?.newestId).toBe(second);
    expect(behind?.lagSeconds).toBeGreaterThanOrEqual(89);

    refusing = false;
    await f.store.until((s) => s.channels[`s${f.general}`]?.w === second);
    const again = engine.snapshot().channels.find((c) => c.channel.id === 'zulip:general');
    expect(again).toMatchObject({ watermark: second, pending: 0, lagSeconds: 0, recovering: false });
    expect(engine.snapshot().totals).toMatchObject({ accepted: 2, dropped: 0 });
    expect(engine.snapshot().totals.notAccepted).toBeGreaterThan(0);
  });

  it('counts ambient traffic dropped, and shows the filters plane and the event queue', async () => {
    const f = await startFixture();
    const engine = f.engine();
    await engine.start();
    const ambient = f.send('random', 'just chatting');
    const mention = f.send('random', 'ping @**Helper Bot**');
    await f.store.until((s) => s.channels[`s${f.random}`]?.w === mention);
    const snap = engine.snapshot();
    expect(snap.channels.find((c) => c.channel.id === 'zulip:random')).toMatchObject({
      open: false,
      missed: 1,
      watermark: mention,
    });
    expect(snap.totals.dropped).toBe(1);
    expect(snap.head).toBeGreaterThanOrEqual(ambient);
    expect(snap.eventQueue.registeredAt).toBeTypeOf('number');
    expect(snap.eventQueue.lastEventAt).toBeTypeOf('number');
    expect(snap.filters).toMatchObject({ stale: false, location: 'memory' });
    expect(snap.filters.digest).toMatch(/^[0-9a-f]{12}$/);
    // The digest follows the filters in force.
    const before = snap.filters.digest;
    f.filters.replace({ mutedStreams: ['random'] });
    expect(engine.snapshot().filters.digest).not.toBe(before);
    // No message content in it.
    expect(JSON.stringify(engine.snapshot())).not.toContain('chatting');
  });

  it('reports the catch-up sweep and the sweep after a queue expiry as progress', async () => {
    const f = await startFixture();
    const first = f.engine();
    await first.start();
    await first.close();
    const missedIds = [f.send('general', 'while away 1'), f.send('general', 'while away 2')];
    const progress: DeliveryProgress[] = [];
    let healed: () => void = () => {};
    const reRegistered = new Promise<void>((resolve) => {
      healed = resolve;
    });
    const engine = f.engine({
      onProgress: (p) => {
        progress.push(p);
        if (p.work === 're-registration' && p.outcome === 'done') healed();
      },
    });
    await engine.start();
    const catchUp = progress.filter((p) => p.work === 'catch-up');
    expect(catchUp[0]).toMatchObject({ throughId: missedIds[1], messages: 0 });
    expect(catchUp.at(-1)).toMatchObject({ outcome: 'done', reachedId: missedIds[1] });
    expect(catchUp.some((p) => p.messages === 2 && p.outcome === undefined)).toBe(true);

    await engine.openChannel('zulip:general');
    const block = f.sim.faults.add({ method: 'GET', path: '/api/v1/events', latencyMs: 300 });
    const during = f.send('general', 'during');
    f.sim.expireAllQueues();
    block.remove();
    await reRegistered;
    await f.sink.until(() => f.sink.acceptedIds('zulip:general').includes(during));
    expect(engine.snapshot().eventQueue.reRegistrations).toBe(1);
  });
});
