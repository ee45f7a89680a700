import { CodedError, isCodedError, type ZmcpErrorOptions } from '@zmcp/core';

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
  | 'SERVER_KIT_BAD_HANDLE'
  /** The status page could not be served: its port is taken or its host cannot be bound (`details.host`, `details.port`). */
  | 'SERVER_KIT_LISTEN_FAILED';

/** Options accepted by every `ServerKitError`. */
export type ServerKitErrorOptions = ZmcpErrorOptions;

/**
 * The one error class of `@zmcp/server-kit`: a stable `code`, optional `details` and the original
 * `cause`. `instanceof` holds across copies of the package (a brand); callers switch on `code`.
 */
export class ServerKitError extends CodedError<ServerKitErrorCode> {
  static override readonly brand: string = '@zmcp/server-kit.ServerKitError';
  override readonly name = 'ServerKitError';
}

/** True when `err` is a {@link ServerKitError} (from any copy of this package) with one of `codes`, or any code when none are given. */
export function isServerKitError(err: unknown, ...codes: ServerKitErrorCode[]): err is ServerKitError {
  return isCodedError(ServerKitError, err, codes);
}
