/**
 * Every failure `@zmcp/core` reports, as a stable string code. Callers switch on
 * `err.code`, never on the message. `instanceof` holds across copies of the package (the
 * classes carry a brand, as undici's do), but the code is the contract.
 */
export type ZmcpErrorCode =
  /** A value handed to the library is malformed (bad option, bad id, bad narrow term). */
  | 'CORE_INVALID_ARGUMENT'
  /** Configuration could not be read: a missing or malformed variable, zuliprc file or key. */
  | 'CORE_CONFIG_INVALID'
  /** The site URL is not acceptable (not https, or http beyond loopback without opt-in). */
  | 'CORE_INSECURE_URL'
  /** The call's deadline passed before Zulip answered. */
  | 'CORE_TIMEOUT'
  /** The caller's AbortSignal fired. */
  | 'CORE_ABORTED'
  /** Zulip could not be reached, or the connection broke mid-response. */
  | 'CORE_NETWORK'
  /** Zulip answered 429 and the retry budget ran out. `details.retryAfterMs` says how long to wait. */
  | 'CORE_RATE_LIMITED'
  /** Zulip answered 401: the email or API key is wrong, or the account is deactivated. */
  | 'CORE_UNAUTHORIZED'
  /** The thing asked for does not exist or is not visible to this account. */
  | 'CORE_NOT_FOUND'
  /** Zulip refused the request (HTTP 4xx); `zulipCode` carries Zulip's own code. */
  | 'CORE_BAD_REQUEST'
  /** Zulip failed (HTTP 5xx) and the retry budget ran out. */
  | 'CORE_SERVER_ERROR'
  /** The response was not what Zulip sends: unparseable JSON, a missing required field. */
  | 'CORE_BAD_RESPONSE'
  /** Read-only mode refused a request that would change the realm; nothing was sent. */
  | 'CORE_READ_ONLY'
  /** The access policy refused a read or write (private stream, DM, write allowlist). */
  | 'CORE_ACCESS_DENIED'
  /** A download is larger than the cap the caller set; `details.maxBytes` (and `declared` when known). */
  | 'CORE_TOO_LARGE'
  /** Content is longer than the realm accepts, measured after normalization. */
  | 'CORE_MESSAGE_TOO_LONG'
  /** A user reference matched nobody. */
  | 'CORE_USER_NOT_FOUND'
  /** A user reference matched more than one user; `details.candidates` lists them. */
  | 'CORE_USER_AMBIGUOUS'
  /** The event queue was lost and re-registered; events in between were not received. */
  | 'CORE_QUEUE_LOST'
  /** The object has been closed and can no longer be used. */
  | 'CORE_CLOSED';

/** Options accepted by every error in the family. */
export interface ZmcpErrorOptions {
  cause?: unknown;
  details?: Readonly<Record<string, unknown>>;
}

const ZMCP_ERROR = Symbol.for('@zmcp/core.ZmcpError');
const ZULIP_API_ERROR = Symbol.for('@zmcp/core.ZulipApiError');

function branded(value: unknown, brand: symbol): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
}

/**
 * The one error class of `@zmcp/core`; subclasses exist only where callers branch on extra
 * fields. `instanceof` holds for an error from any copy of the package.
 */
export class ZmcpError extends Error {
  override readonly name: string = 'ZmcpError';
  readonly code: ZmcpErrorCode;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: ZmcpErrorCode, message: string, options: ZmcpErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
    Object.defineProperty(this, ZMCP_ERROR, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return branded(value, ZMCP_ERROR);
  }
}

/** Fields of a failed Zulip API response that callers branch on. */
export interface ZulipApiErrorInit extends ZmcpErrorOptions {
  /** HTTP status Zulip answered with. */
  status: number;
  /** Zulip's own error code (`BAD_REQUEST`, `STREAM_DOES_NOT_EXIST`, `RATE_LIMIT_HIT`...), if it sent one. */
  zulipCode?: string | undefined;
  /** Seconds to wait before retrying, from `Retry-After` or the body's `retry-after`. */
  retryAfter?: number | undefined;
  /** Extra fields of Zulip's error body (`var_name`, `stream`, `queue_id`...). */
  body?: Readonly<Record<string, unknown>> | undefined;
}

/** A Zulip API request that reached Zulip and was refused or failed. */
export class ZulipApiError extends ZmcpError {
  override readonly name: string = 'ZulipApiError';
  readonly status: number;
  readonly zulipCode: string | undefined;
  readonly retryAfter: number | undefined;
  readonly body: Readonly<Record<string, unknown>> | undefined;

  constructor(code: ZmcpErrorCode, message: string, init: ZulipApiErrorInit) {
    super(code, message, init);
    this.status = init.status;
    this.zulipCode = init.zulipCode;
    this.retryAfter = init.retryAfter;
    this.body = init.body;
    Object.defineProperty(this, ZULIP_API_ERROR, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return branded(value, ZULIP_API_ERROR);
  }
}

/** True when `err` is a `ZmcpError` (from any copy of this package) with one of `codes`, or any code when none are given. */
export function isZmcpError(err: unknown, ...codes: ZmcpErrorCode[]): err is ZmcpError {
  return err instanceof ZmcpError && (codes.length === 0 || codes.includes(err.code));
}
