import { createHash } from 'node:crypto';
import { type Conversation, conversationKey } from '@zmcp/core';
import { isDeliveryError, MemoryStateStore, type StateKey, type StateStore } from '@zmcp/delivery';
import type { Attachment } from '@zmcp/uploads';
import { z } from 'zod';

// Send once: a model that repeats a send that succeeded (a new request id, the same words) would
// post twice. A send whose conversation and normalized text (and attachments) equal one that
// succeeded within the window is refused with the earlier message's id and link, unless the call
// says it means to repeat. The memory is per account, bounded, and kept in the state store, so a
// restarted process, or another sharing the store, remembers too. It holds hashes, never text.

/** How long a send is remembered by default: five minutes. */
export const DEFAULT_SEND_ONCE_WINDOW_MS = 300_000;
/** Most sends remembered per account; the oldest are forgotten first. */
const MAX_REMEMBERED = 500;
/** The session part of the memory's state key: one memory per account, whatever the session. */
const SESSION = 'outbox';

const RememberedSchema = z.object({
  key: z.string().regex(/^[0-9a-f]{64}$/),
  at: z.number(),
  ids: z.array(z.number().int().positive()).min(1),
  permalink: z.string().nullable(),
});
const SendsSchema = z.object({ version: z.literal(1), sends: z.array(RememberedSchema) });
type Sends = z.infer<typeof SendsSchema>;

/** A send the memory holds: when it went out, its message ids and a link to the first. */
export interface EarlierSend {
  readonly at: number;
  readonly ids: readonly number[];
  readonly permalink: string | null;
}

/** Options of {@link SendOnce}. */
export interface SendOnceOptions {
  /** How long a successful send is remembered, in milliseconds; 0 turns the rule off. Default 5 minutes. */
  windowMs?: number | undefined;
  /** Where the memory lives; default in memory, for this process only. */
  store?: StateStore | undefined;
  /** The realm and bot (`@zmcp/delivery`'s `stateAccount`): sends of one account never answer for another. */
  account?: string | undefined;
  /** Millisecond clock; tests inject one. */
  now?: (() => number) | undefined;
}

/** The text as compared: Unicode NFC, runs of white space as one space, trimmed. */
function normalized(text: string): string {
  return text.normalize('NFC').replace(/\s+/g, ' ').trim();
}

/** An attachment as compared: the file reference, or the name and a hash of the inline data. */
function attachmentKey(a: Attachment): string {
  if ('file' in a) return `file:${a.file}`;
  return `data:${a.name}:${createHash('sha256').update(a.data).digest('hex')}`;
}

/**
 * The memory of one account's recent successful sends, and the rule over it: what
 * {@link SendOnce.earlier} finds is a send to refuse. Every post of `postMessage` consults it.
 */
export class SendOnce {
  readonly windowMs: number;
  readonly #store: StateStore;
  readonly #key: StateKey;
  readonly #now: () => number;
  readonly #inFlight = new Map<string, Promise<unknown>>();

  constructor(options: SendOnceOptions = {}) {
    const windowMs = options.windowMs ?? DEFAULT_SEND_ONCE_WINDOW_MS;
    this.windowMs = Number.isFinite(windowMs) && windowMs > 0 ? windowMs : 0;
    this.#store = options.store ?? new MemoryStateStore();
    this.#key = { account: options.account, session: SESSION, kind: 'sends' };
    this.#now = options.now ?? Date.now;
  }

  /** The key of a send: its conversation and its normalized text and attachments, hashed. */
  static keyOf(to: Conversation, body: string, attachments: readonly Attachment[] = []): string {
    return createHash('sha256')
      .update(JSON.stringify([conversationKey(to), normalized(body), attachments.map(attachmentKey)]))
      .digest('hex');
  }

  /** The send with this key that succeeded within the window, if any. */
  async earlier(key: string): Promise<EarlierSend | undefined> {
    if (this.windowMs === 0) return undefined;
    const since = this.#now() - this.windowMs;
    const stored = await this.#read();
    const found = stored?.sends.findLast((s) => s.key === key && s.at >= since);
    return found === undefined ? undefined : { at: found.at, ids: found.ids, permalink: found.permalink };
  }

  /** Remembers a successful send; sends older than the window, and the oldest past the bound, are forgotten. */
  async remember(key: string, sent: { ids: readonly number[]; permalink: string | null }): Promise<void> {
    if (this.windowMs === 0 || sent.ids.length === 0) return;
    const now = this.#now();
    const next = (prev: Sends | undefined): Sends => {
      const kept = (prev?.sends ?? []).filter((s) => s.at >= now - this.windowMs && s.key !== key);
      kept.push({ key, at: now, ids: [...sent.ids], permalink: sent.permalink });
      return { version: 1, sends: kept.slice(-MAX_REMEMBERED) };
    };
    try {
      await this.#store.update(this.#key, SendsSchema, next);
    } catch (err) {
      // A damaged memory is only a memory: it starts again rather than stopping every send.
      if (!isDeliveryError(err, 'DELIVERY_STATE_CORRUPT')) throw err;
      await this.#store.write(this.#key, next(undefined));
    }
  }

  async #read(): Promise<Sends | undefined> {
    try {
      return await this.#store.read(this.#key, SendsSchema);
    } catch (err) {
      if (isDeliveryError(err, 'DELIVERY_STATE_CORRUPT')) return undefined;
      throw err;
    }
  }

  /**
   * Runs `send` after any send of the same key still in flight in this process has settled, so
   * two identical calls at once cannot both pass {@link SendOnce.earlier} before either is remembered.
   */
  async serialize<T>(key: string, send: () => Promise<T>): Promise<T> {
    const before = this.#inFlight.get(key);
    const run = (before ?? Promise.resolve()).then(send, send);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.#inFlight.set(key, settled);
    try {
      return await run;
    } finally {
      if (this.#inFlight.get(key) === settled) this.#inFlight.delete(key);
    }
  }
}
