import { CapabilityGrant, isGrantPattern } from './capabilities.js';
import { McplError } from './errors.js';
import type { FeatureSetSelection, FeatureSetStatus } from './feature-sets.js';
import { isPlainObject } from './json.js';

/** The params of `featureSets/update` (§5.3, §6.7), as read off the wire. */
export interface PolicyUpdate {
  /** The sole allowlist; absent in a Request is a grant of nothing. */
  effectiveCapabilities?: string[];
  /** Diagnostic only: never part of an authorization decision. */
  deniedCapabilities?: string[];
  /** Feature-set allowlist; absent constrains nothing. */
  enabled?: string[];
  /** Feature sets to disable; always subtracts. */
  disabled?: string[];
}

/** Why a policy message is malformed; the Request form is answered with `-32602` and this text. */
function malformed(message: string): McplError {
  return new McplError('MCPL_INVALID_ARGUMENT', message);
}

function stringList(
  params: Record<string, unknown>,
  field: keyof PolicyUpdate,
  patterns: boolean,
): string[] | undefined {
  const value = params[field];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw malformed(`featureSets/update: ${field} must be an array of strings`);
  }
  if (patterns) {
    const bad = value.find((item) => !isGrantPattern(item));
    if (bad !== undefined) {
      throw malformed(
        `featureSets/update: ${field} entry ${JSON.stringify(bad.slice(0, 80))} is not a capability path`,
      );
    }
  }
  return value;
}

/**
 * Reads `featureSets/update` params, failing closed: a wrong-typed field, or a path in both
 * `effectiveCapabilities` and `deniedCapabilities`, makes the whole message malformed (§5.4).
 *
 * @throws McplError `MCPL_INVALID_ARGUMENT` naming the field.
 */
export function parsePolicyUpdate(params: unknown): PolicyUpdate {
  if (params === undefined || params === null) return {};
  if (!isPlainObject(params)) throw malformed('featureSets/update: params must be an object');
  const update: PolicyUpdate = {};
  const effective = stringList(params, 'effectiveCapabilities', true);
  const denied = stringList(params, 'deniedCapabilities', true);
  const enabled = stringList(params, 'enabled', false);
  const disabled = stringList(params, 'disabled', false);
  if (effective !== undefined) update.effectiveCapabilities = effective;
  if (denied !== undefined) update.deniedCapabilities = denied;
  if (enabled !== undefined) update.enabled = enabled;
  if (disabled !== undefined) update.disabled = disabled;
  const both = (effective ?? []).find((path) => (denied ?? []).includes(path));
  if (both !== undefined) {
    throw malformed(`featureSets/update: ${both} is in both effectiveCapabilities and deniedCapabilities`);
  }
  return update;
}

/** Where a connection's policy came from. */
export type PolicySource =
  /** No policy yet: nothing capability-dependent is available. */
  | 'none'
  /** A `featureSets/update` Request. */
  | 'request'
  /** Assumed for a 0.4 host that never sends one (see `legacyHosts`). */
  | 'legacy';

/** The policy in force on one connection. */
export interface PolicyState {
  source: PolicySource;
  grant: CapabilityGrant;
  selection: FeatureSetSelection;
}

/** The state before any policy. */
export const NO_POLICY: PolicyState = {
  source: 'none',
  grant: CapabilityGrant.empty(),
  selection: { disabled: [] },
};

/** A Request replaces the policy outright (§5.3): absent `effectiveCapabilities` grants nothing. */
export function policyFromRequest(update: PolicyUpdate): PolicyState {
  return {
    source: 'request',
    grant: CapabilityGrant.of(update.effectiveCapabilities ?? []),
    selection: { enabled: update.enabled, disabled: update.disabled ?? [] },
  };
}

/**
 * A Notification only narrows (§6.7): its `disabled` list is added and every other field is
 * discarded; the returned `ignored` names what was discarded, for a diagnostic.
 */
export function policyFromNotification(
  current: PolicyState,
  update: PolicyUpdate,
): { state: PolicyState; ignored: string[] } {
  const ignored = (['effectiveCapabilities', 'deniedCapabilities', 'enabled'] as const).filter(
    (field) => update[field] !== undefined,
  );
  const disabled = update.disabled ?? [];
  if (disabled.length === 0) return { state: current, ignored };
  return {
    state: {
      ...current,
      selection: {
        ...current.selection,
        disabled: [...new Set([...current.selection.disabled, ...disabled])],
      },
    },
    ignored,
  };
}

/** One degraded feature set in a receipt. */
export interface UnavailableFeature {
  featureSet: string;
  missingCapabilities: string[];
  effect: 'disabled';
  reason?: string;
}

/** The answer to a `featureSets/update` Request (§6.7): what the server will do, never what it is owed. */
export type DegradationReceipt =
  | { accepted: true; mode?: 'degraded'; unavailableFeatures?: UnavailableFeature[] }
  | { accepted: false; fallback: 'mcp-only' | 'close'; missingCapabilities: string[]; reason: string };

/** The accepting receipt for these statuses; `mode` is omitted when nothing degraded. */
export function acceptingReceipt(statuses: readonly FeatureSetStatus[]): DegradationReceipt {
  const unavailable = statuses
    .filter((status) => !status.enabled)
    .map((status): UnavailableFeature => {
      const entry: UnavailableFeature = {
        featureSet: status.name,
        missingCapabilities: status.missingCapabilities,
        effect: 'disabled',
      };
      if (status.reason !== undefined) entry.reason = status.reason;
      return entry;
    });
  if (unavailable.length === 0) return { accepted: true };
  return { accepted: true, mode: 'degraded', unavailableFeatures: unavailable };
}
