import { AdmissionGate, createMessageLineFormatter } from '@zmcp/core';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFixtures, startFixture } from './helpers/engine-fixture.js';

afterEach(closeFixtures);

const key = (streamId: number) => `s${streamId}`;

describe('DeliveryEngine: routing', () => {
  it("delivers an open channel as incoming, in core's message line with tags, and advances the watermark", async () => {
    const f = await startFixture();
    const engine = f.engine();
    await engine.start();
    await engine.openChannel('zulip:general');
    const id = f.send('general', 'hello @**Helper Bot** <b>hi</b>');
    await f.sink.until(() => f.sink.accepted.length === 1);
    const item = f.sink.accepted[0];
    expect(item).toMatchObject({
      id: String(id),
      kind: 'message',
      messageId: id,
      channelId: 'zulip:general',
      topic: 'deploys',
      author: { id: f.ann, name: 'Ann Lee' },
      recovered: false,
    });
    expect(item?.tags).toEqual(['chat:mention', 'chat:addressed', 'chat:from-human']);
    // The line is what core's formatter writes, escaping on (never built here).
    const [message] = (
      await f.client.getMessages({ anchor: id, numBefore: 0, numAfter: 0, applyMarkdown: false })
    ).messages;
    const line = createMessageLineFormatter({ escape: true, selfUserId: f.bot });
    expect(item?.text).toBe(line(message as never));
    expect(item?.head).toBe(line.head(message as never));
    expect(item?.text).not.toContain('<b>');
    await f.store.until((s) => s.channels[key(f.general)]?.w === id);
  });

  it('pushes a mention or DM on a closed channel, drops ambient traffic and counts it', async () => {
    const f = await startFixture();
    const engine = f.engine();
    await engine.start();
    const ambient = f.send('random', 'just chatting');
    const mention = f.send('random', 'ping @**Helper Bot**');
    const dm = f.dm(f.bo, 'hey, a minute?');
    await f.sink.until(() => f.sink.acceptedPushes.length === 2);
    expect(f.sink.batches).toEqual([]);
    expect(f.sink.acceptedPushes.map((p) => [p.kind, p.items[0]?.messageId, p.channel.id])).toEqual([
      ['message', mention, 'zulip:random'],
      ['message', dm, `zulip:dm:${f.bo}`],
    ]);
    expect(f.sink.acceptedPushes[1]?.tags).toEqual(
      expect.arrayContaining(['chat:dm', 'chat:addressed', 'chat:private']),
    );
    const random = engine.channels().find((c) => c.channel.id === 'zulip:random');
    expect(random?.missed).toBe(1);
    const state = await f.store.until((s) => s.channels[key(f.random)]?.w === mention);
    expect(state.channels[key(f.random)]).toMatchObject({
      ambient: 1,
      ambientFrom: ambient,
      ambientTo: ambient,
    });
    // The dropped traffic can be read back as a <missed> block, and the tally cleared.
    const missed = await engine.missed('zulip:random', { clear: true });
    expect(missed.count).toBe(1);
    expect(missed.items.map((i) => i.messageId)).toEqual([ambient]);
    expect(missed.text).toMatch(/^<missed channel="zulip:random"/);
    expect(engine.channels().find((c) => c.channel.id === 'zulip:random')?.missed).toBe(0);
  });

  it("never delivers the bot's own messages, /nobots messages, or a muted stream on any surface", async () => {
    const f = await startFixture({ filters: { mutedStreams: ['random'] } });
    const engine = f.engine();
    await engine.start();
    await engine.openChannel('zulip:general');
    await engine.openChannel('zulip:random');
    f.send('general', 'mine', { sender: f.bot });
    f.send('general', 'keep out /nobots');
    f.send('random', 'muted @**Helper Bot**');
    const last = f.send('general', 'the one that counts');
    await f.store.until((s) => s.channels[key(f.general)]?.w === last);
    expect(f.sink.accepted.map((i) => i.messageId)).toEqual([last]);
    expect(f.sink.pushes).toEqual([]);
    expect(engine.channels().find((c) => c.channel.id === 'zulip:random')?.muted).toBe(true);
  });

  it('applies the access policy: a private stream not allowlisted and DMs without the all-value never arrive', async () => {
    const f = await startFixture();
    const { AccessPolicy } = await import('@zmcp/core');
    const engine = f.engine({ policy: new AccessPolicy({ readOnly: false }) });
    await engine.start();
    expect(engine.channels().map((c) => c.channel.id)).toEqual(['zulip:general', 'zulip:random']);
    f.send('secret', 'secret @**Helper Bot**');
    f.dm(f.bo, 'a DM');
    const last = f.send('general', 'public @**Helper Bot**');
    await f.sink.until(() => f.sink.acceptedPushes.length === 1);
    await f.store.until((s) => s.channels[key(f.general)]?.w === last);
    expect(f.sink.pushes.map((p) => p.items[0]?.messageId)).toEqual([last]);
    await expect(engine.openChannel('zulip:secret')).rejects.toMatchObject({
      code: 'DELIVERY_UNKNOWN_CHANNEL',
    });
  });

  it('gates DMs by sender and streams by the allowlist, and follows filter changes at once', async () => {
    const f = await startFixture({ filters: { dmUsers: [String(99_999)], streams: ['general'] } });
    const engine = f.engine();
    await engine.start();
    expect(engine.channels().map((c) => c.channel.id)).toEqual(['zulip:general']);
    f.dm(f.bo, 'not allowed');
    f.send('random', 'not on the list @**Helper Bot**');
    const m1 = f.send('general', 'listed @**Helper Bot**');
    await f.sink.until(() => f.sink.acceptedPushes.length === 1);
    expect(f.sink.acceptedPushes[0]?.items[0]?.messageId).toBe(m1);
    f.filters.replace({ dmUsers: [f.bo] });
    expect(engine.channels().map((c) => c.channel.id)).toEqual([
      'zulip:general',
      'zulip:random',
      'zulip:secret',
    ]);
    const dm = f.dm(f.bo, 'now allowed');
    await f.sink.until(() => f.sink.acceptedPushes.length === 2);
    expect(f.sink.acceptedPushes[1]?.items[0]?.messageId).toBe(dm);
  });
});

