import { CodedError, isCodedError, type ZmcpErrorOptions } from '@zmcp/core';

/**
 * Every failure `@zmcp/launcher` reports, as a stable string code. Callers switch on
 * `err.code` (or {@link isLauncherError}), never on `instanceof` or the message.
 */
export type LauncherErrorCode =
  /** A variable or flag has a bad value; `details.problems` lists one line per setting. */
  | 'LAUNCHER_CONFIG_INVALID'
  /** The `.mcp.json` cannot be read, is not JSON of the expected shape, or lacks the named server. */
  | 'LAUNCHER_MCP_CONFIG_INVALID'
  /**
   * An environment reference (`${VAR}`, `$VAR`) sits in the server's command, args, cwd or url,
   * where expanding it would put a secret on a command line; `details.field` names the place.
   */
  | 'LAUNCHER_ENV_REFERENCE'
  /** The server entry cannot be given to the chosen backend as it is (see `details.backend`). */
  | 'LAUNCHER_BACKEND_UNSUPPORTED'
  /** `start()` was called twice, or after `close()`. */
  | 'LAUNCHER_STATE_INVALID';

/** Options accepted by every `LauncherError`. */
export type LauncherErrorOptions = ZmcpErrorOptions;

/**
 * The one error class of `@zmcp/launcher`: a stable `code`, optional `details` and the original
 * `cause`. `instanceof` holds for an error from any copy of the package (a brand).
 */
export class LauncherError extends CodedError<LauncherErrorCode> {
  static override readonly brand: string = '@zmcp/launcher.LauncherError';
  override readonly name: string = 'LauncherError';
}

/** True when `err` is a `LauncherError` (from any copy of this package) with one of `codes`, or any code when none are given. */
export function isLauncherError(err: unknown, ...codes: LauncherErrorCode[]): err is LauncherError {
  return isCodedError(LauncherError, err, codes);
}
