import type { Message } from '@zmcp/core';
import type { ChannelKey } from './channel-id.js';
import { MAX_SEEN_PER_CHANNEL } from './delivery-state.js';
import type { DeliveryItem, PushEvent } from './sink.js';

/** One entry of a channel's delivery queue, in message order. */
export type Entry =
  /** A message, judged when it reaches the front (the filters or the channel's state may change meanwhile). */
  | { readonly t: 'm'; readonly m: Message; readonly recovered: boolean }
  /** A change or reaction line; on a closed channel pushed only when addressed. */
  | { readonly t: 'c'; readonly item: DeliveryItem; readonly addressed: boolean; readonly reaction: boolean }
  /** A start-up `<missed>` block covering messages through `through`. */
  | { readonly t: 'missed'; readonly event: PushEvent; readonly through: number }
  /** Change lines still being read (the message was not cached): holds the channel's place. */
  | Slot;

/** A place in a channel's queue for entries that are still being prepared. */
export interface Slot {
  readonly t: 'p';
  done: boolean;
  entries: Entry[];
  readonly ready: Promise<void>;
  fill(entries: Entry[]): void;
}

/** A slot to put in a queue now and fill later (once; later fills are ignored). */
export function slot(): Slot {
  let resolve!: () => void;
  const ready = new Promise<void>((r) => {
    resolve = r;
  });
  const s: Slot = {
    t: 'p',
    done: false,
    entries: [],
    ready,
    fill(entries) {
      if (s.done) return;
      s.done = true;
      s.entries = entries;
      resolve();
    },
  };
  return s;
}

/** A first-in first-out queue with O(1) removal at the front. */
export class Fifo<T> {
  #items: T[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  unshift(item: T): void {
    if (this.#head > 0) {
      this.#head -= 1;
      this.#items[this.#head] = item;
    } else {
      this.#items.unshift(item);
    }
  }

  /** The `i`-th item from the front. */
  at(i: number): T | undefined {
    return this.#items[this.#head + i];
  }

  /** Removes `n` items from the front. */
  drop(n: number): void {
    this.#head += n;
    if (this.#head >= this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Keeps only the items `keep` accepts, in order. */
  filter(keep: (item: T) => boolean): void {
    this.#items = this.#items.slice(this.#head).filter(keep);
    this.#head = 0;
  }

  clear(): void {
    this.#items = [];
    this.#head = 0;
  }
}

/** What a channel is: a stream (by id) or a DM conversation (by the other participants). */
export type ChannelTarget =
  | { readonly kind: 'stream'; readonly streamId: number }
  | { readonly kind: 'dm'; readonly userIds: readonly number[] };

/** The engine's state of one channel: registration, watermark, queue and replay. */
export class Channel {
  readonly key: ChannelKey;
  readonly target: ChannelTarget;
  /** The channel id as announced (it follows a stream's name). */
  id: string;
  /** Registered: visible to the policy and the filters, and (for a stream) subscribed. */
  registered = false;
  open = false;
  /** Open when the session last ran: its catch-up is a full backscroll. */
  wasOpen = false;
  refused = false;
  /** Every deliverable message up to here was accepted (or was not for the agent). */
  w: number;
  /** Ids above `w` the host accepted out of order. */
  readonly above = new Set<number>();
  /** The newest message id queued or handled: live messages at or below it are duplicates. */
  lastEnqueued: number;
  readonly queue = new Fifo<Entry>();
  /** An offer, a replay read or an announcement is in progress. */
  busy = false;
  /** Waiting out a backoff after the host did not accept, or a read failed. */
  waiting = false;
  retryTimer: NodeJS.Timeout | undefined;
  failures = 0;
  /** Messages must come from history (after an unaccepted offer or an overflow) before live ones. */
  replayNeeded = false;
  replayRunning = false;
  /** Live messages that arrived while a replay was needed, merged in once history caught up. */
  held: Message[] = [];
  heldOverflowed = false;
  /** The announcement in front of this channel's first delivery (new on the message path). */
  announcing: Promise<void> | undefined;
  ambient = 0;
  ambientFrom: number | undefined;
  ambientTo: number | undefined;
  /** The newest offered ids, persisted so changes to them surface after a restart. */
  recentSeen: number[] = [];
  /** The newest message id seen for this channel (live, replayed or swept): what the watermark is behind. */
  newestSeen = 0;
  /** UNIX seconds of the oldest message not accepted, once it left the queue to be read again from history. */
  unacceptedSince: number | undefined;

  constructor(key: ChannelKey, target: ChannelTarget, id: string, watermark: number) {
    this.key = key;
    this.target = target;
    this.id = id;
    this.w = watermark;
    this.lastEnqueued = watermark;
  }

  /** Moves the watermark to `id` and forgets accepted ids at or below it. */
  advance(id: number): void {
    if (id <= this.w) return;
    this.w = id;
    if (this.above.size > 0) for (const a of this.above) if (a <= id) this.above.delete(a);
  }

  noteSeen(id: number): void {
    const ring = this.recentSeen;
    if (ring.length > 0 && (ring[ring.length - 1] as number) >= id) {
      if (ring.includes(id)) return;
    }
    ring.push(id);
    if (ring.length > MAX_SEEN_PER_CHANNEL) ring.shift();
  }

  tallyAmbient(id: number): void {
    this.ambient += 1;
    if (this.ambientFrom === undefined || id < this.ambientFrom) this.ambientFrom = id;
    if (this.ambientTo === undefined || id > this.ambientTo) this.ambientTo = id;
  }
}
