import { describe, expect, it } from 'vitest';
import { inlineCode, oneLineText } from './inline-code.js';

describe('oneLineText', () => {
  it('folds controls, line breaks, bidi and tag characters to one line and cuts long text', () => {
    expect(oneLineText('a\r\nb\u202e c\u{E0041}\u0007d')).toBe('a b c d');
    expect(oneLineText('x'.repeat(10), 5)).toBe('xxxx…');
    expect(oneLineText('😀'.repeat(3), 2)).toBe('😀…');
  });
});

describe('inlineCode', () => {
  it.each([
    ['make deploy', '`make deploy`'],
    ['echo `x`', '`` echo `x` ``'],
    ['a ``` b', '````a ``` b````'],
    ['`start', '`` `start ``'],
    ['', '`(empty)`'],
    ['@**all**\nnext', '`@**all** next`'],
  ])('%j → %s', (text, span) => {
    expect(inlineCode(text)).toBe(span);
  });
});
