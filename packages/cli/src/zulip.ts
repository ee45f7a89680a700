import {
  type CredentialField,
  type CredentialSource,
  credentialProblem,
  errorCode,
  parseSite,
} from '@zmcp/core';
import { type Setting, type SettingMeta, strictBoolean, text } from './settings.js';

/** The site settings of a bin's Zulip account, as its settings parse them. */
export interface ZulipSiteValues {
  readonly ZULIP_REALM: string | undefined;
  readonly ZULIP_SITE: string | undefined;
  readonly ZULIP_ALLOW_INSECURE_HTTP: boolean;
}

const siteExpected = 'expected an http(s) URL such as https://chat.example.com';
const credentialExpected: Readonly<Record<CredentialField, string>> = {
  site: siteExpected,
  email: 'expected an email address such as bot@example.com',
  apiKey: 'expected a Zulip API key: 32 letters and digits',
};

/**
 * One field of a bin's Zulip account (`ZULIP_REALM`/`ZULIP_SITE`, `ZULIP_EMAIL`,
 * `ZULIP_API_KEY`), kept as written and checked by core's rule for it (`credentialProblem`);
 * unset stays `undefined`. Mark the API key `secret`.
 */
export function zulipCredential(meta: SettingMeta, field: CredentialField): Setting<string | undefined> {
  return text(meta, (raw) =>
    credentialProblem(field, raw.trim()) === undefined ? undefined : credentialExpected[field],
  );
}
const account = (meta: Omit<SettingMeta, 'group' | 'defaultText'>): SettingMeta => ({
  group: 'Zulip account',
  defaultText: 'from zuliprc',
  ...meta,
});

/**
 * The Zulip account settings every bin reads alike (`loadCredentials` resolves them, a zuliprc
 * filling what they leave unset): `ZULIP_REALM`/`ZULIP_SITE`, `ZULIP_EMAIL`, `ZULIP_API_KEY`
 * (secret), `ZULIP_RC_PATH` (`--zuliprc`) and `ZULIP_ALLOW_INSECURE_HTTP`, in that order, to
 * spread into a bin's settings. Check the site pair with {@link checkZulipSite}.
 */
export function zulipAccountSettings() {
  return {
    ZULIP_REALM: zulipCredential(
      account({ help: 'Zulip server URL, e.g. https://chat.example.com.' }),
      'site',
    ),
    ZULIP_SITE: zulipCredential(
      account({ help: 'The same as ZULIP_REALM (the name zuliprc files use); set one of the two.' }),
      'site',
    ),
    ZULIP_EMAIL: zulipCredential(
      account({ help: 'Email address of the bot account; set with ZULIP_API_KEY, or neither.' }),
      'email',
    ),
    ZULIP_API_KEY: zulipCredential(
      account({
        help: 'API key of the bot account (32 letters and digits); set with ZULIP_EMAIL. Secret: never logged, no flag.',
        secret: true,
      }),
      'apiKey',
    ),
    ZULIP_RC_PATH: text({
      group: 'Zulip account',
      flag: '--zuliprc',
      flagArg: '<path>',
      defaultText: '~/.zuliprc if needed',
      help: 'Path of a zuliprc file; it supplies whatever the variables above leave unset (the variables win).',
    }),
    ZULIP_ALLOW_INSECURE_HTTP: strictBoolean(
      {
        group: 'Zulip account',
        help: 'Allow an http:// server URL that is not loopback (the API key then travels unencrypted).',
      },
      false,
    ),
  };
}

const insecure =
  'is plain http to a host that is not loopback, so the API key would travel unencrypted; use https, or set ZULIP_ALLOW_INSECURE_HTTP';

/**
 * Checks a bin's Zulip site settings together, by core's rule for a site (`parseSite`): each one
 * set must be a URL the client accepts (plain http only to loopback unless
 * `ZULIP_ALLOW_INSECURE_HTTP`), and `ZULIP_REALM` and `ZULIP_SITE` set together must name the
 * same realm as core normalizes it (case, trailing `/` and `/api/v1` aside). A bin calls it from
 * its settings' `refine`.
 */
export function checkZulipSite(
  values: ZulipSiteValues,
  report: (key: 'ZULIP_REALM' | 'ZULIP_SITE', message: string) => void,
): void {
  const urls: string[] = [];
  for (const key of ['ZULIP_REALM', 'ZULIP_SITE'] as const) {
    const value = values[key];
    if (value === undefined) continue;
    let url: string;
    try {
      url = parseSite(value, { allowInsecureHttp: true }).url;
    } catch {
      report(key, siteExpected);
      continue;
    }
    try {
      parseSite(value, { allowInsecureHttp: values.ZULIP_ALLOW_INSECURE_HTTP });
      urls.push(url);
    } catch {
      report(key, insecure);
    }
  }
  if (urls.length === 2 && urls[0] !== urls[1]) {
    report('ZULIP_SITE', 'conflicts with ZULIP_REALM; set only one of the two');
  }
}

/** Codes of the libraries' errors that mean the configuration is wrong, not the run. */
const startupConfigurationCodes: ReadonlySet<string> = new Set([
  'CORE_CONFIG_INVALID',
  'CORE_INSECURE_URL',
  'CORE_UNAUTHORIZED',
  'UPLOAD_CONFIG_INVALID',
  'UPLOAD_ROOT_MISSING',
  'DELIVERY_INVALID_SESSION_ID',
  'DELIVERY_FILTERS_INVALID',
  // @zmcp/fleet: a state setting it cannot use (ZULIP_FILTERS_FILE with ZULIP_STATE_URL), a schema newer than this release.
  'FLEET_INVALID_ARGUMENT',
  'FLEET_SCHEMA_TOO_NEW',
]);

/**
 * A library's message with every run of letters and digits that core's rule takes for a Zulip API
 * key blanked: a message may name a value (a path, a file) that is a key in the wrong variable.
 */
function withoutKeys(message: string): string {
  return message.replace(/[A-Za-z0-9]+/g, (run) =>
    credentialProblem('apiKey', run) === undefined ? '[REDACTED]' : run,
  );
}

/**
 * The one line a bin reports a start-up failure with when it means the configuration is wrong
 * (missing or malformed credentials or zuliprc, credentials Zulip refuses, a missing upload root,
 * an invalid session id or filters file): the library's message and its code. Credentials Zulip
 * refuses are reported by where they came from (`source`). `undefined` for any other failure.
 * Anything in the message shaped like a Zulip API key is blanked (`ZULIP_RC_PATH=<key>` names
 * the path). Pass the line to `reportInvalidConfiguration` with a redactor too: it may quote a
 * value.
 */
export function startupConfigurationProblem(err: unknown, source?: CredentialSource): string | undefined {
  const code = errorCode(err);
  const message = (err as { message?: unknown } | null)?.message;
  if (code === undefined || !startupConfigurationCodes.has(code) || typeof message !== 'string')
    return undefined;
  if (code === 'CORE_UNAUTHORIZED') {
    const from =
      source !== undefined &&
      (source.kind === 'zuliprc' || (source.kind === 'env+zuliprc' && source.fromZuliprc.includes('apiKey')))
        ? `the email and key of ${source.path}`
        : 'ZULIP_EMAIL and ZULIP_API_KEY';
    return `Zulip refused the credentials (${code}): check ${from}, and that the account is active`;
  }
  return `${withoutKeys(message)} (${code})`;
}
