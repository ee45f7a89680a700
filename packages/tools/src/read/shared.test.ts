import { describe, expect, it } from 'vitest';
import { fitToBudget } from '../page.js';
import { fitFromEnd, ID_BYTES } from './shared.js';

/** What fitFromEnd means: fitToBudget over the lines newest first, shown in their own order. */
function reference(lines: readonly string[], budget: number) {
  const reversed = fitToBudget([...lines].reverse(), budget, ID_BYTES);
  const last = lines[lines.length - 1];
  if (reversed.shown === 1 && reversed.truncated && reversed.text !== last) return reversed;
  return {
    text: lines.slice(lines.length - reversed.shown).join('\n'),
    shown: reversed.shown,
    truncated: reversed.truncated,
  };
}

describe('fitFromEnd', () => {
  it('keeps the newest lines that fit, and cuts the newest when even it does not fit', () => {
    const alphabet = ['a', '"', '\n', 'é', '\ud83d\ude00', '\u001b', ' '];
    let state = 7;
    const next = () => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state;
    };
    for (let round = 0; round < 300; round++) {
      const lines = Array.from({ length: next() % 12 }, () => {
        let line = '';
        for (let i = next() % 200; i > 0; i--) line += alphabet[next() % alphabet.length];
        return line;
      });
      for (const budget of [0, 40, 100, 300, 1000, 5000]) {
        expect(fitFromEnd(lines, budget)).toEqual(reference(lines, budget));
      }
    }
  });
});
