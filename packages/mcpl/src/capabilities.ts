import { isIdentifier } from './digest.js';
import { isPlainObject } from './json.js';

/**
 * The capability paths of SPEC §6.2: the only valid `uses` entries, and the leaves a grant
 * names. `tools` comes from MCP's own `tools` capability, the rest from `experimental.mcpl`.
 */
export const CAPABILITY_PATHS = [
  'pushEvents',
  'tools',
  'modelInfo',
  'inferenceRequest',
  'inferenceRequest.streaming',
  'inferenceLifecycle',
  'contextHooks.beforeInference.observe',
  'contextHooks.beforeInference.inject.system',
  'contextHooks.beforeInference.inject.beforeUser',
  'contextHooks.beforeInference.inject.afterUser',
  'channels.register',
  'channels.lifecycle',
  'channels.publish',
  'channels.incoming',
  'channels.streaming',
  'channels.acknowledge',
  'channels.typing',
] as const;

/** The prefix of the three injection leaves; the position completes the path. */
export const INJECT = 'contextHooks.beforeInference.inject.';

/** The observation leaf of the context hook. */
export const OBSERVE = 'contextHooks.beforeInference.observe';

/** One of the §6.2 capability paths. */
export type CapabilityPath = (typeof CAPABILITY_PATHS)[number];

const known = new Set<string>(CAPABILITY_PATHS);

/** True for one of the §6.2 capability paths. */
export function isCapabilityPath(value: string): value is CapabilityPath {
  return known.has(value);
}

/**
 * Whether a grant pattern covers a path (§5.4): segment counts must be equal and `*`
 * matches exactly one segment. There is no subtree match and a bare parent grants nothing.
 */
export function patternMatches(pattern: string, path: string): boolean {
  if (pattern === path) return true;
  if (!pattern.includes('*')) return false;
  const want = pattern.split('.');
  const have = path.split('.');
  if (want.length !== have.length) return false;
  return want.every((segment, index) => segment === '*' || segment === have[index]);
}

/** Members of `experimental.mcpl` that are not capabilities. */
const notCapabilities = new Set(['version', 'revision', 'featureSets']);

/**
 * The leaf capability paths an advertisement names, by a generic recursive walk (§5.1, §5.4):
 * `true` at a node stands for the node and every known leaf beneath it, an object names
 * the node (when it is a path itself) and recurses, anything else names nothing.
 */
export function advertisedPaths(advertisement: unknown): Set<string> {
  const out = new Set<string>();
  const walk = (value: unknown, path: string) => {
    if (value === true) {
      const prefix = `${path}.`;
      const leaves = CAPABILITY_PATHS.filter((leaf) => leaf.startsWith(prefix));
      if (leaves.length === 0 || known.has(path)) out.add(path);
      for (const leaf of leaves) out.add(leaf);
      return;
    }
    if (!isPlainObject(value)) return;
    // `inferenceRequest: { streaming: true }` advertises the node as well as its leaf.
    if (known.has(path)) out.add(path);
    for (const [key, child] of Object.entries(value)) walk(child, `${path}.${key}`);
  };
  if (!isPlainObject(advertisement)) return out;
  for (const [key, value] of Object.entries(advertisement)) {
    if (!notCapabilities.has(key)) walk(value, key);
  }
  return out;
}

/**
 * An effective capability grant: the patterns of `effectiveCapabilities`, the sole
 * allowlist (§5.4). Every path none of them matches is denied.
 */
export class CapabilityGrant {
  readonly #patterns: readonly string[];
  // Grants are immutable, and the same few paths are checked on every send.
  readonly #answers = new Map<string, boolean>();

  private constructor(patterns: readonly string[]) {
    this.#patterns = patterns;
  }

  /** The grant of nothing: what a connection holds before its initial policy. */
  static empty(): CapabilityGrant {
    return new CapabilityGrant([]);
  }

  /** A grant of exactly these patterns (paths, or paths with one-segment `*`). */
  static of(patterns: Iterable<string>): CapabilityGrant {
    return new CapabilityGrant([...new Set(patterns)]);
  }

  /** The patterns as granted. */
  get patterns(): readonly string[] {
    return this.#patterns;
  }

  /** Whether `path` is granted. */
  has(path: string): boolean {
    let answer = this.#answers.get(path);
    if (answer === undefined) {
      answer = this.#patterns.some((pattern) => patternMatches(pattern, path));
      if (this.#answers.size < 256) this.#answers.set(path, answer);
    }
    return answer;
  }

  /** The granted subset of `paths`. */
  filter(paths: Iterable<string>): string[] {
    return [...paths].filter((path) => this.has(path));
  }
}

/** True when `value` is usable as a grant pattern: identifier characters, no empty segment. */
export function isGrantPattern(value: string): boolean {
  return isIdentifier(value) && value.split('.').every((segment) => segment.length > 0);
}
