import { CodedError } from '@zmcp/core';

/** Every failure the MCP server app reports, as a stable string code. */
export type McpServerErrorCode =
  /** A variable or flag has a bad value; `details.problems` lists one line per setting. */
  | 'MCP_CONFIG_INVALID'
  /** HTTP mode was asked to listen beyond loopback without a bearer token. */
  | 'MCP_HTTP_TOKEN_REQUIRED'
  /** The HTTP server could not listen on the configured host and port. */
  | 'MCP_HTTP_LISTEN_FAILED'
  /** A token request is malformed: an empty label, an expiry in the past, a bad option. */
  | 'MCP_TOKEN_INVALID'
  /** No token has the id or label given (or two share the label). */
  | 'MCP_TOKEN_UNKNOWN'
  /** `ZULIP_SECRET_KEY` does not decrypt a stored API key (changed, or the record altered). */
  | 'MCP_SECRET_KEY_MISMATCH'
  /** A person's token made more requests per minute than `ZMCP_TOKEN_RATE_LIMIT` allows. */
  | 'MCP_RATE_LIMITED'
  /** A person's token holds as many long waits as `ZMCP_TOKEN_MAX_WAITS` allows. */
  | 'MCP_TOO_MANY_WAITS';

/**
 * The one error class of `@zmcp/mcp-server`; callers switch on `err.code`. `instanceof` holds
 * for an error from any copy of the package (a brand).
 */
export class McpServerError extends CodedError<McpServerErrorCode> {
  static override readonly brand: string = '@zmcp/mcp-server.McpServerError';
  override readonly name: string = 'McpServerError';
}
