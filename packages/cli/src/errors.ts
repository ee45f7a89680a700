/**
 * Every failure `@zmcp/cli` reports, as a stable string code. Callers switch on `err.code`
 * (or {@link isCliError}), never on the message.
 */
export type CliErrorCode =
  /**
   * A variable or flag has a bad value, or an option is unknown; `details.problems` lists one
   * line per setting, none of them carrying a secret's value.
   */
  | 'CLI_CONFIG_INVALID'
  /**
   * A settings definition is malformed (a setting built without a help entry, a flag given to
   * two settings or to a secret, an earlier name replaced by no setting); `details.setting` names it.
   */
  | 'CLI_SETTINGS_INVALID'
  /** A README lacks the start and end markers its generated table goes between; `details.file` names it. */
  | 'CLI_README_MARKERS_MISSING';

/** Options accepted by every `CliError`. */
export interface CliErrorOptions {
  cause?: unknown;
  details?: Readonly<Record<string, unknown>> | undefined;
}

const BRAND = Symbol.for('@zmcp/cli.CliError');

/**
 * The one error class of `@zmcp/cli`: a stable `code`, optional `details` and the original
 * `cause`. `instanceof` holds across copies of the package (a brand, as undici does), but
 * callers should switch on `code`.
 */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly code: CliErrorCode;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: CliErrorCode, message: string, options: CliErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
    Object.defineProperty(this, BRAND, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}

/** True when `err` is a {@link CliError} (from any copy of this package) with one of `codes`, or any code when none are given. */
export function isCliError(err: unknown, ...codes: CliErrorCode[]): err is CliError {
  return err instanceof CliError && (codes.length === 0 || codes.includes(err.code));
}
