import { CodedError, errorCode, isCodedError, type ZmcpErrorOptions } from '@zmcp/core';

/**
 * Every failure `@zmcp/delivery` reports, as a stable string code. Callers switch on
 * `err.code`, never on `instanceof` or the message: two copies of the package can
 * coexist in one process.
 */
export type DeliveryErrorCode =
  /** A session id is not 1-128 of `[A-Za-z0-9._-]`, starts with a dot, or ends in a reserved kind suffix. */
  | 'DELIVERY_INVALID_SESSION_ID'
  /** A value handed to the library is malformed: unknown state kind, bad stream name or id, non-JSON state. */
  | 'DELIVERY_INVALID_ARGUMENT'
  /** A state file exists but is not UTF-8 JSON of the expected shape; `details.file` names it. */
  | 'DELIVERY_STATE_CORRUPT'
  /** The file system refused an operation, or a read was refused (not a regular file, or over its cap); `details.operation` and `details.file` say which. */
  | 'DELIVERY_IO_FAILED'
  /** A cursor was advanced for a stream that is not being monitored; `details.stream` names it. */
  | 'DELIVERY_NOT_MONITORED'
  /** The filters file (or a seed or update) is not a valid filters document; `details.reason` says why. */
  | 'DELIVERY_FILTERS_INVALID'
  /** The filters file became invalid or vanished while running: the last-known-good is in force and updates are refused until it is repaired. */
  | 'DELIVERY_FILTERS_STALE'
  /** An update tried to read or write an operator-owned filters key (`suppressedReactionEmojis`). */
  | 'DELIVERY_FILTERS_OPERATOR_ONLY'
  /** A channel id names no channel the engine knows, even after enumerating again; `details.channelId`. */
  | 'DELIVERY_UNKNOWN_CHANNEL'
  /** The delivery engine is not running (not started yet, or closed); `details.state`. */
  | 'DELIVERY_NOT_RUNNING'
  /** Another live process (or engine) delivers for this state: `details.file`, `pid`, `host`, `since`. */
  | 'DELIVERY_STATE_LOCKED';

/** Options accepted by every `DeliveryError`. */
export type DeliveryErrorOptions = ZmcpErrorOptions;

/**
 * The one error class of `@zmcp/delivery`: a stable `code`, optional `details` and the original
 * `cause`. `instanceof` holds for an error from any copy of the package (a brand).
 */
export class DeliveryError extends CodedError<DeliveryErrorCode> {
  static override readonly brand: string = '@zmcp/delivery.DeliveryError';
  override readonly name: string = 'DeliveryError';
}

/** True when `err` is a `DeliveryError` (from any copy of this package) with one of `codes`, or any code when none are given. */
export function isDeliveryError(err: unknown, ...codes: DeliveryErrorCode[]): err is DeliveryError {
  return isCodedError(DeliveryError, err, codes);
}

/** Wraps a file-system failure as `DELIVERY_IO_FAILED`, naming the operation and file but never the contents. */
export function ioError(operation: string, file: string, cause: unknown): DeliveryError {
  const errno = errorCode(cause);
  const reason = errno ?? (cause instanceof Error ? cause.message : String(cause));
  return new DeliveryError('DELIVERY_IO_FAILED', `could not ${operation} ${file}: ${reason}`, {
    cause,
    details: { operation, file, ...(errno === undefined ? {} : { errno }) },
  });
}
