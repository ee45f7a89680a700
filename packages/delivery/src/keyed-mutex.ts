/** Runs async tasks one at a time per key, in the order they were submitted. */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();

  /** Runs `task` after every task submitted earlier for `key` has settled; its result or error is passed through. */
  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => done);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await task();
    } finally {
      release();
      // The last task of a burst removes the entry, so idle keys cost nothing.
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}
