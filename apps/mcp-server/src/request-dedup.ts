import { createHash } from 'node:crypto';

/** A JSON-RPC request id: `1` and `"1"` are different ids. */
export type RequestId = string | number;

interface Entry<T> {
  fingerprint: string;
  result: Promise<T>;
}

/** Why a request could not be de-duplicated: its id was already used for a different call. */
export class RequestIdReusedError extends Error {
  override readonly name = 'RequestIdReusedError';
}

/**
 * Remembers the result of recent requests by JSON-RPC id, so a retried request (same id,
 * same call) gets the first answer instead of running again. Bounded: past `capacity`
 * entries the oldest is forgotten. One instance per MCP session.
 */
export class RequestDeduplicator<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(private readonly capacity: number) {}

  /**
   * Runs `work` for a new id, or returns the result promise of the earlier request with
   * this id. Throws `RequestIdReusedError` when the id was used for a different call.
   */
  run(id: RequestId, fingerprint: string, work: () => Promise<T>): Promise<T> {
    // The type prefix keeps number 1 and string "1" apart.
    const key = `${typeof id === 'number' ? 'n' : 's'}:${id}`;
    const seen = this.entries.get(key);
    if (seen) {
      if (seen.fingerprint !== fingerprint) {
        throw new RequestIdReusedError(
          `request id ${JSON.stringify(id)} was already used for a different call`,
        );
      }
      return seen.result;
    }
    const result = work();
    this.entries.set(key, { fingerprint, result });
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    return result;
  }

  /** How many request ids are remembered. */
  get size(): number {
    return this.entries.size;
  }
}

/**
 * The fingerprint of one tool call, for {@link RequestDeduplicator.run}: a SHA-256 of the tool
 * name and its arguments serialized as `JSON.stringify` would (keys in their order, `undefined`
 * and functions left out). Unlike `JSON.stringify`, it walks the arguments with a stack of its
 * own, so arguments nested a hundred thousand levels deep (hostile input: nothing stops a client
 * from sending them) cannot overflow the call stack and turn a tool call into a JSON-RPC
 * internal error, and it keeps 32 bytes per remembered request instead of the whole arguments
 * (inline attachments included).
 */
export function callFingerprint(name: string, args: unknown): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify(name));
  hash.update('\u0000');
  // Each item is a value to write, or a literal token (brackets, commas, keys) already written out.
  const stack: ({ value: unknown } | { token: string })[] = [{ value: args }];
  while (stack.length > 0) {
    const item = stack.pop() as { value: unknown } | { token: string };
    if ('token' in item) {
      hash.update(item.token);
      continue;
    }
    const { value } = item;
    if (value === null || typeof value !== 'object') {
      hash.update(
        typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
          ? JSON.stringify(value)
          : 'null',
      );
      continue;
    }
    const parts: ({ value: unknown } | { token: string })[] = [];
    if (Array.isArray(value)) {
      parts.push({ token: '[' });
      value.forEach((element, index) => {
        if (index > 0) parts.push({ token: ',' });
        parts.push({ value: element });
      });
      parts.push({ token: ']' });
    } else {
      parts.push({ token: '{' });
      let first = true;
      for (const [key, element] of Object.entries(value)) {
        if (element === undefined || typeof element === 'function') continue;
        parts.push({ token: `${first ? '' : ','}${JSON.stringify(key)}:` });
        parts.push({ value: element });
        first = false;
      }
      parts.push({ token: '}' });
    }
    // Pushed in reverse, so they are written in order.
    for (let i = parts.length - 1; i >= 0; i--)
      stack.push(parts[i] as { value: unknown } | { token: string });
  }
  return hash.digest('base64url');
}
