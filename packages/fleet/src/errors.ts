import { CodedError, isCodedError, type ZmcpErrorOptions } from '@zmcp/core';

/**
 * The failures `@zmcp/fleet` reports of its own, as stable string codes. The stores it opens
 * keep the `StateStore` and `FiltersPlane` contracts of `@zmcp/delivery`, so what they throw is
 * a `DeliveryError` with that package's codes; these are about opening a backend.
 */
export type FleetErrorCode =
  /** An option is wrong: a state URL that is not `postgres://…`, a bad schema name, no state directory, a filters file with PostgreSQL. */
  | 'FLEET_INVALID_ARGUMENT'
  /** The database could not be reached, or its schema could not be brought up to date, at start. */
  | 'FLEET_CONNECT_FAILED'
  /** The database's schema was written by a newer release that this one cannot work with. */
  | 'FLEET_SCHEMA_TOO_NEW';

/** Options accepted by every `FleetError`. */
export type FleetErrorOptions = ZmcpErrorOptions;

/**
 * The error class of `@zmcp/fleet`: a stable `code`, optional `details` and the original `cause`.
 * `instanceof` holds for an error from any copy of the package (a brand).
 */
export class FleetError extends CodedError<FleetErrorCode> {
  static override readonly brand: string = '@zmcp/fleet.FleetError';
  override readonly name: string = 'FleetError';
}

/** True when `err` is a `FleetError` (from any copy of this package) with one of `codes`, or any code when none are given. */
export function isFleetError(err: unknown, ...codes: FleetErrorCode[]): err is FleetError {
  return isCodedError(FleetError, err, codes);
}
