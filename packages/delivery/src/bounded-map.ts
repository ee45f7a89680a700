/**
 * A map that keeps at most `capacity` entries, forgetting the oldest insertion first. Eviction
 * order lives in a ring of keys, so it costs O(1) (deleting from the front of a `Map` and asking
 * for its first key again walks the holes deletions leave).
 */
export class BoundedMap<K, V> {
  readonly #map = new Map<K, V>();
  readonly #ring: (K | undefined)[];
  #next = 0;

  constructor(capacity: number) {
    this.#ring = new Array<K | undefined>(Math.max(1, capacity)).fill(undefined);
  }

  get size(): number {
    return this.#map.size;
  }

  get(key: K): V | undefined {
    return this.#map.get(key);
  }

  has(key: K): boolean {
    return this.#map.has(key);
  }

  /** Sets a value; a new key takes the oldest slot (forgetting what was there). */
  set(key: K, value: V): void {
    if (!this.#map.has(key)) {
      const old = this.#ring[this.#next];
      if (old !== undefined) this.#map.delete(old);
      this.#ring[this.#next] = key;
      this.#next = (this.#next + 1) % this.#ring.length;
    }
    this.#map.set(key, value);
  }

  delete(key: K): boolean {
    // The ring keeps its slot; evicting it later deletes nothing (or an entry set again since).
    return this.#map.delete(key);
  }
}
