import { readFile as fsReadFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { ZmcpError } from './errors.js';

/** Where a set of credentials came from. */
export type CredentialSource = { kind: 'env' } | { kind: 'zuliprc'; path: string };

/** What a client needs to reach a realm as one account. */
export interface Credentials {
  /** The realm URL as configured (the client validates and normalizes it). */
  site: string;
  email: string;
  apiKey: string;
  source: CredentialSource;
}

/**
 * Makes a credentials object print without its key: `JSON.stringify` and `util.inspect` show
 * `[redacted]`. The hooks are non-enumerable, so spreading and comparing see only the fields.
 */
function guarded(creds: Credentials): Credentials {
  const shown = () => ({ ...creds, apiKey: '[redacted]' });
  Object.defineProperty(creds, 'toJSON', { value: shown, enumerable: false });
  Object.defineProperty(creds, inspect.custom, { value: shown, enumerable: false });
  return creds;
}

/** Inputs of {@link loadCredentials}; passed in so nothing reads the real environment behind the caller's back. */
export interface LoadCredentialsOptions {
  /** The environment to read, usually `process.env`. */
  env: Readonly<Record<string, string | undefined>>;
  /** The home directory, for `~/.zuliprc`, usually `os.homedir()`. */
  homedir: string;
  /** Reads a file as UTF-8; defaults to `fs.promises.readFile`. */
  readFile?: ((path: string) => Promise<string>) | undefined;
}

const ENV_CREDENTIALS = ['ZULIP_REALM', 'ZULIP_SITE', 'ZULIP_EMAIL', 'ZULIP_API_KEY'] as const;

function configError(message: string, details: Record<string, unknown>, cause?: unknown): ZmcpError {
  return new ZmcpError(
    'CORE_CONFIG_INVALID',
    message,
    cause === undefined ? { details } : { details, cause },
  );
}

function set(env: LoadCredentialsOptions['env'], name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

// Each check names what is wrong and never repeats the value: it may be the key.
function checkSite(value: string): string | undefined {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:' ? undefined : 'is not an http(s) URL';
  } catch {
    return 'is not a URL';
  }
}

function checkEmail(value: string): string | undefined {
  return /^[^\s:]+@[^\s:]+$/.test(value) ? undefined : 'is not an email address';
}

function checkKey(value: string): string | undefined {
  return /^[^\s:\u0000-\u001f\u007f]{1,256}$/.test(value)
    ? undefined
    : 'is malformed (spaces, colons or control characters, or longer than 256)';
}

/**
 * Parses a zuliprc (INI, section `[api]`, keys `email`, `key`, `site`) into credentials.
 * `path` is used only to name the file in errors. The result prints without its key.
 *
 * @throws {ZmcpError} `CORE_CONFIG_INVALID` naming the file and the missing or malformed key
 *   (or line); never quoting a value.
 */
export function parseZuliprc(text: string, path: string): Credentials {
  const sections = new Map<string, Map<string, string>>();
  let current: Map<string, string> | undefined;
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\n|\r/);
  lines.forEach((rawLine, index) => {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) return;
    const header = /^\[([^\]]+)\]$/.exec(line);
    if (header) {
      const name = (header[1] as string).trim();
      if (sections.has(name)) {
        throw configError(`zuliprc ${path}: section [${name}] appears twice (line ${index + 1})`, {
          path,
          section: name,
          line: index + 1,
        });
      }
      current = new Map();
      sections.set(name, current);
      return;
    }
    const eq = line.search(/[=:]/);
    if (eq <= 0 || current === undefined) {
      throw configError(`zuliprc ${path}: line ${index + 1} is not a "key = value" line inside a [section]`, {
        path,
        line: index + 1,
      });
    }
    const key = line.slice(0, eq).trim().toLowerCase();
    if (current.has(key)) {
      throw configError(`zuliprc ${path}: key '${key}' is set twice (line ${index + 1})`, {
        path,
        key,
        line: index + 1,
      });
    }
    current.set(key, line.slice(eq + 1).trim());
  });
  const api = sections.get('api');
  if (api === undefined) {
    throw configError(`zuliprc ${path}: there is no [api] section`, { path, section: 'api' });
  }
  const field = (key: 'email' | 'key' | 'site', check: (v: string) => string | undefined): string => {
    const value = api.get(key);
    if (value === undefined || value === '') {
      throw configError(`zuliprc ${path}: key '${key}' is missing from the [api] section`, { path, key });
    }
    const problem = check(value);
    if (problem !== undefined) throw configError(`zuliprc ${path}: key '${key}' ${problem}`, { path, key });
    return value;
  };
  return guarded({
    email: field('email', checkEmail),
    apiKey: field('key', checkKey),
    site: field('site', checkSite),
    source: { kind: 'zuliprc', path },
  });
}

