import { describe, expect, it } from 'vitest';
import { isZmcpError, type ZmcpError } from '../errors.js';
import { ALL_STREAMS, parseStreamAllowlist, resolveStreamAllowlist } from './allowlist.js';
import { AccessPolicy, type AccessPolicySettings, type NarrowInput, parseReadOnlyFlag } from './policy.js';
import { createStreamLookup, type StreamInfo } from './streams.js';

const LIST: StreamInfo[] = [
  { name: 'general', stream_id: 1, invite_only: false },
  { name: 'Dev Ops', stream_id: 2, invite_only: false },
  { name: 'secret', stream_id: 3, invite_only: true },
  { name: 'HR', stream_id: 4, invite_only: true },
  { name: 'café', stream_id: 5, invite_only: true },
  { name: 'cafe\u0301', stream_id: 6, invite_only: true },
];
const streams = createStreamLookup(LIST);

/** A policy whose allowlists name streams (or ids), resolved against {@link LIST}. */
function policy(config: Partial<AccessPolicySettings> = {}): AccessPolicy {
  return AccessPolicy.resolve({ readOnly: false, ...config }, LIST);
}

function thrown(fn: () => unknown): ZmcpError {
  try {
    fn();
  } catch (err) {
    if (isZmcpError(err)) return err;
    throw err;
  }
  throw new Error('expected an error');
}

const stream = (name: string, stream_id?: number) =>
  stream_id === undefined
    ? { type: 'stream', display_recipient: name }
    : { type: 'stream', display_recipient: name, stream_id };
const dmMessage = { type: 'private', display_recipient: [{ id: 1 }, { id: 2 }] };

describe('createStreamLookup', () => {
  it('finds streams by id, and by name as Zulip does: exact, else up to case; nothing else', () => {
    expect(streams(2)?.name).toBe('Dev Ops');
    expect(streams('dev ops')?.stream_id).toBe(2);
    expect(streams(' dev ops ')).toBeUndefined();
    expect(streams('café')?.stream_id).toBe(5);
    expect(streams('cafe\u0301')?.stream_id).toBe(6);
    expect(streams('caf\u00e9\u200b')).toBeUndefined();
    expect(streams('SECRET')?.invite_only).toBe(true);
    expect(streams('nowhere')).toBeUndefined();
    expect(streams(99)).toBeUndefined();
  });
});

describe('AccessPolicy reads', () => {
  it.each([
    ['default: public only', {}, { general: true, secret: false, HR: false, unknown: false, dm: false }],
    [
      'an allowlist opens only its private streams',
      { privateStreams: ['Secret'] },
      { general: true, secret: true, HR: false, unknown: false, dm: false },
    ],
    [
      'the all-value opens every stream and DMs',
      { privateStreams: ALL_STREAMS },
      { general: true, secret: true, HR: true, unknown: true, dm: true },
    ],
  ] as const)('%s', (_name, config, expected) => {
    const p = policy(config);
    expect(p.isReadable(stream('general', 1), streams)).toBe(expected.general);
    expect(p.isReadable(stream('secret', 3), streams)).toBe(expected.secret);
    expect(p.isReadable(stream('HR'), streams)).toBe(expected.HR);
    expect(p.isReadable(stream('ghost'), streams)).toBe(expected.unknown);
    expect(p.isReadable(dmMessage, streams)).toBe(expected.dm);
    expect(p.canReadDms).toBe(expected.dm);
  });

  it('looks a message up by stream id first (a renamed stream keeps its privacy)', () => {
    const p = policy();
    expect(p.isReadable(stream('general', 3), streams)).toBe(false);
    expect(p.isReadable(stream('old-name', 1), streams)).toBe(true);
  });

  it('decides by id: a look-alike of an allowlisted stream stays closed', () => {
    const p = policy({ privateStreams: ['café'] });
    expect(p.isReadable(stream('café', 5), streams)).toBe(true);
    expect(p.isReadable(stream('cafe\u0301', 6), streams)).toBe(false);
    expect(p.canReadStream('cafe\u0301', streams)).toBe(false);
    expect(p.isReadable(stream('café', 6), streams)).toBe(false);
  });

  it('an unknown stream is closed, unless everything is open', () => {
    expect(policy({ privateStreams: ['secret'] }).isReadable(stream('Ghost'), streams)).toBe(false);
    expect(policy({ privateStreams: ALL_STREAMS }).isReadable(stream('Ghost'), streams)).toBe(true);
  });

  it('drops strays in order', () => {
    const p = policy({ privateStreams: ['hr'] });
    const messages = [stream('general', 1), stream('secret', 3), dmMessage, stream('HR', 4)];
    expect(p.filterReadable(messages, streams)).toEqual([stream('general', 1), stream('HR', 4)]);
  });

  it('rejects unknown message types', () => {
    expect(
      policy({ privateStreams: ALL_STREAMS }).isReadable({ type: 'weird', display_recipient: 'x' }, streams),
    ).toBe(false);
  });
});