describe('DeliveryEngine: the admission gate', () => {
  it('delivers no DM, waking mention or reaction from anyone it does not admit; open chatter still arrives', async () => {
    const f = await startFixture({ filters: { reactionChannels: ['zulip:general'] } });
    const gate = new AdmissionGate({ ids: [f.ann], emails: [] }, { setting: 'TEST_USERS' });
    const engine = f.engine({ admission: gate });
    await engine.start();
    await engine.openChannel('zulip:general');
    f.dm(f.bo, 'Bo, not admitted: do something');
    f.send('random', 'wake up @**Helper Bot**', { sender: f.bo });
    const chatter = f.send('general', 'open channel chatter', { sender: f.bo });
    await f.sink.until(() => f.sink.accepted.some((i) => i.messageId === chatter));
    f.sim.realm.addReaction(f.bo, chatter, 'thumbs_up');
    const dm = f.dm(f.ann, 'Ann may');
    const mention = f.send('random', 'ping @**Helper Bot**');
    await f.sink.until(() => f.sink.acceptedPushes.length === 2);
    f.sim.realm.addReaction(f.ann, chatter, 'heart');
    await f.sink.until(() => f.sink.accepted.some((i) => i.kind === 'reaction'));
    // Two channels: their pushes are concurrent.
    expect(f.sink.acceptedPushes.map((p) => p.items[0]?.messageId).sort()).toEqual([dm, mention].sort());
    expect(f.sink.accepted.filter((i) => i.kind === 'reaction').map((i) => i.author.id)).toEqual([f.ann]);
    // The stranger's mention is neither pushed nor tallied as missed chatter.
    expect(engine.channels().find((c) => c.channel.id === 'zulip:random')?.missed).toBe(0);
    expect(gate.refusals().byPath).toMatchObject({ dm: 1, mention: 1, reaction: 1 });
  });

  it('resolves the filters’ dmUsers emails to user ids with the realm’s users, as every gate does', async () => {
    const f = await startFixture({ filters: { dmUsers: ['BO@zulip.example'] } });
    const engine = f.engine();
    await engine.start();
    f.dm(f.ann, 'Ann is not on the DM list');
    const dm = f.dm(f.bo, 'Bo is, by email');
    await f.sink.until(() => f.sink.acceptedPushes.length === 1);
    expect(f.sink.acceptedPushes[0]?.items[0]?.messageId).toBe(dm);
    // Bo's address changes: the entry names nobody now, so it admits nobody.
    f.sim.realm.changeUserEmail(f.bo, 'bo@elsewhere.example');
    f.dm(f.bo, 'after the change');
    const barrier = f.send('general', 'barrier @**Helper Bot**');
    await f.sink.until(() => f.sink.acceptedPushes.some((p) => p.items[0]?.messageId === barrier));
    expect(f.sink.acceptedPushes.map((p) => p.items[0]?.messageId)).toEqual([dm, barrier]);
  });
});

