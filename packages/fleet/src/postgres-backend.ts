import type { FiltersPlane } from '@zmcp/delivery';
import { type OpenStateBackendOptions, type StateBackend, tracked } from './backend.js';
import { PgBroadcast } from './broadcast.js';
import { Database } from './database.js';
import { FleetError } from './errors.js';
import { PgLauncherWork } from './launcher-work.js';
import { PgEventHub } from './postgres-event-hub.js';
import { PgFiltersPlane } from './postgres-filters-plane.js';
import { PgProcessRegistry } from './postgres-processes.js';
import { PgStateStore } from './postgres-state-store.js';

/**
 * The PostgreSQL backend: connects, migrates the schema, and serves the store, its locks and
 * the filters planes from one pool. Loaded by `openStateBackend` only when a URL is given.
 */
export async function openPostgresBackend(
  options: OpenStateBackendOptions & { url: string },
): Promise<StateBackend> {
  const db = await Database.open({
    url: options.url,
    schema: options.schema,
    logger: options.logger,
    maxConnections: options.maxConnections,
  });
  const store = new PgStateStore(db, {
    heartbeatMs: options.lockHeartbeatMs,
    heartbeatTimeoutMs: options.lockHeartbeatTimeoutMs,
  });
  const planes = new Set<FiltersPlane>();
  const events = new PgEventHub(db, options.events);
  let closed: Promise<void> | undefined;
  return {
    kind: 'postgres',
    location: db.location,
    store,
    locationOf: (key) => db.locationOf(key),
    events,
    broadcast: new PgBroadcast(db),
    launcherWork: (work) => new PgLauncherWork(db, work),
    processes: new PgProcessRegistry(db, options.processHeartbeatMs),
    async openFilters(filters) {
      if (filters.file !== undefined) {
        throw new FleetError(
          'FLEET_INVALID_ARGUMENT',
          'a filters file was given, but the state is in PostgreSQL, where the filters are a row: unset ZULIP_FILTERS_FILE',
          { details: { option: 'file' } },
        );
      }
      const plane = await PgFiltersPlane.open(db, {
        account: filters.account,
        session: filters.session,
        seed: filters.seed,
        baseline: filters.baseline,
        pollIntervalMs: filters.pollIntervalMs,
      });
      return tracked(plane, planes);
    },
    close() {
      closed ??= (async () => {
        await Promise.all([...planes].map((p) => p.close()));
        await events.close();
        await store.releaseAll();
        await db.close();
      })();
      return closed;
    },
  };
}
