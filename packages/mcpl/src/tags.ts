import { McplError } from './errors.js';

/** Namespaced tags: `namespace:value`, optionally `namespace:key=value` (§16.1). */
const tagPattern = /^[A-Za-z0-9._-]+:[^\s\u0000-\u001f\u007f]+$/;

/** True for a namespaced tag (`namespace:value`); a bare `mention` is not a tag. */
export function isTag(value: unknown): value is string {
  return typeof value === 'string' && tagPattern.test(value);
}

/** The normative core closure of §16.3. */
const implications: ReadonlyMap<string, readonly string[]> = new Map([
  ['chat:mention', ['chat:addressed']],
  ['chat:reply', ['chat:addressed']],
  ['chat:dm', ['chat:addressed', 'chat:private']],
]);

// Sets of tags are a handful long: an array scan beats a Set until a list is this long, and
// past it a Set keeps a hostile producer's thousands of tags linear.
const SMALL = 16;

/** Adds `tag` and what it implies, each once, in first-seen order (umbrellas after their source). */
function addClosed(out: string[], seen: Set<string> | undefined, tag: string): Set<string> | undefined {
  if (seen === undefined ? out.includes(tag) : seen.has(tag)) return seen;
  out.push(tag);
  let index = seen;
  if (index !== undefined) index.add(tag);
  else if (out.length > SMALL) index = new Set(out);
  const implied = implications.get(tag);
  if (implied !== undefined) for (const umbrella of implied) index = addClosed(out, index, umbrella);
  return index;
}

/**
 * A producer's tags as they go on the wire: validated as namespaced, deduplicated, closed
 * under §16.3 (the umbrellas emitted directly, as producers should), and `chat:ambient`
 * dropped when the set is addressed.
 *
 * @throws McplError `MCPL_INVALID_ARGUMENT` for an un-namespaced or malformed tag.
 */
export function closeTags(tags: Iterable<string>): string[] {
  return close(tags, true);
}

/**
 * The same closure over tags a peer sent: a producer must namespace its tags, and a bare or
 * malformed one is ignored rather than fatal.
 */
export function closeTagsLeniently(tags: Iterable<unknown>): string[] {
  return close(tags, false);
}

function close(tags: Iterable<unknown>, strict: boolean): string[] {
  const out: string[] = [];
  let seen: Set<string> | undefined;
  for (const tag of tags) {
    if (!isTag(tag)) {
      if (!strict) continue;
      throw new McplError(
        'MCPL_INVALID_ARGUMENT',
        `tag ${JSON.stringify(String(tag).slice(0, 80))} is not namespace:value`,
      );
    }
    seen = addClosed(out, seen, tag);
  }
  if (seen === undefined ? out.includes('chat:addressed') : seen.has('chat:addressed')) {
    const ambient = out.indexOf('chat:ambient');
    if (ambient !== -1) out.splice(ambient, 1);
  }
  return out;
}

/** True when two tag lists are the same, in the same order. */
export function sameTags(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}
