import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@zmcp/core';
import {
  DeliveryError,
  isDeliveryError,
  type StateKey,
  type StateLock,
  type StateStore,
} from '@zmcp/delivery';
import { z } from 'zod';
import { type StoredTrigger, TriggerInfoSchema } from './triggers.js';

/**
 * Where a trigger stands. `queued`: waiting for a free slot; `running`: its agent was started
 * (recorded before the process is spawned); `followup`: handed to the running agent of its
 * conversation through the interrupt file; `merged`: folded into another trigger of the same
 * conversation; `done` / `failed`: over.
 */
export type TriggerStatus = 'queued' | 'running' | 'followup' | 'merged' | 'done' | 'failed';

const RecordSchema = z.object({
  trigger: TriggerInfoSchema,
  status: z.enum(['queued', 'running', 'followup', 'merged', 'done', 'failed']),
  /** When the record last changed, in ms. */
  at: z.number(),
  runId: z.string().optional(),
  pid: z.number().int().optional(),
  backend: z.string().optional(),
  /** For followup and merged: the trigger whose agent got it. */
  into: z.number().int().optional(),
  reason: z.string().optional(),
});

/** One trigger as the state file keeps it. */
export type TriggerRecord = z.infer<typeof RecordSchema>;

const LedgerSchema = z.object({
  version: z.literal(1),
  /** The newest message id examined: a restart catches up from here. */
  lastMessageId: z.number().int().nonnegative(),
  triggers: z.array(RecordSchema),
});

type LedgerState = z.infer<typeof LedgerSchema>;

const ACTIVE: ReadonlySet<TriggerStatus> = new Set(['queued', 'running', 'followup']);
/** How many finished triggers the file keeps, newest first, to recognise them if seen again. */
const KEEP_FINISHED = 1000;

/**
 * The durable record of every trigger the launcher has seen and what became of it, in one
 * atomically written state file. Each change is on disk before the launcher acts on it, so a
 * trigger seen before a crash is neither started twice nor forgotten.
 */
export class TriggerLedger {
  readonly #store: StateStore;
  readonly #key: StateKey;
  readonly #now: () => number;
  #state: LedgerState;
  readonly #byId = new Map<number, TriggerRecord>();
  #writing: Promise<void> = Promise.resolve();
  /** The record is on disk (read, or written once): a later open is not fresh. */
  #stored: boolean;

