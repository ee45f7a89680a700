import { CodedError } from '@zmcp/core';

/** Every failure the MCP server app reports, as a stable string code. */
export type McpServerErrorCode =
  /** A variable or flag has a bad value; `details.problems` lists one line per setting. */
  | 'MCP_CONFIG_INVALID'
  /** HTTP mode was asked to listen beyond loopback without a bearer token. */
  | 'MCP_HTTP_TOKEN_REQUIRED'
  /** The HTTP server could not listen on the configured host and port. */
  | 'MCP_HTTP_LISTEN_FAILED';

/**
 * The one error class of `@zmcp/mcp-server`; callers switch on `err.code`. `instanceof` holds
 * for an error from any copy of the package (a brand).
 */
export class McpServerError extends CodedError<McpServerErrorCode> {
  static override readonly brand: string = '@zmcp/mcp-server.McpServerError';
  override readonly name: string = 'McpServerError';
}
