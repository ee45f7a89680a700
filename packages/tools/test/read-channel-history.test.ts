import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCallOutcome } from '../src/host.js';
import { encodeCursor } from '../src/page.js';
import type { ToolFailure } from '../src/tool.js';
import { checkedOk, expectWithinBudget, expiredSignal } from './call.js';
import { type Harness, startHarness } from './harness.js';

// "Now" is 2026-09-14 11:42:52 in Helsinki (UTC+3).
const NOW = Date.UTC(2026, 8, 14, 8, 42, 52);
/** Unix seconds of a Helsinki wall time in September 2026. */
const local = (day: number, hour: number, minute = 0) => Date.UTC(2026, 8, day, hour - 3, minute) / 1000;

interface History {
  from: string;
  to: string;
  ids: number[];
  hidden: number;
  truncated: boolean;
  has_more: boolean;
  next_cursor: string | null;
}

async function ok(
  h: Harness,
  args: Record<string, unknown>,
): Promise<{ text: string; out: History; result: ToolCallOutcome }> {
  const r = await h.call('get_channel_history', args);
  if (r.isError) throw new Error(`get_channel_history failed: ${r.text}`);
  const { structured } = checkedOk(h.tools, 'get_channel_history', r);
  return { text: r.text, out: structured as unknown as History, result: r };
}

