/**
 * Codes of the errors the simulator's programmatic API throws. The HTTP surface never
 * uses them: over HTTP the simulator answers only in Zulip's own shapes.
 */
export type SimErrorCode =
  /** A value handed to the programmatic API is malformed (missing name, bad id, bad option). */
  | 'SIM_INVALID_ARGUMENT'
  /** The user, stream, message, queue or upload named does not exist. */
  | 'SIM_NOT_FOUND'
  /** Zulip would refuse this action; `details.zulipCode` and `details.msg` carry its answer. */
  | 'SIM_REJECTED'
  /** The simulator has been closed. */
  | 'SIM_CLOSED'
  /** The HTTP listener could not be opened (port taken, bad host). */
  | 'SIM_LISTEN_FAILED'
  /** A seed file (or recording) is malformed or names what does not exist; `details.field` says where (`seed.users[2].email`). */
  | 'SIM_BAD_SEED';

/** Options accepted by {@link SimError}. */
export interface SimErrorOptions {
  cause?: unknown;
  details?: Readonly<Record<string, unknown>>;
}

const BRAND = Symbol.for('@zmcp/zulip-sim.SimError');

/**
 * An error thrown by the simulator's programmatic API; switch on `code`. `instanceof` holds for
 * an error from any copy of the package (a brand).
 */
export class SimError extends Error {
  override readonly name: string = 'SimError';
  readonly code: SimErrorCode;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: SimErrorCode, message: string, options: SimErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
    Object.defineProperty(this, BRAND, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}

/**
 * A refusal in Zulip's shape (HTTP status, `code`, `msg`, extra fields). Thrown inside the
 * realm and turned into a JSON error response by the HTTP layer, or into a
 * `SIM_REJECTED` {@link SimError} by the programmatic API.
 */
export class ApiError extends Error {
  override readonly name: string = 'ApiError';
  readonly status: number;
  readonly code: string;
  readonly extra: Readonly<Record<string, unknown>>;

  constructor(status: number, code: string, msg: string, extra: Record<string, unknown> = {}) {
    super(msg);
    this.status = status;
    this.code = code;
    this.extra = extra;
  }

  /** The JSON body Zulip would send for this error. */
  body(): Record<string, unknown> {
    return { result: 'error', msg: this.message, code: this.code, ...this.extra };
  }
}

/** A plain 400 `BAD_REQUEST`, Zulip's generic refusal. */
export function badRequest(msg: string, extra: Record<string, unknown> = {}): ApiError {
  return new ApiError(400, 'BAD_REQUEST', msg, extra);
}

/** Converts a Zulip refusal met through the programmatic API into a {@link SimError}. */
export function rejected(error: ApiError): SimError {
  return new SimError('SIM_REJECTED', `Zulip would refuse this: ${error.message} (${error.code})`, {
    cause: error,
    details: { zulipCode: error.code, msg: error.message, status: error.status, ...error.extra },
  });
}
