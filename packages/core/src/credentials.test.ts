import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { mkdtemp, open, rm, symlink, truncate, writeFile } from 'node:fs/promises';
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

  it('names the missing variables when no zuliprc supplies them', async () => {
    const err = await failure(
      loadCredentials({ env: { ZULIP_REALM: 'https://acme.example' }, homedir: dir }),
    );
    expect(err.code).toBe('CORE_CONFIG_INVALID');
    expect(err.message).toContain('ZULIP_EMAIL, ZULIP_API_KEY not set, and no zuliprc supplies them');
    expect(err.message).not.toContain('ZULIP_REALM (or');
  });

  it('refuses an email without its key, and a key without its email', async () => {
    await writeFile(join(dir, '.zuliprc'), RC);
    for (const env of [{ ZULIP_EMAIL: 'bot@acme.example' }, { ZULIP_API_KEY: KEY }]) {
      const err = await failure(loadCredentials({ env, homedir: dir }));
      expect(err.code).toBe('CORE_CONFIG_INVALID');
      expect(err.message).toMatch(/name one account/);
      expect(err.message).not.toContain(KEY);
    }
  });

  it('refuses API keys that are not Zulip-shaped, without quoting them', async () => {
    for (const apiKey of ['x', KEY.slice(1), `${KEY}0`, `${KEY.slice(1)}-`]) {
      const err = await failure(
        loadCredentials({
          env: {
            ZULIP_REALM: 'https://acme.example',
            ZULIP_EMAIL: 'bot@acme.example',
            ZULIP_API_KEY: apiKey,
          },
          homedir: dir,
        }),
      );
      expect(err).toMatchObject({ code: 'CORE_CONFIG_INVALID', details: { variable: 'ZULIP_API_KEY' } });
      expect(err.message).toBe('ZULIP_API_KEY is not a Zulip API key (32 letters and digits)');
    }
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

  it('refuses ZULIP_REALM and ZULIP_SITE that disagree, but not over a trailing slash', async () => {
    const env = { ZULIP_EMAIL: 'x@y', ZULIP_API_KEY: KEY };
    const both = await failure(
      loadCredentials({
        env: { ...env, ZULIP_REALM: 'https://a.example', ZULIP_SITE: 'https://b.example' },
        homedir: dir,
      }),
    );
    expect(both.message).toContain('disagree');
    const same = await loadCredentials({
      env: { ...env, ZULIP_REALM: 'https://a.example/', ZULIP_SITE: 'https://a.example' },
      homedir: dir,
    });
    expect(same.site).toBe('https://a.example/');
  });
});