async function fail(h: Harness, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolFailure> {
  const r = await h.call('get_channel_history', args, signal === undefined ? {} : { signal });
  expect(r.isError).toBe(true);
  return r as ToolFailure;
}

const ids = (o: History) => o.ids;

describe('get_channel_history', () => {
  let h: Harness;
  const at: Record<string, number> = {};

  beforeAll(async () => {
    h = await startHarness({ timeZone: 'Europe/Helsinki', now: () => NOW, sim: { now: () => NOW } });
    const send = (key: string, topic: string, content: string, timestamp: number) => {
      at[key] = h.sim.realm.sendMessage({
        senderId: h.realm.ann.userId,
        type: 'stream',
        stream: 'general',
        topic,
        content,
        timestamp,
      });
    };
    send('threeDaysAgo', 'ops', 'three days ago', local(11, 10));
    send('yesterdayMorning', 'ops', 'yesterday morning', local(13, 9));
    send('yesterdayNobots', 'ops', 'yesterday, not for bots /nobots', local(13, 12));
    send('yesterdayLate', 'chat', 'yesterday late', local(13, 23, 30));
    // 00:10 in Helsinki is still the 13th in UTC: the day follows the agent's zone.
    send('todayEarly', 'ops', 'just after midnight', local(14, 0, 10));
    send('todayMorning', 'chat', 'this morning', local(14, 11));
  });
  afterAll(async () => {
    await h.close();
  });

  it('reads today in the agent time zone by default', async () => {
    const { text, out } = await ok(h, { stream: 'general' });
    expect(ids(out)).toEqual([at.todayEarly, at.todayMorning]);
    expect(out).toMatchObject({ from: '2026-09-14T00:00:00+03:00', to: '2026-09-15T00:00:00+03:00' });
    const lines = text.split('\n');
    expect(lines[0]).toContain(
      '2 messages in #general between 2026-09-14T00:00:00+03:00 and 2026-09-15T00:00:00+03:00 (Europe/Helsinki)',
    );
    expect(lines).toHaveLength(3);
    expect(lines[1]).toBe(
      `[2026-09-14T00:10:00+03:00 id=${at.todayEarly}] [#general > ops] Ann Lee: just after midnight`,
    );
  });

  it('reads natural days, ISO dates and ranges', async () => {
    const yesterday = await ok(h, { stream: 'general', when: 'yesterday' });
    expect(ids(yesterday.out)).toEqual([at.yesterdayMorning, at.yesterdayLate]);
    expect(yesterday.out.hidden).toBe(1);
    expect(yesterday.text).not.toContain('not for bots');
    expect(ids((await ok(h, { stream: 'general', when: '3 days ago' })).out)).toEqual([at.threeDaysAgo]);
    expect(ids((await ok(h, { stream: 'general', when: '2026-09-13' })).out)).toEqual([
      at.yesterdayMorning,
      at.yesterdayLate,
    ]);
    const range = await ok(h, { stream: 'general', when: '2026-09-11..2026-09-13' });
    expect(ids(range.out)).toEqual([at.threeDaysAgo, at.yesterdayMorning, at.yesterdayLate]);
    expect(range.out).toMatchObject({ from: '2026-09-11T00:00:00+03:00', to: '2026-09-14T00:00:00+03:00' });
    expect(ids((await ok(h, { stream: 'general', when: '2026-09-12' })).out)).toEqual([]);
  });

  it('narrows to a topic', async () => {
    const { text, out } = await ok(h, { stream: 'general', topic: 'ops', when: 'last 7 days' });
    expect(text.split('\n')[0]).toMatch(/^3 messages in #general > ops between /);
    expect(text).not.toContain('[#general > chat]');
    expect(ids(out)).toEqual([at.threeDaysAgo, at.yesterdayMorning, at.todayEarly]);
  });

  it('refuses dates it cannot read and other bad arguments, naming the field', async () => {
    const r = await fail(h, { stream: 'general', when: 'the day after the fair' });
    expect(r.code).toBe('TOOLS_INVALID_INPUT');
    expect(r.text).toMatch(/^Invalid arguments: when: /);
    expect((await fail(h, { stream: 'general', when: 'x'.repeat(101) })).text).toMatch(/when/);
    expect((await fail(h, { when: 'today' })).text).toMatch(/stream/);
    expect((await fail(h, { stream: 'general', limit: 1000 })).text).toMatch(/limit/);
  });

  it('refuses private streams the policy keeps closed', async () => {
    expect((await fail(h, { stream: 'secret' })).code).toBe('CORE_ACCESS_DENIED');
    expect((await fail(h, { stream: 'hidden' })).isError).toBe(true);
  });

  it('refuses cursors of other queries and positions it never issues', async () => {
    const { out } = await ok(h, { stream: 'general', when: '2026-09-11..2026-09-14', limit: 2 });
    expect(out.next_cursor).not.toBeNull();
    const other = await fail(h, { stream: 'general', when: 'yesterday', cursor: out.next_cursor });
    expect(other.code).toBe('TOOLS_INVALID_CURSOR');
    const before = encodeCursor(
      'get_channel_history',
      { stream: 'general', when: 'today' },
      { kind: 'before', id: 9 },
    );
    expect((await fail(h, { stream: 'general', when: 'today', cursor: before })).code).toBe(
      'TOOLS_INVALID_CURSOR',
    );
  });

  it('continues a range with its cursor without crossing the range end', async () => {
    const args = { stream: 'general', when: '2026-09-11..2026-09-13', limit: 1 };
    const seen: number[] = [];
    let cursor: string | null | undefined;
    do {
      const { out } = await ok(h, cursor === undefined ? args : { ...args, cursor });
      seen.push(...ids(out));
      cursor = out.next_cursor;
    } while (cursor !== null && seen.length < 20);
    expect(seen).toEqual([at.threeDaysAgo, at.yesterdayMorning, at.yesterdayLate]);
  });

  it('fails with isError once the deadline has passed', async () => {
    expect((await fail(h, { stream: 'general' }, expiredSignal())).code).toBe('TOOLS_DEADLINE');
  });
});

describe('get_channel_history with a small page budget', () => {
  it('cuts the page and continues within the range', async () => {
    const h = await startHarness({ pageBudgetBytes: 1024, now: () => NOW, sim: { now: () => NOW } });
    try {
      const today: number[] = [];
      for (let i = 0; i < 8; i++) {
        today.push(
          h.sim.realm.sendMessage({
            senderId: h.realm.bo.userId,
            type: 'stream',
            stream: 'dev',
            topic: 'log',
            content: `entry ${i} ${'w'.repeat(60)}`,
            timestamp: NOW / 1000 - 3600 + i,
          }),
        );
      }
      const first = await ok(h, { stream: 'dev', limit: 200 });
      expect(first.out.truncated).toBe(true);
      expectWithinBudget(first.result, 1024);
      expect(ids(first.out)).toEqual(today.slice(0, first.out.ids.length));
      const seen = [...ids(first.out)];
      let cursor = first.out.next_cursor;
      while (cursor !== null) {
        const { out } = await ok(h, { stream: 'dev', limit: 200, cursor });
        seen.push(...ids(out));
        cursor = out.next_cursor;
      }
      expect(seen).toEqual(today);
    } finally {
      await h.close();
    }
  });
});
