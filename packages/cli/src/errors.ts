import { CodedError, isCodedError, type ZmcpErrorOptions } from '@zmcp/core';

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
export type CliErrorOptions = ZmcpErrorOptions;

/**
 * The one error class of `@zmcp/cli`: a stable `code`, optional `details` and the original
 * `cause`. `instanceof` holds across copies of the package (a brand, as undici does), but
 * callers should switch on `code`.
 */
export class CliError extends CodedError<CliErrorCode> {
  static override readonly brand: string = '@zmcp/cli.CliError';
  override readonly name = 'CliError';
}

/** True when `err` is a {@link CliError} (from any copy of this package) with one of `codes`, or any code when none are given. */
export function isCliError(err: unknown, ...codes: CliErrorCode[]): err is CliError {
  return isCodedError(CliError, err, codes);
}
