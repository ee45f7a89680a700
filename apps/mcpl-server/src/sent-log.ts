import type { WriteTarget } from '@zmcp/core';

/** One message the server sent for the agent, and where it went. */
export interface SentMessage {
  readonly messageId: number;
  /** Where it was sent: a stream (it may have been moved since) or a DM (a DM never moves). */
  readonly sentTo: WriteTarget;
}

/**
 * The messages this server sent for the agent (tool sends and `channels/publish` alike), in order,
 * so a rollback can delete what was sent after a checkpoint. A checkpoint stores a mark (how many
 * had been sent when it was minted); marks only grow, so a branch after a rollback starts fresh.
 */
export class SentLog {
  #entries: (SentMessage & { seq: number })[] = [];
  #next = 0;
  readonly #limit: number;

  constructor(limit = 10_000) {
    this.#limit = limit;
  }

  /** The mark a checkpoint minted now stores. */
  get mark(): number {
    return this.#next;
  }

  record(messageId: number, sentTo: WriteTarget): void {
    this.#entries.push({ seq: this.#next++, messageId, sentTo });
    if (this.#entries.length > this.#limit) this.#entries.splice(0, this.#entries.length - this.#limit);
  }

  /** Messages sent at or after `mark`, newest first. */
  since(mark: number): SentMessage[] {
    return this.#entries
      .filter((e) => e.seq >= mark)
      .map(({ messageId, sentTo }) => ({ messageId, sentTo }))
      .reverse();
  }

  /** Forgets messages that are gone (deleted by a rollback). */
  forget(messageIds: readonly number[]): void {
    const gone = new Set(messageIds);
    this.#entries = this.#entries.filter((e) => !gone.has(e.messageId));
  }
}
