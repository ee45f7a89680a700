import { describe, expect, it } from 'vitest';
import { isDeliveryError } from './errors.js';
import {
  parseSessionId,
  parseStateAccount,
  type StateKind,
  stateAccount,
  stateFileName,
} from './state-key.js';

function rejection(value: unknown): unknown {
  try {
    parseSessionId(value);
  } catch (err) {
    return err;
  }
  throw new Error(`accepted ${String(value)}`);
}

describe('parseSessionId', () => {
  it.each(['my-agent', 'a', 'A.b_c-9', 'x'.repeat(128), 'agent.v2', '-dash', 'delivery', 'a.deliveryx'])(
    'accepts %j',
    (id) => {
      expect(parseSessionId(id)).toBe(id);
    },
  );

  it.each([
    ['', /empty/],
    ['x'.repeat(129), /129 characters long/],
    ['../etc/passwd', /may contain only/],
    ['a/b', /may contain only/],
    ['a\\b', /may contain only/],
    ['a b', /may contain only/],
    ['a\u0000b', /may contain only/],
    ['ünïcode', /may contain only/],
    ['.', /starts with a dot/],
    ['..', /starts with a dot/],
    ['.hidden', /starts with a dot/],
    ['a.delivery', /reserved suffix/],
    ['a.FILTERS', /reserved suffix/],
    ['a.key', /reserved suffix/],
    ['a.Agent', /reserved suffix/],
    ['a.task', /reserved suffix/],
    ['a.token', /reserved suffix/],
    ['a.Tokens', /reserved suffix/],
    [42, /expected a string, got number/],
    [null, /expected a string, got null/],
    [undefined, /expected a string, got undefined/],
  ])('rejects %j with DELIVERY_INVALID_SESSION_ID', (value, message) => {
    const err = rejection(value);
    expect(isDeliveryError(err, 'DELIVERY_INVALID_SESSION_ID')).toBe(true);
    expect((err as Error).message).toMatch(message);
  });
});

describe('stateFileName', () => {
  it('maps each kind to its file', () => {
    expect(stateFileName({ session: 'my-agent', kind: 'monitor' })).toBe('my-agent.json');
    expect(stateFileName({ session: 'my-agent', kind: 'delivery' })).toBe('my-agent.delivery.json');
    expect(stateFileName({ session: 'my-agent', kind: 'filters' })).toBe('my-agent.filters.json');
    expect(stateFileName({ session: 'handles', kind: 'key' })).toBe('handles.key.json');
    expect(stateFileName({ session: 's1', kind: 'agent' })).toBe('s1.agent.json');
    expect(stateFileName({ session: 't1', kind: 'task' })).toBe('t1.task.json');
  });

  it('never maps two keys to one file', () => {
    const sessions = ['a', 'a.b', 'a.json', 'b', 'delivery', 'filters', 'a.monitor', 'key', 'agent', 'task'];
    const kinds: StateKind[] = [
      'monitor',
      'delivery',
      'filters',
      'key',
      'agent',
      'task',
      'sends',
      'token',
      'tokens',
    ];
    const names = sessions.flatMap((session) => kinds.map((kind) => stateFileName({ session, kind })));
    expect(new Set(names).size).toBe(names.length);
  });

  it('validates the session and the kind', () => {
    expect(() => stateFileName({ session: '../x', kind: 'monitor' })).toThrow(
      expect.objectContaining({ code: 'DELIVERY_INVALID_SESSION_ID' }),
    );
    expect(() => stateFileName({ session: 'x', kind: 'secrets' as StateKind })).toThrow(
      expect.objectContaining({ code: 'DELIVERY_INVALID_ARGUMENT' }),
    );
  });
});

describe('stateAccount', () => {
  it('names a realm and a bot as one folder-safe name', () => {
    expect(stateAccount({ site: 'https://chat.example.com', userId: 42 })).toBe('chat.example.com@42');
    expect(stateAccount({ site: 'https://chat.example.com/', userId: 42 })).toBe('chat.example.com@42');
    expect(stateAccount({ site: 'http://127.0.0.1:9991', userId: 7 })).toBe(
      'http_3a_2f_2f127.0.0.1_3a9991@7',
    );
    expect(stateAccount({ site: new URL('https://example.com/zulip'), userId: 1 })).toBe(
      'example.com_2fzulip@1',
    );
  });

  it('never gives two realms, or two bots of a realm, the same name', () => {
    const names = [
      stateAccount({ site: 'https://a.example', userId: 1 }),
      stateAccount({ site: 'https://a.example', userId: 2 }),
      stateAccount({ site: 'https://b.example', userId: 1 }),
      stateAccount({ site: 'http://a.example', userId: 1 }),
      stateAccount({ site: 'https://a.example:8443', userId: 1 }),
      stateAccount({ site: 'https://a.example/x', userId: 1 }),
      stateAccount({ site: 'https://a_2fx.example', userId: 1 }),
    ];
    expect(new Set(names).size).toBe(names.length);
  });

  it.each([
    [{ site: 'ftp://a.example', userId: 1 }],
    [{ site: 'not a url', userId: 1 }],
    [{ site: 'https://a.example', userId: 0 }],
    [{ site: 'https://a.example', userId: 1.5 }],
  ])('refuses %j', (input) => {
    let caught: unknown;
    try {
      stateAccount(input);
    } catch (err) {
      caught = err;
    }
    expect(isDeliveryError(caught, 'DELIVERY_INVALID_ARGUMENT')).toBe(true);
  });

  it('puts an account’s files in a folder of their own', () => {
    expect(stateFileName({ account: 'chat.example.com@42', session: 'a', kind: 'monitor' })).toBe(
      'chat.example.com@42/a.json',
    );
    expect(() => stateFileName({ account: '../x', session: 'a', kind: 'monitor' })).toThrow(
      /invalid state account/,
    );
    expect(() => parseStateAccount('.hidden')).toThrow(/invalid state account/);
  });
});
