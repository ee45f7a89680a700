import { createHash } from 'node:crypto';
import { McplError } from './errors.js';
import { isPlainObject, isStringArray } from './json.js';

/** The characters an identifier may use (§17.2): capability paths, feature-set names, tags. */
const identifierPattern = /^[A-Za-z0-9._:*-]+$/;

/** True when `value` is a non-empty run of `[A-Za-z0-9._:*-]`. */
export function isIdentifier(value: string): boolean {
  return identifierPattern.test(value);
}

/**
 * Orders two strings by their UTF-8 byte sequences, which is code-point order; JavaScript's
 * default comparison (UTF-16 code units) disagrees above U+FFFF.
 */
export function compareUtf8(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i) as number;
    const y = b.codePointAt(j) as number;
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  const restA = a.length - i;
  const restB = b.length - j;
  return restA === restB ? 0 : restA < restB ? -1 : 1;
}

/** A set-valued array as §17.2 normalizes it: duplicates removed, sorted by UTF-8 bytes. */
export function sortSet(values: readonly string[]): string[] {
  return [...new Set(values)].sort(compareUtf8);
}

function refuse(reason: string, path: string, message: string): never {
  throw new McplError('MCPL_DIGEST_REFUSED', message, { details: { reason, path } });
}

function checkIdentifier(value: string, path: string): void {
  if (!isIdentifier(value)) {
    refuse(
      'identifier_charset',
      path,
      `${path} is ${JSON.stringify(value.slice(0, 80))}, not a non-empty run of [A-Za-z0-9._:*-]`,
    );
  }
}

/** Checks capability member names at every depth below a root capability member. */
function checkCapabilityNames(value: unknown, path: string): void {
  if (!isPlainObject(value)) return;
  for (const [key, child] of Object.entries(value)) {
    checkIdentifier(key, `${path}.#key`);
    checkCapabilityNames(child, `${path}.${key}`);
  }
}

/** Checks the string members of a list-valued identifier position. */
function checkStringMembers(value: unknown, path: string): void {
  if (!Array.isArray(value)) return;
  for (const item of value) if (typeof item === 'string') checkIdentifier(item, `${path}.[]`);
}

/** A set position: an all-string array is checked and normalized; anything else is hashed verbatim. */
function normalizeSet(value: unknown, path: string): unknown {
  if (!isStringArray(value)) return value;
  for (const item of value) checkIdentifier(item, `${path}.[]`);
  return sortSet(value);
}

function normalizeOntology(ontology: unknown, path: string): unknown {
  if (!isPlainObject(ontology)) return ontology;
  const out: Record<string, unknown> = { ...ontology };
  if ('coreTags' in ontology) out.coreTags = normalizeSet(ontology.coreTags, `${path}.coreTags`);
  if (isPlainObject(ontology.tags)) {
    const tags: Record<string, unknown> = {};
    for (const [tag, described] of Object.entries(ontology.tags)) {
      checkIdentifier(tag, `${path}.tags.#key`);
      if (!isPlainObject(described)) {
        tags[tag] = described;
        continue;
      }
      const next: Record<string, unknown> = { ...described };
      if ('implies' in described) next.implies = normalizeSet(described.implies, `${path}.tags.*.implies`);
      if (typeof described.facet === 'string') checkIdentifier(described.facet, `${path}.tags.*.facet`);
      tags[tag] = next;
    }
    out.tags = tags;
  }
  if (isPlainObject(ontology.keyed)) {
    for (const [key, family] of Object.entries(ontology.keyed)) {
      checkIdentifier(key, `${path}.keyed.#key`);
      if (isPlainObject(family)) checkStringMembers(family.values, `${path}.keyed.*.values`);
    }
  }
  if (Array.isArray(ontology.suggestedTreatment)) {
    for (const rule of ontology.suggestedTreatment) {
      if (!isPlainObject(rule)) continue;
      for (const matcher of ['tagsAny', 'tagsAll', 'tagsNone'] as const) {
        checkStringMembers(rule[matcher], `${path}.suggestedTreatment.*.${matcher}`);
      }
    }
  }
  return out;
}

/**
 * The manifest with its root `revision` stripped, identifiers checked and the three
 * set-valued arrays normalized (only in the object-keyed `featureSets` shape).
 */
function normalizeManifest(manifest: unknown): Record<string, unknown> {
  if (!isPlainObject(manifest)) refuse('manifest_not_object', '', 'the manifest is not a JSON object');
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(manifest)) {
    if (key === 'revision') continue;
    if (key === 'version') {
      out[key] = value;
      continue;
    }
    if (key === 'featureSets') {
      out[key] = normalizeFeatureSets(value);
      continue;
    }
    checkIdentifier(key, '#key');
    checkCapabilityNames(value, key);
    out[key] = value;
  }
  return out;
}

function normalizeFeatureSets(value: unknown): unknown {
  // The array form is non-conforming and hashed verbatim (§17.2).
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [name, declaration] of Object.entries(value)) {
    checkIdentifier(name, 'featureSets.#key');
    if (!isPlainObject(declaration)) {
      out[name] = declaration;
      continue;
    }
    const next: Record<string, unknown> = { ...declaration };
    if ('uses' in declaration) next.uses = normalizeSet(declaration.uses, 'featureSets.*.uses');
    if ('tagOntology' in declaration) {
      next.tagOntology = normalizeOntology(declaration.tagOntology, 'featureSets.*.tagOntology');
    }
    out[name] = next;
  }
  return out;
}

/**
 * RFC 8785 (JCS) serialization: object members sorted by UTF-16 code units, strings and
 * numbers as ECMAScript's `JSON.stringify` writes them, no insignificant whitespace.
 *
 * @throws McplError `MCPL_DIGEST_REFUSED` (`non_finite_number`) for NaN or an infinity.
 */
export function canonicalJson(value: unknown, path = ''): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value))
        refuse('non_finite_number', path, `${path || 'a value'} is not a finite number`);
      return JSON.stringify(value);
    case 'string':
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) {
        return `[${value.map((item, index) => canonicalJson(item ?? null, `${path}[${index}]`)).join(',')}]`;
      }
      const record = value as Record<string, unknown>;
      const members = Object.keys(record)
        .filter((key) => record[key] !== undefined)
        .sort()
        .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key], path ? `${path}.${key}` : key)}`);
      return `{${members.join(',')}}`;
    }
    default:
      return refuse('not_json', path, `${path || 'a value'} is a ${typeof value}, which JSON cannot carry`);
  }
}

/**
 * The canonical bytes of a manifest (§17.2), as a string: root `revision` stripped, set-valued
 * arrays sorted by UTF-8 bytes and deduplicated, then JCS.
 *
 * @throws McplError `MCPL_DIGEST_REFUSED` when an identifier is outside `[A-Za-z0-9._:*-]`
 * (`identifier_charset`), the manifest is not an object, or a number is not finite.
 */
export function canonicalizeManifest(manifest: unknown): string {
  return canonicalJson(normalizeManifest(manifest));
}

/**
 * The manifest's revision (§17.2): `sha256:` + unpadded base64url of SHA-256 over its
 * canonical UTF-8 bytes. Total over every JSON object whose identifiers are legal.
 *
 * @throws McplError `MCPL_DIGEST_REFUSED`, as {@link canonicalizeManifest}.
 */
export function manifestRevision(manifest: unknown): string {
  const digest = createHash('sha256').update(canonicalizeManifest(manifest), 'utf8').digest('base64url');
  return `sha256:${digest}`;
}
