import { describe, expect, it } from 'vitest';
import { isZmcpError, type ZmcpError } from '../errors.js';
import { checkMessageLength, DEFAULT_MAX_MESSAGE_LENGTH, measureMessageLength } from './length.js';

function thrown(fn: () => unknown): ZmcpError {
  try {
    fn();
  } catch (err) {
    if (isZmcpError(err)) return err;
    throw err;
  }
  throw new Error('expected an error');
}

describe('measureMessageLength', () => {
  it.each([
    ['plain ASCII', 'hello', 5],
    ['an astral emoji counts once', '😀😀', 2],
    ['a combining sequence counts each code point', 'e\u0301', 2],
    ['leading newlines are not counted', '\n\n\nhi', 2],
    ['leading spaces are counted', '  hi', 4],
    ['trailing whitespace is not counted', 'hi \t\n\u00a0\u3000', 2],
    ['empty', '', 0],
    ['a lone surrogate counts once', '\ud800x', 2],
  ])('%s', (_name, content, expected) => {
    expect(measureMessageLength(content)).toBe(expected);
  });
});

describe('checkMessageLength', () => {
  it('accepts content at the default limit of 10000 code points', () => {
    expect(DEFAULT_MAX_MESSAGE_LENGTH).toBe(10_000);
    const content = 'a'.repeat(10_000);
    expect(checkMessageLength(content)).toEqual({ content, length: 10_000, limit: 10_000 });
  });

  it('refuses one code point more, with both numbers in the message and details', () => {
    const err = thrown(() => checkMessageLength('a'.repeat(10_001)));
    expect(err.code).toBe('CORE_MESSAGE_TOO_LONG');
    expect(err.details).toEqual({ length: 10_001, limit: 10_000 });
    expect(err.message).toContain('10001');
    expect(err.message).toContain('10000');
  });

  it('counts code points, not UTF-16 units', () => {
    const content = '😀'.repeat(10_000);
    expect(content.length).toBe(20_000);
    expect(checkMessageLength(content).length).toBe(10_000);
  });

  it('honours a realm override', () => {
    expect(checkMessageLength('abcde', { limit: 5 }).length).toBe(5);
    expect(thrown(() => checkMessageLength('abcdef', { limit: 5 })).details).toEqual({ length: 6, limit: 5 });
  });

  it('measures after normalization, which can grow the text', () => {
    const content = `${'a'.repeat(10)}\n| a | b |\n|---|---|`;
    const limit = content.length;
    const err = thrown(() => checkMessageLength(content, { limit }));
    expect(err.code).toBe('CORE_MESSAGE_TOO_LONG');
    expect(err.details).toEqual({ length: limit + 1, limit });
    expect(checkMessageLength(content, { limit, normalize: false }).content).toBe(content);
    expect(checkMessageLength(content, { limit, normalize: { enabled: false } }).length).toBe(limit);
  });

  it('returns the normalized content to send', () => {
    expect(checkMessageLength('[**Docs**](u)').content).toBe('**[Docs](u)**');
  });

  it('never truncates: over-long content is refused whole', () => {
    const content = 'x'.repeat(20);
    expect(() => checkMessageLength(content, { limit: 10 })).toThrow();
  });

  it('ignores what Zulip strips before measuring', () => {
    expect(checkMessageLength('\n\nabc   \n', { limit: 3 }).length).toBe(3);
  });

  it.each([[0], [-1], [1.5], [Number.NaN], [Number.POSITIVE_INFINITY]])('rejects limit %s', (limit) => {
    expect(thrown(() => checkMessageLength('x', { limit })).code).toBe('CORE_INVALID_ARGUMENT');
  });
});
