/** A set bounded to its `limit` newest members: dedupe state a long session cannot grow without end. */
export class RecentSet {
  readonly #items = new Set<string>();
  readonly #limit: number;

  constructor(limit = 1024) {
    this.#limit = limit;
  }

  has(item: string): boolean {
    return this.#items.has(item);
  }

  add(item: string): void {
    this.#items.add(item);
    if (this.#items.size > this.#limit) this.#items.delete(this.#items.values().next().value as string);
  }
}
