import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCallOutcome } from '../src/host.js';
import { encodeCursor } from '../src/page.js';
import type { ToolFailure } from '../src/tool.js';
import { checkedOk, expectWithinBudget, expiredSignal } from './call.js';
import { type Harness, startHarness } from './harness.js';

// 2026-09-14 08:42:52 UTC, 11:42:52 in Helsinki.
const T = Date.UTC(2026, 8, 14, 8, 42, 52);

interface Page {
  ids: number[];
  hidden: number;
  truncated: boolean;
  has_more: boolean;
  next_cursor: string | null;
  direction: 'older' | 'newer';
}

async function ok(
  h: Harness,
  args: Record<string, unknown>,
): Promise<{ text: string; page: Page; result: ToolCallOutcome }> {
  const r = await h.call('fetch_history', args);
  if (r.isError) throw new Error(`fetch_history failed: ${r.text}`);
  // The structured result is exactly what the output schema describes (the app rejects a mismatch).
  const { structured } = checkedOk(h.tools, 'fetch_history', r);
  return { text: r.text, page: structured as unknown as Page, result: r };
}

async function fail(h: Harness, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolFailure> {
  const r = await h.call('fetch_history', args, signal === undefined ? {} : { signal });
  expect(r.isError).toBe(true);
  return r as ToolFailure;
}

/** Every page of a read, following next_cursor to the end. */
async function allPages(h: Harness, args: Record<string, unknown>): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | null | undefined;
  do {
    const { page } = await ok(h, cursor === undefined ? args : { ...args, cursor });
    pages.push(page);
    cursor = page.next_cursor;
  } while (cursor !== null && pages.length < 50);
  return pages;
}

