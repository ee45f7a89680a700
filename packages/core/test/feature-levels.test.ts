// What core does differently on a Zulip 11.0 realm (feature level 421) and a Zulip 13.0-dev one
// (512): the same answers, in fewer requests where the newer API allows.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hasFeature, ZULIP_FEATURES } from '../src/api/features.js';
import type { ZulipClient } from '../src/client/zulip-client.js';
import { narrow } from '../src/history/narrow.js';
import { HistoryPager } from '../src/history/pager.js';
import { mockClient, mockRealm, ok } from './helpers/mock-realm.js';
import { type SimRealmFixture, startSimRealm } from './helpers/sim.js';

const T0 = 1_767_225_600; // 2026-01-01T00:00:00Z
const COUNT = 1_500;

const realms: Record<421 | 512, SimRealmFixture> = {} as never;
const LEVELS_ = [
  [421, 'allowed'],
  [512, 'refused'],
] as const;

beforeAll(async () => {
  for (const level of [421, 512] as const) {
    const f = await startSimRealm({ zulipFeatureLevel: level });
    for (let i = 0; i < COUNT; i++) {
      f.sim.realm.sendMessage({
        senderId: i % 3 === 0 ? f.bob.userId : f.alice.userId,
        type: 'stream',
        stream: 'general',
        topic: 'talk',
        content: `message ${i}`,
        timestamp: T0 + i * 60,
      });
    }
    // A channel where only moderators start topics; a moderator started one.
    const mod = f.sim.realm.addUser({ fullName: 'Mo Derator', email: 'mo@zulip.example', role: 300 });
    f.sim.realm.addStream({
      name: 'announce',
      subscribers: [f.bot.userId, f.alice.userId, mod.userId],
      canCreateTopicGroup: 'role:moderators',
    });
    f.sim.realm.sendMessage({
      senderId: mod.userId,
      type: 'stream',
      stream: 'announce',
      topic: 'release 2.0',
      content: 'out now',
    });
    realms[level] = f;
  }
}, 60_000);
afterAll(async () => {
  await Promise.all(Object.values(realms).map((f) => f.close()));
});

describe('hasFeature', () => {
  it.each(Object.entries(ZULIP_FEATURES))('%s arrives at feature level %i', (name, level) => {
    const feature = name as keyof typeof ZULIP_FEATURES;
    expect(hasFeature(level - 1, feature)).toBe(false);
    expect(hasFeature(level, feature)).toBe(true);
  });
});

describe('the realm feature level', () => {
  it.each([421, 512] as const)(
    'is remembered from POST /register at level %i, so no GET /server_settings follows',
    async (level) => {
      const f = realms[level];
      const client = f.clientFor(f.bot.userId);
      const mark = f.sim.requests.length;
      const state = await client.register({ eventTypes: ['heartbeat'], fetchEventTypes: ['realm'] });
      await client.deleteQueue(state.queue_id);
      expect(await client.getFeatureLevel()).toBe(level);
      expect(await client.hasFeature('dateAnchor')).toBe(level >= 445);
      expect(f.sim.requests.slice(mark).map((r) => r.path)).toEqual(['/api/v1/register', '/api/v1/events']);
    },
  );

  it('is read once from GET /server_settings when nothing else told it', async () => {
    const f = realms[512];
    const client = f.clientFor(f.bot.userId, { readOnly: true });
    const mark = f.sim.requests.length;
    expect(await client.hasFeature('messageUrl')).toBe(true);
    expect(await client.hasFeature('mentionsOperator')).toBe(true);
    expect(f.sim.requests.slice(mark).map((r) => r.path)).toEqual(['/api/v1/server_settings']);
  });
});

