import { describe, expect, it } from 'vitest';
import { fitToBudget, jsonBytes, truncateToJsonBytes } from './page.js';

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
