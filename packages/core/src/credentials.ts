import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { parseSite } from './client/site.js';
import { errorCode, ZmcpError } from './errors.js';

/** The three fields of a set of credentials. */
export type CredentialField = 'site' | 'email' | 'apiKey';

/**
 * Where a set of credentials came from: all from the environment, all from a zuliprc, or the
 * variables that were set plus a zuliprc for the rest (`fromZuliprc` names what it supplied).
 */
export type CredentialSource =
  | { kind: 'env' }
  | { kind: 'zuliprc'; path: string }
  | { kind: 'env+zuliprc'; path: string; fromZuliprc: readonly CredentialField[] };

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
  /**
   * Reads a file as UTF-8. The default reads a regular file of at most 1 MiB, opened
   * non-blocking: a FIFO, a device (`/dev/zero` behind a link) or a larger file is refused
   * without waiting on it or reading it all.
   */
  readFile?: ((path: string) => Promise<string>) | undefined;
}

/** The largest zuliprc read: a real one is a few lines. */
const ZULIPRC_MAX_BYTES = 1024 * 1024;

/** A zuliprc refused for what it is, not for what it says: the phrase follows its name. */
class ZuliprcRefused extends Error {}

/**
 * Reads a zuliprc as core's one file read: opened non-blocking so a FIFO cannot hang start-up,
 * judged by `fstat` on the opened descriptor (whatever link led to it), read for at most the cap
 * plus one byte so a huge file never grows memory.
 */
async function readZuliprc(path: string): Promise<string> {
  const handle = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new ZuliprcRefused('is not a regular file');
    const tooLarge = new ZuliprcRefused(`is larger than ${ZULIPRC_MAX_BYTES} bytes`);
    if (stat.size > ZULIPRC_MAX_BYTES) throw tooLarge;
    const buffer = Buffer.allocUnsafe(ZULIPRC_MAX_BYTES + 1);
    let total = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, total, buffer.length - total, total);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > ZULIPRC_MAX_BYTES) throw tooLarge;
    }
    return buffer.toString('utf8', 0, total);
  } finally {
    await handle.close();
  }
}

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

const API_KEY = /^[A-Za-z0-9]{32}$/;
const EMAIL = /^[^\s:@]+@[^\s:@]+$/;

/**
 * The one rule for each credential field: what is wrong with `value`, as a phrase to follow its
 * name ("ZULIP_API_KEY is not ..."), or `undefined` when it is acceptable. Never repeats the
 * value. A site must be an http(s) URL `parseSite` accepts (whether plain http is allowed is
 * the client's decision); an email is `local@domain`; an API key is what Zulip issues, 32 ASCII
 * letters and digits, so anything else is refused rather than sent (or redacted from logs).
 */
export function credentialProblem(field: CredentialField, value: string): string | undefined {
  switch (field) {
    case 'site':
      try {
        parseSite(value, { allowInsecureHttp: true });
        return undefined;
      } catch {
        return 'is not an http(s) URL of a Zulip server, such as https://chat.example.com';
      }
    case 'email':
      return EMAIL.test(value) ? undefined : 'is not an email address';
    case 'apiKey':
      return API_KEY.test(value) ? undefined : 'is not a Zulip API key (32 letters and digits)';
  }
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
  const field = (key: 'email' | 'key' | 'site', check: CredentialField): string => {
    const value = api.get(key);
    if (value === undefined || value === '') {
      throw configError(`zuliprc ${path}: key '${key}' is missing from the [api] section`, { path, key });
    }
    const problem = credentialProblem(check, value);
    if (problem !== undefined) throw configError(`zuliprc ${path}: key '${key}' ${problem}`, { path, key });
    return value;
  };
  return guarded({
    email: field('email', 'email'),
    apiKey: field('key', 'apiKey'),
    site: field('site', 'site'),
    source: { kind: 'zuliprc', path },
  });
}

const SITE_VARIABLES = 'ZULIP_REALM (or ZULIP_SITE)';

/**
 * Finds the account's credentials. Each field comes from its variable when that is set —
 * `ZULIP_REALM` (or its synonym `ZULIP_SITE`), `ZULIP_EMAIL`, `ZULIP_API_KEY` — and otherwise
 * from a zuliprc: `ZULIP_RC_PATH`, else `ZULIP_CONFIG`, else `~/.zuliprc`. The variables win.
 * The email and the key name one account, so they come from the same place: one of them set
 * without the other is refused. A zuliprc named by a variable is always read and must be
 * valid; `~/.zuliprc` is read only when a variable is missing.
 *
 * @throws {ZmcpError} `CORE_CONFIG_INVALID` naming the variable, or the file and key, that is
 *   missing or malformed; never quoting a value.
 */
