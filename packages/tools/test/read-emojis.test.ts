import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolCallOutcome } from '../src/host.js';
import { encodeCursor } from '../src/page.js';
import type { ToolFailure } from '../src/tool.js';
import { checkedOk, expectWithinBudget, expiredSignal } from './call.js';
import { type Harness, startHarness } from './harness.js';

interface EmojiList {
  total: number;
  offset: number;
  truncated: boolean;
  next_cursor: string | null;
}

async function ok(
  h: Harness,
  args: Record<string, unknown>,
): Promise<{ text: string; out: EmojiList; names: string[]; result: ToolCallOutcome }> {
  const r = await h.call('list_emojis', args);
  if (r.isError) throw new Error(`list_emojis failed: ${r.text}`);
  const { structured } = checkedOk(h.tools, 'list_emojis', r);
  // One `:name:` line per emoji after the summary.
  const names = r.text
    .split('\n')
    .slice(1)
    .map((l) => /^:([^:\s]+):$/.exec(l)?.[1] ?? `?${l}`);
  return { text: r.text, out: structured as unknown as EmojiList, names, result: r };
}

async function fail(h: Harness, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolFailure> {
  const r = await h.call('list_emojis', args, signal === undefined ? {} : { signal });
  expect(r.isError).toBe(true);
  return r as ToolFailure;
}

describe('list_emojis', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
    const author = h.realm.ann.userId;
    h.sim.realm.addRealmEmoji({ name: 'ship_it', authorId: author });
    h.sim.realm.addRealmEmoji({ name: 'party-parrot', authorId: author });
    h.sim.realm.addRealmEmoji({ name: 'old_logo', authorId: author, deactivated: true });
  });
  afterAll(async () => {
    await h.close();
  });

  it('lists the active custom emoji and how to use them', async () => {
    const { text, out, names } = await ok(h, {});
    expect(names).toEqual(['party-parrot', 'ship_it']);
    expect(out).toEqual({ total: 2, offset: 0, truncated: false, next_cursor: null });
    const lines = text.split('\n');
    expect(lines[0]).toBe(
      '2 custom emoji (showing 1–2 of 2). Use them as :name:; Unicode emoji work by name too (:thumbs_up:, :tada:).',
    );
    expect(lines.slice(1)).toEqual([':party-parrot:', ':ship_it:']);
    expect(text).not.toContain('old_logo');
  });

  it('filters by name and pages with a cursor', async () => {
    const filtered = await ok(h, { name_contains: 'ship' });
    expect(filtered.names).toEqual(['ship_it']);
    expect(filtered.out.total).toBe(1);
    const first = await ok(h, { limit: 1 });
    expect(first.names).toEqual(['party-parrot']);
    expect(first.out).toMatchObject({ total: 2, offset: 0 });
    const second = await ok(h, { limit: 1, cursor: first.out.next_cursor });
    expect(second.out).toMatchObject({ offset: 1, next_cursor: null });
    expect(second.names).toEqual(['ship_it']);
  });

  it('refuses bad arguments and mismatched cursors', async () => {
    expect((await fail(h, { limit: 0 })).text).toMatch(/limit/);
    expect((await fail(h, { name_contains: '' })).text).toMatch(/name_contains/);
    const { out } = await ok(h, { limit: 1 });
    expect((await fail(h, { name_contains: 'p', cursor: out.next_cursor })).code).toBe(
      'TOOLS_INVALID_CURSOR',
    );
    const wrongKind = encodeCursor('list_emojis', {}, { kind: 'before', id: 2 });
    expect((await fail(h, { cursor: wrongKind })).code).toBe('TOOLS_INVALID_CURSOR');
  });

  it('fails with isError once the deadline has passed', async () => {
    expect((await fail(h, {}, expiredSignal())).code).toBe('TOOLS_DEADLINE');
  });
});

describe('list_emojis with a small page budget', () => {
  it('cuts the page to the budget and continues', async () => {
    const h = await startHarness({ pageBudgetBytes: 1024 });
    try {
      for (let i = 0; i < 40; i++) {
        h.sim.realm.addRealmEmoji({
          name: `emoji_number_${String(i).padStart(2, '0')}`,
          authorId: h.realm.ann.userId,
        });
      }
      const names: string[] = [];
      let cursor: string | null | undefined;
      let pages = 0;
      do {
        const page = await ok(h, cursor === undefined ? {} : { cursor });
        const out = page.out;
        if (pages === 0) expect(out.truncated).toBe(true);
        expectWithinBudget(page.result, 1024);
        names.push(...page.names);
        cursor = out.next_cursor;
        pages++;
      } while (cursor !== null && pages < 40);
      expect(pages).toBeGreaterThan(1);
      expect(names).toEqual(
        Array.from({ length: 40 }, (_, i) => `emoji_number_${String(i).padStart(2, '0')}`),
      );
    } finally {
      await h.close();
    }
  });
});