/**
 * Finds the account's credentials. When any of `ZULIP_REALM`/`ZULIP_SITE`, `ZULIP_EMAIL`,
 * `ZULIP_API_KEY` is set, all come from the environment (`ZULIP_REALM` and `ZULIP_SITE` are
 * synonyms). Otherwise they come from a zuliprc: `ZULIP_RC_PATH`, else `ZULIP_CONFIG`, else
 * `~/.zuliprc`. Setting both the variables and `ZULIP_RC_PATH` is refused as ambiguous.
 *
 * @throws {ZmcpError} `CORE_CONFIG_INVALID` naming the variable, or the file and key, that is
 *   missing or malformed; never quoting a value.
 */
export async function loadCredentials(options: LoadCredentialsOptions): Promise<Credentials> {
  const { env } = options;
  const named = ENV_CREDENTIALS.filter((name) => set(env, name) !== undefined);
  if (named.length > 0) {
    if (set(env, 'ZULIP_RC_PATH') !== undefined) {
      throw configError(
        `Both ZULIP_RC_PATH and ${named.join(', ')} are set; use either the environment or a zuliprc, not both`,
        { variables: [...named, 'ZULIP_RC_PATH'] },
      );
    }
    const realm = set(env, 'ZULIP_REALM');
    const siteVar = set(env, 'ZULIP_SITE');
    if (
      realm !== undefined &&
      siteVar !== undefined &&
      realm.replace(/\/+$/, '') !== siteVar.replace(/\/+$/, '')
    ) {
      throw configError('ZULIP_REALM and ZULIP_SITE are both set and disagree; set one', {
        variables: ['ZULIP_REALM', 'ZULIP_SITE'],
      });
    }
    const site = realm ?? siteVar;
    const siteName = realm !== undefined ? 'ZULIP_REALM' : 'ZULIP_SITE';
    const email = set(env, 'ZULIP_EMAIL');
    const apiKey = set(env, 'ZULIP_API_KEY');
    const missing = [
      site === undefined ? 'ZULIP_REALM (or ZULIP_SITE)' : undefined,
      email === undefined ? 'ZULIP_EMAIL' : undefined,
      apiKey === undefined ? 'ZULIP_API_KEY' : undefined,
    ].filter((v): v is string => v !== undefined);
    if (missing.length > 0) {
      throw configError(
        `Zulip credentials from the environment are incomplete: ${missing.join(', ')} not set`,
        {
          variables: missing,
        },
      );
    }
    for (const [name, value, check] of [
      [siteName, site, checkSite],
      ['ZULIP_EMAIL', email, checkEmail],
      ['ZULIP_API_KEY', apiKey, checkKey],
    ] as const) {
      const problem = check(value as string);
      if (problem !== undefined) throw configError(`${name} ${problem}`, { variable: name });
    }
    return guarded({
      site: site as string,
      email: email as string,
      apiKey: apiKey as string,
      source: { kind: 'env' },
    });
  }

  const read = options.readFile ?? ((path: string) => fsReadFile(path, 'utf8'));
  const explicit =
    set(env, 'ZULIP_RC_PATH') !== undefined
      ? 'ZULIP_RC_PATH'
      : set(env, 'ZULIP_CONFIG') !== undefined
        ? 'ZULIP_CONFIG'
        : undefined;
  const path = explicit !== undefined ? (set(env, explicit) as string) : join(options.homedir, '.zuliprc');
  let text: string;
  try {
    text = await read(path);
  } catch (cause) {
    const code = (cause as { code?: unknown }).code;
    if (code === 'ENOENT' && explicit === undefined) {
      throw configError(
        `No Zulip credentials: set ZULIP_REALM, ZULIP_EMAIL and ZULIP_API_KEY, or ZULIP_RC_PATH, or create ${path}`,
        {
          path,
          looked: [
            'ZULIP_REALM/ZULIP_SITE',
            'ZULIP_EMAIL',
            'ZULIP_API_KEY',
            'ZULIP_RC_PATH',
            'ZULIP_CONFIG',
            path,
          ],
        },
        cause,
      );
    }
    const why =
      code === 'ENOENT' ? 'does not exist' : `cannot be read (${typeof code === 'string' ? code : 'error'})`;
    throw configError(
      `zuliprc ${path}${explicit === undefined ? '' : ` (from ${explicit})`} ${why}`,
      { path, ...(explicit === undefined ? {} : { variable: explicit }) },
      cause,
    );
  }
  return parseZuliprc(text, path);
}
