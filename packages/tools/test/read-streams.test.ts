import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../src/page.js';
import type { ToolFailure } from '../src/tool.js';
import { checkedOk, expiredSignal } from './call.js';
import { type Harness, startHarness } from './harness.js';

async function ok<T>(
  h: Harness,
  name: string,
  args: Record<string, unknown>,
): Promise<{ text: string; out: T }> {
  const r = await h.call(name, args);
  if (r.isError) throw new Error(`${name} failed: ${r.text}`);
  const { structured } = checkedOk(h.tools, name, r);
  return { text: r.text, out: structured as unknown as T };
}

async function fail(h: Harness, name: string, args: Record<string, unknown>, signal?: AbortSignal) {
  const r = await h.call(name, args, signal === undefined ? {} : { signal });
  expect(r.isError).toBe(true);
  return r as ToolFailure;
}

/** Follows next_cursor to the end and returns every page. */
async function pages<T extends { next_cursor: string | null }>(
  h: Harness,
  name: string,
  args: Record<string, unknown>,
): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | null | undefined;
  do {
    const page = (await ok<T>(h, name, cursor === undefined ? args : { ...args, cursor })).out;
    out.push(page);
    cursor = page.next_cursor;
  } while (cursor !== null && out.length < 50);
  return out;
}

interface StreamList {
  streams: { id: number; name: string; private: boolean; subscribed: boolean; description: string }[];
  total: number;
  offset: number;
  hidden_private: number;
  truncated: boolean;
  next_cursor: string | null;
}

interface TopicList {
  stream: string;
  topics: { name: string; last_message_id: number }[];
  total: number;
  hidden: number;
  truncated: boolean;
  next_cursor: string | null;
}

interface MemberList {
  stream: string;
  members: { user_id: number; full_name: string; email: string; is_bot: boolean; is_active: boolean }[];
  total: number;
  truncated: boolean;
  next_cursor: string | null;
}

function seedStreams(h: Harness): void {
  const { ann, bot } = h.realm;
  h.sim.realm.addStream({
    name: 'announcements',
    description: `Company news.\nRead <b>this</b> first. ${'More words here. '.repeat(10)}`,
    subscribers: [ann.userId],
  });
  h.sim.realm.addStream({ name: 'ops-room', inviteOnly: true, subscribers: [ann.userId, bot.userId] });
}

describe('list_streams', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
    seedStreams(h);
  });
  afterAll(async () => {
    await h.close();
  });

  it('lists the streams the bot may read, hiding private ones the policy keeps closed', async () => {
    const { text, out } = await ok<StreamList>(h, 'list_streams', {});
    expect(out.streams.map((s) => s.name)).toEqual(['announcements', 'dev', 'general']);
    expect(out.hidden_private).toBe(2);
    expect(out.streams.find((s) => s.name === 'general')).toMatchObject({ private: false, subscribed: true });
    expect(out.streams.find((s) => s.name === 'dev')).toMatchObject({ private: false, subscribed: false });
    const news = out.streams.find((s) => s.name === 'announcements');
    expect(news?.description.length).toBeLessThanOrEqual(100);
    expect(news?.description).toMatch(/^Company news\. Read &lt;b>this&lt;\/b> first\..*…$/);
    const lines = text.split('\n');
    expect(lines[0]).toBe(
      '3 streams this bot may read (showing 1–3 of 3); 2 private streams hidden: this server is configured not to read them.',
    );
    expect(lines[2]).toBe(`#dev (id ${h.realm.streams.dev}; public)`);
    expect(lines[3]).toBe(`#general (id ${h.realm.streams.general}; public, subscribed)`);
    expect(text).not.toContain('secret');
    expect(text).not.toContain('ops-room');
    expect(text).not.toContain('#hidden');
  });

  it('filters by name and subscription', async () => {
    expect(
      (await ok<StreamList>(h, 'list_streams', { name_contains: 'GEN' })).out.streams.map((s) => s.name),
    ).toEqual(['general']);
    expect(
      (await ok<StreamList>(h, 'list_streams', { subscribed_only: true })).out.streams.map((s) => s.name),
    ).toEqual(['general']);
  });

  it('pages with a cursor', async () => {
    const all = await pages<StreamList>(h, 'list_streams', { limit: 1 });
    expect(all.map((p) => p.streams.map((s) => s.name))).toEqual([['announcements'], ['dev'], ['general']]);
    expect(all.map((p) => p.offset)).toEqual([0, 1, 2]);
  });

  it('refuses bad arguments and foreign or mismatched cursors', async () => {
    expect((await fail(h, 'list_streams', { limit: 0 })).text).toMatch(/limit/);
    expect((await fail(h, 'list_streams', { name_contains: 'x'.repeat(101) })).text).toMatch(/name_contains/);
    const { out } = await ok<StreamList>(h, 'list_streams', { limit: 1 });
    expect((await fail(h, 'list_streams', { name_contains: 'e', cursor: out.next_cursor })).code).toBe(
      'TOOLS_INVALID_CURSOR',
    );
    const before = encodeCursor('list_streams', { subscribed_only: false }, { kind: 'before', id: 3 });
    expect((await fail(h, 'list_streams', { cursor: before })).code).toBe('TOOLS_INVALID_CURSOR');
    const topicsCursor = encodeCursor(
      'get_stream_topics',
      { subscribed_only: false },
      { kind: 'offset', offset: 1 },
    );
    expect((await fail(h, 'list_streams', { cursor: topicsCursor })).code).toBe('TOOLS_INVALID_CURSOR');
  });

  it('lists an allowlisted private stream', async () => {
    const h2 = await startHarness({ policy: { privateStreams: ['secret'] } });
    try {
      seedStreams(h2);
      const { out } = await ok<StreamList>(h2, 'list_streams', {});
      expect(out.streams.map((s) => s.name)).toEqual(['announcements', 'dev', 'general', 'secret']);
      expect(out.streams.find((s) => s.name === 'secret')).toMatchObject({ private: true, subscribed: true });
      expect(out.hidden_private).toBe(1);
    } finally {
      await h2.close();
    }
  });

  it('fails with isError once the deadline has passed', async () => {
    expect((await fail(h, 'list_streams', {}, expiredSignal())).code).toBe('TOOLS_DEADLINE');
  });
});

