import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCallOutcome } from '../src/host.js';
import { encodeCursor } from '../src/page.js';
import type { ToolFailure } from '../src/tool.js';
import { checkedOk, expectWithinBudget, expiredSignal } from './call.js';
import { type Harness, startHarness } from './harness.js';

// 2026-09-14 08:42:52 UTC.
const NOW = Date.UTC(2026, 8, 14, 8, 42, 52);

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

interface UserList {
  user_ids: number[];
  total: number;
  offset: number;
  truncated: boolean;
  next_cursor: string | null;
}

interface Found {
  matched_by: string | null;
  user_ids: number[];
  total: number;
  ambiguous: boolean;
  truncated: boolean;
}

interface Profile {
  user_id: number;
  role: string;
  is_bot: boolean;
  bot_owner_id: number | null;
  is_active: boolean;
  is_self: boolean;
  timezone: string | null;
  local_time: string | null;
}

/** The full names of a user list text (every line after the summary), in order. */
const userNames = (text: string) =>
  text
    .split('\n')
    .slice(1)
    .map((l) => {
      const name = /^(.*) \([^()]*, id \d+\)/.exec(l)?.[1] ?? `?${l}`;
      return name.startsWith('"') ? (JSON.parse(name) as string) : name;
    });

describe('users', () => {
  let h: Harness;
  const id: Record<string, number> = {};

  beforeAll(async () => {
    h = await startHarness({ now: () => NOW });
    const realm = h.sim.realm;
    const team = realm.addProfileField({ name: 'Team', type: 1 });
    const level = realm.addProfileField({
      name: 'Level',
      type: 3,
      fieldData: JSON.stringify({ a: { text: 'Senior', order: '1' }, b: { text: 'Junior', order: '2' } }),
    });
    const mentor = realm.addProfileField({ name: 'Mentor', type: 6 });
    id.dana = realm.addUser({ fullName: 'Dana Admin', email: 'dana@example.test', role: 200 }).userId;
    id.owen = realm.addUser({ fullName: 'Owen Owner', email: 'owen@example.test', role: 100 }).userId;
    id.mo = realm.addUser({ fullName: 'Mo Mod', email: 'mo@example.test', role: 300 }).userId;
    id.gus = realm.addUser({ fullName: 'Gus Guest', email: 'gus@example.test', role: 600 }).userId;
    id.pat = realm.addUser({
      fullName: 'Pat Profile',
      email: 'pat@example.test',
      timezone: 'Asia/Tokyo',
      profileData: {
        [team.id]: 'Platform <core>',
        [level.id]: 'a',
        [mentor.id]: JSON.stringify([h.realm.bo.userId]),
      },
    }).userId;
    id.runner = realm.addUser({
      fullName: 'Build Runner',
      email: 'ci@example.test',
      isBot: true,
      botType: 1,
      botOwnerId: h.realm.ann.userId,
    }).userId;
    id.zed = realm.addUser({ fullName: 'Zed Former', email: 'zed@example.test' }).userId;
    realm.deactivateUser(id.zed);
  });
  afterAll(async () => {
    await h.close();
  });

  describe('list_users', () => {
    it('lists active humans by default, with role markers', async () => {
      const { text, out } = await ok<UserList>(h, 'list_users', {});
      expect(userNames(text)).toEqual([
        'Ann Lee',
        'Ann Smith',
        'Bo Chen',
        'Dana Admin',
        'Gus Guest',
        'Mo Mod',
        'Owen Owner',
        'Pat Profile',
      ]);
      const { ann, annie, bo } = h.realm;
      expect(out.user_ids).toEqual([
        ann.userId,
        annie.userId,
        bo.userId,
        id.dana,
        id.gus,
        id.mo,
        id.owen,
        id.pat,
      ]);
      expect(out).toMatchObject({ total: 8, offset: 0, truncated: false, next_cursor: null });
      const lines = text.split('\n');
      expect(lines[0]).toBe('8 users (active humans; showing 1–8 of 8).');
      expect(lines).toContain(`Dana Admin (dana@example.test, id ${id.dana}) [admin]`);
      expect(lines).toContain(`Owen Owner (owen@example.test, id ${id.owen}) [owner]`);
      expect(lines).toContain(`Gus Guest (gus@example.test, id ${id.gus}) [guest]`);
      expect(lines).toContain(`Bo Chen (bo@example.test, id ${h.realm.bo.userId})`);
    });

    it('includes bots and deactivated accounts on request, marked', async () => {
      const { text, out } = await ok<UserList>(h, 'list_users', {
        include_bots: true,
        include_deactivated: true,
      });
      expect(out.total).toBe(11);
      expect(text).toContain(`Build Runner (ci@example.test, id ${id.runner}) [bot]`);
      expect(text).toContain(`Helper Bot (helper-bot@example.test, id ${h.realm.bot.userId}) [bot]`);
      expect(text).toContain(`Zed Former (zed@example.test, id ${id.zed}) [deactivated]`);
      expect(out.user_ids).toHaveLength(11);
      expect(out.user_ids).toEqual(expect.arrayContaining([id.runner, id.zed, h.realm.bot.userId]));
    });

    it('pages with a cursor and refuses mismatched ones', async () => {
      const first = await ok<UserList>(h, 'list_users', { limit: 3 });
      expect(first.out.user_ids).toHaveLength(3);
      expect(userNames(first.text)).toEqual(['Ann Lee', 'Ann Smith', 'Bo Chen']);
      expect(first.text.split('\n')[0]).toContain(`call again with cursor "${first.out.next_cursor}"`);
      const names: string[] = userNames(first.text);
      const ids: number[] = [...first.out.user_ids];
      let cursor = first.out.next_cursor;
      while (cursor !== null) {
        const { text, out } = await ok<UserList>(h, 'list_users', { limit: 3, cursor });
        names.push(...userNames(text));
        ids.push(...out.user_ids);
        cursor = out.next_cursor;
      }
      expect(names).toHaveLength(8);
      expect(new Set(names).size).toBe(8);
      expect(new Set(ids).size).toBe(8);
      expect((await fail(h, 'list_users', { include_bots: true, cursor: first.out.next_cursor })).code).toBe(
        'TOOLS_INVALID_CURSOR',
      );
      const forged = encodeCursor(
        'list_users',
        { include_bots: false, include_deactivated: false },
        {
          kind: 'after',
          id: 1,
        },
      );
      expect((await fail(h, 'list_users', { cursor: forged })).code).toBe('TOOLS_INVALID_CURSOR');
    });

    it('refuses bad arguments, naming the field', async () => {
      expect((await fail(h, 'list_users', { limit: 501 })).text).toMatch(/limit/);
      expect((await fail(h, 'list_users', { include_bots: 'yes' })).text).toMatch(/include_bots/);
    });

    it('fails with isError once the deadline has passed', async () => {
      expect((await fail(h, 'list_users', {}, expiredSignal())).code).toBe('TOOLS_DEADLINE');
    });
  });

  describe('find_user', () => {
    it('finds one user by name prefix, email, id or mention', async () => {
      const bo = h.realm.bo.userId;
      const byPrefix = await ok<Found>(h, 'find_user', { query: 'bo' });
      expect(byPrefix.out).toMatchObject({ matched_by: 'prefix', total: 1, ambiguous: false });
      expect(byPrefix.out.user_ids).toEqual([bo]);
      expect(byPrefix.text).toBe(
        `Found 1 user for "bo" (matched by prefix).\nBo Chen (bo@example.test, id ${bo})`,
      );
      expect((await ok<Found>(h, 'find_user', { query: 'BO@example.test' })).out.matched_by).toBe('email');
      expect((await ok<Found>(h, 'find_user', { query: bo })).out.matched_by).toBe('id');
      expect((await ok<Found>(h, 'find_user', { query: '@**Bo Chen**' })).out.user_ids).toEqual([bo]);
    });

    it('returns every candidate when several match', async () => {
      const { text, out } = await ok<Found>(h, 'find_user', { query: 'ann' });
      expect(out).toMatchObject({ ambiguous: true, total: 2, matched_by: null });
      expect(out.user_ids).toEqual([h.realm.ann.userId, h.realm.annie.userId]);
      expect(userNames(text)).toEqual(['Ann Lee', 'Ann Smith']);
      expect(text.split('\n')[0]).toBe('2 users match "ann"; pick one by user id.');
    });

    it('finds bots and deactivated accounts, marked', async () => {
      expect((await ok<Found>(h, 'find_user', { query: 'Zed' })).text).toContain('[deactivated]');
      expect((await ok<Found>(h, 'find_user', { query: 'runner' })).text).toContain('[bot]');
    });

    it('answers no match with an empty result and a hint', async () => {
      const { text, out } = await ok<Found>(h, 'find_user', { query: 'Nobody Anywhere' });
      expect(out).toEqual({ matched_by: null, user_ids: [], total: 0, ambiguous: false, truncated: false });
      expect(text).toMatch(/^No user matches "Nobody Anywhere"\. .*list_users/);
    });

    it('refuses bad arguments, naming the field', async () => {
      expect((await fail(h, 'find_user', {})).text).toMatch(/query/);
      expect((await fail(h, 'find_user', { query: '  ' })).text).toMatch(/query/);
      expect((await fail(h, 'find_user', { query: 'x'.repeat(2001) })).text).toMatch(/query/);
    });

    it('fails with isError once the deadline has passed', async () => {
      expect((await fail(h, 'find_user', { query: 'bo' }, expiredSignal())).code).toBe('TOOLS_DEADLINE');
    });
  });

  describe('get_user_profile', () => {
    it('shows a profile with role, local time and named custom fields', async () => {
      const { text, out } = await ok<Profile>(h, 'get_user_profile', { user: 'Pat Profile' });
      expect(out).toMatchObject({
        user_id: id.pat,
        role: 'member',
        is_bot: false,
        bot_owner_id: null,
        is_active: true,
        is_self: false,
        timezone: 'Asia/Tokyo',
        local_time: '2026-09-14T17:42:52+09:00',
      });
      const lines = text.split('\n');
      expect(lines[0]).toBe(`Pat Profile (pat@example.test, id ${id.pat}): member, human.`);
      expect(lines[1]).toBe('Time zone: Asia/Tokyo; local time now 2026-09-14T17:42:52+09:00');
      expect(lines).toContain('Team: Platform &lt;core>');
      expect(lines).toContain('Level: Senior');
      expect(lines).toContain('Mentor: Bo Chen');
      // The custom fields come in the realm's order, after the time zone and join date.
      expect(lines.filter((l) => /^(Team|Level|Mentor): /.test(l))).toEqual([
        'Team: Platform &lt;core>',
        'Level: Senior',
        'Mentor: Bo Chen',
      ]);
    });

    it('shows roles, bot owners and the bot itself', async () => {
      expect((await ok<Profile>(h, 'get_user_profile', { user: id.dana })).out.role).toBe('admin');
      expect((await ok<Profile>(h, 'get_user_profile', { user: 'owen@example.test' })).out.role).toBe(
        'owner',
      );
      expect((await ok<Profile>(h, 'get_user_profile', { user: 'Mo Mod' })).out.role).toBe('moderator');
      expect((await ok<Profile>(h, 'get_user_profile', { user: 'Gus' })).out.role).toBe('guest');
      const runner = await ok<Profile>(h, 'get_user_profile', { user: 'Build Runner' });
      expect(runner.out).toMatchObject({ is_bot: true, bot_owner_id: h.realm.ann.userId });
      expect(runner.text).toContain(`Bot owner: Ann Lee (id ${h.realm.ann.userId})`);
      const self = await ok<Profile>(h, 'get_user_profile', {});
      expect(self.out).toMatchObject({ user_id: h.realm.bot.userId, is_self: true, is_bot: true });
      expect(self.text.split('\n')[0]).toContain('this is you');
      const zed = await ok<Profile>(h, 'get_user_profile', { user: id.zed });
      expect(zed.out.is_active).toBe(false);
      expect(zed.text.split('\n')[0]).toContain('deactivated');
    });

    it('fails on an ambiguous or unknown user, listing candidates', async () => {
      const ambiguous = await fail(h, 'get_user_profile', { user: 'Ann' });
      expect(ambiguous.code).toBe('CORE_USER_AMBIGUOUS');
      expect(ambiguous.text).toContain('Ann Lee');
      expect(ambiguous.text).toContain('Ann Smith');
      expect((await fail(h, 'get_user_profile', { user: 'Nobody Anywhere' })).code).toBe(
        'CORE_USER_NOT_FOUND',
      );
      expect((await fail(h, 'get_user_profile', { user: '' })).text).toMatch(/user/);
    });

    it('fails with isError once the deadline has passed', async () => {
      expect((await fail(h, 'get_user_profile', {}, expiredSignal())).code).toBe('TOOLS_DEADLINE');
    });
  });
});

