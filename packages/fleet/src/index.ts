// The public API of @zmcp/fleet. Every export below is a promise to users: adding a line is an
// API decision. Internal helpers stay unexported.

export type {
  FleetProcess,
  OpenFiltersOptions,
  OpenStateBackendOptions,
  ProcessRegistry,
  RegisteredProcess,
  StateBackend,
} from './backend.js';
export { openStateBackend } from './backend.js';
export type { Broadcast } from './broadcast.js';
export type { FleetErrorCode, FleetErrorOptions } from './errors.js';
export { FleetError, isFleetError } from './errors.js';
export type {
  LauncherIntakeAction,
  LauncherTriggerRow,
  LauncherTriggerStatus,
  LauncherWork,
  LauncherWorkOptions,
} from './launcher-work.js';
export { SCHEMA_VERSION } from './migrations.js';
export type { EventHub, EventHubOptions, EventQueueOwner } from './postgres-event-hub.js';
export type {
  PostgresFiltersPlane,
  PostgresFiltersPlaneOptions,
  PostgresLockOptions,
  PostgresStateLock,
  PostgresStateStore,
} from './postgres-types.js';
export { DEFAULT_SCHEMA, describeStateUrl, parseSchemaName } from './settings.js';
