import {
  type CallOptions,
  decodePrintedName,
  escapeMsgName,
  isNoBotsMessage,
  type Message,
  type NarrowScopeKind,
  type NarrowTerm,
  quoteName,
  type ReadNarrowResult,
  type ReadRange,
  readNarrow,
  type Stream,
  type User,
} from '@zmcp/core';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import {
  type CursorPosition,
  decodeCursor,
  encodeCursor,
  fitToBudget,
  jsonBytes,
  wholePage,
} from '../page.js';
import type { ToolServices } from '../services.js';
import type { ToolAnnotations, ToolCallContext } from '../tool.js';

// Helpers shared by the read tools. Internal to the package.

/** The annotations of every read tool: nothing changes, the realm is outside the server. */
export const READ_ANNOTATIONS: ToolAnnotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: true,
};

/** Bytes of the page budget kept for the summary line above the items and the typed fields beside them. */
const SUMMARY_RESERVE_BYTES = 768;
/** What one item adds to the typed fields beside the text, at most: its id in a list. */
export const ID_BYTES = 17;
/** The smallest item budget, however small the page budget is configured. */
const MIN_ITEM_BUDGET_BYTES = 200;

/** The byte budget of the item lines of one page (the page budget less room for the summary). */
export function itemBudget(services: ToolServices): number {
  return Math.max(MIN_ITEM_BUDGET_BYTES, services.pageBudgetBytes - SUMMARY_RESERVE_BYTES);
}

/** The call options every Zulip request of one tool call carries: the call's one shared deadline. */
export function callOptions(context: ToolCallContext): CallOptions {
  return { signal: context.signal };
}

/** Refuses to start work once the call's deadline has passed (cached reads make no request that would notice). */
export function checkDeadline(context: ToolCallContext): void {
  context.signal.throwIfAborted();
}

/** A stream named by name or id. */
export const StreamRefSchema = z
  .union([z.string().trim().min(1).max(2000), z.number().int().positive()])
  .describe('Stream name or id');

/** A user named by id, email or full name. */
export const UserRefSchema = z.union([z.string().trim().min(1).max(2000), z.number().int().positive()]);

/** The `cursor` input every paged tool takes. */
export const CursorSchema = z
  .string()
  .min(1)
  .max(512)
  .optional()
  .describe('next_cursor of the previous call (same other arguments)');

/** A message id input. */
export const MessageIdSchema = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

/** A `limit` input: the most items to return. */
export function limitSchema(max: number, fallback: number) {
  return z.number().int().min(1).max(max).default(fallback).describe(`1-${max}, default ${fallback}`);
}

/** A topic input; `""` or `(no topic)` is the empty topic. */
export const TopicInputSchema = z.string().max(2000);

/**
 * The query part of a tool's input, for cursor fingerprints: everything but the cursor and the page
 * size (changing the page size between pages is harmless).
 */
export function queryOf<T extends { cursor?: string | undefined }>(input: T): Record<string, unknown> {
  const { cursor: _cursor, limit: _limit, ...rest } = input as T & { limit?: unknown };
  return rest;
}

/**
 * Decodes the cursor of a call, if any, and checks that its position is of a kind this query
 * continues.
 * @throws ToolError `TOOLS_INVALID_CURSOR`.
 */
export function readCursor(
  tool: string,
  query: unknown,
  cursor: string | undefined,
  kinds: readonly CursorPosition['kind'][],
): CursorPosition | undefined {
  if (cursor === undefined) return undefined;
  const position = decodeCursor(tool, query, cursor);
  if (!kinds.includes(position.kind)) throw mismatchedCursor(tool);
  return position;
}

/** The error for a cursor whose position does not continue this query. */
export function mismatchedCursor(tool: string): ToolError {
  return new ToolError(
    'TOOLS_INVALID_CURSOR',
    `Invalid cursor: its position does not continue this query. Pass back the cursor exactly as a previous call of ${tool} with the same arguments returned it, or omit it to start over.`,
  );
}