describe('AccessPolicy.checkNarrowScope', () => {
  it.each<[string, NarrowInput, string, number[]]>([
    ['a public stream by name', [{ operator: 'channel', operand: 'general' }], 'stream', [1]],
    [
      'a public stream by id, with a topic',
      [
        { operator: 'stream', operand: 2 },
        { operator: 'topic', operand: 'x' },
      ],
      'stream',
      [2],
    ],
    ['legacy pair form', [['stream', 'general']], 'stream', [1]],
    [
      'public streams',
      [
        { operator: 'channels', operand: 'public' },
        { operator: 'search', operand: 'x' },
      ],
      'public-streams',
      [],
    ],
    ['a single message', [{ operator: 'id', operand: 42 }], 'message', []],
    ['a message conversation', [{ operator: 'with', operand: 42 }], 'message', []],
  ])('allows %s', (_name, narrow, scope, ids) => {
    const d = policy().checkNarrowScope(narrow, streams);
    expect(d.scope).toBe(scope);
    expect(d.streams).toEqual(ids);
  });

  it('returns the narrow in object form', () => {
    expect(
      policy().checkNarrowScope(
        [['stream', 'general'], { operator: 'topic', operand: 't', negated: true }],
        streams,
      ).narrow,
    ).toEqual([
      { operator: 'stream', operand: 'general' },
      { operator: 'topic', operand: 't', negated: true },
    ]);
  });

  it('refuses a private stream, naming it and the setting that opens it', () => {
    const p = new AccessPolicy({
      readOnly: false,
      settingNames: { privateStreams: 'BOT_ALLOWED_PRIVATE_STREAMS' },
    });
    const err = thrown(() => p.checkNarrowScope([{ operator: 'channel', operand: 'secret' }], streams));
    expect(err.code).toBe('CORE_ACCESS_DENIED');
    expect(err.message).toContain('"secret"');
    expect(err.message).toContain('BOT_ALLOWED_PRIVATE_STREAMS');
    expect(err.details).toEqual({ reason: 'private-stream' });
  });

  it('refuses a private stream named by id without revealing its name, and an unknown one the same way', () => {
    const byId = thrown(() =>
      policy().checkNarrowScope([{ operator: 'channel', operand: 3 }], streams),
    ).message;
    expect(byId).toContain('stream id 3');
    expect(byId).not.toContain('secret');
    const missing = thrown(() =>
      policy().checkNarrowScope([{ operator: 'channel', operand: 77 }], streams),
    ).message;
    expect(missing.replace('77', '3')).toBe(byId);
    expect(
      thrown(() => policy().checkNarrowScope([{ operator: 'channel', operand: 'ghost' }], streams)).code,
    ).toBe('CORE_ACCESS_DENIED');
  });

  it('opens allowlisted private streams, listed by name or id', () => {
    const p = policy({ privateStreams: ['secret'] });
    expect(p.checkNarrowScope([{ operator: 'channel', operand: 'Secret' }], streams).scope).toBe('stream');
    expect(p.checkNarrowScope([{ operator: 'channel', operand: 3 }], streams).streams).toEqual([3]);
    expect(policy({ privateStreams: [4] }).canReadStream('HR', streams)).toBe(true);
  });

  it.each<[string, NarrowInput]>([
    ['dm', [{ operator: 'dm', operand: [1, 2] }]],
    ['pm-with', [['pm-with', 'a@x']]],
    ['dm-including', [{ operator: 'dm-including', operand: 5 }]],
    ['is:dm', [{ operator: 'is', operand: 'dm' }]],
    ['is:private', [['is', 'private']]],
  ])('refuses DM reads (%s) unless the policy reads everything', (_name, narrow) => {
    const err = thrown(() => policy({ privateStreams: ['secret', 'HR'] }).checkNarrowScope(narrow, streams));
    expect(err.code).toBe('CORE_ACCESS_DENIED');
    expect(err.details).toEqual({ reason: 'dm' });
    expect(policy({ privateStreams: ALL_STREAMS }).checkNarrowScope(narrow, streams).scope).toBe('dm');
  });

  it.each<[string, NarrowInput]>([
    ['an empty narrow', []],
    ['sender only', [{ operator: 'sender', operand: 'a@x' }]],
    ['search only', [{ operator: 'search', operand: 'deploy' }]],
    ['is:mentioned', [['is', 'mentioned']]],
    ['topic without stream', [['topic', 'x']]],
    ['a negated stream does not name a scope', [{ operator: 'channel', operand: 'secret', negated: true }]],
    ['a negated DM term does not either', [{ operator: 'is', operand: 'dm', negated: true }]],
  ])('refuses an unscoped narrow: %s', (_name, narrow) => {
    const err = thrown(() => policy({ privateStreams: ['secret'] }).checkNarrowScope(narrow, streams));
    expect(err.code).toBe('CORE_ACCESS_DENIED');
    expect(err.details).toEqual({ reason: 'unscoped' });
    expect(err.message).toMatch(/channels:public/);
  });

  it('lets an unscoped narrow through when the policy reads everything', () => {
    const d = policy({ privateStreams: ALL_STREAMS }).checkNarrowScope([['search', 'x']], streams);
    expect(d.scope).toBe('all');
    expect(d.narrow).toEqual([{ operator: 'search', operand: 'x' }]);
  });

  it('can limit an unscoped narrow to public streams instead of refusing it', () => {
    const d = policy().checkNarrowScope([['search', 'x']], streams, { unscoped: 'public-streams' });
    expect(d.scope).toBe('public-streams');
    expect(d.narrow).toEqual([
      { operator: 'search', operand: 'x' },
      { operator: 'channels', operand: 'public' },
    ]);
  });

  it('never subtracts hidden streams with negated terms', () => {
    const d = policy().checkNarrowScope([['search', 'x']], streams, { unscoped: 'public-streams' });
    expect(d.narrow.some((t) => t.negated === true)).toBe(false);
  });

  it('validates with the one narrow validator: two stream terms are refused before any check', () => {
    const err = thrown(() =>
      policy().checkNarrowScope(
        [
          { operator: 'channel', operand: 'general' },
          { operator: 'channel', operand: 'secret' },
        ],
        streams,
      ),
    );
    expect(err.code).toBe('CORE_INVALID_ARGUMENT');
  });

  it.each<[string, unknown]>([
    ['not a list', 'stream:general'],
    ['a bad pair', [['stream']]],
    ['a pair with a number', [['stream', 5]]],
    ['a term without operator', [{ operand: 'x' }]],
    ['an object operand', [{ operator: 'stream', operand: { a: 1 } }]],
    ['a non-boolean negated', [{ operator: 'stream', operand: 'general', negated: 'yes' }]],
    ['a list operand for stream', [{ operator: 'stream', operand: [1, 2] }]],
    ['null', [null]],
    ['channels:all', [{ operator: 'channels', operand: 'all' }]],
    ['an unknown operator', [{ operator: 'bogus', operand: 'x' }]],
  ])('rejects a malformed narrow: %s', (_name, narrow) => {
    expect(thrown(() => policy().checkNarrowScope(narrow as NarrowInput, streams)).code).toBe(
      'CORE_INVALID_ARGUMENT',
    );
  });
});