describe('get_stream_topics', () => {
  let h: Harness;
  const last: Record<string, number> = {};
  beforeAll(async () => {
    h = await startHarness();
    const { ann, bo } = h.realm;
    h.post(ann, 'general', 'deploys', 'one');
    last.lunch = h.post(bo, 'general', 'lunch', 'pizza');
    h.post(ann, 'general', 'retro /nobots', 'feelings');
    last.empty = h.post(ann, 'general', '', 'no topic');
    last.deploys = h.post(bo, 'general', 'deploys', 'two');
    h.post(ann, 'secret', 'plans', 'classified');
    h.post(ann, 'dev', 'builds', 'green');
  });
  afterAll(async () => {
    await h.close();
  });

  it('lists topics most recent first, the empty topic included and /nobots topics hidden', async () => {
    const { text, out } = await ok<TopicList>(h, 'get_stream_topics', { stream: 'general' });
    expect(out.topics).toEqual([
      { name: 'deploys', last_message_id: last.deploys },
      { name: '', last_message_id: last.empty },
      { name: 'lunch', last_message_id: last.lunch },
    ]);
    expect(out.hidden).toBe(1);
    expect(text.split('\n')).toEqual([
      '3 topics in #general, most recent first (showing 1–3 of 3); 1 topic hidden (opted out of bots with /nobots).',
      `deploys (last message id ${last.deploys})`,
      `(no topic) (last message id ${last.empty})`,
      `lunch (last message id ${last.lunch})`,
    ]);
    expect(text).not.toContain('retro');
  });

  it('lists topics of a public stream the bot is not in, and pages with a cursor', async () => {
    expect(
      (await ok<TopicList>(h, 'get_stream_topics', { stream: h.realm.streams.dev })).out.topics,
    ).toHaveLength(1);
    const all = await pages<TopicList>(h, 'get_stream_topics', { stream: 'general', limit: 2 });
    expect(all.map((p) => p.topics.map((t) => t.name))).toEqual([['deploys', ''], ['lunch']]);
  });

  it('refuses closed private streams, unknown streams and bad arguments', async () => {
    const secret = await fail(h, 'get_stream_topics', { stream: 'secret' });
    expect(secret.code).toBe('CORE_ACCESS_DENIED');
    expect(secret.text).not.toContain('plans');
    expect((await fail(h, 'get_stream_topics', { stream: 'hidden' })).code).toBe('TOOLS_NOT_FOUND');
    expect((await fail(h, 'get_stream_topics', {})).text).toMatch(/stream/);
    expect((await fail(h, 'get_stream_topics', { stream: 'general', limit: 999 })).text).toMatch(/limit/);
    const { out } = await ok<TopicList>(h, 'get_stream_topics', { stream: 'general', limit: 1 });
    expect((await fail(h, 'get_stream_topics', { stream: 'dev', cursor: out.next_cursor })).code).toBe(
      'TOOLS_INVALID_CURSOR',
    );
  });

  it('reads an allowlisted private stream', async () => {
    const h2 = await startHarness({ policy: { privateStreams: ['secret'] } });
    try {
      const id = h2.post(h2.realm.ann, 'secret', 'plans', 'classified');
      const { out } = await ok<TopicList>(h2, 'get_stream_topics', { stream: 'secret' });
      expect(out.topics).toEqual([{ name: 'plans', last_message_id: id }]);
    } finally {
      await h2.close();
    }
  });

  it('fails with isError once the deadline has passed', async () => {
    expect((await fail(h, 'get_stream_topics', { stream: 'general' }, expiredSignal())).code).toBe(
      'TOOLS_DEADLINE',
    );
  });
});

