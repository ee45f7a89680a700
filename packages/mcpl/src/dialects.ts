import { advertisedPaths, CapabilityGrant, INJECT } from './capabilities.js';
import type { FeatureSetsForm } from './manifest.js';

/**
 * How a connected host speaks MCPL, read from its `initialize`: the peers INTEROP.md names
 * are recognised by `clientInfo.name`; every other host is read by its advertised version.
 */
export interface HostDialect {
  /** `mcpl-harness`, `agent-framework`, or `spec` for any other host. */
  name: 'mcpl-harness' | 'agent-framework' | 'spec';
  /** The `experimental.mcpl.version` it advertised, if it was a string. */
  version: string | undefined;
  /** It advertised a version before 0.5: it predates capability grants and may never send a policy. */
  legacy: boolean;
  /** The `featureSets` form it reads. */
  featureSetsForm: FeatureSetsForm;
}

/**
 * The dialect an `McplHost` speaks: `spec` (SPEC 0.5, the default), or one of the 0.4 hosts
 * INTEROP.md records, `mcpl-harness` (0.1.1) and `agent-framework` (0.1.0). The names are the
 * ones {@link detectHostDialect} gives the same hosts on the server side.
 */
export type McplHostDialect = HostDialect['name'];

/** True for a `major.minor[...]` version below 0.5; anything unreadable is not legacy (fail closed). */
function predatesGrants(version: string | undefined): boolean {
  const match = version === undefined ? null : /^(\d+)\.(\d+)/.exec(version);
  if (match === null) return false;
  const major = Number(match[1]);
  const minor = Number(match[2]);
  return major === 0 && minor < 5;
}

/**
 * Recognises a host's dialect. mcpl-harness (`clientInfo.name` `mcpl-harness` or
 * `mcpl-harness-web`) iterates `featureSets` as an array and fails on the object form;
 * agent-framework reads the object form whatever its version; others get the spec's object.
 */
export function detectHostDialect(clientName: string | undefined, mcplVersion: unknown): HostDialect {
  const version = typeof mcplVersion === 'string' ? mcplVersion : undefined;
  const legacy = predatesGrants(version);
  if (clientName !== undefined && /^mcpl-harness(-web)?$/.test(clientName)) {
    return { name: 'mcpl-harness', version, legacy, featureSetsForm: 'array' };
  }
  if (clientName === 'agent-framework')
    return { name: 'agent-framework', version, legacy, featureSetsForm: 'object' };
  return { name: 'spec', version, legacy, featureSetsForm: 'object' };
}

/**
 * What a 0.4 host handles without advertising it, read from its sources. agent-framework 0.1.0
 * advertises no `channels` member (its `initialize` carries `version`, `pushEvents`,
 * `contextHooks` and `featureSets` only), yet it answers `channels/register` and
 * `channels/changed`, opens every channel it hears of (`channels/open`, `channels/close`), takes
 * `channels/incoming`, publishes (`channels/publish`) and sends `channels/typing`. It never sends
 * `channels/acknowledge` or `channels/outgoing/*`, so those stay out.
 */
const SPOKEN_UNADVERTISED: Readonly<Record<HostDialect['name'], readonly string[]>> = {
  'agent-framework': [
    'channels.register',
    'channels.lifecycle',
    'channels.publish',
    'channels.incoming',
    'channels.typing',
  ],
  'mcpl-harness': [],
  spec: [],
};

/**
 * The grant both ends assume for a host that predates grants and never sends a policy
 * (`legacyHosts: 'advertised'` on the server, the 0.4 dialects of `McplHost`): what the server
 * advertises (`serverPaths`, `tools` included when it serves tools) and the host speaks — what it
 * advertises, and for a known dialect what its sources show it handles without advertising it —
 * plus `tools`, minus `contextHooks.beforeInference.inject.system`, which §13.4 denies by default.
 */
export function assumedLegacyGrant(
  serverPaths: Iterable<string>,
  hostAdvertisement: unknown,
  dialect: HostDialect['name'],
): CapabilityGrant {
  const theirs = advertisedPaths(hostAdvertisement);
  for (const path of SPOKEN_UNADVERTISED[dialect]) theirs.add(path);
  theirs.add('tools');
  return CapabilityGrant.of(
    [...serverPaths].filter((path) => theirs.has(path) && path !== `${INJECT}system`),
  );
}