describe('DeliveryEngine: acceptance and replay', () => {
  it('advances only past accepted messages; a refused batch is replayed from history', async () => {
    const f = await startFixture();
    const engine = f.engine();
    await engine.start();
    await engine.openChannel('zulip:general');
    let refuse = true;
    f.sink.onIncoming = (b) =>
      refuse ? { kind: 'refused' } : { kind: 'answered', accepted: b.items.map((i) => i.id) };
    const first = f.send('general', 'one');
    await f.sink.until(() => f.sink.batches.length >= 1);
    await f.store.until((s) => s.channels[key(f.general)] !== undefined);
    expect(f.store.latest?.channels[key(f.general)]?.w).toBeLessThan(first);
    refuse = false;
    const second = f.send('general', 'two');
    await f.sink.until(() => f.sink.acceptedIds('zulip:general').length === 2);
    expect(f.sink.acceptedIds('zulip:general')).toEqual([first, second]);
    const replayed = f.sink.accepted.find((i) => i.messageId === first);
    expect(replayed?.recovered).toBe(true);
    await f.store.until((s) => s.channels[key(f.general)]?.w === second);
  });

  it('keeps what a partly accepted batch accepted, and replays only the rest', async () => {
    const f = await startFixture();
    const engine = f.engine();
    await engine.start();
    await engine.openChannel('zulip:general');
    const ids = [f.send('general', 'a'), f.send('general', 'b'), f.send('general', 'c')];
    let calls = 0;
    // First batch: the host accepts the first and the last, not the middle one.
    f.sink.onIncoming = (b) => {
      calls += 1;
      if (calls === 1 && b.items.length === 3)
        return { kind: 'answered', accepted: [b.items[0]?.id ?? '', b.items[2]?.id ?? ''] };
      return { kind: 'answered', accepted: b.items.map((i) => i.id) };
    };
    await f.sink.until(() => new Set(f.sink.acceptedIds('zulip:general')).size === 3);
    const accepted = f.sink.acceptedIds('zulip:general');
    expect([...accepted].sort()).toEqual([...ids].sort());
    expect(accepted).toHaveLength(3);
    await f.store.until(
      (s) => s.channels[key(f.general)]?.w === ids[2] && s.channels[key(f.general)]?.above === undefined,
    );
  });

  it('treats a lost batch and a timed-out one like a refusal', async () => {
    const f = await startFixture();
    const engine = f.engine({ offerTimeoutMs: 50 });
    await engine.start();
    await engine.openChannel('zulip:general');
    const answers: ('throw' | 'hang' | 'ok')[] = ['throw', 'hang', 'ok'];
    f.sink.onIncoming = (b) => {
      const a = answers.shift() ?? 'ok';
      return a === 'ok' ? { kind: 'answered', accepted: b.items.map((i) => i.id) } : a;
    };
    const id = f.send('general', 'through it all');
    await f.sink.until(() => f.sink.acceptedIds('zulip:general').length === 1);
    expect(f.sink.batches.length).toBe(3);
    expect(f.sink.acceptedIds('zulip:general')).toEqual([id]);
    await f.store.until((s) => s.channels[key(f.general)]?.w === id);
  });

  it('a refused push is pushed again; nothing after it on the channel jumps ahead', async () => {
    const f = await startFixture();
    const engine = f.engine();
    await engine.start();
    let refusals = 2;
    f.sink.onPush = () =>
      refusals-- > 0 ? { kind: 'answered', accepted: false } : { kind: 'answered', accepted: true };
    const a = f.send('random', '@**Helper Bot** first');
    const b = f.send('random', '@**Helper Bot** second');
    await f.sink.until(() => f.sink.acceptedPushes.length === 2);
    expect(f.sink.acceptedPushes.map((p) => p.items[0]?.messageId)).toEqual([a, b]);
    expect(f.sink.pushes.filter((p) => p.items[0]?.messageId === b).length).toBe(1);
  });
});