describe('loadCredentials from variables and a zuliprc together', () => {
  it('takes each field from its variable when set, the rest from the zuliprc', async () => {
    const path = join(dir, 'bot.zuliprc');
    await writeFile(path, RC);
    const creds = await loadCredentials({
      env: { ZULIP_RC_PATH: path, ZULIP_REALM: 'https://internal.acme.example' },
      homedir: dir,
    });
    expect(creds).toEqual({
      site: 'https://internal.acme.example',
      email: 'helper-bot@acme.example',
      apiKey: KEY,
      source: { kind: 'env+zuliprc', path, fromZuliprc: ['email', 'apiKey'] },
    });
    const other = 'Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z';
    const account = await loadCredentials({
      env: { ZULIP_RC_PATH: path, ZULIP_EMAIL: 'other-bot@acme.example', ZULIP_API_KEY: other },
      homedir: dir,
    });
    expect(account).toMatchObject({
      site: 'https://acme.example',
      email: 'other-bot@acme.example',
      apiKey: other,
      source: { kind: 'env+zuliprc', path, fromZuliprc: ['site'] },
    });
  });

  it('fills in from ~/.zuliprc only when a variable is missing', async () => {
    await writeFile(join(dir, '.zuliprc'), RC);
    const creds = await loadCredentials({ env: { ZULIP_SITE: 'https://chat.acme.example' }, homedir: dir });
    expect(creds.source).toEqual({
      kind: 'env+zuliprc',
      path: join(dir, '.zuliprc'),
      fromZuliprc: ['email', 'apiKey'],
    });
    await writeFile(join(dir, '.zuliprc'), 'not a zuliprc');
    const env = await loadCredentials({
      env: { ZULIP_REALM: 'https://acme.example', ZULIP_EMAIL: 'bot@acme.example', ZULIP_API_KEY: KEY },
      homedir: dir,
    });
    expect(env.source).toEqual({ kind: 'env' });
  });

  it('always reads a zuliprc named by a variable, even when the variables supply everything', async () => {
    const env = { ZULIP_REALM: 'https://acme.example', ZULIP_EMAIL: 'bot@acme.example', ZULIP_API_KEY: KEY };
    const missing = await failure(
      loadCredentials({ env: { ...env, ZULIP_RC_PATH: join(dir, 'missing') }, homedir: dir }),
    );
    expect(missing).toMatchObject({ code: 'CORE_CONFIG_INVALID', details: { variable: 'ZULIP_RC_PATH' } });
    await writeFile(join(dir, 'rc'), RC);
    const creds = await loadCredentials({ env: { ...env, ZULIP_RC_PATH: join(dir, 'rc') }, homedir: dir });
    expect(creds).toMatchObject({ email: 'bot@acme.example', source: { kind: 'env' } });
  });

  it('prints without the key whichever source supplied it', async () => {
    const { inspect } = await import('node:util');
    await writeFile(join(dir, '.zuliprc'), RC);
    const creds = await loadCredentials({ env: { ZULIP_SITE: 'https://chat.acme.example' }, homedir: dir });
    expect(JSON.stringify(creds)).not.toContain(KEY);
    expect(inspect(creds)).not.toContain(KEY);
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
    expect(err.message).toContain('is not a regular file');
    const refused = Object.assign(new Error('denied'), { code: 'EACCES' });
    const denied = await failure(
      loadCredentials({ env: { ZULIP_RC_PATH: dir }, homedir: dir, readFile: () => Promise.reject(refused) }),
    );
    expect(denied.message).toContain('cannot be read (EACCES)');
  });
});

describe('loadCredentials on a zuliprc that is no small regular file', () => {
  const fifos: string[] = [];
  afterEach(async () => {
    // A reader stuck opening a FIFO is let go by a writer.
    for (const fifo of fifos.splice(0)) {
      await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).then(
        (h) => h.close(),
        () => undefined,
      );
    }
  });

  it('refuses a FIFO and a link to /dev/zero at once, without waiting or reading on', async () => {
    const fifo = join(dir, 'fifo.zuliprc');
    execFileSync('mkfifo', [fifo]);
    fifos.push(fifo);
    const zero = join(dir, 'zero.zuliprc');
    await symlink('/dev/zero', zero);
    for (const path of [fifo, zero]) {
      const err = await failure(loadCredentials({ env: { ZULIP_RC_PATH: path }, homedir: dir }));
      expect(err).toMatchObject({
        code: 'CORE_CONFIG_INVALID',
        details: { path, variable: 'ZULIP_RC_PATH' },
      });
      expect(err.message).toBe(`zuliprc ${path} (from ZULIP_RC_PATH) is not a regular file`);
    }
  });

  it('refuses a zuliprc larger than 1 MiB without reading it', async () => {
    const path = join(dir, 'huge.zuliprc');
    await writeFile(path, RC);
    await truncate(path, 1024 * 1024 + 1);
    const err = await failure(loadCredentials({ env: { ZULIP_CONFIG: path }, homedir: dir }));
    expect(err).toMatchObject({ code: 'CORE_CONFIG_INVALID', details: { path, variable: 'ZULIP_CONFIG' } });
    expect(err.message).toBe(`zuliprc ${path} (from ZULIP_CONFIG) is larger than 1048576 bytes`);
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
    [
      'a malformed site',
      `[api]\nemail=a@b\nkey=${KEY}\nsite=acme.example\n`,
      "key 'site' is not an http(s) URL",
    ],
    ['a short key', `[api]\nemail=a@b\nkey=x\nsite=https://a.example\n`, "key 'key' is not a Zulip API key"],
    [
      'a malformed email',
      `[api]\nemail=nobody\nkey=${KEY}\nsite=https://a.example\n`,
      "key 'email' is not an email",
    ],
    [
      'a key with spaces',
      `[api]\nemail=a@b\nkey=${KEY} ${KEY}\nsite=https://a.example\n`,
      "key 'key' is not a Zulip API key",
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
