import { hasFeature } from '../api/features.js';
import type { Message } from '../api/schemas.js';
import type { CallOptions } from '../client/transport.js';
import type { ZulipClient } from '../client/zulip-client.js';
import { ZmcpError } from '../errors.js';
import { type NarrowTerm, validateNarrow } from './narrow.js';

/** Zulip's cap on one GET /messages. */
export const MAX_MESSAGES_PER_REQUEST = 5000;

/** Options of a {@link HistoryPager}. */
export interface HistoryPagerOptions {
  /** The narrow every read uses; validated once here. */
  narrow?: readonly NarrowTerm[] | undefined;
  /** HTML (true) or raw Markdown (false, the default here: the formatter wants source text). */
  applyMarkdown?: boolean | undefined;
  /** Messages per request, 1 to 5000. Default 1000. */
  pageSize?: number | undefined;
  /** Per-request deadline and a signal shared by every request the pager makes. */
  call?: CallOptions | undefined;
  /** The realm's feature level, if known; otherwise the client's (asked once, GET /server_settings, if the client does not know it yet) when a date range needs it. */
  featureLevel?: number | undefined;
}

/** Messages read in one direction, oldest first. */
export interface HistoryResult {
  messages: Message[];
  /** More messages match beyond the last one read, in the direction of travel. */
  hasMore: boolean;
}

/** What a search for a date's first message already knows: an id older than it, an id not older. */
interface SearchBounds {
  lower?: number | undefined;
  upper?: number | undefined;
}

/** Messages on both sides of an anchor, oldest first. */
export interface AroundResult {
  messages: Message[];
  /** The anchor message itself is among `messages`. */
  foundAnchor: boolean;
  hasOlder: boolean;
  hasNewer: boolean;
}

function invalid(message: string, details: Record<string, unknown> = {}): ZmcpError {
  return new ZmcpError('CORE_INVALID_ARGUMENT', message, { details });
}

function count(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0)
    throw invalid(`${name} must be a non-negative integer`, { [name]: value });
  return value;
}

function messageId(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0)
    throw invalid(`${name} must be a message id`, { [name]: value });
  return value;
}

function toSeconds(name: string, value: Date | number): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (!Number.isFinite(ms)) throw invalid(`${name} is not a valid date`);
  return ms / 1000;
}

/**
 * Reads a narrow's history across Zulip's 5000-messages-per-request cap: the newest N, since
 * an id, before an id, around an id, or between two dates, oldest first, without fetching
 * more than it needs.
 */
export class HistoryPager {
  readonly #client: ZulipClient;
  readonly #narrow: readonly NarrowTerm[];
  readonly #applyMarkdown: boolean;
  readonly #pageSize: number;
  readonly #call: CallOptions | undefined;
  #featureLevel: number | undefined;

  /** @throws {ZmcpError} `CORE_INVALID_ARGUMENT` for a bad narrow or page size. */
  constructor(client: ZulipClient, options: HistoryPagerOptions = {}) {
    this.#client = client;
    this.#narrow = validateNarrow(options.narrow ?? []);
    this.#applyMarkdown = options.applyMarkdown ?? false;
    const pageSize = options.pageSize ?? 1000;
    if (!Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > MAX_MESSAGES_PER_REQUEST) {
      throw invalid(`pageSize must be 1 to ${MAX_MESSAGES_PER_REQUEST}`, { pageSize });
    }
    this.#pageSize = pageSize;
    this.#call = options.call;
    this.#featureLevel = options.featureLevel;
  }

