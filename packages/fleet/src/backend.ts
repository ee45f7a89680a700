import type { Logger } from '@zmcp/core';
import {
  FileFiltersPlane,
  FileStateStore,
  type FiltersDocument,
  type FiltersPlane,
  parseSessionId,
  parseStateAccount,
  type StateKey,
  type StateStore,
} from '@zmcp/delivery';
import type { Broadcast } from './broadcast.js';
import { FleetError } from './errors.js';
import type { LauncherWork, LauncherWorkOptions } from './launcher-work.js';
import type { EventHub, EventHubOptions } from './postgres-event-hub.js';

/** Options of {@link openStateBackend}. */
export interface OpenStateBackendOptions {
  /**
   * `ZULIP_STATE_URL`: `postgres://user:password@host:port/database` (or `postgresql://`, with
   * libpq's parameters such as `?sslmode=require`) puts the state in PostgreSQL. Unset or empty:
   * JSON files in `dir`.
   */
  url?: string | undefined;
  /** `ZULIP_STATE_DIR`: the directory of the file backend. Required when `url` is unset; unused otherwise. */
  dir?: string | undefined;
  /** The PostgreSQL schema holding the state (created and migrated at open). Default `zmcp`. */
  schema?: string | undefined;
  /** Where the backend reports what it does (migrations, lost connections, lost locks). */
  logger?: Logger | undefined;
  /** Most pooled PostgreSQL connections. Default 10 (each held delivery lock and the filters listener take one more). */
  maxConnections?: number | undefined;
  /**
   * How often a held delivery lock's connection is checked, and how long a check may take
   * before the lock counts as lost, in ms. Default 2000 and 5000.
   */
  lockHeartbeatMs?: number | undefined;
  lockHeartbeatTimeoutMs?: number | undefined;
  /**
   * How often a registered process refreshes its row in the fleet's process list (PostgreSQL
   * only), in ms; one not refreshed for three of these is gone. Default 5000.
   */
  processHeartbeatMs?: number | undefined;
  /** Tuning of the shared event queues (PostgreSQL only): election, polling, the log's bound. */
  events?: EventHubOptions | undefined;
}

/** Options of {@link StateBackend.openFilters}. */
export interface OpenFiltersOptions {
  /** The account (realm and bot), from `stateAccount`; none for an unscoped key. */
  account?: string | undefined;
  /** The session id. */
  session: string;
  /** What a missing filters document is created with (from the environment, `filtersSeedFromEnv`). */
  seed?: FiltersDocument | undefined;
  /** The host's suppressed reactions, added at every start and never written. */
  baseline?: readonly string[] | undefined;
  /**
   * The filters file (`ZULIP_FILTERS_FILE`), for the file backend only; default the key's file in
   * the state directory. With PostgreSQL it is an error: the filters are a row.
   */
  file?: string | undefined;
  /** How often the filters are also checked without a change event, in ms. Default 2000. */
  pollIntervalMs?: number | undefined;
}

/** Where the state lives, as opened by {@link openStateBackend}. */
export interface StateBackend {
  /** `files` (the embedded default) or `postgres`. */
  readonly kind: 'files' | 'postgres';
  /** The directory, or `postgres://user@host:port/db#schema` (never a password). */
  readonly location: string;
  /** Read cursors, watermarks, the launcher's record: every `StateStore` user takes this one. It has `lock`. */
  readonly store: StateStore & Required<Pick<StateStore, 'lock'>>;
  /**
   * Where `key` is kept, for messages and logs: a file path, or `postgres://…#schema/<file name>`.
   *
   * @throws DeliveryError `DELIVERY_INVALID_SESSION_ID`; `DELIVERY_INVALID_ARGUMENT`.
   */
  locationOf(key: StateKey): string;
  /**
   * Opens the filters plane of a session: `FileFiltersPlane` or `PostgresFiltersPlane`, the
   * same rules either way. The backend closes what is still open when it closes.
   *
   * @throws DeliveryError `DELIVERY_FILTERS_INVALID` (a start-up failure), `DELIVERY_IO_FAILED`,
   *   `DELIVERY_INVALID_SESSION_ID`; FleetError `FLEET_INVALID_ARGUMENT` for `file` with PostgreSQL.
   */
  openFilters(options: OpenFiltersOptions): Promise<FiltersPlane>;
  /**
   * With PostgreSQL, one Zulip event queue per realm and bot for every process sharing the
   * database (`events.source(client, account)` is a `DeliveryEngine`'s `events`); `undefined` on
   * files, where each engine registers its own.
   */
  readonly events: EventHub | undefined;
  /**
   * With PostgreSQL, messages by topic to every process sharing the database (`NOTIFY`);
   * `undefined` on files, where there is one process.
   */
  readonly broadcast: Broadcast | undefined;
  /**
   * With PostgreSQL, the shared work of `zulip-agent` workers with one launcher id (claim rows,
   * leases, the fleet-wide queue); `undefined` on files, where one launcher holds its record.
   */
  readonly launcherWork: ((options: LauncherWorkOptions) => LauncherWork) | undefined;
  /**
   * With PostgreSQL, the fleet's processes: each registers itself (a heartbeat row) and reads
   * who else runs; `undefined` on files, where there is one process.
   */
  readonly processes: ProcessRegistry | undefined;
  /** Closes the filters planes still open, the shared event queues' readers, releases the locks still held and ends the connections. */
  close(): Promise<void>;
}

