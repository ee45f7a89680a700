import { DeliveryError } from './errors.js';

/**
 * The kinds of per-session state, each stored separately: a session's read cursors (`monitor`),
 * delivery watermarks (`delivery`) and filters (`filters`); and what a server keeps for its
 * 2026-era callers, who carry no session: the key it signs their handles with (`key`), the state
 * of an agent session a handle names (`agent`), and a task a long call became (`task`); and the
 * memory of an account's recent sends (`sends`, `@zmcp/tools`' send-once rule); and a hosted
 * server's per-person access tokens: one record per token (`token`, only a hash of the token kept)
 * and the list of their ids (`tokens`).
 */
export type StateKind =
  | 'monitor'
  | 'delivery'
  | 'filters'
  | 'key'
  | 'agent'
  | 'task'
  | 'sends'
  | 'token'
  | 'tokens';

/**
 * Names one piece of state: which account (realm and bot) and session it belongs to, and what
 * kind it is. Without `account` the key is unscoped: the layout of releases before accounts
 * were keyed, kept for embedders that serve one account and for reading old files.
 */
export interface StateKey {
  /** Which realm and bot the state is about, from {@link stateAccount}. */
  readonly account?: string | undefined;
  /** The session id (`ZULIP_SESSION_ID`): 1-128 of `[A-Za-z0-9._-]`, not starting with a dot. */
  readonly session: string;
  readonly kind: StateKind;
}

// The file suffix of each kind. `monitor` keeps the bare `<session>.json` of the earlier layout.
const KIND_SUFFIX: Readonly<Record<StateKind, string>> = {
  monitor: '.json',
  delivery: '.delivery.json',
  filters: '.filters.json',
  key: '.key.json',
  agent: '.agent.json',
  task: '.task.json',
  sends: '.sends.json',
  token: '.token.json',
  tokens: '.tokens.json',
};

/** Every kind, in the order above (the record's type makes it name each kind once). */
const STATE_KINDS = Object.keys(KIND_SUFFIX) as readonly StateKind[];

const SESSION_ID = /^[A-Za-z0-9._-]{1,128}$/;
// A session named `a.delivery` would own `a.delivery.json`, the delivery file of session `a`.
const RESERVED_ENDING = /\.(?:delivery|filters|key|agent|task|sends|token|tokens)$/i;

/**
 * Returns `value` when it is a valid session id: 1-128 characters of `[A-Za-z0-9._-]`, not
 * starting with a dot (no `.`, `..` or hidden files) and not ending in `.delivery`, `.filters`,
 * `.key`, `.agent`, `.task`, `.sends`, `.token` or `.tokens` (which would collide with another session's files).
 *
 * @throws DeliveryError `DELIVERY_INVALID_SESSION_ID` naming what is wrong with the value.
 */
export function parseSessionId(value: unknown): string {
  const fail = (why: string): never => {
    throw new DeliveryError('DELIVERY_INVALID_SESSION_ID', `invalid session id: ${why}`, {
      details: { reason: why },
    });
  };
  if (typeof value !== 'string')
    return fail(`expected a string, got ${value === null ? 'null' : typeof value}`);
  if (value.length === 0) return fail('it is empty');
  if (value.length > 128) return fail(`it is ${value.length} characters long, the limit is 128`);
  if (!SESSION_ID.test(value)) {
    return fail(`${JSON.stringify(value)} may contain only letters, digits, '.', '_' and '-'`);
  }
  if (value.startsWith('.')) return fail(`${JSON.stringify(value)} starts with a dot`);
  if (RESERVED_ENDING.test(value)) {
    return fail(
      `${JSON.stringify(value)} ends in a reserved suffix (.delivery, .filters, .key, .agent, .task, .sends, .token, .tokens)`,
    );
  }
  return value;
}

const ACCOUNT = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,199}$/;

/**
 * The account part of a state key for one bot on one realm: the realm's URL (scheme only when
 * it is not https, host, port, path) and the bot's user id, as one folder-safe name such as
 * `chat.example.com@42` or `http_3a_2f_2f127.0.0.1_3a9991@7`. Characters other than letters,
 * digits, `.` and `-` are written `_xx` (hex), so two different realms never share a name, and
 * neither do two bots of one realm.
 *
 * @throws DeliveryError `DELIVERY_INVALID_ARGUMENT` for a site that is not an http(s) URL or a
 *   user id that is not a positive integer.
 */
export function stateAccount(account: { site: string | URL; userId: number }): string {
  let url: URL;
  try {
    url = new URL(String(account.site));
  } catch {
    url = new URL('invalid:');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new DeliveryError('DELIVERY_INVALID_ARGUMENT', 'stateAccount needs the realm as an http(s) URL', {
      details: { option: 'site' },
    });
  }
  if (!Number.isSafeInteger(account.userId) || account.userId <= 0) {
    throw new DeliveryError(
      'DELIVERY_INVALID_ARGUMENT',
      'stateAccount needs the bot’s user id, a positive integer',
      {
        details: { option: 'userId' },
      },
    );
  }
  const path = url.pathname.replace(/\/+$/, '');
  const site = `${url.protocol === 'https:' ? '' : 'http://'}${url.host}${path}`;
  const escaped = [...Buffer.from(site, 'utf8')]
    .map((byte) => {
      const ch = String.fromCharCode(byte);
      return /[A-Za-z0-9.-]/.test(ch) ? ch : `_${byte.toString(16).padStart(2, '0')}`;
    })
    .join('');
  return parseStateAccount(`${escaped}@${account.userId}`);
}

/**
 * Returns `value` when it can be the account part of a state key: 1-200 of
 * `[A-Za-z0-9._@-]`, starting with a letter or digit.
 *
 * @throws DeliveryError `DELIVERY_INVALID_ARGUMENT` otherwise.
 */
export function parseStateAccount(value: unknown): string {
  if (typeof value === 'string' && ACCOUNT.test(value)) return value;
  throw new DeliveryError(
    'DELIVERY_INVALID_ARGUMENT',
    'invalid state account: expected 1-200 of letters, digits, ".", "_", "@" and "-", starting with a letter or digit (see stateAccount)',
    { details: { option: 'account' } },
  );
}

/**
 * The file name, relative to the state directory, that holds `key`: `<session>.json` for the
 * monitor, `<session>.delivery.json`, `<session>.filters.json` and `<session>.sends.json` for the others, inside the
 * folder `<account>/` when the key names an account.
 *
 * @throws DeliveryError `DELIVERY_INVALID_SESSION_ID` for a bad session id,
 *   `DELIVERY_INVALID_ARGUMENT` for an unknown kind or a bad account.
 */
export function stateFileName(key: StateKey): string {
  const session = parseSessionId(key.session);
  const folder = key.account === undefined ? '' : `${parseStateAccount(key.account)}/`;
  if (!STATE_KINDS.includes(key.kind)) {
    throw new DeliveryError(
      'DELIVERY_INVALID_ARGUMENT',
      `unknown state kind ${JSON.stringify(key.kind)}; expected one of ${STATE_KINDS.join(', ')}`,
      { details: { kind: key.kind } },
    );
  }
  return `${folder}${session}${KIND_SUFFIX[key.kind]}`;
}
