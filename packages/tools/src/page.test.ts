import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, fitToBudget, jsonBytes, truncateToJsonBytes } from './page.js';

// Characters whose JSON or UTF-8 size differs from one byte, and a few plain ones.
const PALETTE = [
  'a',
  ' ',
  '"',
  '\\',
  '\n',
  '\r',
  '\t',
  '\b',
  '\f',
  '\u0000',
  '\u001b',
  '\u007f',
  '\u0085',
  'é',
  '€',
  '\u2028',
  '\ud83d\ude00',
  '\ud800',
  '\udfff',
  '𝒳',
  '<',
];

// Characters JSON writes as they are: their JSON size is their UTF-8 size.
const PLAIN = ['a', ' ', '<', '~', '\u007f', '\u0085', 'é', '€', '\u2028', '\uffff'];

/** A deterministic stream of hostile strings (a linear congruential generator, fixed seed). */
function* samples(count: number, palette: readonly string[] = PALETTE): Generator<string> {
  let state = 12345;
  const next = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state;
  };
  for (let i = 0; i < count; i++) {
    let s = '';
    const length = next() % 40;
    for (let j = 0; j < length; j++) s += palette[next() % palette.length];
    yield s;
  }
}

const stringifiedBytes = (s: string) => Buffer.byteLength(JSON.stringify(s), 'utf8') - 2;

describe('jsonBytes', () => {
  it('is exactly the size JSON.stringify gives a string, without its quotes', () => {
    for (const s of samples(2000)) expect(jsonBytes(s)).toBe(stringifiedBytes(s));
  });

  it('is the UTF-8 size for text JSON does not escape, and exact again once one escaped unit is in it', () => {
    for (const s of samples(500, PLAIN)) {
      expect(jsonBytes(s)).toBe(Buffer.byteLength(s, 'utf8'));
      for (const special of ['"', '\\', '\n', '\u0000', '\u001f', '\ud800', '\udfff', '\ud83d\ude00']) {
        const mixed = `${s}${special}${s}`;
        expect(jsonBytes(mixed)).toBe(stringifiedBytes(mixed));
      }
    }
  });

  it('measures lines joined by LF as the lines plus two bytes per join, across surrogate halves', () => {
    const lines = [...samples(500)];
    const sum = lines.reduce((n, line) => n + jsonBytes(line), 0) + 2 * (lines.length - 1);
    expect(jsonBytes(lines.join('\n'))).toBe(sum);
    // Plain lines: only the joins (and any LF inside) are escaped.
    for (const s of samples(500, [...PLAIN, '\n'])) expect(jsonBytes(s)).toBe(stringifiedBytes(s));
    expect(jsonBytes('\ud800\n\udc00')).toBe(stringifiedBytes('\ud800\n\udc00'));
  });

  it('is never less than the UTF-8 size of the text', () => {
    for (const s of samples(2000)) expect(jsonBytes(s)).toBeGreaterThanOrEqual(Buffer.byteLength(s, 'utf8'));
  });
});

describe('fitToBudget', () => {
  it('keeps a page inside its budget as JSON, counting the joins and the per-item bytes', () => {
    const lines = [...samples(300)];
    for (const budget of [64, 500, 4096]) {
      const page = fitToBudget(lines, budget, 17);
      expect(page.shown).toBeGreaterThan(0);
      if (!page.truncated) continue;
      expect(stringifiedBytes(page.text) + 17 * page.shown).toBeLessThanOrEqual(budget);
    }
  });

  it('shows the whole page exactly when its JSON fits, and otherwise the longest prefix that does', () => {
    const lines = [...samples(60)];
    const whole = stringifiedBytes(lines.join('\n')) + 9 * lines.length;
    expect(fitToBudget(lines, whole, 9)).toEqual({
      text: lines.join('\n'),
      shown: lines.length,
      truncated: false,
    });
    for (const budget of [whole - 1, Math.floor(whole / 2), 200]) {
      const page = fitToBudget(lines, budget, 9);
      expect(page.truncated).toBe(true);
      expect(page.text).toBe(lines.slice(0, page.shown).join('\n'));
      expect(stringifiedBytes(page.text) + 9 * page.shown).toBeLessThanOrEqual(budget);
      const oneMore = lines.slice(0, page.shown + 1).join('\n');
      expect(stringifiedBytes(oneMore) + 9 * (page.shown + 1)).toBeGreaterThan(budget);
    }
  });

  it('cuts a single oversized line with a marker rather than dropping it', () => {
    const huge = '"\u001b'.repeat(5000);
    const page = fitToBudget([huge], 1000);
    expect(page).toMatchObject({ shown: 1, truncated: true });
    expect(page.text).toMatch(/\[… truncated, \d+ more bytes\]$/);
    expect(stringifiedBytes(page.text)).toBeLessThanOrEqual(1000);
  });
});

describe('truncateToJsonBytes', () => {
  it('cuts to the JSON size asked for, never inside a surrogate pair', () => {
    for (const s of samples(500)) {
      const cut = truncateToJsonBytes(s, 20);
      expect(jsonBytes(cut)).toBeLessThanOrEqual(20);
      expect(s.startsWith(cut)).toBe(true);
      const next = s.charCodeAt(cut.length);
      expect(/[\ud800-\udbff]$/.test(cut) && next >= 0xdc00 && next <= 0xdfff).toBe(false);
    }
  });
});

describe('cursors', () => {
  const query = { stream: 'dev', topic: 'x', dm: undefined, limit: 20, users: [3, 1] };

  it('come back for the same query, whatever its key order and absent fields', () => {
    const cursor = encodeCursor('fetch_history', query, { kind: 'before', id: 41 });
    expect(
      decodeCursor('fetch_history', { users: [3, 1], limit: 20, topic: 'x', stream: 'dev' }, cursor),
    ).toEqual({
      kind: 'before',
      id: 41,
    });
  });

  it('are refused for another tool or any other argument value', () => {
    const cursor = encodeCursor('fetch_history', query, { kind: 'after', id: 7 });
    expect(() => decodeCursor('search_messages', query, cursor)).toThrow(/belongs to fetch_history/);
    for (const other of [
      { ...query, limit: 21 },
      { ...query, topic: 'y' },
      { ...query, users: [1, 3] },
      { ...query, stream: 'dev', extra: null },
    ]) {
      expect(() => decodeCursor('fetch_history', other, cursor)).toThrow(/different arguments/);
    }
  });
});