describe('fetch_history', () => {
  let h: Harness;
  let deploys: number[];
  let nobots: number;
  let emptyTopic: number;
  let otherTopic: number;

  beforeAll(async () => {
    h = await startHarness({ timeZone: 'Europe/Helsinki', now: () => T, sim: { now: () => T } });
    const { ann, bo } = h.realm;
    deploys = [];
    for (let i = 0; i < 6; i++)
      deploys.push(h.post(i % 2 === 0 ? ann : bo, 'general', 'deploys', `step ${i}`));
    nobots = h.post(bo, 'general', 'deploys', 'keep this away from bots /nobots');
    for (let i = 6; i < 12; i++) deploys.push(h.post(ann, 'general', 'deploys', `step ${i}`));
    emptyTopic = h.post(bo, 'general', '', 'no topic here');
    otherTopic = h.post(ann, 'general', 'lunch', 'pizza?');
    h.post(ann, 'general', 'retro /nobots', 'private feelings');
  });
  afterAll(async () => {
    await h.close();
  });

  it('prints one message line per message in the shared shape', async () => {
    const { text, page } = await ok(h, { stream: 'general', topic: 'deploys', limit: 1 });
    const last = deploys[deploys.length - 1];
    expect(page.ids).toEqual([last]);
    const lines = text.split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^1 message in #general > deploys \(id \d+\), oldest first\. Older messages remain: call again with cursor "[\w-]+"\.$/,
    );
    expect(lines[1]).toBe(`[2026-09-14T11:42:52+03:00 id=${last}] [#general > deploys] Ann Lee: step 11`);
  });

  it('reports how far a read has come as progress, for a client that asked', async () => {
    const updates: { progress: number; total?: number; message?: string }[] = [];
    const r = await h.call(
      'fetch_history',
      { stream: 'general', topic: 'deploys', limit: 50 },
      { progress: (u) => updates.push(u) },
    );
    expect(r.isError).toBe(false);
    // One round read all twelve (the /nobots message aside), of the fifty asked for.
    expect(updates).toEqual([{ progress: 12, total: 50, message: 'messages read' }]);
  });

  it('reads the newest messages first, lists them oldest to newest, and continues older with the cursor', async () => {
    const first = await ok(h, { stream: 'general', topic: 'deploys', limit: 5 });
    expect(first.page.ids).toEqual(deploys.slice(-5));
    expect(first.page).toMatchObject({ has_more: true, hidden: 0, direction: 'older' });
    expect(first.text.split('\n')[0]).toMatch(
      /^5 messages in #general > deploys \(ids \d+–\d+\), oldest first\./,
    );
    // One line per message, in the order of the ids.
    expect(
      first.text
        .split('\n')
        .slice(1)
        .map((l) => Number(/ id=(\d+)\]/.exec(l)?.[1])),
    ).toEqual(first.page.ids);
    const pages = await allPages(h, { stream: 'general', topic: 'deploys', limit: 5 });
    const seen = pages.flatMap((p) => p.ids).sort((a, b) => a - b);
    expect(seen).toEqual(deploys);
    expect(pages.reduce((n, p) => n + p.hidden, 0)).toBe(1);
    expect(pages[pages.length - 1]?.next_cursor).toBeNull();
    expect(pages[pages.length - 1]?.has_more).toBe(false);
  });

  it('reads forwards from after, and the window between after and before', async () => {
    const forwards = await ok(h, { stream: 'general', topic: 'deploys', after: deploys[2], limit: 3 });
    expect(forwards.page.ids).toEqual(deploys.slice(3, 6));
    expect(forwards.text.split('\n')[0]).toContain('Newer messages remain');
    const next = await ok(h, {
      stream: 'general',
      topic: 'deploys',
      after: deploys[2],
      limit: 3,
      cursor: forwards.page.next_cursor,
    });
    // The /nobots message sits between step 5 and step 6: it is skipped and counted.
    expect(next.page.ids).toEqual(deploys.slice(6, 9));
    expect(next.page.hidden).toBe(1);

    const window = await ok(h, {
      stream: 'general',
      topic: 'deploys',
      after: deploys[0],
      before: deploys[3],
    });
    expect(window.page.ids).toEqual(deploys.slice(1, 3));
    expect(window.page).toMatchObject({ has_more: false, next_cursor: null });

    const fromStart = await ok(h, { stream: 'general', topic: 'deploys', after: 0, limit: 2 });
    expect(fromStart.page.ids).toEqual(deploys.slice(0, 2));
  });

  it('reads a whole stream, leaving /nobots topics out', async () => {
    // The /nobots topic's message is left out and counted; the read goes one further to fill the limit.
    const { text, page } = await ok(h, { stream: 'general', limit: 3 });
    expect(text.split('\n')[0]).toMatch(/^3 messages in #general \(ids /);
    expect(page.ids).toEqual([deploys[deploys.length - 1], emptyTopic, otherTopic]);
    expect(page.hidden).toBe(1);
    expect(text).not.toContain('private feelings');
  });

  it('reads the empty topic as "" or "(no topic)"', async () => {
    for (const topic of ['', '(no topic)']) {
      const { text, page } = await ok(h, { stream: 'general', topic });
      expect(page.ids).toEqual([emptyTopic]);
      expect(text.split('\n')[0]).toMatch(/^1 message in #general > \(no topic\) /);
      expect(text).toContain(`id=${emptyTopic}] [#general > (no topic)] Bo Chen: no topic here`);
    }
  });

  it('hides /nobots messages and refuses a /nobots topic as not found', async () => {
    const { text, page } = await ok(h, { stream: 'general', topic: 'deploys', limit: 200 });
    expect(page.ids).not.toContain(nobots);
    expect(page.hidden).toBe(1);
    expect(text).not.toContain('keep this away');
    expect(text.split('\n')[0]).toContain('1 message hidden');
    const refused = await fail(h, { stream: 'general', topic: 'retro /nobots' });
    expect(refused.code).toBe('TOOLS_NOT_FOUND');
    expect(refused.text).not.toContain('private feelings');
  });

  it('refuses bad arguments, naming the field', async () => {
    expect((await fail(h, {})).text).toMatch(/stream/);
    expect((await fail(h, { stream: 'general', dm: ['Bo Chen'] })).text).toMatch(/stream and dm/);
    expect((await fail(h, { dm: ['Bo Chen'], topic: 'x' })).text).toMatch(/topic/);
    const badLimit = await fail(h, { stream: 'general', limit: 0 });
    expect(badLimit.code).toBe('TOOLS_INVALID_INPUT');
    expect(badLimit.text).toMatch(/limit/);
    expect((await fail(h, { stream: 'general', limit: 201 })).text).toMatch(/limit/);
    expect((await fail(h, { stream: 'general', before: -3 })).text).toMatch(/before/);
    expect((await fail(h, { stream: 'x'.repeat(201) })).text).toMatch(/stream/);
    expect((await fail(h, { stream: 'no-such-stream' })).code).toBe('TOOLS_NOT_FOUND');
  });

  it('refuses private streams the policy keeps closed, and DMs', async () => {
    h.sim.realm.sendMessage({
      senderId: h.realm.ann.userId,
      type: 'stream',
      stream: 'secret',
      topic: 't',
      content: 'classified',
    });
    h.sim.realm.sendMessage({
      senderId: h.realm.ann.userId,
      type: 'stream',
      stream: 'hidden',
      topic: 't',
      content: 'invisible',
    });
    const secret = await fail(h, { stream: 'secret' });
    expect(secret.code).toBe('CORE_ACCESS_DENIED');
    expect(secret.text).not.toContain('classified');
    const hidden = await fail(h, { stream: 'hidden' });
    expect(['CORE_ACCESS_DENIED', 'TOOLS_NOT_FOUND']).toContain(hidden.code);
    expect(hidden.text).not.toContain('invisible');
    const dm = await fail(h, { dm: ['Bo Chen'] });
    expect(dm.code).toBe('CORE_ACCESS_DENIED');
    expect(dm.text).toMatch(/direct messages/);
  });

  it('refuses malformed, foreign and mismatched cursors', async () => {
    const args = { stream: 'general', topic: 'deploys', limit: 2 };
    const { page } = await ok(h, args);
    const cursor = page.next_cursor as string;
    expect((await fail(h, { ...args, cursor: 'not a cursor!' })).code).toBe('TOOLS_INVALID_CURSOR');
    // Issued for another topic: refused, not applied to this one.
    const other = await fail(h, { stream: 'general', topic: 'lunch', cursor });
    expect(other.code).toBe('TOOLS_INVALID_CURSOR');
    expect(other.text).toMatch(/different arguments/);
    // Issued by another tool.
    const foreign = encodeCursor(
      'search_messages',
      { stream: 'general', topic: 'deploys' },
      { kind: 'before', id: 5 },
    );
    expect((await fail(h, { ...args, cursor: foreign })).text).toMatch(/belongs to search_messages/);
    // Well-formed for this query, but a position this query never continues from.
    const offset = encodeCursor(
      'fetch_history',
      { stream: 'general', topic: 'deploys' },
      { kind: 'offset', offset: 3 },
    );
    expect((await fail(h, { ...args, cursor: offset })).code).toBe('TOOLS_INVALID_CURSOR');
    const wrongWay = encodeCursor(
      'fetch_history',
      { stream: 'general', topic: 'deploys' },
      { kind: 'after', id: 1 },
    );
    expect((await fail(h, { ...args, cursor: wrongWay })).code).toBe('TOOLS_INVALID_CURSOR');
    // The limit may change between pages; the cursor still continues.
    const more = await ok(h, { ...args, limit: 3, cursor });
    expect(more.page.ids).toEqual(deploys.slice(-5, -2));
  });

  it('gives a forged cursor no authority: the read it leads to passes the policy again', async () => {
    const forged = encodeCursor('fetch_history', { stream: 'secret' }, { kind: 'before', id: 1_000_000 });
    const refused = await fail(h, { stream: 'secret', cursor: forged });
    expect(refused.code).toBe('CORE_ACCESS_DENIED');
  });

  it('fails with isError once the deadline has passed', async () => {
    const r = await fail(h, { stream: 'general' }, expiredSignal());
    expect(r.code).toBe('TOOLS_DEADLINE');
  });

  it('ends a call already under way when its shared deadline fires', async () => {
    // Zulip would take 10 s to answer; the call's one signal ends it.
    const slow = h.sim.faults.add({ method: 'GET', path: /\/messages$/, latencyMs: 10_000 });
    try {
      const controller = new AbortController();
      const pending = h.call(
        'fetch_history',
        { stream: 'general', topic: 'lunch' },
        { signal: controller.signal },
      );
      controller.abort(new DOMException('The deadline passed.', 'TimeoutError'));
      const r = await pending;
      expect(r.isError).toBe(true);
      expect((r as ToolFailure).code).toBe('TOOLS_DEADLINE');
    } finally {
      slow.remove();
    }
  });
});

