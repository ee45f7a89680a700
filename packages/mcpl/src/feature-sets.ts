import { isCapabilityPath, patternMatches } from './capabilities.js';
import type { JsonValue } from './json.js';

/** A producer's tag ontology on a feature set (§16.4): a hint catalog, never authority. */
export interface TagOntology {
  /** The reserved `chat:*` tags this server emits. */
  coreTags?: readonly string[];
  /** Descriptions of the producer's own tags. */
  tags?: Readonly<
    Record<
      string,
      {
        desc?: string;
        facet?: string;
        implies?: readonly string[];
        suggestedTreatment?: string;
        stability?: 'stable' | 'experimental' | 'deprecated';
      }
    >
  >;
  /** `key=value` families with their suggested values. */
  keyed?: Readonly<Record<string, { desc?: string; values?: readonly string[]; ordered?: boolean }>>;
  /** Ordered suggested rules; a host applies them only on explicit acceptance. */
  suggestedTreatment?: readonly {
    tagsAny?: readonly string[];
    tagsAll?: readonly string[];
    tagsNone?: readonly string[];
    behavior: string;
  }[];
  /** The server may emit tags in its namespace beyond those described. */
  open?: boolean;
}

/** One feature set as a server declares it (§6.1, App. B.2). */
export interface FeatureSetDeclaration {
  /** Human-readable description. */
  description: string;
  /** The capability paths the feature set needs (§6.2). */
  uses: readonly string[];
  /** The feature set answers `state/rollback` (§8.1). */
  rollback?: boolean;
  /** The tags it emits (§16.4). */
  tagOntology?: TagOntology;
}

/** Why a declared feature set is unavailable. */
export type FeatureSetUnavailableReason =
  /** Its `uses` is absent, empty, or names a path outside §6.2 (§6.4 rule 1). */
  | 'invalid_uses'
  /** The policy's `enabled` allowlist does not name it (§5.3). */
  | 'not_selected'
  /** The policy's `disabled` list names it. */
  | 'disabled'
  /** The grant lacks a capability its `uses` needs; see `missingCapabilities`. */
  | 'capability_denied'
  /** No initial policy has been established yet. */
  | 'no_policy';

/** Whether one declared feature set is enabled now, and if not, why. */
export interface FeatureSetStatus {
  name: string;
  enabled: boolean;
  reason?: FeatureSetUnavailableReason;
  /** The capabilities its `uses` needs that the grant lacks. */
  missingCapabilities: string[];
}

/** True when a declaration's `uses` is a non-empty list of §6.2 paths. */
export function hasValidUses(declaration: { uses?: unknown }): boolean {
  const { uses } = declaration;
  return (
    Array.isArray(uses) &&
    uses.length > 0 &&
    uses.every((path): path is string => typeof path === 'string' && isCapabilityPath(path))
  );
}

/**
 * Whether a feature-set selector names `name`. A selector is a name or a pattern with `*`
 * standing for one segment (§6.3); with `subtree`, a trailing `.*` also covers deeper names,
 * which is how `disabled` reads it: a narrowing list errs towards narrowing more.
 */
export function featureSetSelected(selector: string, name: string, subtree: boolean): boolean {
  if (patternMatches(selector, name)) return true;
  return subtree && selector.endsWith('.*') && name.startsWith(selector.slice(0, -1));
}

/** Anything that answers whether a capability path is granted, such as a `CapabilityGrant`. */
export interface GrantLike {
  has(path: string): boolean;
}

/** The selection half of a policy: the optional `enabled` allowlist and the `disabled` list. */
export interface FeatureSetSelection {
  /** Absent: derivation alone governs. Present: an allowlist (§5.3). */
  enabled?: readonly string[] | undefined;
  /** Always subtracts. */
  disabled: readonly string[];
}

/**
 * Derives every declared feature set's status from the grant and the selection (§6.4),
 * failing closed: invalid `uses` disables, and selection can narrow but never widen.
 */
export function deriveFeatureSets(
  declarations: Readonly<Record<string, { uses?: unknown }>>,
  grant: GrantLike | undefined,
  selection: FeatureSetSelection,
): FeatureSetStatus[] {
  return Object.entries(declarations).map(([name, declaration]): FeatureSetStatus => {
    if (!hasValidUses(declaration))
      return { name, enabled: false, reason: 'invalid_uses', missingCapabilities: [] };
    const uses = declaration.uses as string[];
    if (grant === undefined)
      return { name, enabled: false, reason: 'no_policy', missingCapabilities: [...uses] };
    const missing = uses.filter((path) => !grant.has(path));
    if (selection.disabled.some((selector) => featureSetSelected(selector, name, true))) {
      return { name, enabled: false, reason: 'disabled', missingCapabilities: missing };
    }
    if (
      selection.enabled !== undefined &&
      !selection.enabled.some((selector) => featureSetSelected(selector, name, false))
    ) {
      return { name, enabled: false, reason: 'not_selected', missingCapabilities: missing };
    }
    if (missing.length > 0)
      return { name, enabled: false, reason: 'capability_denied', missingCapabilities: missing };
    return { name, enabled: true, missingCapabilities: [] };
  });
}

/** A feature-set declaration as JSON, for the manifest. */
export function declarationJson(declaration: FeatureSetDeclaration): { [key: string]: JsonValue } {
  return JSON.parse(JSON.stringify(declaration)) as { [key: string]: JsonValue };
}
