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
  /**
   * Zulip refused to start a new topic: the channel's `can_create_topic_group` (feature level
   * 441) leaves this account out. Posting to (or moving into) an existing topic still works.
   */
  | 'CORE_TOPIC_CREATION_DENIED'
  /** Zulip failed (HTTP 5xx) and the retry budget ran out. */
  | 'CORE_SERVER_ERROR'
  /** The response was not what Zulip sends: unparseable JSON, a missing required field. */
  | 'CORE_BAD_RESPONSE'
  /** Read-only mode refused a request that would change the realm; nothing was sent. */
  | 'CORE_READ_ONLY'
  /**
   * The realm's Zulip is too old for what was asked (its feature level is below the one that
   * added it); nothing was sent. `details`: `feature`, `featureLevel`, `needs`.
   */
  | 'CORE_UNSUPPORTED'
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
  details?: Readonly<Record<string, unknown>> | undefined;
}

/** The brand key of the base class itself: every {@link CodedError} carries it. */
const CODED_ERROR_BRAND = '@zmcp/core.CodedError';

function branded(value: unknown, brand: string): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[Symbol.for(brand)] === true
  );
}

/**
 * The base of every zmcp error class, in core and in the packages above it: a stable `code` of
 * the package's union, optional `details`, the ES2022 `cause` (absent when none was given), and a
 * brand, so that `instanceof` holds for an error built by another copy of the package (undici's
 * idiom). A subclass sets its `name` and declares its brand as `static readonly brand =
 * '@zmcp/<package>.<Class>'`; an instance carries the brand of each class it is made from, and
 * `instanceof` checks the brand of the class on its right.
 *
 * @example
 * class ExampleError extends CodedError<'EXAMPLE_FAILED'> {
 *   static override readonly brand = '@zmcp/example.ExampleError';
 *   override readonly name = 'ExampleError';
 * }
 */
export abstract class CodedError<C extends string = string> extends Error {
  /** `Symbol.for(brand)` marks every instance of the class, from any copy of its package. */
  static readonly brand: string = CODED_ERROR_BRAND;
  readonly code: C;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: C, message: string, options: ZmcpErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
    // The brand of every class from the one built up to this base.
    for (let cls: unknown = new.target; typeof cls === 'function' && cls !== Error; ) {
      if (Object.hasOwn(cls, 'brand')) {
        Object.defineProperty(this, Symbol.for((cls as typeof CodedError).brand), { value: true });
      }
      cls = Object.getPrototypeOf(cls);
    }
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: the class on the right of instanceof, whose brand is checked.
    return branded(value, this.brand);
  }
}

/**
 * True when `err` is an instance of `cls` (by its brand, from any copy of the package) with one
 * of `codes`, or with any code when none are given: the body of every `is…Error` guard.
 */
export function isCodedError<E extends CodedError>(
  cls: abstract new (...args: never[]) => E,
  err: unknown,
  codes: readonly E['code'][],
): err is E {
  return err instanceof cls && (codes.length === 0 || codes.includes(err.code));
}

/**
 * The string `code` of any thrown value that has one (a zmcp error, a Node.js system error's
 * `ENOENT`), else undefined: the one way to read an error's code without trusting its class.
 */
export function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The one error class of `@zmcp/core`; subclasses exist only where callers branch on extra
 * fields. `instanceof` holds for an error from any copy of the package.
 */
export class ZmcpError extends CodedError<ZmcpErrorCode> {
  static override readonly brand: string = '@zmcp/core.ZmcpError';
  override readonly name: string = 'ZmcpError';
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
  static override readonly brand: string = '@zmcp/core.ZulipApiError';
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
  }
}

/** True when `err` is a `ZmcpError` (from any copy of this package) with one of `codes`, or any code when none are given. */
export function isZmcpError(err: unknown, ...codes: ZmcpErrorCode[]): err is ZmcpError {
  return isCodedError(ZmcpError, err, codes);
}
