import { loadCredentials, parseSite, ZmcpError } from '@zmcp/core';
import { describe, expect, it } from 'vitest';
import { configurationProblems, defineSettings } from './define.js';
import { strictBoolean, text } from './settings.js';
import { checkZulipSite, startupConfigurationProblem, zulipAccountSettings } from './zulip.js';

const settings = defineSettings(
  {
    ZULIP_REALM: text({ group: 'Zulip', defaultText: 'unset', help: 'The realm.' }),
    ZULIP_SITE: text({ group: 'Zulip', defaultText: 'unset', help: 'The realm, again.' }),
    ZULIP_ALLOW_INSECURE_HTTP: strictBoolean({ group: 'Zulip', help: 'Allow plain http.' }, false),
  },
  { bin: 'probe', refine: checkZulipSite },
);

function problems(env: Record<string, string>): readonly string[] {
  try {
    settings.parse(env, []);
    return [];
  } catch (err) {
    return configurationProblems(err) ?? [`not a configuration error: ${String(err)}`];
  }
}

describe('checkZulipSite', () => {
  it('accepts one site, or two that core normalizes to the same realm', () => {
    expect(problems({ ZULIP_SITE: 'https://chat.example.com' })).toEqual([]);
    expect(
      problems({ ZULIP_REALM: 'https://chat.example.com/api/v1', ZULIP_SITE: 'https://Chat.example.com/' }),
    ).toEqual([]);
  });

  it('refuses two sites that name different realms, on ZULIP_SITE', () => {
    expect(problems({ ZULIP_REALM: 'https://a.example', ZULIP_SITE: 'https://b.example' })).toEqual([
      'ZULIP_SITE: conflicts with ZULIP_REALM; set only one of the two (got "https://b.example")',
    ]);
  });

  it('refuses plain http beyond loopback on each variable that has it, unless allowed', () => {
    const found = problems({ ZULIP_REALM: 'http://chat.example.com', ZULIP_SITE: 'http://chat.example.com' });
    expect(found).toHaveLength(2);
    expect(found[0]).toMatch(/^ZULIP_REALM: is plain http .*ZULIP_ALLOW_INSECURE_HTTP/);
    expect(found[1]).toMatch(/^ZULIP_SITE: is plain http /);
    expect(problems({ ZULIP_REALM: 'http://127.0.0.1:9991' })).toEqual([]);
    expect(problems({ ZULIP_REALM: 'http://chat.example.com', ZULIP_ALLOW_INSECURE_HTTP: 'yes' })).toEqual(
      [],
    );
  });

  it('names a site core cannot read at all', () => {
    const reported: string[] = [];
    checkZulipSite(
      { ZULIP_REALM: 'ftp://chat.example.com', ZULIP_SITE: undefined, ZULIP_ALLOW_INSECURE_HTTP: false },
      (key, message) => reported.push(`${key}: ${message}`),
    );
    expect(reported).toEqual(['ZULIP_REALM: expected an http(s) URL such as https://chat.example.com']);
  });
});

