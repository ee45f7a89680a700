import { appendInterruptNote, consumeInterruptFile, parseInterruptNotes } from '@zmcp/delivery';

/**
 * The launcher's side of one agent's interrupt file (`ZULIP_INTERRUPT_FILE` of its zulip-mcp):
 * follow-ups are dropped there for the agent's `listen` to pick up, each as a note naming the
 * message it passes on (so the agent gets that message once: as a message, or in the note). A
 * note the agent has not taken yet is kept when another is added, so the file holds every untaken
 * note, oldest first; at the end of the run, whatever is still there was never delivered.
 */
export class InterruptMailbox {
  readonly path: string;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(path: string) {
    this.path = path;
  }

  /** Adds a note passing on message `messageId`; settles once the file holds it. Calls never overlap. */
  post(messageId: number, text: string): Promise<void> {
    return this.#serial(() => appendInterruptNote(this.path, { text, messageId }));
  }

  /** Takes back what the agent never took (call after it exited): the message ids those notes pass on. */
  drain(): Promise<number[]> {
    return this.#serial(async () => {
      const untaken = await consumeInterruptFile(this.path).catch(() => undefined);
      if (untaken === undefined) return [];
      const ids = parseInterruptNotes(untaken).flatMap((note) =>
        note.messageId === undefined ? [] : [note.messageId],
      );
      return [...new Set(ids)];
    });
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(work);
    this.#chain = next.catch(() => undefined);
    return next;
  }
}