describe('DeliveryEngine: catch-up', () => {
  it('holds live events during the start-up sweep and releases them after the <missed> block', async () => {
    const f = await startFixture();
    const first = f.engine();
    await first.start();
    await first.openChannel('zulip:general');
    const seen = f.send('general', 'seen before the restart');
    await f.store.until((s) => s.channels[key(f.general)]?.w === seen);
    await first.close();
    const offline = [f.send('general', 'offline 1'), f.send('general', 'offline 2')];
    // The sweep's history read is slowed; a live message arrives while it runs.
    let live = 0;
    const slow = f.sim.faults.add({ method: 'GET', path: '/api/v1/messages', latencyMs: 150 });
    const second = f.engine();
    const started = second.start();
    await new Promise<void>((resolve) => {
      const off = f.sim.onRequest((r) => {
        if (r.path.endsWith('/messages') && r.method === 'GET') {
          off();
          resolve();
        }
      });
    });
    live = f.send('general', 'live during the sweep');
    await started;
    slow.remove();
    await second.openChannel('zulip:general');
    await f.sink.until(() => f.sink.acceptedIds('zulip:general').includes(live));
    const block = f.sink.acceptedPushes.find((p) => p.kind === 'missed');
    expect(block?.items.map((i) => i.messageId)).toEqual(offline);
    expect(block?.tags).toContain('zulip:missed');
    expect(block?.missed).toMatchObject({ wasOpen: true, messages: 2, shown: 2 });
    // The live message came after the block was accepted, never before.
    expect(f.sink.sequence).toEqual([seen, ...offline, live]);
  });

  it('a live delivery never jumps the watermark over an unaccepted <missed> block', async () => {
    const f = await startFixture();
    const first = f.engine();
    await first.start();
    await first.openChannel('zulip:general');
    await first.close();
    const offline = f.send('general', 'offline');
    let acceptBlock = false;
    f.sink.onPush = (e) => ({ kind: 'answered', accepted: e.kind !== 'missed' || acceptBlock });
    const second = f.engine();
    await second.start();
    await second.openChannel('zulip:general');
    await f.sink.until(() => f.sink.pushes.some((p) => p.kind === 'missed'));
    const live = f.send('general', 'live');
    await f.sink.until(() => f.sink.pushes.filter((p) => p.kind === 'missed').length >= 2);
    expect(f.sink.accepted).toEqual([]);
    expect(f.store.latest?.channels[key(f.general)]?.w).toBeLessThan(offline);
    acceptBlock = true;
    await f.sink.until(() => f.sink.acceptedIds('zulip:general').includes(live));
    await f.store.until((s) => s.channels[key(f.general)]?.w === live);
  });

  it('catches a closed channel up with its mentions and 7 messages around each, counting the rest', async () => {
    const f = await startFixture();
    const first = f.engine();
    await first.start();
    await first.close();
    const ids: number[] = [];
    for (let i = 0; i < 30; i++)
      ids.push(f.send('random', i === 15 ? `@**Helper Bot** number ${i}` : `chatter ${i}`));
    const second = f.engine();
    const report = await second.start();
    expect(report.missedBlocks).toEqual(['zulip:random']);
    await f.sink.until(() => f.sink.acceptedPushes.length === 1);
    const block = f.sink.acceptedPushes[0];
    expect(block?.items.map((i) => i.messageId)).toEqual(ids.slice(8, 23));
    expect(block?.missed).toMatchObject({ wasOpen: false, messages: 30, addressed: 1, shown: 15 });
    expect(block?.tags).toEqual(expect.arrayContaining(['zulip:missed', 'chat:mention', 'chat:addressed']));
    expect(block?.text).toContain('not shown');
    expect(second.channels().find((c) => c.channel.id === 'zulip:random')?.missed).toBe(29);
  });

  it('caps a block in messages and bytes and points at what it left out', async () => {
    const f = await startFixture();
    const first = f.engine();
    await first.start();
    await first.openChannel('zulip:general');
    await first.close();
    const ids: number[] = [];
    for (let i = 0; i < 40; i++) ids.push(f.send('general', `message ${i} ${'x'.repeat(200)}`));
    const second = f.engine({ catchUp: { maxMessages: 10, maxBytes: 1_500 } });
    await second.start();
    await f.sink.until(() => f.sink.acceptedPushes.length === 1);
    const block = f.sink.acceptedPushes[0];
    const shown = block?.items.map((i) => i.messageId) ?? [];
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.length).toBeLessThan(10);
    expect(shown).toEqual(ids.slice(ids.length - shown.length));
    expect(Buffer.byteLength(block?.text ?? '')).toBeLessThanOrEqual(1_500);
    expect(block?.missed?.elided).toEqual({
      count: 40 - shown.length,
      fromId: ids[0],
      toId: (shown[0] as number) - 1,
    });
    expect(block?.text).toContain(`ids ${ids[0]}-${(shown[0] as number) - 1}`);
    await f.store.until((s) => s.channels[key(f.general)]?.w === ids[39]);
  });

  it('sweeps every channel with one bucketed read, not one per channel', async () => {
    const f = await startFixture();
    const first = f.engine();
    await first.start();
    await first.openChannel('zulip:general');
    await first.openChannel('zulip:random');
    await first.close();
    for (let i = 0; i < 20; i++) {
      f.send(i % 2 === 0 ? 'general' : 'random', `m${i}`);
      f.dm(f.bo, `dm ${i}`);
    }
    let reads = 0;
    const off = f.sim.onRequest((r) => {
      if (r.method === 'GET' && r.path.endsWith('/messages')) reads += 1;
    });
    const second = f.engine({ recentDms: 0 });
    const report = await second.start();
    off();
    expect([...report.missedBlocks].sort()).toEqual(
      [`zulip:dm:${f.bo}`, 'zulip:general', 'zulip:random'].sort(),
    );
    expect(reads).toBe(1);
  });
});

