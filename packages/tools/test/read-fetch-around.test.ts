import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCallOutcome } from '../src/host.js';
import { encodeCursor } from '../src/page.js';
import type { ToolFailure } from '../src/tool.js';
import { checkedOk, expectWithinBudget, expiredSignal } from './call.js';
import { type Harness, startHarness } from './harness.js';

interface Window {
  anchor_id: number;
  ids: number[];
  hidden: number;
  truncated: boolean;
  has_older: boolean;
  has_newer: boolean;
  older_cursor: string | null;
  newer_cursor: string | null;
}

async function ok(
  h: Harness,
  args: Record<string, unknown>,
): Promise<{ text: string; win: Window; result: ToolCallOutcome }> {
  const r = await h.call('fetch_around', args);
  if (r.isError) throw new Error(`fetch_around failed: ${r.text}`);
  const { structured } = checkedOk(h.tools, 'fetch_around', r);
  return { text: r.text, win: structured as unknown as Window, result: r };
}

async function fail(h: Harness, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolFailure> {
  const r = await h.call('fetch_around', args, signal === undefined ? {} : { signal });
  expect(r.isError).toBe(true);
  return r as ToolFailure;
}

const ids = (w: Window) => w.ids;
/** The ids of the message lines of a text, in order. */
const lineIds = (text: string) =>
  text
    .split('\n')
    .slice(1)
    .map((l) => Number(/ id=(\d+)\]/.exec(l)?.[1]));

describe('fetch_around', () => {
  let h: Harness;
  let topic: number[];
  let nobots: number;
  let secret: number;
  let dm: number;

  beforeAll(async () => {
    h = await startHarness();
    const { ann, bo, bot } = h.realm;
    topic = [];
    for (let i = 0; i < 5; i++) topic.push(h.post(ann, 'general', 'deploys', `before ${i}`));
    h.post(bo, 'general', 'other', 'noise in another topic');
    nobots = h.post(bo, 'general', 'deploys', 'not for bots /nobots');
    for (let i = 0; i < 5; i++) topic.push(h.post(bo, 'general', 'deploys', `after ${i}`));
    h.post(ann, 'dev', 'deploys', 'same topic name, other stream');
    secret = h.post(ann, 'secret', 'plans', 'classified');
    dm = h.sim.realm.sendMessage({ senderId: ann.userId, type: 'direct', to: [bot.userId], content: 'psst' });
  });
  afterAll(async () => {
    await h.close();
  });

  it('centres a window on the message within its own topic and marks the anchor', async () => {
    const anchor = topic[4] as number;
    const { text, win } = await ok(h, { message_id: anchor, before: 2, after: 2 });
    expect(win.anchor_id).toBe(anchor);
    // The other topic's message between them is not part of the conversation; the /nobots one is hidden.
    expect(ids(win)).toEqual(topic.slice(2, 7));
    expect(win.hidden).toBe(1);
    expect(lineIds(text)).toEqual(ids(win));
    const lines = text.split('\n');
    expect(lines[0]).toMatch(
      /^5 messages around id \d+ in #general > deploys .*the anchor marked →; 1 message hidden/,
    );
    expect(lines.filter((l) => l.startsWith('→ '))).toEqual([
      expect.stringContaining(`id=${anchor}] [#general > deploys] Ann Lee: before 4`),
    ]);
    expect(text).not.toContain('noise in another topic');
    expect(text).not.toContain('not for bots');
    expect(text).not.toContain('other stream');
    expect(win).toMatchObject({ has_older: true, has_newer: true });
  });

  it('extends the window on either side with its cursors', async () => {
    const anchor = topic[5] as number;
    const { win } = await ok(h, { message_id: anchor, before: 1, after: 1 });
    expect(ids(win)).toEqual(topic.slice(4, 7));
    const older = await ok(h, { message_id: anchor, before: 1, after: 1, cursor: win.older_cursor });
    expect(ids(older.win)).toEqual([topic[3]]);
    expect(older.win.newer_cursor).toBeNull();
    const newer = await ok(h, { message_id: anchor, before: 1, after: 1, cursor: win.newer_cursor });
    expect(ids(newer.win)).toEqual([topic[7]]);
    let cursor = newer.win.newer_cursor;
    const seen: number[] = [];
    while (cursor !== null) {
      const page = await ok(h, { message_id: anchor, before: 1, after: 1, cursor });
      seen.push(...ids(page.win));
      cursor = page.win.newer_cursor;
    }
    expect(seen).toEqual(topic.slice(8));
  });

  it('reads a message at the start of its topic with nothing older', async () => {
    const { text, win } = await ok(h, { message_id: topic[0], before: 3, after: 0 });
    expect(ids(win)).toEqual([topic[0]]);
    expect(win.older_cursor).toBeNull();
    expect(text).toContain('No older messages.');
  });

  it('reports a /nobots anchor and a missing one as not found', async () => {
    const r = await fail(h, { message_id: nobots });
    expect(r.code).toBe('TOOLS_NOT_FOUND');
    expect(r.text).not.toContain('not for bots');
    expect((await fail(h, { message_id: 9_999_999 })).code).toBe('TOOLS_NOT_FOUND');
  });

  it('refuses bad arguments, naming the field', async () => {
    expect((await fail(h, {})).text).toMatch(/message_id/);
    expect((await fail(h, { message_id: 'ten' })).text).toMatch(/message_id/);
    expect((await fail(h, { message_id: topic[0], before: 101 })).text).toMatch(/before/);
    expect((await fail(h, { message_id: topic[0], after: -1 })).text).toMatch(/after/);
  });

  it('refuses messages in closed private streams and DMs without revealing them', async () => {
    // A closed message answers exactly as a missing one: nothing says it exists, or where.
    const missing = await fail(h, { message_id: 987_654 });
    const r = await fail(h, { message_id: secret });
    expect(r.code).toBe('TOOLS_NOT_FOUND');
    expect(r.text).toBe(missing.text.replace('987654', String(secret)));
    expect(r.text).not.toContain('classified');
    const d = await fail(h, { message_id: dm });
    expect(d.code).toBe('TOOLS_NOT_FOUND');
    expect(d.text).toBe(missing.text.replace('987654', String(dm)));
    expect(d.text).not.toContain('psst');
  });

  it('refuses forged and mismatched cursors', async () => {
    const anchor = topic[5] as number;
    const { win } = await ok(h, { message_id: anchor, before: 1, after: 1 });
    expect(
      (await fail(h, { message_id: topic[6], before: 1, after: 1, cursor: win.older_cursor })).code,
    ).toBe('TOOLS_INVALID_CURSOR');
    expect((await fail(h, { message_id: anchor, cursor: '!!' })).code).toBe('TOOLS_INVALID_CURSOR');
    const offset = encodeCursor(
      'fetch_around',
      { message_id: anchor, before: 1, after: 1 },
      { kind: 'offset', offset: 1 },
    );
    expect((await fail(h, { message_id: anchor, before: 1, after: 1, cursor: offset })).code).toBe(
      'TOOLS_INVALID_CURSOR',
    );
    // A well-formed cursor on a closed message still goes through the gate first.
    const forged = encodeCursor(
      'fetch_around',
      { message_id: secret, before: 5, after: 5 },
      { kind: 'before', id: secret },
    );
    expect((await fail(h, { message_id: secret, cursor: forged })).code).toBe('TOOLS_NOT_FOUND');
  });

  it('fails with isError once the deadline has passed', async () => {
    expect((await fail(h, { message_id: topic[0] }, expiredSignal())).code).toBe('TOOLS_DEADLINE');
  });
});