describe('AccessPolicy.checkWrite', () => {
  it('refuses every write in read-only mode', () => {
    const p = policy({ readOnly: true });
    expect(thrown(() => p.checkWrite({ stream: 'general' }, streams)).code).toBe('CORE_READ_ONLY');
    expect(thrown(() => p.checkWrite({ dm: [1] }, streams)).code).toBe('CORE_READ_ONLY');
  });

  it('allows every public stream and DMs with no write allowlist', () => {
    const p = policy();
    expect(() => p.checkWrite({ stream: 'general' }, streams)).not.toThrow();
    expect(() => p.checkWrite({ stream: 2 }, streams)).not.toThrow();
    expect(() => p.checkWrite({ dm: [8, 'a@x'] }, streams)).not.toThrow();
  });

  it('refuses private and unknown streams that are not readable', () => {
    const p = policy();
    expect(thrown(() => p.checkWrite({ stream: 'secret' }, streams)).details).toEqual({
      reason: 'private-stream',
    });
    expect(thrown(() => p.checkWrite({ stream: 'ghost' }, streams)).code).toBe('CORE_ACCESS_DENIED');
    expect(() =>
      policy({ privateStreams: ['secret'] }).checkWrite({ stream: 'secret' }, streams),
    ).not.toThrow();
  });

  it('limits writes to the allowlist, by id (an entry resolves up to case, as Zulip names)', () => {
    const p = policy({ writeStreams: ['General'], privateStreams: ALL_STREAMS });
    expect(() => p.checkWrite({ stream: 'general' }, streams)).not.toThrow();
    expect(() => p.checkWrite({ stream: 1 }, streams)).not.toThrow();
    const err = thrown(() => p.checkWrite({ stream: 'Dev Ops' }, streams));
    expect(err.details).toEqual({ reason: 'write-allowlist' });
    expect(thrown(() => p.checkWrite({ stream: 'secret' }, streams)).code).toBe('CORE_ACCESS_DENIED');
    expect(thrown(() => p.checkWrite({ stream: 404 }, streams)).code).toBe('CORE_ACCESS_DENIED');
  });

  it('refuses DMs when a write allowlist is set, unless DM writes are enabled', () => {
    const names = { writeStreams: 'BOT_ALLOWED_WRITE_STREAMS', dmWrites: 'BOT_ALLOW_DM_WRITES' };
    const err = thrown(() =>
      AccessPolicy.resolve(
        { readOnly: false, writeStreams: ['general'], settingNames: names },
        LIST,
      ).checkWrite({ dm: [1] }, streams),
    );
    expect(err.code).toBe('CORE_ACCESS_DENIED');
    expect(err.message).toContain('BOT_ALLOWED_WRITE_STREAMS');
    expect(err.message).toContain('BOT_ALLOW_DM_WRITES');
    expect(() =>
      policy({ writeStreams: ['general'], dmWrites: true }).checkWrite({ dm: [1] }, streams),
    ).not.toThrow();
    expect(() => policy({ writeStreams: ALL_STREAMS }).checkWrite({ dm: [1] }, streams)).not.toThrow();
    expect(thrown(() => policy({ dmWrites: false }).checkWrite({ dm: [1] }, streams)).code).toBe(
      'CORE_ACCESS_DENIED',
    );
  });

  it('rejects malformed targets', () => {
    expect(thrown(() => policy().checkWrite({} as never, streams)).code).toBe('CORE_INVALID_ARGUMENT');
    expect(thrown(() => policy().checkWrite({ dm: 'a@x' } as never, streams)).code).toBe(
      'CORE_INVALID_ARGUMENT',
    );
  });
});

