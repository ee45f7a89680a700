import { ToolError } from './errors.js';

interface Entry<T> {
  fingerprint: string;
  result: Promise<T>;
}

/**
 * Remembers the result of recent requests by request id, so a retried request (same id, same
 * call) gets the first answer instead of running again. Bounded: past `capacity` entries the
 * oldest is forgotten. One instance per session.
 */
export class RequestDeduplicator<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(private readonly capacity: number) {}

  /**
   * Runs `work` for a new id, or returns the result promise of the earlier request with this id.
   * @throws ToolError `TOOLS_REQUEST_ID_REUSED` when the id was used for a different call.
   */
  run(id: string | number, fingerprint: string, work: () => Promise<T>): Promise<T> {
    // The type prefix keeps number 1 and string "1" apart.
    const key = `${typeof id === 'number' ? 'n' : 's'}:${id}`;
    const seen = this.entries.get(key);
    if (seen) {
      if (seen.fingerprint !== fingerprint) {
        throw new ToolError(
          'TOOLS_REQUEST_ID_REUSED',
          `request id ${JSON.stringify(id).slice(0, 80)} was already used for a different call`,
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
}
