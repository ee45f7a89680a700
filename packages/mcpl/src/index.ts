// The public API of @zmcp/mcpl. Every export below is a promise to users.

export type { CapabilityPath } from './capabilities.js';
export {
  advertisedPaths,
  CAPABILITY_PATHS,
  CapabilityGrant,
  isCapabilityPath,
  patternMatches,
} from './capabilities.js';
export type { CheckpointRecord, CheckpointState } from './checkpoints.js';
export { CheckpointLog, withCheckpoint } from './checkpoints.js';
export type { HostDialect, McplHostDialect } from './dialects.js';
export { detectHostDialect } from './dialects.js';
export {
  canonicalizeManifest,
  canonicalJson,
  isIdentifier,
  manifestRevision,
  sortSet,
} from './digest.js';
export type { McplErrorCode, McplErrorOptions } from './errors.js';
export { capabilityDenied, McplError, McplRpcCode, rpcError } from './errors.js';
export type {
  FeatureSetDeclaration,
  FeatureSetSelection,
  FeatureSetStatus,
  FeatureSetUnavailableReason,
  GrantLike,
  TagOntology,
} from './feature-sets.js';
export { deriveFeatureSets, featureSetSelected, hasValidUses } from './feature-sets.js';
export type {
  BeforeInferenceOutcome,
  IncomingVerdict,
  ManifestFetch,
  McplHostEvents,
  McplHostHandlers,
  McplHostOptions,
  ReceivedPushEvent,
} from './host.js';
export { McplHost } from './host.js';
export type { JsonObject, JsonValue } from './json.js';
export type { McplLogFields, McplLogger } from './logger.js';
export { silentMcplLogger } from './logger.js';
export type { FeatureSetsForm, ManifestDefinition, ManifestDomain, McplCapabilities } from './manifest.js';
export { changedDomains, composeManifest, MCPL_VERSION, presentManifest } from './manifest.js';
export type {
  DegradationReceipt,
  PolicySource,
  PolicyState,
  PolicyUpdate,
  UnavailableFeature,
} from './policy.js';
export { parsePolicyUpdate } from './policy.js';
export { McplServer } from './server.js';
export type {
  BeforeInferenceAnswer,
  BeforeInferenceParams,
  ChannelHooks,
  ChannelOpenAnswer,
  ChannelOpenRequest,
  ContextInjection,
  HookContext,
  LegacyHostPolicy,
  LifecycleParams,
  McplServerOptions,
  MinimumGrant,
  OutgoingStream,
  RequestExtra,
  RollbackRequest,
  ToolCallContext,
  ToolCallParams,
  ToolHooks,
  ToolListContext,
} from './server-types.js';
export type {
  ChannelRecord,
  ChannelRegistration,
  IncomingOutcome,
  McplSessionEvents,
  PushEventInput,
  PushOutcome,
  RegistrationOutcome,
} from './session.js';
export { McplSession } from './session.js';
export { closeTags } from './tags.js';
export type { NdjsonTransportOptions } from './transport/ndjson.js';
export { DEFAULT_MAX_LINE_BYTES, NdjsonTransport } from './transport/ndjson.js';
export type { SpawnStdioOptions } from './transport/stdio.js';
export { ChildProcessTransport, spawnStdioTransport, stdioServerTransport } from './transport/stdio.js';
export type { ConnectTcpOptions, ListenTcpOptions, LoopbackHost, TcpListener } from './transport/tcp.js';
export { connectTcp, listenTcp } from './transport/tcp.js';
export type {
  ChannelDescriptor,
  ChannelDirection,
  ChannelHistoryRequest,
  ChannelMessage,
  ContentBlock,
} from './wire.js';