describe('users with many matches and a small page', () => {
  it('lists at most the candidates core reports and says how many matched', async () => {
    const h = await startHarness({ pageBudgetBytes: 1024 });
    try {
      for (let i = 0; i < 25; i++)
        h.sim.realm.addUser({ fullName: `Sam ${i}`, email: `sam${i}@example.test` });
      const { text, out, result } = await ok<Found>(h, 'find_user', { query: 'sam' });
      expect(out.ambiguous).toBe(true);
      expect(out.total).toBe(25);
      expect(out.truncated).toBe(true);
      expect(out.user_ids.length).toBeLessThan(25);
      expect(userNames(text)).toHaveLength(out.user_ids.length);
      expectWithinBudget(result, 1024);
      expect(text.split('\n')[0]).toMatch(
        /^25 users match "sam"; pick one by user id\. \d+ listed; refine the query/,
      );
      const list = await ok<UserList>(h, 'list_users', {});
      expect(list.out.truncated).toBe(true);
      expectWithinBudget(list.result, 1024);
      const all: number[] = [...list.out.user_ids];
      let cursor = list.out.next_cursor;
      while (cursor !== null) {
        const { out, result } = await ok<UserList>(h, 'list_users', { cursor });
        expectWithinBudget(result, 1024);
        all.push(...out.user_ids);
        cursor = out.next_cursor;
      }
      expect(new Set(all).size).toBe(28);
      expect(all).toHaveLength(28);
    } finally {
      await h.close();
    }
  });
});
