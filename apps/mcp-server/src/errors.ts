/** Every failure the MCP server app reports, as a stable string code. */
export type McpServerErrorCode =
  /** A variable or flag has a bad value; `details.problems` lists one line per setting. */
  | 'MCP_CONFIG_INVALID'
  /** HTTP mode was asked to listen beyond loopback without a bearer token. */
  | 'MCP_HTTP_TOKEN_REQUIRED'
  /** The HTTP server could not listen on the configured host and port. */
  | 'MCP_HTTP_LISTEN_FAILED';

const BRAND = Symbol.for('@zmcp/mcp-server.McpServerError');

/**
 * The one error class of `@zmcp/mcp-server`; callers switch on `err.code`. `instanceof` holds
 * for an error from any copy of the package (a brand).
 */
export class McpServerError extends Error {
  override readonly name: string = 'McpServerError';
  readonly code: McpServerErrorCode;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(
    code: McpServerErrorCode,
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
