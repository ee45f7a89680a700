/**
 * Every failure `@zmcp/server-kit` reports itself, as a stable string code. What it opens reports
 * its own codes (`CORE_*`, `DELIVERY_*`, `UPLOAD_*`, `CLI_*`); callers switch on `err.code`.
 */
export type ServerKitErrorCode =
  /**
   * A bin described its shared settings wrongly: a toolset that does not exist, a default toolset
   * it does not serve, an empty bin name; `details.option` names the option.
   */
  | 'SERVER_KIT_INVALID_OPTIONS'
  /**
   * A handle a 2026-era caller presented (an agent session's, say) was not one this server minted
   * for these credentials, or it expired; `details.reason` is `malformed`, `forged`, `expired` or
   * `other-credentials`.
   */
  | 'SERVER_KIT_BAD_HANDLE';

/** Options accepted by every `ServerKitError`. */
export interface ServerKitErrorOptions {
  cause?: unknown;
  details?: Readonly<Record<string, unknown>> | undefined;
}

const BRAND = Symbol.for('@zmcp/server-kit.ServerKitError');

/**
 * The one error class of `@zmcp/server-kit`: a stable `code`, optional `details` and the original
 * `cause`. `instanceof` holds across copies of the package (a brand); callers switch on `code`.
 */
export class ServerKitError extends Error {
  override readonly name = 'ServerKitError';
  readonly code: ServerKitErrorCode;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: ServerKitErrorCode, message: string, options: ServerKitErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
    Object.defineProperty(this, BRAND, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}

/** True when `err` is a {@link ServerKitError} (from any copy of this package) with one of `codes`, or any code when none are given. */
export function isServerKitError(err: unknown, ...codes: ServerKitErrorCode[]): err is ServerKitError {
  return err instanceof ServerKitError && (codes.length === 0 || codes.includes(err.code));
}
