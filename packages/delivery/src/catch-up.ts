import type { Message } from '@zmcp/core';

/** Limits of what one channel's catch-up keeps while the sweep runs. */
export interface CollectLimits {
  /** Most messages a block shows. */
  readonly maxMessages: number;
  /** Messages of context before and after each mention on a closed channel. */
  readonly context: number;
}

/** A kept message and how many missed messages lie between it and the kept one before it. */
export interface Kept {
  readonly m: Message;
  readonly gapBefore: number;
}

/**
 * What one channel missed while the session was away, kept within bounds while the sweep
 * streams past: for a channel that was open, the newest messages; for a closed one, each
 * addressed message with its context. Memory is bounded by the limits, not by the backlog.
 */
export class MissedCollector {
  readonly wasOpen: boolean;
  readonly #limits: CollectLimits;
  messages = 0;
  addressed = 0;
  firstId: number | undefined;
  #kept: Kept[] = [];
  #lastKeptSeq = -1;
  // Closed channels: the context before the next mention, and how much context after one is owed.
  #before: { m: Message; seq: number }[] = [];
  #afterLeft = 0;

  constructor(wasOpen: boolean, limits: CollectLimits) {
    this.wasOpen = wasOpen;
    this.#limits = limits;
  }

  /** Adds the next missed message (in id order). */
  add(m: Message, addressed: boolean): void {
    const seq = this.messages;
    this.messages += 1;
    this.firstId ??= m.id;
    if (addressed) this.addressed += 1;
    if (this.wasOpen) {
      this.#keep(m, seq);
      return;
    }
    if (addressed) {
      for (const b of this.#before) this.#keep(b.m, b.seq);
      this.#before = [];
      this.#keep(m, seq);
      this.#afterLeft = this.#limits.context;
    } else if (this.#afterLeft > 0) {
      this.#afterLeft -= 1;
      this.#keep(m, seq);
    } else if (this.#limits.context > 0) {
      this.#before.push({ m, seq });
      if (this.#before.length > this.#limits.context) this.#before.shift();
    }
  }

  /** Whether the block has anything to push: any message for an open channel, an addressed one for a closed. */
  get hasContent(): boolean {
    return this.wasOpen ? this.messages > 0 : this.addressed > 0;
  }

  /** Ambient messages a closed channel's block does not carry as addressed (its tally). */
  get ambient(): number {
    return this.wasOpen ? 0 : this.messages - this.addressed;
  }

  /** The kept messages, oldest first. */
  kept(): readonly Kept[] {
    return this.#kept;
  }

  #keep(m: Message, seq: number): void {
    this.#kept.push({ m, gapBefore: this.#lastKeptSeq < 0 ? 0 : seq - this.#lastKeptSeq - 1 });
    this.#lastKeptSeq = seq;
    // Only the newest ones can be shown; keep a margin for the byte cap's choice.
    const cap = this.#limits.maxMessages * 2 + this.#limits.context * 2 + 2;
    if (this.#kept.length > cap)
      this.#kept = this.#kept.slice(this.#kept.length - this.#limits.maxMessages - 1);
  }
}
