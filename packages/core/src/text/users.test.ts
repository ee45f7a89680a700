import { describe, expect, it } from 'vitest';
import { isZmcpError, type ZmcpError } from '../errors.js';
import { type ResolvableUser, resolveUser } from './users.js';

const USERS: ResolvableUser[] = [
  { user_id: 8, email: 'ann@acme.example', full_name: 'Ann Lee' },
  {
    user_id: 9,
    email: 'ann.smith@acme.example',
    full_name: 'Ann Smith',
    delivery_email: 'Ann.Smith@Real.example',
  },
  { user_id: 10, email: 'bo@acme.example', full_name: 'Bo Diddley' },
  { user_id: 11, email: 'user11@acme.example', full_name: 'Cyrus Old', is_active: false },
  { user_id: 12, email: 'cy@acme.example', full_name: 'Cy' },
  { user_id: 13, email: 'cy2@acme.example', full_name: 'cy' },
  { user_id: 14, email: 'zoe@acme.example', full_name: 'Zoë Ångström' },
];

function thrown(fn: () => unknown): ZmcpError {
  try {
    fn();
  } catch (err) {
    if (isZmcpError(err)) return err;
    throw err;
  }
  throw new Error('expected an error');
}

describe('resolveUser', () => {
  it.each([
    [8, 8, 'id'],
    ['8', 8, 'id'],
    [' 10 ', 10, 'id'],
    ['@**Ann Lee|8**', 8, 'id'],
    ['@_**whoever|9**', 9, 'id'],
    ['@**Bo Diddley**', 10, 'name'],
    ['ANN@acme.example', 8, 'email'],
    ['ann.smith@real.example', 9, 'email'],
    ['ann lee', 8, 'name'],
    ['  Ann   Lee ', 8, 'name'],
    ['@Ann Lee', 8, 'name'],
    ['bo', 10, 'prefix'],
    ['diddley', 10, 'substring'],
    ['zoë', 14, 'prefix'],
    ['ÅNGSTRÖM', 14, 'substring'],
  ] as const)('%j resolves to %d by %s', (query, id, matchedBy) => {
    const r = resolveUser(USERS, query);
    expect(r.user.user_id).toBe(id);
    expect(r.matchedBy).toBe(matchedBy);
    expect(r.deactivated).toBe(false);
  });

  it('flags deactivated users', () => {
    const r = resolveUser(USERS, 'cyrus');
    expect(r.user.user_id).toBe(11);
    expect(r.deactivated).toBe(true);
  });

  it('reports ambiguity with candidates instead of guessing', () => {
    const err = thrown(() => resolveUser(USERS, 'ann'));
    expect(err.code).toBe('CORE_USER_AMBIGUOUS');
    expect(err.details?.candidates).toEqual([
      { user_id: 8, full_name: 'Ann Lee', email: 'ann@acme.example', is_active: true },
      { user_id: 9, full_name: 'Ann Smith', email: 'ann.smith@acme.example', is_active: true },
    ]);
    expect(err.message).toMatch(/Ann Lee \(id 8\), Ann Smith \(id 9\)/);
  });

  it('treats exact names that differ only in case as ambiguous', () => {
    const err = thrown(() => resolveUser(USERS, 'Cy'));
    expect(err.code).toBe('CORE_USER_AMBIGUOUS');
    expect((err.details?.candidates as unknown[] | undefined)?.length).toBe(2);
  });

  it('prefers an exact name over prefix matches', () => {
    const users = [...USERS, { user_id: 20, email: 'b2@acme.example', full_name: 'Bo' }];
    expect(resolveUser(users, 'bo').user.user_id).toBe(20);
  });

  it('caps the candidate list', () => {
    const many = Array.from({ length: 50 }, (_, i) => ({
      user_id: 100 + i,
      email: `u${i}@x`,
      full_name: `Sam ${i}`,
    }));
    const err = thrown(() => resolveUser(many, 'sam'));
    expect((err.details?.candidates as unknown[] | undefined)?.length).toBe(20);
    expect(err.details?.count).toBe(50);
  });

  it.each([[404], ['404'], ['nobody@acme.example'], ['Nobody Here'], ['@**Ghost**'], [Number.NaN]])(
    '%j is not found',
    (query) => {
      const err = thrown(() => resolveUser(USERS, query));
      expect(err.code).toBe('CORE_USER_NOT_FOUND');
    },
  );

  it('rejects an empty reference', () => {
    expect(thrown(() => resolveUser(USERS, '   ')).code).toBe('CORE_INVALID_ARGUMENT');
  });

  it('accepts any iterable and keeps the caller’s user type', () => {
    const set = new Set(USERS.map((u) => ({ ...u, extra: u.user_id * 2 })));
    expect(resolveUser(set, 8).user.extra).toBe(16);
  });
});
