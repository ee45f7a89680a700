import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileStateStore, type StateKey } from '@zmcp/delivery';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFixtures, RecordingStore, startFixture } from './helpers/engine-fixture.js';

const dirs: string[] = [];
afterEach(async () => {
  await closeFixtures();
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe('channel registry', () => {
  it('discovers subscribed streams and recent DMs, and describes them by id', async () => {
    const f = await startFixture();
    f.dm(f.bo, 'an old DM');
    f.sim.realm.addStream({ name: 'not mine', subscribers: [f.ann] });
    const engine = f.engine();
    const report = await engine.start();
    expect(report.channels.map((c) => c.channel)).toEqual([
      { id: `zulip:dm:${f.bo}`, kind: 'dm', label: 'DM with Bo', userIds: [f.bo], private: true },
      { id: 'zulip:general', kind: 'stream', label: '#general', streamId: f.general, private: false },
      { id: 'zulip:random', kind: 'stream', label: '#random', streamId: f.random, private: false },
      { id: 'zulip:secret', kind: 'stream', label: '#secret', streamId: f.secret, private: true },
    ]);
  });

  it('keeps a refused channel refused until refresh asks again; silence is pending, not refusal', async () => {
    const f = await startFixture();
    // The host refuses random, confirms general, says nothing of the rest.
    f.sink.onAnnounce = (change) => ({
      kind: 'answered',
      results: change.added
        .filter((d) => d.id === 'zulip:random' || d.id === 'zulip:general')
        .map((d) => ({ id: d.id, accepted: d.id === 'zulip:general' })),
    });
    const engine = f.engine();
    await engine.start();
    const info = (id: string) => engine.channels().find((c) => c.channel.id === id);
    expect(info('zulip:random')).toMatchObject({ refused: true, open: false, pendingAnnouncement: false });
    expect(info('zulip:general')).toMatchObject({ refused: false, pendingAnnouncement: false });
    expect(info('zulip:secret')).toMatchObject({ refused: false, pendingAnnouncement: true });
    // A new DM on the message path is announced once, not with the retry set.
    const announced = f.sink.announcements.length;
    f.dm(f.bo, 'hello');
    await f.sink.until(() => f.sink.acceptedPushes.length === 1);
    expect(f.sink.announcements.slice(announced).map((a) => a.added.map((d) => d.id))).toEqual([
      [`zulip:dm:${f.bo}`],
    ]);
    // Asking again is the agent's call: refresh re-announces the pending and the refused.
    f.sink.onAnnounce = (change) => ({
      kind: 'answered',
      results: change.added.map((d) => ({ id: d.id, accepted: true })),
    });
    const refresh = await engine.refreshChannels();
    expect(
      f.sink.announcements
        .at(-1)
        ?.added.map((d) => d.id)
        .sort(),
    ).toEqual([`zulip:dm:${f.bo}`, 'zulip:random', 'zulip:secret'].sort());
    expect(refresh.pendingAnnouncement).toEqual([]);
    expect(refresh.refused).toEqual([]);
    expect(info('zulip:random')?.refused).toBe(false);
  });

  it('an announcement that times out leaves channels usable and pending; opening one confirms it', async () => {
    const f = await startFixture();
    f.sink.onAnnounce = () => 'hang';
    const engine = f.engine({ announceTimeoutMs: 30 });
    await engine.start();
    expect(engine.channels().every((c) => c.pendingAnnouncement)).toBe(true);
    await engine.openChannel('zulip:general');
    expect(engine.channels().find((c) => c.channel.id === 'zulip:general')?.pendingAnnouncement).toBe(false);
    const id = f.send('general', 'usable');
    await f.sink.until(() => f.sink.accepted.some((i) => i.messageId === id));
  });

  it('opens with backscroll the policy and filters allow, never past the watermark', async () => {
    const f = await startFixture();
    const ids = [f.send('general', 'a'), f.send('general', 'b /nobots'), f.send('general', 'c')];
    const engine = f.engine();
    await engine.start();
    const opened = await engine.openChannel('zulip:general', { backscroll: 10 });
    expect(opened.channel.id).toBe('zulip:general');
    expect(opened.backscroll.map((i) => i.messageId)).toEqual([ids[0], ids[2]]);
    expect(opened.backscroll.every((i) => i.recovered)).toBe(true);
  });

  it('reads recent context through the policy and the filters, delivering nothing', async () => {
    const f = await startFixture({ filters: { mutedStreams: ['random'] } });
    const ids = [f.send('general', 'one'), f.send('general', 'two')];
    f.send('random', 'muted');
    const engine = f.engine();
    await engine.start();
    expect((await engine.recent('zulip:general', 5)).map((i) => i.messageId)).toEqual(ids);
    expect(await engine.recent('zulip:random', 5)).toEqual([]);
    expect(f.sink.accepted).toEqual([]);
  });

  it('an unknown channel is looked up again once, then refused with a typed error', async () => {
    const f = await startFixture();
    const engine = f.engine();
    await engine.start();
    f.sim.realm.addStream({ name: 'fresh', subscribers: [f.bot, f.ann] });
    await expect(engine.openChannel('zulip:fresh')).resolves.toMatchObject({
      channel: { id: 'zulip:fresh' },
    });
    await expect(engine.openChannel('zulip:nowhere')).rejects.toMatchObject({
      code: 'DELIVERY_UNKNOWN_CHANNEL',
    });
    await expect(engine.openChannel('general')).rejects.toMatchObject({ code: 'DELIVERY_INVALID_ARGUMENT' });
  });

  it('registers a stream the bot is subscribed to later, from the subscription event', async () => {
    const f = await startFixture();
    const engine = f.engine();
    await engine.start();
    f.sim.realm.addStream({ name: 'later', subscribers: [f.ann] });
    f.sim.realm.subscribe(f.bot, 'later');
    const id = f.sim.realm.sendMessage({
      senderId: f.ann,
      type: 'stream',
      stream: 'later',
      topic: 't',
      content: '@**Helper Bot** welcome',
    });
    await f.sink.until(() => f.sink.acceptedPushes.some((p) => p.items[0]?.messageId === id));
    expect(f.sink.acceptedPushes.find((p) => p.items[0]?.messageId === id)?.channel.id).toBe('zulip:later');
  });
});

describe('attention calls', () => {
  it('mute and unmute a stream channel through the filters plane, by id', async () => {
    const f = await startFixture();
    const engine = f.engine();
    await engine.start();
    await engine.openChannel('zulip:general');
    const view = await engine.muteChannel('zulip:general');
    expect(view.filters.mutedStreams).toEqual([f.general]);
    f.send('general', 'muted now @**Helper Bot**');
    const barrier = f.send('random', 'barrier @**Helper Bot**');
    await f.sink.until(() => f.sink.acceptedPushes.some((p) => p.items[0]?.messageId === barrier));
    await engine.unmuteChannel('zulip:general');
    expect(f.filters.filters.document.mutedStreams).toBeUndefined();
    const after = f.send('general', 'back');
    await f.sink.until(() => f.sink.accepted.some((i) => i.messageId === after));
    expect(f.sink.accepted.map((i) => i.messageId)).toEqual([after]);
    await expect(engine.muteChannel(`zulip:dm:${f.bo}`)).rejects.toMatchObject({
      code: expect.stringMatching(/^DELIVERY_/),
    });
  });

  it('refuses filter updates while the plane is stale, and never takes the operator-owned key', async () => {
    const f = await startFixture();
    const engine = f.engine();
    await engine.start();
    await expect(engine.updateFilters({ suppressedReactionEmojis: ['x'] } as never)).rejects.toMatchObject({
      code: 'DELIVERY_FILTERS_OPERATOR_ONLY',
    });
    f.filters.markStale('the file is missing');
    await expect(engine.muteChannel('zulip:general')).rejects.toMatchObject({
      code: 'DELIVERY_FILTERS_STALE',
    });
    expect(engine.status().filtersStale).toBe(true);
    expect(engine.filtersView()).toMatchObject({ stale: true, staleReason: 'the file is missing' });
  });

  it('marks accepted messages read on Zulip when asked', async () => {
    const f = await startFixture();
    const engine = f.engine({ markRead: true });
    await engine.start();
    await engine.openChannel('zulip:general');
    const id = f.send('general', 'read me');
    await f.sink.until(() => f.sink.accepted.length === 1);
    await new Promise<void>((resolve) => {
      const check = () => (f.sim.realm.flags(f.bot, id).includes('read') ? resolve() : undefined);
      const off = f.sim.onRequest((r) => {
        if (r.path.endsWith('/messages/flags')) {
          off();
          check();
        }
      });
      check();
    });
    expect(f.sim.realm.flags(f.bot, id)).toContain('read');
  });
});

describe('durable state', () => {
  it('survives a restart in the file store: watermarks, tallies and last-open channels', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'zmcp-engine-'));
    dirs.push(dir);
    const f = await startFixture();
    const files = new FileStateStore({ dir });
    const first = f.engine({ store: files });
    await first.start();
    await first.openChannel('zulip:general');
    const seen = f.send('general', 'seen');
    f.send('random', 'ambient');
    await f.sink.until(() => f.sink.accepted.length === 1);
    await first.close();
    const state = await files.read(
      { session: 'agent', kind: 'delivery' },
      (await import('../src/delivery-state.js')).DeliveryStateSchema,
    );
    expect(state?.channels[`s${f.general}`]).toMatchObject({ w: seen, open: true });
    expect(state?.channels[`s${f.random}`]).toMatchObject({ ambient: 1 });
    const next = f.send('general', 'while away');
    const second = f.engine({ store: files });
    const report = await second.start();
    expect(report.missedBlocks).toEqual(['zulip:general']);
    await f.sink.until(() => f.sink.acceptedPushes.some((p) => p.kind === 'missed'));
    expect(f.sink.acceptedPushes.find((p) => p.kind === 'missed')?.items.map((i) => i.messageId)).toEqual([
      next,
    ]);
    expect(second.channels().find((c) => c.channel.id === 'zulip:random')?.missed).toBe(1);
  });

  it('refuses to start on a corrupt state file and leaves it as it is', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'zmcp-engine-'));
    dirs.push(dir);
    const f = await startFixture();
    const files = new FileStateStore({ dir });
    await writeFile(files.pathOf({ session: 'agent', kind: 'delivery' }), '{"version": 1, "head": "x"');
    const engine = f.engine({ store: files });
    await expect(engine.start()).rejects.toMatchObject({ code: 'DELIVERY_STATE_CORRUPT' });
    expect(engine.status().state).toBe('failed');
    expect(f.sim.queues(f.bot)).toEqual([]);
  });

  it('a crash right after a first start still catches up what came after it', async () => {
    const f = await startFixture();
    // The first run's writes land a turn later, and not at all once it has died.
    let alive = true;
    const dying = {
      read: f.store.read.bind(f.store),
      update: f.store.update.bind(f.store),
      delete: f.store.delete.bind(f.store),
      async write<T>(key: StateKey, value: T) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (alive) await f.store.write(key, value);
      },
    };
    const first = f.engine({
      store: dying,
      sink: { incoming: async () => ({ kind: 'refused' }), push: async () => ({ kind: 'lost' }) },
    });
    await first.start();
    alive = false;
    const after = f.send('general', 'after the first start @**Helper Bot**');
    const second = f.engine();
    const report = await second.start();
    expect(report.missedBlocks).toEqual(['zulip:general']);
    await f.sink.until(() => f.sink.acceptedPushes.some((p) => p.items.some((i) => i.messageId === after)));
  });

  it('a first start anchors at now: history before it is not caught up', async () => {
    const f = await startFixture({ store: new RecordingStore() });
    f.send('general', 'long ago @**Helper Bot**');
    const engine = f.engine();
    const report = await engine.start();
    expect(report.missedBlocks).toEqual([]);
    expect(report.swept).toBeUndefined();
  });
});
