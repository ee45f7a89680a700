import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCallOutcome } from '../src/host.js';
import { encodeCursor } from '../src/page.js';
import type { ToolFailure } from '../src/tool.js';
import { checkedOk, expectWithinBudget, expiredSignal } from './call.js';
import { type Harness, startHarness } from './harness.js';

async function ok<T>(
  h: Harness,
  name: string,
  args: Record<string, unknown>,
): Promise<{ text: string; out: T; result: ToolCallOutcome }> {
  const r = await h.call(name, args);
  if (r.isError) throw new Error(`${name} failed: ${r.text}`);
  const { structured } = checkedOk(h.tools, name, r);
  return { text: r.text, out: structured as unknown as T, result: r };
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
): Promise<{ text: string; out: T; result: ToolCallOutcome }[]> {
  const out: { text: string; out: T; result: ToolCallOutcome }[] = [];
  let cursor: string | null | undefined;
  do {
    const page = await ok<T>(h, name, cursor === undefined ? args : { ...args, cursor });
    out.push(page);
    cursor = page.out.next_cursor;
  } while (cursor !== null && out.length < 50);
  return out;
}

interface StreamList {
  ids: number[];
  total: number;
  offset: number;
  hidden_private: number;
  truncated: boolean;
  next_cursor: string | null;
}

interface TopicList {
  stream_id: number;
  last_message_ids: number[];
  total: number;
  hidden: number;
  offset: number;
  truncated: boolean;
  next_cursor: string | null;
}

interface MemberList {
  stream_id: number;
  user_ids: number[];
  total: number;
  offset: number;
  truncated: boolean;
  next_cursor: string | null;
}

/** A name as a list line prints it: bare, or a JSON string where it holds a delimiter. */
const unquote = (name: string) => (name.startsWith('"') ? (JSON.parse(name) as string) : name);