  #fetch(anchor: number | 'newest' | 'oldest' | 'date', numBefore: number, numAfter: number, extra = {}) {
    return this.#client.getMessages(
      {
        anchor,
        numBefore,
        numAfter,
        narrow: this.#narrow,
        applyMarkdown: this.#applyMarkdown,
        // The empty topic comes back as "", not as the realm's display name for it.
        allowEmptyTopicName: true,
        ...extra,
      },
      this.#call,
    );
  }

  /**
   * Pages towards older messages, newest page first, starting just before `before` (exclusive)
   * or at the newest message. Each page is ascending.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT`, and the request codes of {@link ZulipClient.getMessages}.
   */
  async *pagesOlder(before: number | 'newest' = 'newest'): AsyncGenerator<Message[], void, undefined> {
    let anchor: number | 'newest' = before === 'newest' ? before : messageId('before', before);
    while (true) {
      const res = await this.#fetch(
        anchor,
        this.#pageSize,
        0,
        anchor === 'newest' ? {} : { includeAnchor: false },
      );
      const page =
        typeof anchor === 'number' ? res.messages.filter((m) => m.id < (anchor as number)) : res.messages;
      if (page.length > 0) yield page;
      const oldest = page[0];
      if (res.found_oldest !== false || oldest === undefined) return;
      anchor = oldest.id;
    }
  }

  /**
   * Pages towards newer messages, oldest page first, starting just after `after` (exclusive).
   * Each page is ascending.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT`, and the request codes of {@link ZulipClient.getMessages}.
   */
  async *pagesNewer(after: number): AsyncGenerator<Message[], void, undefined> {
    let anchor = messageId('after', after);
    while (true) {
      const res = await this.#fetch(anchor, 0, this.#pageSize, { includeAnchor: false });
      const page = res.messages.filter((m) => m.id > anchor);
      if (page.length > 0) yield page;
      const newest = page[page.length - 1];
      if (res.found_newest !== false || newest === undefined) return;
      anchor = newest.id;
    }
  }

  async #older(before: number | 'newest', limit: number): Promise<HistoryResult> {
    const pages: Message[][] = [];
    let total = 0;
    let anchor: number | 'newest' = before;
    let hasMore = false;
    while (total < limit) {
      const want = Math.min(this.#pageSize, limit - total);
      const res = await this.#fetch(anchor, want, 0, anchor === 'newest' ? {} : { includeAnchor: false });
      const cut = anchor;
      let page = typeof cut === 'number' ? res.messages.filter((m) => m.id < cut) : res.messages;
      if (page.length > want) page = page.slice(page.length - want);
      if (page.length > 0) pages.unshift(page);
      total += page.length;
      const oldest = page[0];
      hasMore = res.found_oldest === false && oldest !== undefined;
      if (!hasMore || oldest === undefined) break;
      anchor = oldest.id;
    }
    // One page is the usual read: no copy of it (and Array#flat is slow).
    return { messages: pages.length === 1 ? (pages[0] as Message[]) : pages.flat(), hasMore };
  }

  async #newer(after: number, limit: number, until?: (m: Message) => boolean): Promise<HistoryResult> {
    const out: Message[] = [];
    let anchor = after;
    let hasMore = false;
    while (out.length < limit) {
      const want = Math.min(this.#pageSize, limit - out.length);
      const res = await this.#fetch(anchor, 0, want, { includeAnchor: false });
      const from = anchor;
      const page = res.messages.filter((m) => m.id > from);
      for (const m of page.slice(0, want)) {
        if (until?.(m)) return { messages: out, hasMore: false };
        out.push(m);
      }
      const newest = page[page.length - 1];
      hasMore = res.found_newest === false && newest !== undefined;
      if (!hasMore || newest === undefined) break;
      anchor = newest.id;
    }
    return { messages: out, hasMore };
  }

  /**
   * The newest `limit` messages of the narrow, oldest first; `hasMore` when older ones exist.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT`, and the request codes of {@link ZulipClient.getMessages}.
   */
  newest(limit: number): Promise<HistoryResult> {
    return this.#older('newest', count('limit', limit));
  }

  /**
   * Up to `limit` messages with ids below `beforeId` (the closest ones), oldest first; `hasMore` when older ones exist.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT`, and the request codes of {@link ZulipClient.getMessages}.
   */
  before(beforeId: number, limit: number): Promise<HistoryResult> {
    return this.#older(messageId('beforeId', beforeId), count('limit', limit));
  }

  /**
   * Up to `limit` messages with ids above `afterId`, oldest first; `hasMore` when newer ones exist.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT`, and the request codes of {@link ZulipClient.getMessages}.
   */
  since(afterId: number, limit: number): Promise<HistoryResult> {
    return this.#newer(messageId('afterId', afterId), count('limit', limit));
  }

  /**
   * The message `id` (if it matches the narrow) with up to `before` older and `after` newer ones.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT`, and the request codes of {@link ZulipClient.getMessages}.
   */
  async around(id: number, before: number, after: number): Promise<AroundResult> {
    messageId('id', id);
    count('before', before);
    count('after', after);
    const firstBefore = Math.min(before, Math.floor(this.#pageSize / 2));
    const firstAfter = Math.min(after, this.#pageSize - firstBefore);
    const res = await this.#fetch(id, firstBefore, firstAfter, { includeAnchor: true });
    const older = res.messages.filter((m) => m.id < id);
    const anchorMsg = res.messages.filter((m) => m.id === id);
    const newer = res.messages.filter((m) => m.id > id);
    let hasOlder = res.found_oldest === false;
    let hasNewer = res.found_newest === false;
    let olderAll = older;
    let newerAll = newer;
    if (before > older.length && hasOlder && older[0] !== undefined) {
      const more = await this.#older(older[0].id, before - older.length);
      olderAll = [...more.messages, ...older];
      hasOlder = more.hasMore;
    }
    const last = newer[newer.length - 1];
    if (after > newer.length && hasNewer && last !== undefined) {
      const more = await this.#newer(last.id, after - newer.length);
      newerAll = [...newer, ...more.messages];
      hasNewer = more.hasMore;
    }
    return {
      messages: [...olderAll, ...anchorMsg, ...newerAll],
      foundAnchor: anchorMsg.length > 0,
      hasOlder,
      hasNewer,
    };
  }

  /**
   * Messages sent in `[from, to)`, oldest first, at most `limit`; `hasMore` when the range holds
   * more. At feature level 445 and above the range is read from the server's date anchor, in one
   * request when it fits a page; otherwise (or when the anchor did not land on the boundary) the
   * start is found by a binary search over message ids with one-message probes. Nothing outside
   * the range is paged.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT` (bad dates or limit), and the request codes of {@link ZulipClient.getMessages}.
   */
  async between(from: Date | number, to: Date | number, limit: number): Promise<HistoryResult> {
    const fromS = toSeconds('from', from);
    const toS = toSeconds('to', to);
    count('limit', limit);
    if (toS <= fromS || limit === 0) return { messages: [], hasMore: false };
    const until = (m: Message) => m.timestamp >= toS;
    let res: HistoryResult | SearchBounds | undefined;
    if (await this.#hasDateAnchor()) res = await this.#fromDateAnchor(fromS, limit, until);
    if (res === undefined || !('messages' in res)) {
      const start =
        res === undefined
          ? await this.firstIdAtOrAfter(from)
          : await this.#searchFirst(fromS, res.lower, res.upper);
      if (start === undefined) return { messages: [], hasMore: false };
      res = await this.#newerFrom(start, limit, until);
    }
    return { messages: res.messages.filter((m) => m.timestamp >= fromS), hasMore: res.hasMore };
  }

  async #hasDateAnchor(): Promise<boolean> {
    this.#featureLevel ??= await this.#client.getFeatureLevel(this.#call);
    return hasFeature(this.#featureLevel, 'dateAnchor');
  }

  /**
   * Reads up to `limit` messages from the first one sent at or after `fromS` with the date anchor:
   * one message before the anchor (to confirm it is the boundary) and a page after it. When the
   * anchor did not land on the boundary (timestamps need not grow with ids), the bounds it gives
   * the caller's search instead.
   */
  async #fromDateAnchor(
    fromS: number,
    limit: number,
    until: (m: Message) => boolean,
  ): Promise<HistoryResult | SearchBounds> {
    const numAfter = Math.max(1, Math.min(limit + 1, this.#pageSize - 1));
    const res = await this.#fetch('date', 1, numAfter, { anchorDate: new Date(fromS * 1000) });
    const at = res.messages.findIndex((m) => m.timestamp >= fromS);
    if (at < 0) {
      const last = res.messages[res.messages.length - 1];
      return res.found_newest !== false || last === undefined
        ? { messages: [], hasMore: false }
        : { lower: last.id };
    }
    if (at === 0 && res.found_oldest === false) return { upper: (res.messages[0] as Message).id };
    const kept: Message[] = [];
    for (const m of res.messages.slice(at)) {
      if (until(m)) return { messages: kept.slice(0, limit), hasMore: kept.length > limit };
      kept.push(m);
    }
    const last = kept[kept.length - 1] as Message;
    let hasMore = res.found_newest === false;
    if (kept.length <= limit && hasMore) {
      const more = await this.#newer(last.id, limit + 1 - kept.length, until);
      kept.push(...more.messages);
      hasMore = more.hasMore;
    }
    return kept.length > limit
      ? { messages: kept.slice(0, limit), hasMore: true }
      : { messages: kept, hasMore };
  }

  async #newerFrom(startId: number, limit: number, until: (m: Message) => boolean): Promise<HistoryResult> {
    // Read from startId inclusive: step the anchor one below it, and drop anything older.
    const res = await this.#newer(Math.max(0, startId - 1), limit + 1, until);
    const kept = res.messages.filter((m) => m.id >= startId);
    return kept.length > limit
      ? { messages: kept.slice(0, limit), hasMore: true }
      : { messages: kept, hasMore: res.hasMore };
  }

  /**
   * The id of the oldest message of the narrow sent at or after `when`, or undefined if none was.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT`, and the request codes of {@link ZulipClient.getMessages}.
   */
  async firstIdAtOrAfter(when: Date | number): Promise<number | undefined> {
    const target = toSeconds('when', when);
    let upper: number | undefined;
    let lower: number | undefined;
    if (await this.#hasDateAnchor()) {
      const res = await this.#fetch('date', 1, 1, { anchorDate: new Date(target * 1000) });
      const hit = res.messages.find((m) => m.timestamp >= target);
      const first = res.messages[0];
      const last = res.messages[res.messages.length - 1];
      if (hit !== undefined && (hit !== first || res.found_oldest !== false)) return hit.id;
      if (hit === undefined && res.found_newest !== false) return undefined;
      // The server's anchor did not land on the boundary: search the side it points to.
      if (hit !== undefined) upper = hit.id;
      else if (last !== undefined) lower = last.id;
    }
    return this.#searchFirst(target, lower, upper);
  }

  async #probe(anchor: number | 'newest' | 'oldest', before: number, after: number): Promise<Message[]> {
    const res = await this.#fetch(anchor, before, after, { applyMarkdown: false });
    return res.messages;
  }

  async #searchFirst(target: number, knownLower?: number, knownUpper?: number): Promise<number | undefined> {
    let candidate: number | undefined = knownUpper;
    if (candidate === undefined) {
      // Recent ranges are the common case: one small page from the newest end often holds the start.
      const recent = await this.#probe('newest', Math.min(100, this.#pageSize), 0);
      const newest = recent[recent.length - 1];
      if (newest === undefined || newest.timestamp < target) return undefined;
      const firstIdx = recent.findIndex((m) => m.timestamp >= target);
      if (firstIdx > 0) return (recent[firstIdx] as Message).id;
      candidate = (recent[0] as Message).id;
      if (recent.length < Math.min(100, this.#pageSize)) return candidate; // that was all of history
    }
    let lower = knownLower;
    if (lower === undefined) {
      const oldest = (await this.#probe('oldest', 0, 1))[0];
      if (oldest === undefined) return undefined;
      if (oldest.timestamp >= target) return oldest.id;
      lower = oldest.id;
    }
    // Invariant: the message `lower` is older than target; `candidate` is not; the answer is in
    // (lower, candidate]; ids in [upper, candidate) hold no match of the narrow.
    let upper: number = candidate;
    let low: number = lower;
    while (upper - low > 1) {
      const mid: number = low + Math.floor((upper - low) / 2);
      const m: Message | undefined = (await this.#probe(mid, 0, 1))[0];
      if (m === undefined || m.id >= upper) upper = mid;
      else if (m.timestamp >= target) {
        candidate = m.id;
        upper = m.id;
      } else low = m.id;
    }
    return candidate;
  }
}