describe('fetch_history with a small page budget', () => {
  let h: Harness;
  let ids: number[];
  beforeAll(async () => {
    h = await startHarness({ pageBudgetBytes: 600 });
    ids = [];
    for (let i = 0; i < 9; i++) ids.push(h.post(h.realm.ann, 'dev', 'long', `line ${i} ${'x'.repeat(60)}`));
  });
  afterAll(async () => {
    await h.close();
  });

  it('cuts the page to the budget and continues exactly where it stopped', async () => {
    const { text, page, result } = await ok(h, { stream: 'dev', topic: 'long', limit: 200 });
    expect(page.truncated).toBe(true);
    expectWithinBudget(result, 600);
    expect(page.ids.length).toBeGreaterThan(0);
    expect(page.ids.length).toBeLessThan(ids.length);
    expect(page.ids).toEqual(ids.slice(-page.ids.length));
    expect(text.split('\n')[0]).toContain('cut to fit the page');
    const pages = await allPages(h, { stream: 'dev', topic: 'long', limit: 200 });
    expect(pages.length).toBeGreaterThan(2);
    const seen = pages.flatMap((p) => p.ids).sort((a, b) => a - b);
    expect(seen).toEqual(ids);
    for (const p of pages) expect(p.truncated || p.next_cursor === null).toBe(true);
  });

  it('cuts a single message longer than the page with an explicit marker', async () => {
    const big = h.post(h.realm.bo, 'dev', 'huge', `start ${'y'.repeat(2000)} end`);
    const { text, page, result } = await ok(h, { stream: 'dev', topic: 'huge' });
    expectWithinBudget(result, 600);
    expect(page.ids).toEqual([big]);
    expect(page.truncated).toBe(true);
    expect(text).toMatch(/\[… truncated, \d+ more bytes\]$/);
    expect(text).not.toContain(' end');
  });
});