describe('DeliveryEngine: queue expiry', () => {
  it('heals an expired queue from history: open channels replayed, closed mentions pushed', async () => {
    const f = await startFixture();
    const engine = f.engine();
    await engine.start();
    await engine.openChannel('zulip:general');
    const before = f.send('general', 'before');
    await f.sink.until(() => f.sink.acceptedIds('zulip:general').includes(before));
    // The next poll is held back; while it waits, messages arrive and the queue is lost.
    const block = f.sim.faults.add({ method: 'GET', path: '/api/v1/events', latencyMs: 300 });
    const trigger = f.send('general', 'trigger');
    await f.sink.until(() => f.sink.acceptedIds('zulip:general').includes(trigger));
    const during = [f.send('general', 'during 1'), f.send('general', 'during 2')];
    const mention = f.send('random', 'lost @**Helper Bot**');
    f.sim.expireAllQueues();
    block.remove();
    await f.sink.until(
      () => f.sink.acceptedIds('zulip:general').length === 4 && f.sink.acceptedPushes.length === 1,
    );
    expect(f.sink.acceptedIds('zulip:general')).toEqual([before, trigger, ...during]);
    expect(f.sink.accepted.filter((i) => during.includes(i.messageId)).every((i) => i.recovered)).toBe(true);
    expect(f.sink.acceptedPushes[0]?.items[0]?.messageId).toBe(mention);
    const after = f.send('general', 'after');
    await f.sink.until(() => f.sink.acceptedIds('zulip:general').includes(after));
    expect(f.sink.acceptedIds('zulip:general')).toEqual([before, trigger, ...during, after]);
  });
});
