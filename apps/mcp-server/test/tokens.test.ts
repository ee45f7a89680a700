// Per-person tokens: the registry over a state store (only a hash kept, the person's key encrypted
// and bound to its record), and `zulip-mcp tokens create|list|revoke` against a simulated realm.
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { FileStateStore, MemoryStateStore } from '@zmcp/delivery';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditLog } from '../src/audit.js';
import { parseExpiry, TokenRegistry } from '../src/tokens.js';
import { tokensMain } from '../src/tokens-command.js';
import { type SmallRealm, startSmallRealm } from './small-realm.js';

const secretKey = Buffer.alloc(32, 7);
const secretText = secretKey.toString('base64');

function spec(overrides: Partial<Parameters<TokenRegistry['create']>[0]> = {}) {
  return {
    label: 'ann laptop',
    userId: 5,
    email: 'ann@example.test',
    fullName: 'Ann Lee',
    apiKey: 'ann-secret-api-key-0123',
    toolsets: ['read' as const],
    writeAs: 'bot' as const,
    expiresAt: null,
    ...overrides,
  };
}

describe('TokenRegistry', () => {
  it('issues a token whose hash alone is stored, and gives the person’s key back only to it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'zmcp-tokens-'));
    try {
      const registry = new TokenRegistry({
        store: new FileStateStore({ dir }),
        account: 'realm@1',
        secretKey,
      });
      const { token, info } = await registry.create(spec());
      expect(token).toMatch(/^zmcp_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
      expect(info).toMatchObject({ label: 'ann laptop', userId: 5, status: 'active', lastUsed: null });
      const files = await readdir(join(dir, 'realm@1'));
      for (const f of files) expect((await stat(join(dir, 'realm@1', f))).mode & 0o777).toBe(0o600);
      const stored = (await Promise.all(files.map((f) => readFile(join(dir, 'realm@1', f), 'utf8')))).join(
        '\n',
      );
      expect(stored).not.toContain(token);
      expect(stored).not.toContain(token.slice('zmcp_0123456789abcdef_'.length));
      expect(stored).not.toContain('ann-secret-api-key-0123');
      const grant = await registry.check(token);
      if (typeof grant === 'string') throw new Error(grant);
      expect(grant.apiKey()).toBe('ann-secret-api-key-0123');
      expect((await registry.list())[0]?.lastUsed).not.toBeNull();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses malformed, unknown, altered, revoked and expired tokens', async () => {
    let now = Date.parse('2026-12-01T00:00:00Z');
    const registry = new TokenRegistry({
      store: new MemoryStateStore(),
      account: 'realm@1',
      secretKey,
      now: () => now,
    });
    const { token } = await registry.create(spec({ expiresAt: new Date(now + 60_000) }));
    const other = await registry.create(spec({ label: 'bo' }));
    expect(await registry.check('nope')).toBe('malformed');
    expect(await registry.check(`${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`)).toBe('unknown');
    expect(await registry.check(token.replace(/^zmcp_[0-9a-f]{16}/, 'zmcp_0000000000000000'))).toBe(
      'unknown',
    );
    expect(typeof (await registry.check(other.token))).toBe('object');
    await registry.revoke('bo');
    expect(await registry.check(other.token)).toBe('revoked');
    now += 60_000;
    expect(await registry.check(token)).toBe('expired');
    expect((await registry.list()).map((t) => t.status)).toEqual(['expired', 'revoked']);
  });

  it('will not decrypt with another secret key, and says which key is wrong without the key', async () => {
    const store = new MemoryStateStore();
    const { token } = await new TokenRegistry({ store, account: 'a@1', secretKey }).create(spec());
    const grant = await new TokenRegistry({ store, account: 'a@1', secretKey: Buffer.alloc(32, 9) }).check(
      token,
    );
    if (typeof grant === 'string') throw new Error(grant);
    expect(() => grant.apiKey()).toThrow(expect.objectContaining({ code: 'MCP_SECRET_KEY_MISMATCH' }));
  });

  it('refuses an empty label, a past expiry, and revoking what is not there', async () => {
    const registry = new TokenRegistry({ store: new MemoryStateStore(), account: 'a@1', secretKey });
    await expect(registry.create(spec({ label: ' ' }))).rejects.toMatchObject({ code: 'MCP_TOKEN_INVALID' });
    await expect(registry.create(spec({ expiresAt: new Date(0) }))).rejects.toMatchObject({
      code: 'MCP_TOKEN_INVALID',
    });
    await expect(registry.revoke('nobody')).rejects.toMatchObject({ code: 'MCP_TOKEN_UNKNOWN' });
  });

  it('reads expiries as durations, dates or never', () => {
    const now = Date.parse('2026-12-01T00:00:00Z');
    expect(parseExpiry('90d', now)?.toISOString()).toBe('2027-03-01T00:00:00.000Z');
    expect(parseExpiry('never', now)).toBeNull();
    expect(parseExpiry('2027-01-31', now)?.toISOString()).toBe('2027-01-31T00:00:00.000Z');
    expect(parseExpiry('soon', now)).toBeUndefined();
  });
});

describe('zulip-mcp tokens', () => {
  let realm: SmallRealm;
  let dir = '';
  beforeAll(async () => {
    realm = await startSmallRealm();
    dir = await mkdtemp(join(tmpdir(), 'zmcp-tokens-cli-'));
  });
  afterAll(async () => {
    await realm.sim.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function run(argv: string[], stdin = '', extra: Record<string, string> = {}) {
    const out = new PassThrough();
    const err = new PassThrough();
    const input = new PassThrough();
    input.end(stdin);
    let stdout = '';
    let stderr = '';
    out.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    err.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const code = await tokensMain(argv, realm.env(dir, { ZULIP_SECRET_KEY: secretText, ...extra }), {
      stdin: input,
      stdout: out,
      stderr: err,
    });
    return { code, stdout, stderr };
  }

  it('creates a token from a key on stdin, lists it, revokes it, and audits both', async () => {
    const ann = realm.sim.credentials(realm.annId);
    const created = await run(
      ['create', '--label', 'ann', '--email', ann.email, '--api-key-stdin', '--write-as', 'person'],
      `${ann.apiKey}\n`,
    );
    expect(created.code).toBe(0);
    const token = created.stdout.trim();
    expect(token).toMatch(/^zmcp_/);
    expect(created.stderr).toContain(`user=${realm.annId}`);
    expect(created.stderr).not.toContain(token);
    expect(created.stderr).not.toContain(ann.apiKey);

    const listed = await run(['list', '--json']);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ label: 'ann', userId: realm.annId, writeAs: 'person', status: 'active' }),
    ]);
    expect(listed.stdout).not.toContain(ann.apiKey);

    const revoked = await run(['revoke', 'ann']);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain('revoked');
    const audit = (await readAuditLog(join(dir, 'audit.log'), 10)).map((l) => JSON.parse(l));
    expect(audit).toEqual([
      expect.objectContaining({ kind: 'admin', action: 'token.create', outcome: 'ok', userId: realm.annId }),
      expect.objectContaining({
        kind: 'admin',
        action: 'token.revoke',
        outcome: 'ok',
        token: expect.objectContaining({ label: 'ann' }),
      }),
    ]);
    const raw = await readFile(join(dir, 'audit.log'), 'utf8');
    expect(raw).not.toContain(token);
    expect(raw).not.toContain(ann.apiKey);
  });

  it('issues nothing for a key that is not the person’s, nor for a key on argv', async () => {
    const ann = realm.sim.credentials(realm.annId);
    const bot = realm.sim.credentials(realm.botId);
    const keyFile = join(dir, 'key.txt');
    await writeFile(keyFile, bot.apiKey);
    const wrong = await run(['create', '--label', 'x', '--email', ann.email, '--api-key-file', keyFile]);
    expect(wrong.code).toBe(2);
    expect(wrong.stdout).toBe('');
    expect(wrong.stderr).toContain('Zulip refused that email and API key');
    expect(wrong.stderr).not.toContain(bot.apiKey);
    const argv = await run(['create', '--label', 'x', '--email', ann.email, '--api-key', ann.apiKey]);
    expect(argv.code).toBe(2);
    expect(argv.stderr).toContain('never taken on the command line');
    expect(argv.stderr).not.toContain(ann.apiKey);
  });

  it('needs ZULIP_SECRET_KEY', async () => {
    const out = await run(['list'], '', { ZULIP_SECRET_KEY: '' });
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('ZULIP_SECRET_KEY');
  });
});