/**
 * A topic argument as Zulip reads it: the name a printed (quoted) topic stands for, trimmed;
 * `""` or `(no topic)` is Zulip's empty topic.
 */
export function normalizeTopicInput(topic: string): string {
  const t = decodePrintedName(topic.trim()).trim();
  return t === '(no topic)' ? '' : t;
}

/** A topic as printed in a summary or item line: quoted where it holds a delimiter. */
export function topicLabel(topic: string): string {
  return topic === '' ? '(no topic)' : quoteName(topic, 'topic');
}

/** A stream as printed in a summary or item line: `#name`, quoted where it holds a delimiter. */
export function streamLabel(name: string): string {
  return `#${quoteName(name, 'stream')}`;
}

/** One line of free text (a description, a profile value), folded, escaped and cut to `max` characters. */
export function shortText(text: string, max: number): string {
  const folded = escapeMsgName(text.replace(/\s+/g, ' ').trim());
  if (folded.length <= max) return folded;
  let end = max - 1;
  const last = folded.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${folded.slice(0, end)}…`;
}

/** Splits messages into those bots may see and a count of those that opted out (`/nobots`). */
export function splitNoBots(messages: readonly Message[]): { visible: Message[]; hidden: Message[] } {
  const visible: Message[] = [];
  const hidden: Message[] = [];
  for (const m of messages) (isNoBotsMessage(m) ? hidden : visible).push(m);
  return { visible, hidden };
}

/** A user as one short line: `Ann Lee (ann@example.test, id 8)` with bot and deactivated markers. */
export function userLine(
  user: Pick<User, 'user_id' | 'full_name' | 'email' | 'is_bot' | 'is_active'>,
): string {
  let line = `${quoteName(user.full_name, 'person')} (${quoteName(user.email, 'member')}, id ${user.user_id})`;
  if (user.is_bot === true) line += ' [bot]';
  if (user.is_active === false) line += ' [deactivated]';
  return line;
}

/** People in list order: by full name, case-insensitively, then by id. */
export function byFullName(
  a: Pick<User, 'full_name' | 'user_id'>,
  b: Pick<User, 'full_name' | 'user_id'>,
): number {
  return a.full_name.localeCompare(b.full_name, 'en', { sensitivity: 'base' }) || a.user_id - b.user_id;
}

/** Zulip's numeric roles, by name. */
export function roleName(role: number | undefined, user?: User): string {
  switch (role) {
    case 100:
      return 'owner';
    case 200:
      return 'admin';
    case 300:
      return 'moderator';
    case 400:
      return 'member';
    case 600:
      return 'guest';
    default:
      if (user?.is_owner === true) return 'owner';
      if (user?.is_admin === true) return 'admin';
      if (user?.is_guest === true) return 'guest';
      return 'member';
  }
}

/**
 * Finds a stream the bot can see.
 * @throws ToolError `TOOLS_NOT_FOUND` when the bot cannot see it (it may not exist, or be a
 *   private stream the bot is not in: the answer is the same).
 */
export async function resolveStream(
  services: ToolServices,
  ref: string | number,
  call: CallOptions,
): Promise<Stream> {
  try {
    return await services.directory.stream(ref, call);
  } catch (err) {
    if (err instanceof ToolError && err.code === 'TOOLS_NOT_FOUND') {
      throw new ToolError(
        'TOOLS_NOT_FOUND',
        `${err.message} Check the name with list_streams (private streams the bot is not in are not visible).`,
        err.details,
      );
    }
    throw err;
  }
}

/**
 * Refuses a stream the access policy does not let this session read, with the policy's own
 * explanation (which setting would open it).
 * @throws ZmcpError `CORE_ACCESS_DENIED`.
 */
export async function checkStreamReadable(
  services: ToolServices,
  stream: Stream,
  call: CallOptions,
): Promise<void> {
  const lookup = await services.directory.streamLookup(call);
  services.policy.checkNarrowScope([{ operator: 'channel', operand: stream.stream_id }], lookup);
}

/** Lines cut to a budget keeping the newest (last) items: what a backwards read shows. */
export function fitFromEnd(
  lines: readonly string[],
  budget: number,
): { text: string; shown: number; truncated: boolean } {
  const whole = lines.length > 0 ? wholePage(lines, budget, ID_BYTES) : undefined;
  if (whole !== undefined) return { text: whole, shown: lines.length, truncated: false };
  let used = 0;
  let shown = 0;
  for (let i = lines.length - 1; i >= 0; i--) {
    const size = jsonBytes(lines[i] as string) + ID_BYTES + (shown > 0 ? 2 : 0);
    if (used + size > budget) break;
    used += size;
    shown++;
  }
  // Not even the newest line fits: it is shown cut, as fitToBudget cuts a lone item.
  if (shown === 0 && lines.length > 0) return fitToBudget(lines.slice(-1), budget, ID_BYTES);
  return { text: lines.slice(lines.length - shown).join('\n'), shown, truncated: shown < lines.length };
}

/** How a message list is read and which way it continues. */
export interface MessageReadPlan {
  narrow: NarrowTerm[];
  range: ReadRange;
  /** `older`: the newest messages of the range are kept and a continuation goes back in time. */
  direction: 'older' | 'newer';
  /** For `newer` reads: true for a message past the end of the window (it and all after it are left out). */
  beyond?: ((m: Message) => boolean) | undefined;
  unscoped?: 'public-streams' | undefined;
  /**
   * A second narrow read over the same range and merged in by id (a search of the bot's own
   * messages plus the public streams' history, say). Both pass the gate on their own.
   */
  alsoNarrow?: NarrowTerm[] | undefined;
  /**
   * For a narrow the server can only approximate (an older realm's): the messages that really
   * match. The others are left out, counted nowhere, and the page reads on to make up for them
   * (a few times at most), as it does for `/nobots` messages.
   */
  keep?: ((m: Message) => boolean) | undefined;
  /**
   * Told after each round of reading how many messages were read of how many asked for: the
   * tool's `context.progress`, so a client that asked gets MCP progress notifications on a long read.
   */
  progress?: ((update: { progress: number; total?: number; message?: string }) => void) | undefined;
}

/** One page of messages read through the access gate, cut to the page budget. */
export interface MessagePage {
  /** The messages shown, oldest first. */
  shown: Message[];
  /** The message lines of `shown`, joined. */
  text: string;
  /** `/nobots` messages left out within the span the page covers. */
  hidden: number;
  /** The page budget cut the list (or one over-long message). */
  truncated: boolean;
  /** More messages remain in the direction of travel. */
  hasMore: boolean;
  /** Where a continuation starts; undefined when nothing remains (or no position is known). */
  next: CursorPosition | undefined;
  /** What the narrow reached, as the policy judged it. */
  scope: NarrowScopeKind;
}

/** Most extra reads made to make up for `/nobots` messages left out of a page. */
const MAX_TOP_UPS = 3;

/** A narrow read bound to one narrow and call: the stream facts are fetched once. */
export type NarrowReader = (range: ReadRange) => Promise<ReadNarrowResult>;

/**
 * Binds reads of one narrow through core's gate (the policy's scope check before each fetch, the
 * stray filter after it).
 */
export async function narrowReader(
  services: ToolServices,
  narrow: NarrowTerm[],
  unscoped: 'public-streams' | undefined,
  call: CallOptions,
): Promise<NarrowReader> {
  const streams = await services.directory.streamLookup(call);
  return (range) => readNarrow(services.client, services.policy, { narrow, range, streams, unscoped, call });
}

/** The fields every offset-paged list puts beside its items. */
export const OFFSET_PAGE_FIELDS = {
  offset: z.number().int(),
  truncated: z.boolean(),
  next_cursor: z.string().nullable(),
};

/** The typed fields every message page carries beside its text. */
export const MESSAGE_PAGE_FIELDS = {
  ids: z.array(z.number().int()).describe('The messages shown, oldest first'),
  hidden: z.number().int().describe('Left out: opted out of bots (/nobots)'),
  truncated: z.boolean(),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
};

/** The typed fields of a message page. */
export function messagePageData(
  page: MessagePage,
  cursor: string | null,
): { ids: number[]; hidden: number; truncated: boolean; has_more: boolean; next_cursor: string | null } {
  return {
    ids: page.shown.map((m) => m.id),
    hidden: page.hidden,
    truncated: page.truncated,
    has_more: page.hasMore,
    next_cursor: cursor,
  };
}

/** The number of messages bots may see. */
export function visibleCount(messages: readonly Message[]): number {
  let n = 0;
  for (const m of messages) if (!isNoBotsMessage(m)) n++;
  return n;
}

/** Messages of several reads, each ascending, as one ascending list without duplicates. */
function mergeById(lists: readonly Message[][]): Message[] {
  if (lists.length === 1) return lists[0] as Message[];
  const byId = new Map<number, Message>();
  for (const list of lists) for (const m of list) if (!byId.has(m.id)) byId.set(m.id, m);
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

function rangeLimit(range: ReadRange): number {
  return range.kind === 'around' ? range.before + range.after + 1 : range.limit;
}

/**
 * Reads one page of a narrow through core's gate (policy scope check before, stray filter after),
 * drops `/nobots` messages (reading further, a few times at most, so that they do not eat into the
 * limit), and cuts the lines to the page budget from the side the read starts at.
 * @throws ZmcpError `CORE_ACCESS_DENIED`, `CORE_INVALID_ARGUMENT` and the request codes.
 */
export async function readMessagePage(
  services: ToolServices,
  plan: MessageReadPlan,
  call: CallOptions,
): Promise<MessagePage> {
  const readers = [await narrowReader(services, plan.narrow, plan.unscoped, call)];
  if (plan.alsoNarrow !== undefined)
    readers.push(await narrowReader(services, plan.alsoNarrow, plan.unscoped, call));
  const older = plan.direction === 'older';
  const { keep } = plan;
  const limit = rangeLimit(plan.range);
  let read: Message[] = [];
  let more = true;
  let scope: NarrowScopeKind = 'stream';
  let range: ReadRange | undefined = plan.range;
  for (let round = 0; range !== undefined && round <= MAX_TOP_UPS; round++) {
    const results = await Promise.all(readers.map((reader) => reader(range as ReadRange)));
    scope = (results[0] as ReadNarrowResult).scope;
    let batch = mergeById(results.map((r) => r.messages));
    more = results.some((r) => r.hasMore);
    // Merged reads may hold more than the range asked for: keep those nearest the start.
    const want = rangeLimit(range);
    if (batch.length > want) {
      batch = older ? batch.slice(batch.length - want) : batch.slice(0, want);
      more = true;
    }
    if (plan.beyond !== undefined) {
      const end = batch.findIndex(plan.beyond);
      if (end >= 0) {
        batch = batch.slice(0, end);
        more = false;
      }
    }
    read = older ? [...batch, ...read] : [...read, ...batch];
    const got = visibleCount(keep === undefined ? read : read.filter(keep));
    plan.progress?.({ progress: Math.min(got, limit), total: limit, message: 'messages read' });
    const need = limit - got;
    const edge = older ? read[0] : read[read.length - 1];
    range =
      !more || need <= 0 || edge === undefined
        ? undefined
        : older
          ? { kind: 'before', beforeId: edge.id, limit: need }
          : { kind: 'since', afterId: edge.id, limit: need };
  }
  // The continuation starts from the edge of what was read, matching or not.
  const { visible, hidden } = splitNoBots(keep === undefined ? read : read.filter(keep));
  const lines = await services.lines(visible, call);
  const budget = itemBudget(services);
  const fit = older ? fitFromEnd(lines, budget) : fitToBudget(lines, budget, ID_BYTES);
  const shown = older ? visible.slice(visible.length - fit.shown) : visible.slice(0, fit.shown);
  const cut = shown.length < visible.length;
  const hasMore = more || cut;
  const first = shown[0];
  const last = shown[shown.length - 1];
  // Hidden messages are counted only within the span this page covers, so a continuation does
  // not count them twice.
  const covered = (m: Message) =>
    !cut || (older ? first === undefined || m.id > first.id : last === undefined || m.id < last.id);
  let next: CursorPosition | undefined;
  if (hasMore) {
    const edge = cut ? (older ? first : last) : older ? read[0] : read[read.length - 1];
    if (edge !== undefined) next = older ? { kind: 'before', id: edge.id } : { kind: 'after', id: edge.id };
  }
  return {
    shown,
    text: fit.text,
    hidden: hidden.filter(covered).length,
    truncated: fit.truncated,
    hasMore,
    next,
    scope,
  };
}

/** The cursor for a page's continuation, or null. */
export function nextCursor(tool: string, query: unknown, next: CursorPosition | undefined): string | null {
  return next === undefined ? null : encodeCursor(tool, query, next);
}

/** `N messages` / `1 message`. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The tail of a message-page summary: hidden and cut notes, then how to continue. */
export function pageNotes(page: MessagePage, cursor: string | null, direction: 'older' | 'newer'): string {
  const notes: string[] = [];
  if (page.hidden > 0)
    notes.push(`${plural(page.hidden, 'message')} hidden (opted out of bots with /nobots)`);
  if (page.truncated) notes.push('cut to fit the page');
  let tail = notes.length > 0 ? `; ${notes.join('; ')}.` : '.';
  if (cursor !== null)
    tail += ` ${direction === 'older' ? 'Older' : 'Newer'} messages remain: call again with cursor "${cursor}".`;
  else if (page.hasMore) tail += ' More messages remain, but no position to continue from is known.';
  else tail += ` No ${direction} messages remain.`;
  return tail;
}

/** `(ids 101–140)` for a non-empty list. */
export function idSpan(messages: readonly Message[]): string {
  const first = messages[0];
  const last = messages[messages.length - 1];
  if (first === undefined || last === undefined) return '';
  return first.id === last.id ? ` (id ${first.id})` : ` (ids ${first.id}–${last.id})`;
}

/** A page of plain items cut to the budget from an offset. */
export interface ItemPage<T> {
  items: T[];
  text: string;
  truncated: boolean;
  /** Offset of the next page, or undefined at the end. */
  nextOffset: number | undefined;
}

/**
 * Takes up to `limit` items from `offset`, renders one line each and cuts the lines to the item
 * budget; the next offset continues after the last item shown.
 */
export function pageItems<T>(
  services: ToolServices,
  all: readonly T[],
  offset: number,
  limit: number,
  render: (item: T) => string,
): ItemPage<T> {
  const slice = all.slice(offset, offset + limit);
  const fit = fitToBudget(slice.map(render), itemBudget(services), ID_BYTES);
  const items = slice.slice(0, fit.shown);
  const end = offset + items.length;
  return {
    items,
    text: fit.text,
    truncated: fit.truncated,
    nextOffset: end < all.length ? end : undefined,
  };
}

/** The offset a cursor continues at (0 without one). */
export function offsetFrom(position: CursorPosition | undefined): number {
  return position?.kind === 'offset' ? position.offset : 0;
}

/** The continuation sentence of an item page. */
export function itemNotes(page: ItemPage<unknown>, cursor: string | null, what: string): string {
  const cut = page.truncated ? ' The page was cut to fit.' : '';
  return cursor === null ? `${cut}` : `${cut} More ${what} remain: call again with cursor "${cursor}".`;
}

/** The item offset in a summary: `showing 1–50 of 120`. */
export function rangeOf(offset: number, shown: number, total: number): string {
  if (shown === 0) return `none of ${total} shown`;
  return `showing ${offset + 1}–${offset + shown} of ${total}`;
}
