import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadCredentials, parseZuliprc } from './credentials.js';
import type { ZmcpError } from './errors.js';

const KEY = 'Xy7Qp2LmN8rT4vW6zA1bC3dE5fG7hJ9k';
const RC = `[api]\nemail=helper-bot@acme.example\nkey=${KEY}\nsite=https://acme.example\n`;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'zmcp-creds-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function failure(p: Promise<unknown>): Promise<ZmcpError> {
  try {
    await p;
  } catch (err) {
    return err as ZmcpError;
  }
  throw new Error('expected a failure');
}

describe('loadCredentials from the environment', () => {
  it('reads ZULIP_REALM, ZULIP_EMAIL and ZULIP_API_KEY', async () => {
    const creds = await loadCredentials({
      env: { ZULIP_REALM: 'https://acme.example', ZULIP_EMAIL: 'bot@acme.example', ZULIP_API_KEY: KEY },
      homedir: dir,
    });
    expect(creds).toEqual({
      site: 'https://acme.example',
      email: 'bot@acme.example',
      apiKey: KEY,
      source: { kind: 'env' },
    });
  });

  it('prints without the key', async () => {
    const { inspect } = await import('node:util');
    const creds = await loadCredentials({
      env: { ZULIP_REALM: 'https://acme.example', ZULIP_EMAIL: 'bot@acme.example', ZULIP_API_KEY: KEY },
      homedir: dir,
    });
    expect(JSON.stringify(creds)).not.toContain(KEY);
    expect(inspect(creds)).not.toContain(KEY);
    expect(`${JSON.stringify({ creds })}`).toContain('[redacted]');
    expect({ ...creds }.apiKey).toBe(KEY);
  });

  it('accepts ZULIP_SITE as the realm', async () => {
    const creds = await loadCredentials({
      env: { ZULIP_SITE: 'https://acme.example', ZULIP_EMAIL: 'bot@acme.example', ZULIP_API_KEY: KEY },
      homedir: dir,
    });
    expect(creds.site).toBe('https://acme.example');
  });

  it('names every missing variable', async () => {
    const err = await failure(loadCredentials({ env: { ZULIP_EMAIL: 'bot@acme.example' }, homedir: dir }));
    expect(err.code).toBe('CORE_CONFIG_INVALID');
    expect(err.message).toContain('ZULIP_REALM (or ZULIP_SITE)');
    expect(err.message).toContain('ZULIP_API_KEY');
    expect(err.message).not.toContain('ZULIP_EMAIL,');
  });

  it('names a malformed variable without quoting the key', async () => {
    const bad = `${KEY} trailing`;
    const err = await failure(
      loadCredentials({
        env: {
          ZULIP_REALM: 'https://acme.example',
          ZULIP_EMAIL: 'bot@acme.example',
          ZULIP_API_KEY: `x${bad}`,
        },
        homedir: dir,
      }),
    );
    expect(err).toMatchObject({ code: 'CORE_CONFIG_INVALID', details: { variable: 'ZULIP_API_KEY' } });
    expect(JSON.stringify(err) + err.message).not.toContain(KEY);
    const site = await failure(
      loadCredentials({
        env: { ZULIP_REALM: 'acme.example', ZULIP_EMAIL: 'bot@acme.example', ZULIP_API_KEY: KEY },
        homedir: dir,
      }),
    );
    expect(site.message).toContain('ZULIP_REALM');
  });

  it('refuses ZULIP_REALM and ZULIP_SITE that disagree, and env beside ZULIP_RC_PATH', async () => {
    const both = await failure(
      loadCredentials({
        env: {
          ZULIP_REALM: 'https://a.example',
          ZULIP_SITE: 'https://b.example',
          ZULIP_EMAIL: 'x@y',
          ZULIP_API_KEY: KEY,
        },
        homedir: dir,
      }),
    );
    expect(both.message).toContain('disagree');
    const mixed = await failure(
      loadCredentials({ env: { ZULIP_API_KEY: KEY, ZULIP_RC_PATH: join(dir, 'rc') }, homedir: dir }),
    );
    expect(mixed.code).toBe('CORE_CONFIG_INVALID');
    expect(mixed.message).toContain('ZULIP_RC_PATH');
  });
});

