import type { FiltersDocument, FiltersPlane, StateKey, StateLock, StateStore } from '@zmcp/delivery';

/** Options of a store's locks. */
export interface PostgresLockOptions {
  /** How often a held lock's connection is checked, in ms. Default 2000. */
  heartbeatMs?: number | undefined;
  /** How long a check may take before the lock counts as lost, in ms. Default 5000. */
  heartbeatTimeoutMs?: number | undefined;
}

/**
 * A delivery lock held in PostgreSQL: a session-level advisory lock on a connection of its own.
 * The server lets it go when that connection ends, so a holder that dies (kill -9, a crash)
 * frees it at once; one cut off by the network frees it once the server's TCP keepalive gives
 * up on the connection (about 20 s). The holder checks its connection every `heartbeatMs`, and
 * a failure (or a check slower than `heartbeatTimeoutMs`, well inside those 20 s) aborts
 * `signal`: from then on the store refuses this process's writes of the key.
 */
export interface PostgresStateLock extends StateLock {
  /** Aborted, with a `DELIVERY_STATE_LOCKED` reason, when the lock was lost before `release`. */
  readonly signal: AbortSignal;
}

/**
 * A `StateStore` in PostgreSQL: one row per key in `<schema>.state` (`account`, `session`,
 * `kind`, `value jsonb`). Values are validated exactly as the file store validates them, with
 * the same errors. `update` runs `fn` inside a transaction that holds the key's row lock, so
 * updates of one key are serialized across every process sharing the database; `lock` is a
 * {@link PostgresStateLock}. Writes of a key this store holds the lock of go through the lock's
 * own connection: they fail once the lock is lost, so a holder cut off from the database can
 * never write over the state of the process that took its place.
 */
export interface PostgresStateStore extends StateStore {
  /**
   * Where `key` is kept, for messages: `postgres://user@host:port/db#<schema>/<file name>`.
   *
   * @throws DeliveryError `DELIVERY_INVALID_SESSION_ID`; `DELIVERY_INVALID_ARGUMENT`.
   */
  locationOf(key: StateKey): string;
  /**
   * Takes exclusive use of `key` across every process sharing the database (see
   * {@link PostgresStateLock}).
   *
   * @throws DeliveryError `DELIVERY_STATE_LOCKED` while another holder has it (`details`: `file`,
   *   and the holder's `pid`, `host` and `since` when known); `DELIVERY_IO_FAILED`;
   *   `DELIVERY_INVALID_SESSION_ID`.
   */
  lock(key: StateKey): Promise<PostgresStateLock>;
}

/** Options of a filters plane in PostgreSQL (`StateBackend.openFilters`). */
export interface PostgresFiltersPlaneOptions {
  /** The account (realm and bot) the session belongs to, from `stateAccount`; none for an unscoped key. */
  account?: string | undefined;
  /** The session id. */
  session: string;
  /** What a missing row is created with (from the environment); default `{}`, unrestricted. */
  seed?: FiltersDocument | undefined;
  /** The host's suppressed reactions, added at every start and never written. */
  baseline?: readonly string[] | undefined;
  /** How often the row is also read without a notification, in ms. Default 2000. */
  pollIntervalMs?: number | undefined;
}

/**
 * The filters plane in PostgreSQL: the same document, validation, last-known-good and
 * fail-closed rules as `FileFiltersPlane`, kept in the `filters` row of the session in
 * `<schema>.state`. The row always exists once `open` has returned (created from the seed when
 * missing). A change to it, by a tool or by an operator's `UPDATE`, comes into force in every
 * process serving the session as soon as its `NOTIFY` arrives, and within `pollIntervalMs` even
 * if one was missed. An invalid or deleted row keeps the last-known-good in force and marks the
 * plane stale; a valid one clears it. Updates from the tools re-read the row under its row lock,
 * are refused while it is invalid or missing, and are written in the same transaction.
 *
 * The rules themselves are `@zmcp/delivery`'s: the filters in force live in a
 * `MemoryFiltersPlane`, which this plane feeds.
 */
export interface PostgresFiltersPlane extends FiltersPlane {
  /** Where the filters are kept: `postgres://…/db#<schema>/<account>/<session>.filters.json`. */
  readonly location: string;
  /** Reads the row now (as a notification would) and applies what it holds. */
  reload(): Promise<void>;
}
