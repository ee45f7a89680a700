import { describe, expect, it } from 'vitest';
import { isZmcpError } from '../errors.js';
import { splitMessage } from './split.js';

const cp = (s: string): number => [...s].length;

function expectWithin(pieces: readonly string[], limit: number): void {
  for (const p of pieces) expect(cp(p), JSON.stringify(p)).toBeLessThanOrEqual(limit);
  for (const p of pieces) expect(p.length).toBeGreaterThan(0);
}

describe('splitMessage', () => {
  it('returns content that fits as one piece', () => {
    expect(splitMessage('short', 10)).toEqual(['short']);
    expect(splitMessage('', 10)).toEqual(['']);
  });

  it('cuts on paragraph boundaries and loses nothing', () => {
    const content = 'first paragraph\nstill first\n\nsecond one\n\nthird';
    const pieces = splitMessage(content, 30);
    expect(pieces).toEqual(['first paragraph\nstill first\n\n', 'second one\n\nthird']);
    expect(pieces.join('')).toBe(content);
  });

  it('keeps a fenced block whole when it fits, even if that makes a short piece', () => {
    const content = 'intro\n\n```\nline 1\nline 2\n```\nafter';
    const pieces = splitMessage(content, 27);
    expect(pieces).toEqual(['intro\n\n', '```\nline 1\nline 2\n```\nafter']);
  });

  it('closes and reopens a fence that alone is longer than the limit', () => {
    const body = Array.from({ length: 12 }, (_, i) => `row ${i}\n`).join('');
    const content = `before\n\n\`\`\`python\n${body}\`\`\`\nafter`;
    const pieces = splitMessage(content, 40);
    expectWithin(pieces, 40);
    const fenced = pieces.filter((p) => p.includes('row'));
    expect(fenced.length).toBeGreaterThan(1);
    for (const p of fenced) {
      const start = p.indexOf('```python\n');
      expect(start).toBeGreaterThanOrEqual(0);
      expect(p.indexOf('\n```', start + 1)).toBeGreaterThan(start);
    }
    // Removing the added closers and reopeners restores the content.
    const joined = pieces.join('').replaceAll('```\n```python\n', '');
    expect(joined).toBe(content);
  });

  it('handles a tilde fence with a longer fence, and an unclosed fence', () => {
    const body = 'x'.repeat(10).concat('\n').repeat(8);
    const closed = `~~~~\n${body}~~~~`;
    const pieces = splitMessage(closed, 30);
    expectWithin(pieces, 30);
    expect(pieces.every((p) => p.startsWith('~~~~\n') && /~~~~\n?$/.test(p))).toBe(true);
    const open = `\`\`\`\n${body}`;
    const openPieces = splitMessage(open, 30);
    expectWithin(openPieces, 30);
    expect(openPieces.every((p) => p.startsWith('```\n'))).toBe(true);
  });

  it('never cuts inside a fence that fits, even when text around it does not', () => {
    const fence = '```\na\nb\nc\n```\n';
    const content = `${'word '.repeat(10)}\n${fence}${'tail '.repeat(10)}`;
    const pieces = splitMessage(content, 20);
    expectWithin(pieces, 20);
    expect(pieces.some((p) => p.includes(fence))).toBe(true);
    expect(pieces.join('')).toBe(content);
  });

  it('falls back to lines, then words, then hard cuts', () => {
    expect(splitMessage('aaaa\nbbbb\ncccc', 10)).toEqual(['aaaa\nbbbb\n', 'cccc']);
    expect(splitMessage('one two three four', 9)).toEqual(['one two ', 'three ', 'four']);
    expect(splitMessage('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij']);
  });

  it('measures in code points and never splits a surrogate pair', () => {
    const content = '😀'.repeat(10);
    const pieces = splitMessage(content, 3);
    expect(pieces).toEqual(['😀😀😀', '😀😀😀', '😀😀😀', '😀']);
  });

  it('falls back to plain cuts when the limit cannot hold the fence lines', () => {
    const content = '```python\nabcdef\nghijkl\n```';
    const pieces = splitMessage(content, 8);
    expectWithin(pieces, 8);
    expect(pieces.join('')).toBe(content);
  });

  it.each([[0], [-3], [2.5], [Number.NaN]])('rejects limit %s with CORE_INVALID_ARGUMENT', (limit) => {
    try {
      splitMessage('x', limit);
      throw new Error('expected an error');
    } catch (err) {
      expect(isZmcpError(err, 'CORE_INVALID_ARGUMENT')).toBe(true);
    }
  });

  it('keeps every piece within the limit and the text intact over random content', () => {
    let seed = 42;
    const next = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const words = ['a', 'word', 'longerword', '😀', '\n', '\n\n', ' ', '```', '~~~', 'x'.repeat(50), '| a |'];
    for (let n = 0; n < 400; n++) {
      let content = '';
      const count = 1 + Math.floor(next() * 120);
      for (let i = 0; i < count; i++) content += words[Math.floor(next() * words.length)];
      const limit = 5 + Math.floor(next() * 80);
      const pieces = splitMessage(content, limit);
      expectWithin(pieces, limit);
      if (!content.includes('```') && !content.includes('~~~')) expect(pieces.join('')).toBe(content);
    }
  });
});