/** The stream names of a list_streams text, in order. */
const streamNames = (text: string) =>
  text
    .split('\n')
    .slice(1)
    .map((l) => unquote(/^#("(?:[^"\\]|\\.)*"|\S+) \(id \d+;/.exec(l)?.[1] ?? `?${l}`));

/** The topic names of a get_stream_topics text, in order. */
const topicNames = (text: string) =>
  text
    .split('\n')
    .slice(1)
    .map((l) => unquote(/^(.*) \(last message id \d+\)$/.exec(l)?.[1] ?? `?${l}`));

/** The full names of a member list text, in order. */
const memberNames = (text: string) =>
  text
    .split('\n')
    .slice(1)
    .map((l) => unquote(/^(.*) \([^()]*, id \d+\)/.exec(l)?.[1] ?? `?${l}`));

function seedStreams(h: Harness): { announcements: number; opsRoom: number } {
  const { ann, bot } = h.realm;
  const announcements = h.sim.realm.addStream({
    name: 'announcements',
    description: `Company news.\nRead <b>this</b> first. ${'More words here. '.repeat(10)}`,
    subscribers: [ann.userId],
  });
  const opsRoom = h.sim.realm.addStream({
    name: 'ops-room',
    inviteOnly: true,
    subscribers: [ann.userId, bot.userId],
  });
  return { announcements: announcements.streamId, opsRoom: opsRoom.streamId };
}

describe('list_streams', () => {
  let h: Harness;
  let seeded: { announcements: number; opsRoom: number };
  beforeAll(async () => {
    h = await startHarness();
    seeded = seedStreams(h);
  });
  afterAll(async () => {
    await h.close();
  });

  it('lists the streams the bot may read, hiding private ones the policy keeps closed', async () => {
    const { text, out } = await ok<StreamList>(h, 'list_streams', {});
    const { dev, general } = h.realm.streams;
    expect(out.ids).toEqual([seeded.announcements, dev, general]);
    expect(streamNames(text)).toEqual(['announcements', 'dev', 'general']);
    expect(out).toMatchObject({
      total: 3,
      hidden_private: 2,
      offset: 0,
      truncated: false,
      next_cursor: null,
    });
    const lines = text.split('\n');
    expect(lines[1]).toMatch(
      new RegExp(
        `^#announcements \\(id ${seeded.announcements}; public\\) — Company news\\. Read &lt;b>this&lt;/b> first\\..*…$`,
      ),
    );
    const description = (lines[1] as string).split(' — ')[1] as string;
    expect(description.length).toBeLessThanOrEqual(100);
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
    const named = await ok<StreamList>(h, 'list_streams', { name_contains: 'GEN' });
    expect(named.out.ids).toEqual([h.realm.streams.general]);
    expect(streamNames(named.text)).toEqual(['general']);
    const subscribed = await ok<StreamList>(h, 'list_streams', { subscribed_only: true });
    expect(subscribed.out.ids).toEqual([h.realm.streams.general]);
    expect(streamNames(subscribed.text)).toEqual(['general']);
  });

  it('pages with a cursor', async () => {
    const all = await pages<StreamList>(h, 'list_streams', { limit: 1 });
    const { dev, general } = h.realm.streams;
    expect(all.map((p) => p.out.ids)).toEqual([[seeded.announcements], [dev], [general]]);
    expect(all.map((p) => streamNames(p.text))).toEqual([['announcements'], ['dev'], ['general']]);
    expect(all.map((p) => p.out.offset)).toEqual([0, 1, 2]);
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
      const seeded2 = seedStreams(h2);
      const { text, out } = await ok<StreamList>(h2, 'list_streams', {});
      const { dev, general, secret } = h2.realm.streams;
      expect(out.ids).toEqual([seeded2.announcements, dev, general, secret]);
      expect(streamNames(text)).toEqual(['announcements', 'dev', 'general', 'secret']);
      expect(text.split('\n')).toContain(`#secret (id ${secret}; private, subscribed)`);
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
    expect(out.last_message_ids).toEqual([last.deploys, last.empty, last.lunch]);
    expect(out).toMatchObject({ stream_id: h.realm.streams.general, total: 3, hidden: 1, next_cursor: null });
    expect(text.split('\n')).toEqual([
      '3 topics in #general, most recent first (showing 1–3 of 3); 1 topic hidden (opted out of bots with /nobots).',
      `deploys (last message id ${last.deploys})`,
      `(no topic) (last message id ${last.empty})`,
      `lunch (last message id ${last.lunch})`,
    ]);
    expect(text).not.toContain('retro');
  });

  it('lists topics of a public stream the bot is not in, and pages with a cursor', async () => {
    const dev = await ok<TopicList>(h, 'get_stream_topics', { stream: h.realm.streams.dev });
    expect(dev.out.last_message_ids).toHaveLength(1);
    expect(topicNames(dev.text)).toEqual(['builds']);
    const all = await pages<TopicList>(h, 'get_stream_topics', { stream: 'general', limit: 2 });
    expect(all.map((p) => p.out.last_message_ids)).toEqual([[last.deploys, last.empty], [last.lunch]]);
    expect(all.map((p) => topicNames(p.text))).toEqual([['deploys', '(no topic)'], ['lunch']]);
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
      const { text, out } = await ok<TopicList>(h2, 'get_stream_topics', { stream: 'secret' });
      expect(out.last_message_ids).toEqual([id]);
      expect(topicNames(text)).toEqual(['plans']);
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
    expect(out.user_ids).toEqual([ann.userId, annie.userId, bo.userId, bot.userId]);
    expect(out).toMatchObject({ stream_id: h.realm.streams.general, total: 4 });
    expect(text.split('\n')).toEqual([
      '4 members of #general (showing 1–4 of 4).',
      `Ann Lee (ann@example.test, id ${ann.userId})`,
      `Ann Smith (annie@example.test, id ${annie.userId})`,
      `Bo Chen (bo@example.test, id ${bo.userId})`,
      `Helper Bot (helper-bot@example.test, id ${bot.userId}) [bot]`,
    ]);
    const humans = await ok<MemberList>(h, 'list_stream_members', { stream: 'general', include_bots: false });
    expect(humans.out.user_ids).toEqual([ann.userId, annie.userId, bo.userId]);
    expect(memberNames(humans.text)).toEqual(['Ann Lee', 'Ann Smith', 'Bo Chen']);
  });

  it('pages with a cursor, and cuts to the page budget', async () => {
    const all = await pages<MemberList>(h, 'list_stream_members', { stream: 'general', limit: 2 });
    expect(all.map((p) => p.out.user_ids.length)).toEqual([2, 2]);
    const h2 = await startHarness({ pageBudgetBytes: 1024 });
    try {
      for (let i = 0; i < 10; i++) {
        const u = h2.sim.realm.addUser({
          fullName: `Member ${i} ${'m'.repeat(20)}`,
          email: `m${i}@example.test`,
        });
        h2.sim.realm.subscribe(u.userId, 'general');
      }
      const budgeted = await pages<MemberList>(h2, 'list_stream_members', { stream: 'general' });
      expect(budgeted[0]?.out.truncated).toBe(true);
      expect(budgeted.length).toBeGreaterThan(1);
      for (const page of budgeted) expectWithinBudget(page.result, 1024);
      const ids = budgeted.flatMap((p) => p.out.user_ids);
      expect(new Set(ids).size).toBe(14);
      expect(ids).toHaveLength(14);
      expect(budgeted.flatMap((p) => memberNames(p.text))).toHaveLength(14);
      expect(budgeted.at(-1)?.out.next_cursor).toBeNull();
    } finally {
      await h2.close();
    }
  });

  it('lists the members of a public stream the bot is not in', async () => {
    const { text, out } = await ok<MemberList>(h, 'list_stream_members', { stream: 'dev' });
    expect(out.user_ids).toEqual([h.realm.ann.userId, h.realm.bo.userId]);
    expect(memberNames(text)).toEqual(['Ann Lee', 'Bo Chen']);
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
      const { text, out } = await ok<MemberList>(h2, 'list_stream_members', { stream: 'secret' });
      expect(out.user_ids).toEqual([h2.realm.ann.userId, h2.realm.bot.userId]);
      expect(memberNames(text)).toEqual(['Ann Lee', 'Helper Bot']);
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