export async function loadCredentials(options: LoadCredentialsOptions): Promise<Credentials> {
  const { env } = options;
  const realm = set(env, 'ZULIP_REALM');
  const siteVar = set(env, 'ZULIP_SITE');
  if (realm !== undefined && siteVar !== undefined && !sameSite(realm, siteVar)) {
    throw configError('ZULIP_REALM and ZULIP_SITE are both set and disagree; set one', {
      variables: ['ZULIP_REALM', 'ZULIP_SITE'],
    });
  }
  const fromEnv = {
    site: realm ?? siteVar,
    email: set(env, 'ZULIP_EMAIL'),
    apiKey: set(env, 'ZULIP_API_KEY'),
  };
  if ((fromEnv.email === undefined) !== (fromEnv.apiKey === undefined)) {
    const [given, missing] =
      fromEnv.email === undefined ? ['ZULIP_API_KEY', 'ZULIP_EMAIL'] : ['ZULIP_EMAIL', 'ZULIP_API_KEY'];
    throw configError(
      `${given} is set but ${missing} is not: an email and its API key name one account, so set both, or neither to take both from a zuliprc`,
      { variables: [missing] },
    );
  }
  const names: Record<CredentialField, string> = {
    site: realm !== undefined ? 'ZULIP_REALM' : 'ZULIP_SITE',
    email: 'ZULIP_EMAIL',
    apiKey: 'ZULIP_API_KEY',
  };
  for (const field of ['site', 'email', 'apiKey'] as const) {
    const value = fromEnv[field];
    const problem = value === undefined ? undefined : credentialProblem(field, value);
    if (problem !== undefined) {
      throw configError(`${names[field]} ${problem}`, { variable: names[field] });
    }
  }

  const explicit =
    set(env, 'ZULIP_RC_PATH') !== undefined
      ? 'ZULIP_RC_PATH'
      : set(env, 'ZULIP_CONFIG') !== undefined
        ? 'ZULIP_CONFIG'
        : undefined;
  const missing = (['site', 'email', 'apiKey'] as const).filter((field) => fromEnv[field] === undefined);
  if (explicit === undefined && missing.length === 0) {
    return guarded({ ...(fromEnv as Omit<Credentials, 'source'>), source: { kind: 'env' } });
  }
  const path = explicit !== undefined ? (set(env, explicit) as string) : join(options.homedir, '.zuliprc');
  const read = options.readFile ?? readZuliprc;
  let text: string;
  try {
    text = await read(path);
  } catch (cause) {
    const code = errorCode(cause);
    if (code === 'ENOENT' && explicit === undefined) {
      const variables = missing.map((field) => (field === 'site' ? SITE_VARIABLES : names[field]));
      throw configError(
        missing.length === 3
          ? `No Zulip credentials: set ZULIP_REALM, ZULIP_EMAIL and ZULIP_API_KEY, or ZULIP_RC_PATH, or create ${path}`
          : `Zulip credentials are incomplete: ${variables.join(', ')} not set, and no zuliprc supplies ${missing.length > 1 ? 'them' : 'it'} (set ZULIP_RC_PATH, or create ${path})`,
        {
          path,
          variables,
          looked: [...variables, 'ZULIP_RC_PATH', 'ZULIP_CONFIG', path],
        },
        cause,
      );
    }
    const why =
      cause instanceof ZuliprcRefused
        ? cause.message
        : code === 'ENOENT'
          ? 'does not exist'
          : `cannot be read (${code ?? 'error'})`;
    throw configError(
      `zuliprc ${path}${explicit === undefined ? '' : ` (from ${explicit})`} ${why}`,
      { path, ...(explicit === undefined ? {} : { variable: explicit }) },
      cause,
    );
  }
  const file = parseZuliprc(text, path);
  if (missing.length === 3) return file;
  if (missing.length === 0) {
    return guarded({ ...(fromEnv as Omit<Credentials, 'source'>), source: { kind: 'env' } });
  }
  return guarded({
    site: fromEnv.site ?? file.site,
    email: fromEnv.email ?? file.email,
    apiKey: fromEnv.apiKey ?? file.apiKey,
    source: { kind: 'env+zuliprc', path, fromZuliprc: missing },
  });
}

function sameSite(a: string, b: string): boolean {
  try {
    return parseSite(a, { allowInsecureHttp: true }).url === parseSite(b, { allowInsecureHttp: true }).url;
  } catch {
    return a === b;
  }
}
