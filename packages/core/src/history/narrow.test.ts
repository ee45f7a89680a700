import { describe, expect, it } from 'vitest';
import { MAX_NARROW_TERMS, narrow, validateNarrow } from './narrow.js';

describe('narrow builder', () => {
  it('builds object-form terms in order, with negation', () => {
    const terms = narrow()
      .channel('x')
      .topic('y')
      .sender(8)
      .has('image')
      .search('foo')
      .not()
      .sender('bot@acme.example')
      .build();
    expect(terms).toEqual([
      { operator: 'channel', operand: 'x' },
      { operator: 'topic', operand: 'y' },
      { operator: 'sender', operand: 8 },
      { operator: 'has', operand: 'image' },
      { operator: 'search', operand: 'foo' },
      { operator: 'sender', operand: 'bot@acme.example', negated: true },
    ]);
    expect(Object.isFrozen(terms)).toBe(true);
  });

  it('covers the other operators', () => {
    expect(narrow().dm([8, 21]).build()).toEqual([{ operator: 'dm', operand: [8, 21] }]);
    expect(narrow().dm(8).build()).toEqual([{ operator: 'dm', operand: [8] }]);
    expect(narrow().channels().is('mentioned').build()).toEqual([
      { operator: 'channels', operand: 'public' },
      { operator: 'is', operand: 'mentioned' },
    ]);
    expect(narrow().dmIncluding(8).with(4710).mentions(21).build()).toHaveLength(3);
    expect(narrow().id(4710).build()).toEqual([{ operator: 'id', operand: 4710 }]);
    expect(narrow().channel(12).topic('').build()).toEqual([
      { operator: 'channel', operand: 12 },
      { operator: 'topic', operand: '' },
    ]);
  });

  it.each([
    ['an empty channel name', () => narrow().channel('  ')],
    ['a negative stream id', () => narrow().channel(-1)],
    ['a fractional user id', () => narrow().sender(1.5)],
    ['a sender that is neither id nor email', () => narrow().sender('alice')],
    ['an empty dm list', () => narrow().dm([])],
    ['a dm list with a bad id', () => narrow().dm([1, 0])],
    ['an unknown is: value', () => narrow().is('everything' as never)],
    ['an unknown has: value', () => narrow().has('virus' as never)],
    ['an empty search', () => narrow().search('')],
    ['a NaN message id', () => narrow().id(Number.NaN)],
    ['a dangling not()', () => narrow().channel('x').not().build()],
    ['two channels', () => narrow().channel('a').channel('b').build()],
    ['two topics', () => narrow().topic('a').topic('b').build()],
    ['a channel with a dm', () => narrow().channel('a').dm([1]).build()],
  ])('refuses %s', (_name, build) => {
    expect(build).toThrow(expect.objectContaining({ code: 'CORE_INVALID_ARGUMENT' }));
  });

  it('allows a negated second channel', () => {
    expect(narrow().channel('a').not().channel('b').build()).toHaveLength(2);
  });
});

describe('validateNarrow (adversarial input)', () => {
  it('turns legacy pairs into object form and lowercases operators', () => {
    expect(
      validateNarrow([
        ['Stream', 'general'],
        ['topic', 'x'],
      ]),
    ).toEqual([
      { operator: 'stream', operand: 'general' },
      { operator: 'topic', operand: 'x' },
    ]);
  });

  it.each([
    ['not a list', 'channel:general'],
    ['null', null],
    ['a term that is a string', ['channel:general']],
    ['a pair of three', [['channel', 'general', 'x']]],
    ['an unknown operator', [{ operator: 'drop-table', operand: 'x' }]],
    ['a prototype operator', [{ operator: '__proto__', operand: 'x' }]],
    ['an extra key', [{ operator: 'channel', operand: 'x', sql: 'drop' }]],
    ['a non-boolean negated', [{ operator: 'channel', operand: 'x', negated: 'yes' }]],
    ['an object operand', [{ operator: 'channel', operand: { toString: 'x' } }]],
    ['a NUL in an operand', [{ operator: 'topic', operand: 'a\u0000b' }]],
    ['a lone surrogate', [{ operator: 'search', operand: 'a\ud800b' }]],
    ['a huge operand', [{ operator: 'search', operand: 'x'.repeat(5000) }]],
    [
      'too many terms',
      Array.from({ length: MAX_NARROW_TERMS + 1 }, () => ({ operator: 'search', operand: 'x' })),
    ],
    ['an id past 2^53', [{ operator: 'id', operand: 2 ** 60 }]],
    ['an id string with junk', [{ operator: 'near', operand: '12; drop' }]],
    ['a dm of 500 users', [{ operator: 'dm', operand: Array.from({ length: 500 }, (_, i) => i + 1) }]],
    ['a dm email list with a bad entry', [{ operator: 'dm', operand: 'a@b.c,nobody' }]],
    ['a channels operand other than public', [{ operator: 'channels', operand: 'private' }]],
  ])('refuses %s with CORE_INVALID_ARGUMENT', (_name, input) => {
    expect(() => validateNarrow(input)).toThrow(expect.objectContaining({ code: 'CORE_INVALID_ARGUMENT' }));
  });

  it('accepts control characters a real topic can hold, so a listed topic can be read back', () => {
    const topic = 'red \u001b[31m alert\u0007';
    expect(validateNarrow([{ operator: 'topic', operand: topic }])).toEqual([
      { operator: 'topic', operand: topic },
    ]);
  });

  it('keeps error details short for huge input', () => {
    try {
      validateNarrow([{ operator: 'channel', operand: ['x'.repeat(100_000)] }]);
      expect.unreachable();
    } catch (err) {
      expect(JSON.stringify((err as { details: unknown }).details).length).toBeLessThan(300);
    }
  });

  it('accepts numeric strings where Zulip does, and tabs or newlines in search text', () => {
    expect(validateNarrow([{ operator: 'near', operand: '4710' }])).toEqual([
      { operator: 'near', operand: '4710' },
    ]);
    expect(validateNarrow([{ operator: 'search', operand: 'a\tb\nc' }])).toHaveLength(1);
  });
});
