import { McplError } from './errors.js';

/** Namespaced tags: `namespace:value`, optionally `namespace:key=value` (§16.1). */
const tagPattern = /^[A-Za-z0-9._-]+:[^\s\u0000-\u001f\u007f]+$/;

/** True for a namespaced tag (`namespace:value`); a bare `mention` is not a tag. */
export function isTag(value: unknown): value is string {
  return typeof value === 'string' && tagPattern.test(value);
}

/** The normative core closure of §16.3. */
const implications: Readonly<Record<string, readonly string[]>> = {
  'chat:mention': ['chat:addressed'],
  'chat:reply': ['chat:addressed'],
  'chat:dm': ['chat:addressed', 'chat:private'],
};

/**
 * A producer's tags as they go on the wire: validated as namespaced, deduplicated, closed
 * under §16.3 (the umbrellas emitted directly, as producers should), and `chat:ambient`
 * dropped when the set is addressed.
 *
 * @throws McplError `MCPL_INVALID_ARGUMENT` for an un-namespaced or malformed tag.
 */
export function closeTags(tags: Iterable<string>): string[] {
  const out = new Set<string>();
  const add = (tag: string) => {
    if (out.has(tag)) return;
    out.add(tag);
    for (const implied of implications[tag] ?? []) add(implied);
  };
  for (const tag of tags) {
    if (!isTag(tag)) {
      throw new McplError(
        'MCPL_INVALID_ARGUMENT',
        `tag ${JSON.stringify(String(tag).slice(0, 80))} is not namespace:value`,
      );
    }
    add(tag);
  }
  if (out.has('chat:addressed')) out.delete('chat:ambient');
  return [...out];
}
