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