describe('loadCredentials from a zuliprc', () => {
  it('reads ZULIP_RC_PATH first', async () => {
    const path = join(dir, 'bot.zuliprc');
    await writeFile(path, RC);
    await writeFile(join(dir, '.zuliprc'), RC.replace('helper-bot', 'other'));
    const creds = await loadCredentials({
      env: { ZULIP_RC_PATH: path, ZULIP_CONFIG: '/nope' },
      homedir: dir,
    });
    expect(creds).toMatchObject({
      email: 'helper-bot@acme.example',
      apiKey: KEY,
      source: { kind: 'zuliprc', path },
    });
  });

  it('falls back to ZULIP_CONFIG, then ~/.zuliprc', async () => {
    const cfg = join(dir, 'config');
    await writeFile(cfg, RC);
    expect((await loadCredentials({ env: { ZULIP_CONFIG: cfg }, homedir: dir })).source).toEqual({
      kind: 'zuliprc',
      path: cfg,
    });
    await writeFile(join(dir, '.zuliprc'), RC);
    expect((await loadCredentials({ env: {}, homedir: dir })).source).toEqual({
      kind: 'zuliprc',
      path: join(dir, '.zuliprc'),
    });
  });

  it('says what it looked for when nothing is configured', async () => {
    const err = await failure(loadCredentials({ env: {}, homedir: dir }));
    expect(err.code).toBe('CORE_CONFIG_INVALID');
    expect(err.message).toContain('ZULIP_RC_PATH');
    expect(err.message).toContain(join(dir, '.zuliprc'));
  });

  it('names the file (and the variable) when a named zuliprc is missing', async () => {
    const path = join(dir, 'missing');
    const err = await failure(loadCredentials({ env: { ZULIP_RC_PATH: path }, homedir: dir }));
    expect(err).toMatchObject({ code: 'CORE_CONFIG_INVALID', details: { path, variable: 'ZULIP_RC_PATH' } });
    expect(err.message).toContain('does not exist');
  });

  it('reports an unreadable file with its path', async () => {
    const err = await failure(loadCredentials({ env: { ZULIP_RC_PATH: dir }, homedir: dir }));
    expect(err.message).toContain(dir);
    expect(err.message).toContain('cannot be read');
  });
});

describe('parseZuliprc', () => {
  it('reads the [api] section, ignoring comments, other sections and unknown keys', () => {
    const text = `\uFEFF# comment\n; another\n[other]\nkey=zzz\n\n[api]\r\nEmail = bot@acme.example\r\nkey: ${KEY}\nsite=https://acme.example\ninsecure=false\n`;
    expect(parseZuliprc(text, '/rc')).toMatchObject({ email: 'bot@acme.example', apiKey: KEY });
  });

  it.each([
    ['no [api] section', '[other]\nemail=a@b\n', 'no [api] section'],
    ['a missing key', '[api]\nemail=a@b\nsite=https://acme.example\n', "key 'key' is missing"],
    ['an empty site', `[api]\nemail=a@b\nkey=${KEY}\nsite=\n`, "key 'site' is missing"],
    ['a malformed site', `[api]\nemail=a@b\nkey=${KEY}\nsite=acme.example\n`, "key 'site' is not a URL"],
    [
      'a malformed email',
      `[api]\nemail=nobody\nkey=${KEY}\nsite=https://a.example\n`,
      "key 'email' is not an email",
    ],
    [
      'a key with spaces',
      `[api]\nemail=a@b\nkey=${KEY} ${KEY}\nsite=https://a.example\n`,
      "key 'key' is malformed",
    ],
    ['a line without =', `[api]\nemail=a@b\n${KEY}\n`, 'line 3 is not'],
    ['a key before any section', `key=${KEY}\n[api]\n`, 'line 1 is not'],
    ['a duplicated key', `[api]\nkey=${KEY}\nkey=${KEY}\n`, "'key' is set twice"],
    ['a duplicated section', '[api]\n[api]\n', 'appears twice'],
  ])('names the file and the problem for %s, never the key', (_name, text, expected) => {
    try {
      parseZuliprc(text, '/home/bot/.zuliprc');
      expect.unreachable();
    } catch (err) {
      const e = err as ZmcpError;
      expect(e.code).toBe('CORE_CONFIG_INVALID');
      expect(e.message).toContain('/home/bot/.zuliprc');
      expect(e.message).toContain(expected);
      expect(e.message + JSON.stringify(e.details)).not.toContain(KEY);
    }
  });
});
