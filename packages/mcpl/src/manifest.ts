import { advertisedPaths } from './capabilities.js';
import { canonicalJson, isIdentifier, manifestRevision } from './digest.js';
import { McplError } from './errors.js';
import { declarationJson, type FeatureSetDeclaration, hasValidUses } from './feature-sets.js';
import { isPlainObject, type JsonObject, type JsonValue } from './json.js';

/** The MCPL version this library speaks. */
export const MCPL_VERSION = '0.5';

/**
 * What a server can do, as the nested `experimental.mcpl` members of §5.1: `pushEvents`,
 * `modelInfo`, `inferenceLifecycle`, `inferenceRequest`, `contextHooks`, `channels`, and any
 * vendor extension. `true` at a node advertises every leaf beneath it; prefer the leaves.
 */
export type McplCapabilities = Readonly<Record<string, JsonValue>>;

/** The parts a server's manifest is made of. */
export interface ManifestDefinition {
  /** What the server can do (§5.1). */
  capabilities: McplCapabilities;
  /** Its feature sets, keyed by name (§6.1). */
  featureSets: Readonly<Record<string, FeatureSetDeclaration>>;
}

/** How `featureSets` is written on the wire: the spec's object, or the array some 0.4 hosts need. */
export type FeatureSetsForm = 'object' | 'array';

/** The change domains of §17.1. */
export type ManifestDomain = 'capabilities' | 'featureSets' | 'tagOntology';

function invalid(message: string): never {
  throw new McplError('MCPL_INVALID_ARGUMENT', message);
}

/**
 * Builds and checks a manifest (without `revision`): capability member names and feature-set
 * names are identifiers, every feature set has a description and valid `uses`, and every
 * path a feature set uses is one the server advertises (`tools` when it serves tools).
 *
 * @throws McplError `MCPL_INVALID_ARGUMENT` naming what is wrong, or `MCPL_DIGEST_REFUSED`.
 */
export function composeManifest(definition: ManifestDefinition, servesTools: boolean): JsonObject {
  const manifest: JsonObject = { version: MCPL_VERSION };
  for (const [key, value] of Object.entries(definition.capabilities)) {
    if (key === 'version' || key === 'revision' || key === 'featureSets') {
      invalid(`capabilities.${key} is not a capability; the library writes it`);
    }
    if (!isIdentifier(key)) invalid(`capability member ${JSON.stringify(key)} is not an identifier`);
    manifest[key] = JSON.parse(JSON.stringify(value)) as JsonValue;
  }
  const advertised = advertisedPaths(manifest);
  if (servesTools) advertised.add('tools');
  const featureSets: JsonObject = {};
  for (const [name, declaration] of Object.entries(definition.featureSets)) {
    if (!isIdentifier(name)) invalid(`feature set name ${JSON.stringify(name)} is not an identifier`);
    if (typeof declaration.description !== 'string') invalid(`feature set ${name} has no description`);
    if (!hasValidUses(declaration)) invalid(`feature set ${name} has empty or unknown uses (§6.2)`);
    const unadvertised = declaration.uses.filter((path) => !advertised.has(path));
    if (unadvertised.length > 0) {
      invalid(`feature set ${name} uses ${unadvertised.join(', ')}, which the server does not advertise`);
    }
    featureSets[name] = declarationJson(declaration);
  }
  manifest.featureSets = featureSets;
  manifestRevision(manifest);
  return manifest;
}

/**
 * The manifest as one connection sees it: `featureSets` in the requested form, and the
 * `revision` computed over exactly what is presented, so a host that recomputes it agrees.
 */
export function presentManifest(manifest: JsonObject, form: FeatureSetsForm): JsonObject {
  const presented: JsonObject = { ...manifest };
  delete presented.revision;
  if (form === 'array' && isPlainObject(manifest.featureSets)) {
    presented.featureSets = Object.entries(manifest.featureSets).map(([name, declaration]) => ({
      name,
      ...(declaration as JsonObject),
    }));
  }
  return { revision: manifestRevision(presented), ...presented };
}

function domainViews(manifest: JsonObject): Record<ManifestDomain, string> {
  const capabilities: JsonObject = {};
  for (const [key, value] of Object.entries(manifest)) {
    if (key !== 'version' && key !== 'revision' && key !== 'featureSets') capabilities[key] = value;
  }
  const absent = '<absent>';
  const sets = manifest.featureSets;
  let featureSets = absent;
  let tagOntology = absent;
  if (sets !== undefined) {
    const withoutOntology: JsonObject = {};
    const ontologies: JsonObject = {};
    if (isPlainObject(sets)) {
      for (const [name, declaration] of Object.entries(sets)) {
        if (isPlainObject(declaration)) {
          const { tagOntology: ontology, ...rest } = declaration as JsonObject;
          withoutOntology[name] = rest;
          if (ontology !== undefined) ontologies[name] = ontology;
        } else {
          withoutOntology[name] = declaration;
        }
      }
      featureSets = canonicalJson(withoutOntology);
    } else {
      featureSets = canonicalJson(sets);
    }
    tagOntology = canonicalJson(ontologies);
  }
  return { capabilities: canonicalJson(capabilities), featureSets, tagOntology };
}

/**
 * The domains that differ between two manifests (§17.3); an absent member and an empty one
 * are different manifests, so a member appearing or disappearing changes its domain.
 */
export function changedDomains(previous: JsonObject, next: JsonObject): ManifestDomain[] {
  const before = domainViews(previous);
  const after = domainViews(next);
  return (['capabilities', 'featureSets', 'tagOntology'] as const).filter(
    (domain) => before[domain] !== after[domain],
  );
}