/** One process of a fleet, as {@link ProcessRegistry.list} reads it. */
export interface FleetProcess {
  /** Its registration's id (random, per start). */
  readonly id: string;
  /** The bin that runs it (`zulip-mcp`). */
  readonly bin: string;
  readonly pid: number;
  readonly host: string;
  /** ISO times: when it registered, and its last heartbeat (the database's clock). */
  readonly startedAt: string;
  readonly lastSeen: string;
  /** Not seen for three heartbeats (`processHeartbeatMs`): it died or lost the database. */
  readonly gone: boolean;
}

/** This process's registration in the fleet: its heartbeat, and the leases it holds. */
export interface RegisteredProcess {
  readonly id: string;
  /**
   * Takes one of `max` leases of `scope` (a per-token long wait: `waits/<account>/<token id>`),
   * counted across the fleet: resolves with its release, or `undefined` when `max` are held by
   * processes still seen. A lease of a process that died stops counting once it is gone.
   */
  lease(scope: string, max: number): Promise<(() => Promise<void>) | undefined>;
  /** Stops the heartbeat and removes the row (and its leases). Safe to call twice. */
  close(): Promise<void>;
}

/** The fleet's processes, in PostgreSQL. */
export interface ProcessRegistry {
  /**
   * Registers this process (`bin`, its pid and host) and keeps its row fresh every
   * `processHeartbeatMs`; a row not refreshed for three heartbeats counts as gone.
   */
  register(options: { bin: string }): Promise<RegisteredProcess>;
  /** Every process registered, oldest first; rows gone for over an hour are removed first. */
  list(): Promise<FleetProcess[]>;
}

/** What the PostgreSQL backend module provides; loaded only when a URL is given. */
export type OpenPostgresBackend = (
  options: OpenStateBackendOptions & { url: string },
) => Promise<StateBackend>;

/**
 * Opens the state backend the settings name: PostgreSQL when `url` is set (connecting, and
 * creating or migrating its schema), JSON files in `dir` otherwise. The PostgreSQL client is
 * loaded only in the first case.
 *
 * @throws FleetError `FLEET_INVALID_ARGUMENT` (a URL that is not `postgres://…`, a bad schema,
 *   neither `url` nor `dir`), `FLEET_CONNECT_FAILED`, `FLEET_SCHEMA_TOO_NEW`.
 */
export async function openStateBackend(options: OpenStateBackendOptions): Promise<StateBackend> {
  if (options.url !== undefined && options.url !== '') {
    const { openPostgresBackend } = await import('./postgres-backend.js');
    return openPostgresBackend({ ...options, url: options.url });
  }
  if (options.dir === undefined || options.dir === '') {
    throw new FleetError(
      'FLEET_INVALID_ARGUMENT',
      'the state needs a directory (ZULIP_STATE_DIR) or a URL (ZULIP_STATE_URL)',
      {
        details: { option: 'dir' },
      },
    );
  }
  return openFileBackend(options.dir);
}

function openFileBackend(dir: string): StateBackend {
  const store = new FileStateStore({ dir });
  const planes = new Set<FiltersPlane>();
  return {
    kind: 'files',
    location: store.dir,
    store,
    events: undefined,
    broadcast: undefined,
    launcherWork: undefined,
    processes: undefined,
    locationOf: (key) => store.pathOf(key),
    async openFilters(options) {
      const key: StateKey =
        options.account === undefined
          ? { session: parseSessionId(options.session), kind: 'filters' }
          : {
              account: parseStateAccount(options.account),
              session: parseSessionId(options.session),
              kind: 'filters',
            };
      const plane = await FileFiltersPlane.open({
        file: options.file ?? store.pathOf(key),
        seed: options.seed,
        baseline: options.baseline,
        pollIntervalMs: options.pollIntervalMs,
      });
      return tracked(plane, planes);
    },
    async close() {
      await Promise.all([...planes].map((p) => p.close()));
    },
  };
}

/** `plane`, forgotten by `planes` once it is closed. */
export function tracked(plane: FiltersPlane, planes: Set<FiltersPlane>): FiltersPlane {
  planes.add(plane);
  const close = plane.close.bind(plane);
  plane.close = async () => {
    planes.delete(plane);
    await close();
  };
  return plane;
}
