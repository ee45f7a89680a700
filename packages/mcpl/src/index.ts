// The public API of @zmcp/mcpl. Every export below is a promise to users.

export type { CapabilityPath } from './capabilities.js';
export {
  advertisedPaths,
  CAPABILITY_PATHS,
  CapabilityGrant,
  isCapabilityPath,
  patternMatches,
} from './capabilities.js';
export {
  canonicalizeManifest,
  canonicalJson,
  compareUtf8,
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
  TagOntology,
} from './feature-sets.js';
export { deriveFeatureSets, featureSetSelected, hasValidUses } from './feature-sets.js';
export type { JsonObject, JsonValue } from './json.js';
export type { McplLogFields, McplLogger } from './logger.js';
export type { FeatureSetsForm, ManifestDefinition, ManifestDomain, McplCapabilities } from './manifest.js';
export { changedDomains, composeManifest, MCPL_VERSION, presentManifest } from './manifest.js';
export type {
  DegradationReceipt,
  PolicySource,
  PolicyState,
  PolicyUpdate,
  UnavailableFeature,
} from './policy.js';
export { PolicyMalformed, parsePolicyUpdate } from './policy.js';
export { closeTags } from './tags.js';
