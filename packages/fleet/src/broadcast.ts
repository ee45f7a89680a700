import { randomUUID } from 'node:crypto';
import { errorCode } from '@zmcp/core';
import type { Database } from './database.js';

/**
 * Messages to every process sharing the state, by topic: what a fleet's processes tell each other
 * (a resource changed, so every `subscriptions/listen` stream hears of it). At most once, as
 * PostgreSQL's `NOTIFY` is: a process whose listener was disconnected misses what was sent meanwhile.
 */
export interface Broadcast {
  /**
   * Sends `message` (JSON, under 7,000 bytes serialized) to the listeners of `topic` in this
   * process (at once, in order) and in every other one.
   */
  publish(topic: string, message: unknown): void;
  /** Listens to `topic`; returns the (idempotent) unsubscribe function. */
  subscribe(topic: string, listener: (message: unknown) => void): () => void;
  /** Resolves once this process hears what the others publish (its listener is connected). */
  ready(): Promise<void>;
}

/** The longest serialized message: NOTIFY's payload is at most 8,000 bytes, the envelope included. */
const MAX_MESSAGE_BYTES = 7_000;

/** The broadcast of a PostgreSQL backend: `NOTIFY zmcp_broadcast`, local listeners called directly. */
export class PgBroadcast implements Broadcast {
  readonly #db: Database;
  readonly #origin = randomUUID();
  readonly #local = new Map<string, Set<(message: unknown) => void>>();

  constructor(db: Database) {
    this.#db = db;
  }

  publish(topic: string, message: unknown): void {
    const text = JSON.stringify(message);
    if (Buffer.byteLength(text) > MAX_MESSAGE_BYTES) {
      throw new RangeError(`a broadcast message is limited to ${MAX_MESSAGE_BYTES} bytes`);
    }
    for (const listener of [...(this.#local.get(topic) ?? [])]) {
      try {
        listener(message);
      } catch (err) {
        this.#db.logger.warn('a broadcast listener failed', { topic, code: errorCode(err) });
      }
    }
    const payload = `{"schema":${JSON.stringify(this.#db.schema)},"topic":${JSON.stringify(topic)},"origin":"${this.#origin}","message":${text}}`;
    this.#db.pool.query('SELECT pg_notify($1, $2)', ['zmcp_broadcast', payload]).catch((err: unknown) =>
      this.#db.logger.warn('a broadcast did not reach the other processes', {
        topic,
        code: errorCode(err),
      }),
    );
  }

  async ready(): Promise<void> {
    await this.#db.listening();
  }

  subscribe(topic: string, listener: (message: unknown) => void): () => void {
    let set = this.#local.get(topic);
    if (set === undefined) {
      set = new Set();
      this.#local.set(topic, set);
    }
    set.add(listener);
    const off = this.#db.onBroadcast(topic, (message, origin) => {
      if (origin === this.#origin) return;
      try {
        listener(message);
      } catch (err) {
        this.#db.logger.warn('a broadcast listener failed', { topic, code: errorCode(err) });
      }
    });
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#local.get(topic)?.delete(listener);
      off();
    };
  }
}
