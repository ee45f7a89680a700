import { errorCode, type Logger, noopLogger } from '@zmcp/core';
import { z } from 'zod';
import type { StateKey } from './state-key.js';
import type { StateStore } from './state-store.js';

const messageId = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/** Most accepted-above-the-watermark ids kept per channel (they only exist inside one offer window). */
export const MAX_ABOVE = 10_000;
/** Most offered message ids remembered per channel across restarts, for change lines. */
export const MAX_SEEN_PER_CHANNEL = 64;

const ChannelStateSchema = z.object({
  /** The channel id as last registered (it follows a stream's name). */
  id: z.string().min(1).max(2_000),
  /** Every deliverable message of the channel up to here has been accepted (or was not for the agent). */
  w: messageId,
  /** Ids above the watermark the host accepted out of order (a batch accepted in part). */
  above: z.array(messageId).max(MAX_ABOVE).optional(),
  /** The host had the channel open. */
  open: z.literal(true).optional(),
  /** The host refused the channel's announcement; it is not announced again until asked. */
  refused: z.literal(true).optional(),
  /** Ambient messages dropped on the closed channel since the tally was last cleared, and their id range. */
  ambient: z.number().int().nonnegative().optional(),
  ambientFrom: messageId.optional(),
  ambientTo: messageId.optional(),
  /** Recently offered message ids, so changes to them still surface after a restart. */
  seen: z.array(messageId).max(MAX_SEEN_PER_CHANNEL).optional(),
});

/** The durable state of one channel. */
export type ChannelState = z.infer<typeof ChannelStateSchema>;

/** The `delivery` state of a session (`<session>.delivery.json` in the file store). */
export const DeliveryStateSchema = z.object({
  version: z.literal(1),
  /** The newest message id the engine has processed: where a channel it has never seen starts. */
  head: messageId,
  channels: z.record(
    z.string().regex(/^(?:s[1-9][0-9]*|d[1-9][0-9]*(?:,[1-9][0-9]*)*)$/),
    ChannelStateSchema,
  ),
});

/** The durable state of a session's delivery. */
export type DeliveryState = z.infer<typeof DeliveryStateSchema>;

/**
 * Writes the delivery state behind the engine: every change marks it dirty, and one write at a
 * time carries the latest snapshot, so the file is at most one write behind what was accepted.
 * A failed write is retried with the next change, by `flush`, or after a backoff; it is logged.
 */
export class StateWriter {
  readonly #store: StateStore;
  readonly #key: StateKey;
  readonly #snapshot: () => DeliveryState;
  readonly #logger: Logger;
  #dirty = false;
  #writing: Promise<void> | undefined;
  #failures = 0;
  #flushing = false;
  #retry: NodeJS.Timeout | undefined;
  #lastError: unknown;

  readonly #gapMs: number;

  /** `gapMs`: the least time between the end of one write and the start of the next. */
  constructor(
    store: StateStore,
    key: StateKey,
    snapshot: () => DeliveryState,
    logger: Logger = noopLogger,
    gapMs = 0,
  ) {
    this.#store = store;
    this.#key = key;
    this.#snapshot = snapshot;
    this.#logger = logger;
    this.#gapMs = gapMs;
  }

  /** How many writes in a row have failed (0 when the last one worked). */
  get failures(): number {
    return this.#failures;
  }

  get lastError(): unknown {
    return this.#lastError;
  }

  /** Notes a change; a write starts now unless one is running (then it follows that one). */
  mark(): void {
    this.#dirty = true;
    if (this.#writing === undefined) this.#writing = this.#drain();
  }

  /**
   * Resolves once everything marked before the call is on the store.
   *
   * @throws the store's error when the last write failed.
   */
  async flush(): Promise<void> {
    this.#flushing = true;
    try {
      await this.#flushNow();
    } finally {
      this.#flushing = false;
    }
  }

  async #flushNow(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
    if (this.#dirty) {
      this.#writing = this.#drain();
      await this.#writing;
    }
    if (this.#dirty) throw this.#lastError;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#dirty) {
        this.#dirty = false;
        try {
          await this.#store.write(this.#key, this.#snapshot());
          this.#failures = 0;
          if (this.#gapMs > 0 && this.#dirty && !this.#flushing) {
            await new Promise<void>((resolve) => setTimeout(resolve, this.#gapMs).unref());
          }
        } catch (err) {
          this.#dirty = true;
          this.#failures += 1;
          this.#lastError = err;
          this.#logger.error('could not write the delivery state; retrying', {
            code: errorCode(err),
            failures: this.#failures,
          });
          // Try again later even if nothing else changes (a full disk may be cleared).
          if (this.#retry === undefined) {
            this.#retry = setTimeout(
              () => {
                this.#retry = undefined;
                if (this.#dirty && this.#writing === undefined) this.#writing = this.#drain();
              },
              Math.min(30_000, 500 * 2 ** Math.min(this.#failures - 1, 6)),
            );
            this.#retry.unref();
          }
          return;
        }
      }
    } finally {
      this.#writing = undefined;
    }
  }
}