describe('AccessPolicy construction', () => {
  it.each<[string, unknown]>([
    ['a bare string allowlist', { readOnly: false, privateStreams: 'secret' }],
    ['a name where an id belongs', { readOnly: false, writeStreams: ['ok'] }],
    ['a non-boolean readOnly', { readOnly: 'false' }],
  ])('rejects %s', (_name, config) => {
    expect(thrown(() => new AccessPolicy(config as never)).code).toBe('CORE_INVALID_ARGUMENT');
  });
});

describe('parseReadOnlyFlag', () => {
  it.each([
    [undefined, false],
    ['', false],
    ['  ', false],
    ['1', true],
    ['true', true],
    [' YES ', true],
    ['On', true],
    ['0', false],
    ['FALSE', false],
    ['no', false],
    ['off', false],
  ])('%j -> %s', (value, expected) => {
    expect(parseReadOnlyFlag(value)).toBe(expected);
  });

  it.each([['2'], ['enabled'], ['tru'], ['y'], ['-1']])('rejects %j naming the value', (value) => {
    const err = thrown(() => parseReadOnlyFlag(value, 'ZULIPMCP_READ_ONLY'));
    expect(err.code).toBe('CORE_CONFIG_INVALID');
    expect(err.message).toContain(JSON.stringify(value));
    expect(err.message).toContain('ZULIPMCP_READ_ONLY');
  });
});

