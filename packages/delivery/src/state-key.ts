import { DeliveryError } from './errors.js';

/** The kinds of per-session state, each stored separately. */
export type StateKind = 'monitor' | 'delivery' | 'filters';

/** Names one piece of state: which session it belongs to and what kind it is. */
export interface StateKey {
  /** The session id (`ZULIP_SESSION_ID`): 1-128 of `[A-Za-z0-9._-]`, not starting with a dot. */
  readonly session: string;
  readonly kind: StateKind;
}

const STATE_KINDS: readonly StateKind[] = ['monitor', 'delivery', 'filters'];

// The file suffix of each kind. `monitor` keeps the bare `<session>.json` of the earlier layout.
const KIND_SUFFIX: Readonly<Record<StateKind, string>> = {
  monitor: '.json',
  delivery: '.delivery.json',
  filters: '.filters.json',
};

const SESSION_ID = /^[A-Za-z0-9._-]{1,128}$/;
// A session named `a.delivery` would own `a.delivery.json`, the delivery file of session `a`.
const RESERVED_ENDING = /\.(?:delivery|filters)$/i;

/**
 * Returns `value` when it is a valid session id: 1-128 characters of `[A-Za-z0-9._-]`, not
 * starting with a dot (no `.`, `..` or hidden files) and not ending in `.delivery` or `.filters`
 * (which would collide with another session's files).
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
    return fail(`${JSON.stringify(value)} ends in a reserved suffix (.delivery, .filters)`);
  }
  return value;
}

/**
 * The file name (no directory) that holds `key`: `<session>.json` for the monitor,
 * `<session>.delivery.json` and `<session>.filters.json` for the others.
 *
 * @throws DeliveryError `DELIVERY_INVALID_SESSION_ID` for a bad session id,
 *   `DELIVERY_INVALID_ARGUMENT` for an unknown kind.
 */
export function stateFileName(key: StateKey): string {
  const session = parseSessionId(key.session);
  if (!STATE_KINDS.includes(key.kind)) {
    throw new DeliveryError(
      'DELIVERY_INVALID_ARGUMENT',
      `unknown state kind ${JSON.stringify(key.kind)}; expected one of ${STATE_KINDS.join(', ')}`,
      { details: { kind: key.kind } },
    );
  }
  return `${session}${KIND_SUFFIX[key.kind]}`;
}