describe('list_stream_members', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
    // Zulip leaves deactivated accounts out of subscriber lists.
    const former = h.sim.realm.addUser({ fullName: 'Zed Former', email: 'zed@example.test' });
    h.sim.realm.subscribe(former.userId, 'general');
    h.sim.realm.deactivateUser(former.userId);
  });
  afterAll(async () => {
    await h.close();
  });

  it('lists the members of a subscribed stream with bot markers', async () => {
    const { text, out } = await ok<MemberList>(h, 'list_stream_members', { stream: 'general' });
    const { ann, annie, bo, bot } = h.realm;
    expect(out.members.map((m) => m.user_id)).toEqual([ann.userId, annie.userId, bo.userId, bot.userId]);
    expect(out.total).toBe(4);
    expect(text.split('\n')).toEqual([
      '4 members of #general (showing 1–4 of 4).',
      `Ann Lee <ann@example.test> (id ${ann.userId})`,
      `Ann Smith <annie@example.test> (id ${annie.userId})`,
      `Bo Chen <bo@example.test> (id ${bo.userId})`,
      `Helper Bot <helper-bot@example.test> (id ${bot.userId}) [bot]`,
    ]);
    const humans = await ok<MemberList>(h, 'list_stream_members', { stream: 'general', include_bots: false });
    expect(humans.out.members.map((m) => m.full_name)).not.toContain('Helper Bot');
  });

  it('pages with a cursor, and cuts to the page budget', async () => {
    const all = await pages<MemberList>(h, 'list_stream_members', { stream: 'general', limit: 2 });
    expect(all.map((p) => p.members.length)).toEqual([2, 2]);
    const h2 = await startHarness({ pageBudgetBytes: 300 });
    try {
      for (let i = 0; i < 10; i++) {
        const u = h2.sim.realm.addUser({
          fullName: `Member ${i} ${'m'.repeat(20)}`,
          email: `m${i}@example.test`,
        });
        h2.sim.realm.subscribe(u.userId, 'general');
      }
      const budgeted = await pages<MemberList>(h2, 'list_stream_members', { stream: 'general' });
      expect(budgeted[0]?.truncated).toBe(true);
      expect(budgeted.length).toBeGreaterThan(1);
      const ids = budgeted.flatMap((p) => p.members.map((m) => m.user_id));
      expect(new Set(ids).size).toBe(14);
      expect(ids).toHaveLength(14);
      expect(budgeted.at(-1)?.next_cursor).toBeNull();
    } finally {
      await h2.close();
    }
  });

  it('lists the members of a public stream the bot is not in', async () => {
    const { out } = await ok<MemberList>(h, 'list_stream_members', { stream: 'dev' });
    expect(out.members.map((m) => m.full_name)).toEqual(['Ann Lee', 'Bo Chen']);
  });

  it('refuses closed private streams and bad arguments', async () => {
    expect((await fail(h, 'list_stream_members', { stream: 'secret' })).code).toBe('CORE_ACCESS_DENIED');
    expect((await fail(h, 'list_stream_members', { stream: 'hidden' })).code).toBe('TOOLS_NOT_FOUND');
    expect((await fail(h, 'list_stream_members', { stream: '' })).text).toMatch(/stream/);
    expect((await fail(h, 'list_stream_members', { stream: 'general', include_bots: 1 })).text).toMatch(
      /include_bots/,
    );
    expect(
      (await fail(h, 'list_stream_members', { stream: 'general', cursor: 'x'.repeat(600) })).text,
    ).toMatch(/cursor/);
  });

  it('lists an allowlisted private stream', async () => {
    const h2 = await startHarness({ policy: { privateStreams: ['secret'] } });
    try {
      const { out } = await ok<MemberList>(h2, 'list_stream_members', { stream: 'secret' });
      expect(out.members.map((m) => m.full_name)).toEqual(['Ann Lee', 'Helper Bot']);
    } finally {
      await h2.close();
    }
  });

  it('fails with isError once the deadline has passed', async () => {
    expect((await fail(h, 'list_stream_members', { stream: 'general' }, expiredSignal())).code).toBe(
      'TOOLS_DEADLINE',
    );
  });
});