describe('fetch_around with DMs open and a small page', () => {
  it('reads around a DM within that conversation', async () => {
    const h = await startHarness({ policy: { privateStreams: '__ALL__' } });
    try {
      const { ann, bo, bot } = h.realm;
      const send = (from: number, to: number[], content: string) =>
        h.sim.realm.sendMessage({ senderId: from, type: 'direct', to, content });
      const a = send(ann.userId, [bot.userId], 'one');
      send(bo.userId, [bot.userId], 'elsewhere');
      const b = send(bot.userId, [ann.userId], 'two');
      const c = send(ann.userId, [bot.userId], 'three');
      const { text, win } = await ok(h, { message_id: b });
      expect(text.split('\n')[0]).toMatch(/^3 messages around id \d+ in DM with Ann Lee /);
      expect(ids(win)).toEqual([a, b, c]);
      expect(lineIds(text)).toEqual([a, b, c]);
      expect(text).toContain(`→ [`);
      expect(text).not.toContain('elsewhere');
    } finally {
      await h.close();
    }
  });

  it('keeps the window centred on the anchor when the budget cuts it, and continues from the cut', async () => {
    const h = await startHarness({ pageBudgetBytes: 1024 });
    try {
      const all: number[] = [];
      for (let i = 0; i < 11; i++)
        all.push(h.post(h.realm.ann, 'dev', 'wide', `message ${i} ${'z'.repeat(50)}`));
      const anchor = all[5] as number;
      const { text, win, result } = await ok(h, { message_id: anchor, before: 5, after: 5 });
      expect(win.truncated).toBe(true);
      expectWithinBudget(result, 1024);
      const got = ids(win);
      expect(got).toContain(anchor);
      expect(got.length).toBeLessThan(all.length);
      const at = got.indexOf(anchor);
      expect(Math.abs(at - (got.length - 1 - at))).toBeLessThanOrEqual(1);
      expect(text.split('\n')[0]).toContain('cut to fit the page');
      const older = await ok(h, { message_id: anchor, before: 5, after: 5, cursor: win.older_cursor });
      const newer = await ok(h, { message_id: anchor, before: 5, after: 5, cursor: win.newer_cursor });
      expect(ids(older.win).at(-1)).toBe(all[all.indexOf(got[0] as number) - 1]);
      expect(ids(newer.win)[0]).toBe(all[all.indexOf(got.at(-1) as number) + 1]);
    } finally {
      await h.close();
    }
  });
});