  private constructor(store: StateStore, key: StateKey, state: LedgerState | undefined, now: () => number) {
    this.#store = store;
    this.#key = key;
    this.#state = state ?? { version: 1, lastMessageId: 0, triggers: [] };
    this.#stored = state !== undefined;
    this.#now = now;
    for (const r of this.#state.triggers) this.#byId.set(r.trigger.messageId, r);
  }

  /**
   * Opens the record of launcher `id`, kept per realm and bot under `account` (`@zmcp/delivery`'s
   * `stateAccount`: message ids mean something on one realm only); `fresh` is true when there was
   * none yet. A record an earlier version kept without an account (`<id>.json` at the top of the
   * state directory) is taken over by the first account that opens it: moved under the account,
   * so no other realm or bot ever reads it.
   * @throws DeliveryError `DELIVERY_STATE_CORRUPT` (the file is left as is), `DELIVERY_IO_FAILED`.
   */
  static async open(
    store: StateStore,
    id: string,
    options: { account?: string | undefined; now?: (() => number) | undefined } = {},
  ): Promise<{ ledger: TriggerLedger; fresh: boolean }> {
    // The launcher's record takes the slot named by its id; keep its state directory to itself.
    const key: StateKey = { account: options.account, session: id, kind: 'monitor' };
    const now = options.now ?? Date.now;
    const state = await store.read(key, LedgerSchema);
    if (state === undefined && options.account !== undefined) {
      const earlier: StateKey = { session: id, kind: 'monitor' };
      const adopted = await store.read(earlier, LedgerSchema);
      if (adopted !== undefined) {
        await store.write(key, adopted);
        await store.delete(earlier);
        return { ledger: new TriggerLedger(store, key, adopted, now), fresh: false };
      }
    }
    return {
      ledger: new TriggerLedger(store, key, state, now),
      fresh: state === undefined,
    };
  }

  get lastMessageId(): number {
    return this.#state.lastMessageId;
  }

  get(messageId: number): TriggerRecord | undefined {
    return this.#byId.get(messageId);
  }

  /** Triggers not yet over, oldest first. */
  active(): TriggerRecord[] {
    return this.#state.triggers
      .filter((r) => ACTIVE.has(r.status))
      .sort((a, b) => a.trigger.messageId - b.trigger.messageId);
  }

  /** Adds a trigger seen for the first time (and moves the catch-up point past it); durable when it resolves. */
  async add(
    trigger: StoredTrigger,
    status: TriggerStatus,
    extra: Partial<TriggerRecord> = {},
  ): Promise<TriggerRecord> {
    const record: TriggerRecord = { ...extra, trigger, status, at: this.#now() };
    this.#byId.set(trigger.messageId, record);
    this.#state.triggers.push(record);
    if (trigger.messageId > this.#state.lastMessageId) this.#state.lastMessageId = trigger.messageId;
    await this.#save();
    return record;
  }

  /** Changes a trigger's record; durable when it resolves. */
  async update(messageId: number, change: Partial<Omit<TriggerRecord, 'trigger'>>): Promise<void> {
    const record = this.#byId.get(messageId);
    if (record === undefined) return;
    Object.assign(record, change, { at: this.#now() });
    await this.#save();
  }

  /**
   * Moves the catch-up point forward (never back); durable when it resolves. A fresh record is
   * written even when the point stays where it is (a bot that has received nothing yet: Zulip's
   * `max_message_id` is -1), so the next start catches up instead of starting fresh again.
   */
  async advance(messageId: number): Promise<void> {
    if (messageId <= this.#state.lastMessageId && this.#stored) return;
    this.#state.lastMessageId = Math.max(this.#state.lastMessageId, messageId);
    await this.#save();
  }

  /** Writes are chained: each one holds every change made before it. */
  #save(): Promise<void> {
    const write = this.#writing.then(() => {
      this.#prune();
      return this.#store.write(this.#key, this.#state).then(() => {
        this.#stored = true;
      });
    });
    // A failed write must not wedge the ones after it; its caller still sees the failure.
    this.#writing = write.catch(() => undefined);
    return write;
  }

  #prune(): void {
    const finished = this.#state.triggers.filter((r) => !ACTIVE.has(r.status));
    if (finished.length <= KEEP_FINISHED) return;
    const drop = new Set(
      finished
        .sort((a, b) => b.trigger.messageId - a.trigger.messageId)
        .slice(KEEP_FINISHED)
        .map((r) => r.trigger.messageId),
    );
    this.#state.triggers = this.#state.triggers.filter((r) => !drop.has(r.trigger.messageId));
    for (const id of drop) this.#byId.delete(id);
  }
}

/**
 * Takes the lock of a launcher's record (`store.lock`), waiting while another launcher with the
 * same id holds it: one launcher per record at a time, on one machine (a lock file) or, with
 * `ZULIP_STATE_URL`, on every machine sharing the database (a standby that takes over the moment
 * the first one stops or dies). A store without locks is not locked. Logs once while it waits.
 * @throws DeliveryError `DELIVERY_NOT_RUNNING` when `signal` aborts the wait; the store's errors.
 */
export async function holdRecord(
  store: StateStore,
  key: StateKey,
  options: { signal: AbortSignal; logger: Logger; retryMs?: number | undefined },
): Promise<StateLock | undefined> {
  if (store.lock === undefined) return undefined;
  let told = false;
  while (true) {
    try {
      const lock = await store.lock(key);
      if (told) options.logger.info('the trigger record is free: starting');
      return lock;
    } catch (err) {
      if (!isDeliveryError(err, 'DELIVERY_STATE_LOCKED')) throw err;
      if (!told) {
        options.logger.warn('waiting for the trigger record: another launcher with this id runs', {
          ...err.details,
        });
        told = true;
      }
    }
    try {
      await sleep(options.retryMs ?? 1_000, undefined, { signal: options.signal });
    } catch {
      throw new DeliveryError('DELIVERY_NOT_RUNNING', 'the launcher stopped while it waited for its record');
    }
  }
}