describe('startupConfigurationProblem', () => {
  it('never shows what is shaped like a Zulip API key, though the library names the value', async () => {
    const key = 'Zk3yZk3yZk3yZk3yZk3yZk3yZk3yZk3y';
    const missing = await loadCredentials({
      env: { ZULIP_RC_PATH: `/home/bot/${key}` },
      homedir: '/nonexistent',
    }).catch((err: unknown) => err);
    expect(startupConfigurationProblem(missing)).toBe(
      'zuliprc /home/bot/[REDACTED] (from ZULIP_RC_PATH) does not exist (CORE_CONFIG_INVALID)',
    );
  });

  it('reports a library configuration error as its message and code', async () => {
    const missing = await loadCredentials({
      env: { ZULIP_EMAIL: 'bot@example.com' },
      homedir: '/nonexistent',
    }).catch((err: unknown) => err);
    expect(startupConfigurationProblem(missing)).toMatch(
      /^ZULIP_EMAIL is set but ZULIP_API_KEY is not.* \(CORE_CONFIG_INVALID\)$/,
    );
    let insecure: unknown;
    try {
      parseSite('http://chat.example.com');
    } catch (err) {
      insecure = err;
    }
    expect(startupConfigurationProblem(insecure)).toMatch(/plain http.*\(CORE_INSECURE_URL\)$/);
    for (const code of ['UPLOAD_ROOT_MISSING', 'DELIVERY_FILTERS_INVALID', 'DELIVERY_INVALID_SESSION_ID']) {
      expect(startupConfigurationProblem({ code, message: 'what was wrong' })).toBe(
        `what was wrong (${code})`,
      );
    }
  });

  it('says where credentials Zulip refused came from', () => {
    const refused = new ZmcpError('CORE_UNAUTHORIZED', 'Zulip answered 401');
    const fromEnv = 'Zulip refused the credentials (CORE_UNAUTHORIZED): check ZULIP_EMAIL and ZULIP_API_KEY';
    expect(startupConfigurationProblem(refused)).toBe(`${fromEnv}, and that the account is active`);
    expect(startupConfigurationProblem(refused, { kind: 'env' })).toContain(fromEnv);
    expect(startupConfigurationProblem(refused, { kind: 'zuliprc', path: '/etc/zuliprc' })).toContain(
      'check the email and key of /etc/zuliprc',
    );
    expect(
      startupConfigurationProblem(refused, {
        kind: 'env+zuliprc',
        path: '/etc/zuliprc',
        fromZuliprc: ['site'],
      }),
    ).toContain(fromEnv);
    expect(
      startupConfigurationProblem(refused, {
        kind: 'env+zuliprc',
        path: '/etc/zuliprc',
        fromZuliprc: ['email', 'apiKey'],
      }),
    ).toContain('/etc/zuliprc');
  });

  it('leaves every other failure alone', () => {
    expect(startupConfigurationProblem(new ZmcpError('CORE_NETWORK', 'connection refused'))).toBeUndefined();
    expect(startupConfigurationProblem(new Error('boom'))).toBeUndefined();
    expect(startupConfigurationProblem('CORE_CONFIG_INVALID')).toBeUndefined();
    expect(startupConfigurationProblem(null)).toBeUndefined();
    expect(startupConfigurationProblem({ code: 'CORE_CONFIG_INVALID' })).toBeUndefined();
  });
});

describe('zulipAccountSettings', () => {
  const account = defineSettings(zulipAccountSettings(), { bin: 'probe', refine: checkZulipSite });

  it('reads the account as every bin does, --zuliprc included', () => {
    const raw = account.parse(
      {
        ZULIP_SITE: 'https://chat.example.com',
        ZULIP_EMAIL: 'bot@example.com',
        ZULIP_API_KEY: 'a'.repeat(32),
      },
      ['--zuliprc', '/tmp/rc'],
    );
    expect(raw.ZULIP_REALM).toBeUndefined();
    expect(raw).toMatchObject({
      ZULIP_SITE: 'https://chat.example.com',
      ZULIP_EMAIL: 'bot@example.com',
      ZULIP_API_KEY: 'a'.repeat(32),
      ZULIP_RC_PATH: '/tmp/rc',
      ZULIP_ALLOW_INSECURE_HTTP: false,
    });
  });

  it('refuses a malformed key without quoting it, and checks the site pair', () => {
    const found = (env: Record<string, string>) => {
      try {
        account.parse(env, []);
        return [];
      } catch (err) {
        return configurationProblems(err) ?? [];
      }
    };
    const key = found({ ZULIP_API_KEY: 'not-a-key-but-a-secret' });
    expect(key).toHaveLength(1);
    expect(key[0]).toMatch(/^ZULIP_API_KEY: expected a Zulip API key/);
    expect(key[0]).not.toContain('not-a-key-but-a-secret');
    expect(found({ ZULIP_REALM: 'http://chat.example.com' })).toEqual([
      expect.stringMatching(/^ZULIP_REALM: is plain http/),
    ]);
  });
});