describe('a date range on both realms', () => {
  async function read(level: 421 | 512, fromIndex: number, toIndex: number, limit: number) {
    const f = realms[level];
    const client = f.clientFor(f.bot.userId);
    await client.getFeatureLevel();
    const mark = f.sim.requests.length;
    const pager = new HistoryPager(client, { narrow: narrow().channel('general').build() });
    const res = await pager.between((T0 + fromIndex * 60) * 1000, (T0 + toIndex * 60) * 1000, limit);
    const requests = f.sim.requests.slice(mark).filter((r) => r.path === '/api/v1/messages');
    return {
      contents: res.messages.map((m) => m.content),
      hasMore: res.hasMore,
      requests: requests.length,
      dateAnchors: requests.filter((r) => r.params.anchor === 'date').length,
    };
  }

  it('gives the same messages, in one request where the date anchor exists', async () => {
    const old = await read(421, 200, 260, 100);
    const now = await read(512, 200, 260, 100);
    expect(old.contents).toEqual(Array.from({ length: 60 }, (_, i) => `message ${200 + i}`));
    expect(now.contents).toEqual(old.contents);
    expect([old.hasMore, now.hasMore]).toEqual([false, false]);
    expect(now).toMatchObject({ requests: 1, dateAnchors: 1 });
    expect(old.dateAnchors).toBe(0);
    // The older realm finds the start with probes: one from the newest end, one at the oldest,
    // a binary search, then the read.
    expect(old.requests).toBeGreaterThan(5);
  });

  it('gives the same capped page and the same "more" at both levels', async () => {
    const old = await read(421, 700, 1000, 50);
    const now = await read(512, 700, 1000, 50);
    expect(now.contents).toEqual(old.contents);
    expect(now.contents).toHaveLength(50);
    expect([old.hasMore, now.hasMore]).toEqual([true, true]);
    expect(now.requests).toBe(1);
  });

  it('gives nothing for a range after the last message, at both levels', async () => {
    const old = await read(421, COUNT + 10, COUNT + 20, 10);
    const now = await read(512, COUNT + 10, COUNT + 20, 10);
    expect(old.contents).toEqual([]);
    expect(now.contents).toEqual([]);
    expect(now.requests).toBe(1);
  });
});

describe('a channel that does not let the bot start topics (can_create_topic_group, FL441)', () => {
  it.each(LEVELS_)('at level %i: a new topic is %s, an existing one is fine', async (level, outcome) => {
    const f = realms[level];
    const send = (topic: string) =>
      f.client.sendMessage({ type: 'stream', to: 'announce', topic, content: 'hello' });
    expect((await send('release 2.0')).id).toBeGreaterThan(0);
    const fresh = send('a brand new topic');
    if (outcome === 'refused') {
      await expect(fresh).rejects.toMatchObject({
        code: 'CORE_TOPIC_CREATION_DENIED',
        status: 400,
        zulipCode: 'BAD_REQUEST',
        message: expect.stringContaining(
          'can_create_topic_group setting does not let this account start a new topic',
        ),
      });
      // A move into a new topic is checked the same way.
      const id = (await send('release 2.0')).id;
      await expect(f.client.updateMessage(id, { topic: 'another new topic' })).rejects.toMatchObject({
        code: 'CORE_TOPIC_CREATION_DENIED',
      });
    } else {
      expect((await fresh).id).toBeGreaterThan(0);
    }
  });

  it('is an ordinary refusal for any other message Zulip sends', async () => {
    const err = await realms[512].client
      .sendMessage({ type: 'stream', to: 'announce', topic: 'release 2.0', content: 'x\u0000' })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'CORE_BAD_REQUEST' });
  });
});

describe('reminders', () => {
  it.each(LEVELS_.map(([level]) => level))(
    'are scheduled, listed and cancelled at level %i',
    async (level) => {
      const f = realms[level];
      const about = f.sim.realm.sendMessage({
        senderId: f.alice.userId,
        type: 'stream',
        stream: 'general',
        topic: 'talk',
        content: 'ship it <b>friday</b>',
      });
      const due = Math.floor(Date.now() / 1000) + 3600;
      const { reminder_id } = await f.client.createReminder({
        messageId: about,
        scheduledDeliveryTimestamp: due,
        note: 'check the release',
      });
      const listed = await f.client.getReminders();
      expect(
        listed.map((r) => [r.reminder_id, r.reminder_target_message_id, r.scheduled_delivery_timestamp]),
      ).toEqual([[reminder_id, about, due]]);
      expect(listed[0]?.content).toContain('check the release');
      await f.client.deleteReminder(reminder_id);
      expect(await f.client.getReminders()).toEqual([]);
      await expect(f.client.deleteReminder(reminder_id)).rejects.toMatchObject({ code: 'CORE_NOT_FOUND' });
      await expect(
        f.client.createReminder({ messageId: about, scheduledDeliveryTimestamp: due - 7200 }),
      ).rejects.toMatchObject({ code: 'CORE_BAD_REQUEST' });
    },
  );

  it('are refused in read-only mode before anything is sent', async () => {
    const f = realms[512];
    const client = f.clientFor(f.bot.userId, { readOnly: true });
    await client.getFeatureLevel();
    const mark = f.sim.requests.length;
    await expect(
      client.createReminder({ messageId: 1, scheduledDeliveryTimestamp: Math.floor(Date.now() / 1000) + 60 }),
    ).rejects.toMatchObject({ code: 'CORE_READ_ONLY' });
    expect(await client.getReminders()).toEqual([]);
    expect(f.sim.requests.slice(mark).map((r) => `${r.method} ${r.path}`)).toEqual(['GET /api/v1/reminders']);
  });
});