describe('fetch_history with an allowlist', () => {
  it('reads an allowlisted private stream but not DMs', async () => {
    const h = await startHarness({ policy: { privateStreams: ['secret'] } });
    try {
      const id = h.post(h.realm.ann, 'secret', 'plans', 'the plan');
      const { page } = await ok(h, { stream: 'secret', topic: 'plans' });
      expect(page.ids).toEqual([id]);
      expect((await fail(h, { stream: 'hidden' })).isError).toBe(true);
      expect((await fail(h, { dm: [h.realm.bo.userId] })).code).toBe('CORE_ACCESS_DENIED');
    } finally {
      await h.close();
    }
  });

  it('reads a DM conversation named by name, email or id when DMs are open', async () => {
    const h = await startHarness({ policy: { privateStreams: '__ALL__' } });
    try {
      const { ann, bo, bot } = h.realm;
      const one = h.sim.realm.sendMessage({
        senderId: ann.userId,
        type: 'direct',
        to: [bot.userId],
        content: 'hi bot',
      });
      const group = h.sim.realm.sendMessage({
        senderId: ann.userId,
        type: 'direct',
        to: [bot.userId, bo.userId],
        content: 'hi both',
      });
      for (const who of ['Ann Lee', 'ann@example.test', ann.userId, String(ann.userId)]) {
        const { text, page } = await ok(h, { dm: [who] });
        expect(page.ids).toEqual([one]);
        expect(text.split('\n')[0]).toMatch(/^1 message in DM with Ann Lee /);
        expect(text).toContain(`id=${one}] [DM] Ann Lee: hi bot`);
      }
      const both = await ok(h, { dm: ['Bo Chen', 'Ann Lee', 'Helper Bot'] });
      expect(both.page.ids).toEqual([group]);
      const ambiguous = await fail(h, { dm: ['Ann'] });
      expect(ambiguous.code).toBe('CORE_USER_AMBIGUOUS');
      expect(ambiguous.text).toContain('Ann Lee');
      expect(ambiguous.text).toContain('Ann Smith');
      expect((await fail(h, { dm: ['Nobody Here'] })).code).toBe('CORE_USER_NOT_FOUND');
    } finally {
      await h.close();
    }
  });
});
