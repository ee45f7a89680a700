import { CodedError } from '@zmcp/core';

/** Every failure the MCPL server app reports itself, as a stable string code. */
export type McplServerErrorCode =
  /** A variable or flag has a bad value; `details.problems` lists one line per setting. */
  | 'MCPL_SERVER_CONFIG_INVALID'
  /** `--tcp` could not listen on the loopback port. */
  | 'MCPL_SERVER_LISTEN_FAILED';

/** The one error class of `@zmcp/mcpl-server`; callers switch on `err.code`. */
export class McplServerError extends CodedError<McplServerErrorCode> {
  static override readonly brand: string = '@zmcp/mcpl-server.McplServerError';
  override readonly name = 'McplServerError';
}