describe('on a realm older than reminders (Zulip 9.0, feature level 300)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  function oldRealm(): { client: ZulipClient; sent: string[] } {
    const { agent, pool } = mockRealm();
    const sent: string[] = [];
    pool
      .intercept({ path: '/api/v1/server_settings', method: 'GET' })
      .reply(200, ok({ zulip_version: '9.0', zulip_feature_level: 300 }))
      .persist();
    // Zulip 9.0 has no /reminders: anything sent there is recorded (and answered as 9.0 would).
    pool
      .intercept({ path: (p) => p.startsWith('/api/v1/reminders'), method: (m) => m !== '' })
      .reply((req) => {
        sent.push(`${req.method} ${req.path}`);
        return { statusCode: 404, data: { result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' } };
      })
      .persist();
    const client = mockClient(agent);
    closers.push(async () => {
      await client.close();
      await agent.close();
    });
    return { client, sent };
  }

  it('refuses them with CORE_UNSUPPORTED naming the levels, and sends nothing', async () => {
    const { client, sent } = oldRealm();
    const tomorrow = Math.floor(Date.now() / 1000) + 86_400;
    for (const call of [
      () => client.createReminder({ messageId: 5, scheduledDeliveryTimestamp: tomorrow }),
      () => client.getReminders(),
      () => client.deleteReminder(3),
    ]) {
      await expect(call()).rejects.toMatchObject({
        code: 'CORE_UNSUPPORTED',
        message: 'Reminders needs Zulip feature level 399 or newer; this realm is at 300',
        details: { feature: 'reminders', featureLevel: 300, needs: 399 },
      });
    }
    expect(sent).toEqual([]);
  });
});

describe('attachments', () => {
  it('come with the messages that link them, the same at both levels', async () => {
    const seen = {} as Record<421 | 512, unknown>;
    for (const [level] of LEVELS_) {
      const f = realms[level];
      const before = Math.floor(Date.now() / 1000);
      const up = await f.client.uploadFile({
        filename: 'notes.txt',
        contentType: 'text/plain',
        size: 5,
        body: (async function* () {
          yield new TextEncoder().encode('notes');
        })(),
      });
      const a = (
        await f.client.sendMessage({
          type: 'stream',
          to: 'general',
          topic: 'files',
          content: `[n](${up.url})`,
        })
      ).id;
      const b = (
        await f.client.sendMessage({
          type: 'stream',
          to: 'general',
          topic: 'files',
          content: `again [n](${up.url})`,
        })
      ).id;
      const mark = f.sim.requests.length;
      const [mine] = await f.client.getAttachments();
      expect(f.sim.requests.slice(mark).map((r) => r.path)).toEqual(['/api/v1/attachments']);
      expect(mine).toMatchObject({ name: 'notes.txt', size: 5, message_ids: [a, b] });
      expect(up.url).toBe(`/user_uploads/${mine?.path_id}`);
      // Seconds at both levels (milliseconds on the wire before 443).
      expect(mine?.create_time).toBeGreaterThanOrEqual(before - 1);
      expect(mine?.create_time).toBeLessThan(before + 60);
      seen[level] = { ...mine, id: 0, path_id: '', create_time: 0, message_ids: mine?.message_ids.length };
    }
    expect(seen[512]).toEqual(seen[421]);
  });
});
