/** Every failure the MCPL server app reports itself, as a stable string code. */
export type McplServerErrorCode =
  /** A variable or flag has a bad value; `details.problems` lists one line per setting. */
  | 'MCPL_SERVER_CONFIG_INVALID'
  /** `--tcp` could not listen on the loopback port. */
  | 'MCPL_SERVER_LISTEN_FAILED';

const BRAND = Symbol.for('@zmcp/mcpl-server.McplServerError');

/** The one error class of `@zmcp/mcpl-server`; callers switch on `err.code`. */
export class McplServerError extends Error {
  override readonly name = 'McplServerError';
  readonly code: McplServerErrorCode;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(
    code: McplServerErrorCode,
    message: string,
    options: { cause?: unknown; details?: Readonly<Record<string, unknown>> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
    Object.defineProperty(this, BRAND, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}