describe('parseStreamAllowlist', () => {
  it.each([
    [undefined, undefined],
    ['', undefined],
    ['   ', undefined],
    ['general', ['general']],
    [' general , dev ops ,general', ['general', 'dev ops']],
    ['__ALL__', ALL_STREAMS],
    [' __all__ ', ALL_STREAMS],
    ['["a, b", "c"]', ['a, b', 'c']],
    ['["__ALL__"]', ALL_STREAMS],
  ])('%j -> %j', (value, expected) => {
    expect(parseStreamAllowlist(value)).toEqual(expected);
  });

  it.each([[',,'], ['[0, 2]'], ['["a",'], ['__ALL__,general']])('rejects %j', (value) => {
    expect(thrown(() => parseStreamAllowlist(value, 'BOT_ALLOWED_PRIVATE_STREAMS')).code).toBe(
      'CORE_CONFIG_INVALID',
    );
  });
});

describe('resolveStreamAllowlist', () => {
  it('turns names and ids into ids, as Zulip names streams', () => {
    expect(resolveStreamAllowlist(parseStreamAllowlist('general, 4, Secret'), LIST, 'X')).toEqual([1, 4, 3]);
    expect(resolveStreamAllowlist(parseStreamAllowlist('[2, "café"]'), LIST, 'X')).toEqual([2, 5]);
    expect(resolveStreamAllowlist(ALL_STREAMS, LIST, 'X')).toBe(ALL_STREAMS);
    expect(resolveStreamAllowlist(undefined, LIST, 'X')).toBeUndefined();
  });

  it('never matches a look-alike: each of these names a different stream or none', () => {
    expect(resolveStreamAllowlist(['cafe\u0301'], LIST, 'X')).toEqual([6]);
    for (const lookalike of ['caf\u00e9\u200b', 'cafe', 'ｇｅｎｅｒａｌ', 'general\u00a0']) {
      const err = thrown(() => resolveStreamAllowlist([lookalike], LIST, 'ZULIP_PRIVATE_STREAMS'));
      expect(err.code).toBe('CORE_CONFIG_INVALID');
      expect(err.message).toContain('ZULIP_PRIVATE_STREAMS');
      expect(err.message).toContain('matches no stream');
    }
  });

  it('refuses an entry that matches nothing or more than one stream, naming it', () => {
    expect(thrown(() => resolveStreamAllowlist([99], LIST, 'W')).message).toMatch(
      /W: the entry id 99 matches no stream/,
    );
    const twins: StreamInfo[] = [
      { name: 'Ops', stream_id: 7, invite_only: false },
      { name: 'OPS', stream_id: 8, invite_only: false },
    ];
    expect(thrown(() => resolveStreamAllowlist(['ops'], twins, 'W')).message).toMatch(
      /matches 2 streams \(ids 7, 8\)/,
    );
    expect(resolveStreamAllowlist(['Ops'], twins, 'W')).toEqual([7]);
  });
});

describe('AccessPolicy construction by id', () => {
  it('refuses names: they must be resolved to ids first', () => {
    expect(
      thrown(() => new AccessPolicy({ readOnly: false, privateStreams: ['secret'] as never })).code,
    ).toBe('CORE_INVALID_ARGUMENT');
    expect(new AccessPolicy({ readOnly: false, privateStreams: [3] }).canReadStream('secret', streams)).toBe(
      true,
    );
  });
});
