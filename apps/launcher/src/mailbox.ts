import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { consumeInterruptFile } from '@zmcp/delivery';

/**
 * The launcher's side of one agent's interrupt file (`ZULIP_INTERRUPT_FILE` of its zulip-mcp):
 * follow-ups are dropped there for the agent's `listen` to pick up. A note the agent has not
 * taken yet is kept when another is added, so the file holds every untaken note, oldest first;
 * at the end of the run, whatever is still there was never delivered.
 */
export class InterruptMailbox {
  readonly path: string;
  #chain: Promise<unknown> = Promise.resolve();
  /** Trigger ids whose notes are in the file now (not yet taken by the agent). */
  #waiting: number[] = [];

  constructor(path: string) {
    this.path = path;
  }

  /** Adds a note for the agent; settles once the file holds it. Calls never overlap. */
  post(messageId: number, text: string): Promise<void> {
    return this.#serial(async () => {
      // Claimed the way the server claims it, so a note is never both taken and kept.
      const untaken = await consumeInterruptFile(this.path);
      if (untaken === undefined) this.#waiting = [];
      const content = untaken === undefined || untaken === '' ? text : `${untaken}\n\n${text}`;
      await writeReplacing(this.path, content);
      this.#waiting.push(messageId);
    });
  }

  /** Takes back what the agent never took (call after it exited): the trigger ids of those notes. */
  drain(): Promise<number[]> {
    return this.#serial(async () => {
      const untaken = await consumeInterruptFile(this.path).catch(() => undefined);
      const ids = untaken === undefined ? [] : this.#waiting;
      this.#waiting = [];
      return ids;
    });
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(work);
    this.#chain = next.catch(() => undefined);
    return next;
  }
}

/** Writes a temp file beside `target` and renames it over, so a reader never sees half a file. */
async function writeReplacing(target: string, content: string): Promise<void> {
  const temp = join(
    dirname(target),
    `.${basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`,
  );
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(content, 'utf8');
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, target);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
}
