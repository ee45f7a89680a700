// Handles for 2026-era callers: signed, bound to the credentials that made them, expiring, and
// valid on every process that shares the state store (one key, kept 0600 in it).
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileStateStore } from '@zmcp/delivery';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openMcpHandles } from '../src/index.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'server-kit-handles-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const alice = { token: 'alice-token-0123456789', clientId: 'zulip-mcp', scopes: [] };
const bob = { token: 'bob-token-0123456789ab', clientId: 'zulip-mcp', scopes: [] };

describe('openMcpHandles', () => {
  it('verifies a handle on another process sharing the store, and keeps the key 0600 there', async () => {
    // Two "processes": two stores on one directory, opened at the same time.
    const [a, b] = await Promise.all([
      openMcpHandles<{ s: string }>({ store: new FileStateStore({ dir }), account: 'acct', ttlSeconds: 60 }),
      openMcpHandles<{ s: string }>({ store: new FileStateStore({ dir }), account: 'acct', ttlSeconds: 60 }),
    ]);
    const handle = await a.mint({ s: 'one' }, alice);
    expect(await b.verify(handle, alice)).toEqual({ s: 'one' });
    expect(a.principal(alice)).toBe(b.principal(alice));
    const file = new FileStateStore({ dir }).pathOf({ account: 'acct', session: 'mcp-handles', kind: 'key' });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('refuses a handle made for other credentials, altered, from another key, or expired', async () => {
    const handles = await openMcpHandles<{ s: string }>({
      store: new FileStateStore({ dir }),
      account: 'acct',
      ttlSeconds: 60,
    });
    const handle = await handles.mint({ s: 'one' }, alice);
    const reason = (promise: Promise<unknown>) =>
      promise.then(
        () => 'accepted',
        (err: { code?: string; details?: { reason?: string } }) => `${err.code} ${err.details?.reason}`,
      );
    expect(await reason(handles.verify(handle, bob))).toBe('SERVER_KIT_BAD_HANDLE other-credentials');
    expect(await reason(handles.verify(handle, undefined))).toBe('SERVER_KIT_BAD_HANDLE other-credentials');
    const [prefix, body, mac] = handle.split('.');
    const altered = Buffer.from(body as string, 'base64url')
      .toString('utf8')
      .replace('one', 'two');
    expect(
      await reason(handles.verify(`${prefix}.${Buffer.from(altered).toString('base64url')}.${mac}`, alice)),
    ).toBe('SERVER_KIT_BAD_HANDLE forged');
    expect(await reason(handles.verify('not a handle', alice))).toBe('SERVER_KIT_BAD_HANDLE malformed');
    const otherRealm = await openMcpHandles<{ s: string }>({
      store: new FileStateStore({ dir }),
      account: 'other',
      ttlSeconds: 60,
    });
    expect(await reason(otherRealm.verify(handle, alice))).toBe('SERVER_KIT_BAD_HANDLE forged');
    const expiring = await openMcpHandles<{ s: string }>({
      store: new FileStateStore({ dir }),
      account: 'acct',
      ttlSeconds: -1,
    });
    expect(await reason(handles.verify(await expiring.mint({ s: 'old' }, alice), alice))).toBe(
      'SERVER_KIT_BAD_HANDLE expired',
    );
    // Without a token the credentials are the same constant for every caller.
    expect(await handles.verify(await handles.mint({ s: 'anon' }, undefined), undefined)).toEqual({
      s: 'anon',
    });
  });
});
