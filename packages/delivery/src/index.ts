// The public API of @zmcp/delivery. Every export below is a promise to users: adding a
// line is an API decision. Internal helpers stay unexported.

export type { ParsedChannelId } from './channel-id.js';
export { dmChannelId, parseChannelId, streamChannelId } from './channel-id.js';
export type {
  ChannelFigures,
  ChannelInfo,
  DeliveryEngineOptions,
  DeliveryProgress,
  DeliverySnapshot,
  EngineState,
  EngineStatus,
  EventSource,
  MissedReport,
  OpenEventSource,
  RefreshReport,
  StartOptions,
  StartReport,
} from './engine.js';
export { DeliveryEngine } from './engine.js';
export type { DeliveryErrorCode, DeliveryErrorOptions } from './errors.js';
export { DeliveryError, isDeliveryError } from './errors.js';
export type { FileStateStoreOptions } from './file-state-store.js';
export { FileStateStore } from './file-state-store.js';
export type { DeliveryFileHandle, DeliveryFileSystem } from './file-system.js';
export { FileRefusedError, readBoundedFile } from './file-system.js';
export type { FiltersDocument, FiltersPatch, FiltersSeed, ListDigest, ToolFilters } from './filters.js';
export {
  FILTER_ENV_VARIABLES,
  FiltersDocumentSchema,
  filtersSeedFromEnv,
  parseFiltersDocument,
} from './filters.js';
export type { FileFiltersPlaneOptions, FiltersEvent, FiltersPlane, FiltersView } from './filters-plane.js';
export { FileFiltersPlane, MemoryFiltersPlane } from './filters-plane.js';
export type {
  AppendInterruptNoteOptions,
  ConsumeInterruptFileOptions,
  InterruptNote,
  InterruptWatcher,
  WatchInterruptFileOptions,
} from './interrupt-file.js';
export {
  appendInterruptNote,
  consumeInterruptFile,
  formatInterruptNote,
  parseInterruptNotes,
  watchInterruptFile,
} from './interrupt-file.js';
export { KeyedMutex } from './keyed-mutex.js';
export type { MonitoredStream, StreamRef } from './monitor-store.js';
export { MonitorStore } from './monitor-store.js';
export type {
  MonitorChangeCause,
  MonitorWatcherEvent,
  MonitorWatcherOptions,
  MonitorWatcherState,
  MonitorWatcherStatus,
} from './monitor-watcher.js';
export { MonitorWatcher } from './monitor-watcher.js';
export type {
  AnnounceOutcome,
  ChannelAnnouncement,
  ChannelDescriptor,
  DeliveryItem,
  DeliveryItemKind,
  DeliverySink,
  IncomingBatch,
  IncomingOutcome,
  MissedInfo,
  PushEvent,
  PushOutcome,
} from './sink.js';
export type { StateKey, StateKind } from './state-key.js';
export { parseSessionId, parseStateAccount, stateAccount, stateFileName } from './state-key.js';
export type { StateLock } from './state-lock.js';
export type { StateStore } from './state-store.js';
export { checkNewState, decodeState, encodeState, MemoryStateStore } from './state-store.js';
export { CORE_TAGS, TAGS } from './tags.js';
