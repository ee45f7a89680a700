import type { Message } from '@zmcp/core';
import { z } from 'zod';
import { type CursorPosition, encodeCursor, fitToBudget, jsonBytes } from '../page.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { conversationOf, readVisibleMessage } from './message-access.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  ID_BYTES,
  idSpan,
  itemBudget,
  MessageIdSchema,
  narrowReader,
  nextCursor,
  pageNotes,
  plural,
  queryOf,
  READ_ANNOTATIONS,
  readCursor,
  readMessagePage,
  splitNoBots,
  visibleCount,
} from './shared.js';

const NAME = 'fetch_around';
const ANCHOR_MARK = '→ ';

const InputSchema = z.object({
  message_id: MessageIdSchema.describe('The message to centre on'),
  before: z.number().int().min(0).max(100).default(5).describe('Messages before it, 0-100'),
  after: z.number().int().min(0).max(100).default(5).describe('Messages after it, 0-100'),
  cursor: CursorSchema.describe('older_cursor or newer_cursor of a previous call with the same arguments'),
});

const OutputSchema = z.object({
  anchor_id: z.number().int(),
  ids: z.array(z.number().int()).describe('The messages shown, oldest first'),
  hidden: z.number().int(),
  truncated: z.boolean(),
  has_older: z.boolean(),
  has_newer: z.boolean(),
  older_cursor: z.string().nullable(),
  newer_cursor: z.string().nullable(),
});

/** What a line costs the page: its JSON size, its id in `ids` and the newline. */
function bytes(text: string): number {
  return jsonBytes(text) + ID_BYTES + 2;
}

/** Grows a window out from the anchor, one message on each side in turn, while the budget allows. */
function centre(lines: readonly string[], anchor: number, budget: number): { lo: number; hi: number } {
  let lo = anchor;
  let hi = anchor + 1;
  let used = bytes(lines[anchor] as string);
  let grew = true;
  while (grew) {
    grew = false;
    if (lo > 0) {
      const size = bytes(lines[lo - 1] as string) + 1;
      if (used + size <= budget) {
        lo--;
        used += size;
        grew = true;
      }
    }
    if (hi < lines.length) {
      const size = bytes(lines[hi] as string) + 1;
      if (used + size <= budget) {
        hi++;
        used += size;
        grew = true;
      }
    }
  }
  return { lo, hi };
}

/** `fetch_around`: a window of a message's own conversation centred on it. */
export const fetchAroundTool = defineTool({
  name: NAME,
  title: 'Fetch messages around a message',
  description:
    'Show a message in its conversation: up to `before` older and `after` newer messages of its topic or DM, oldest first, the message marked →. Cursors extend either side.',
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'read',
  async handler(services: ToolServices, input, context) {
    checkDeadline(context);
    const call = callOptions(context);
    const query = queryOf(input);
    const position = readCursor(NAME, query, input.cursor, ['before', 'after']);
    // The anchor is read through the single-message gate first: its conversation decides the
    // narrow, and a message the policy keeps closed stops here.
    const anchor = await readVisibleMessage(services, input.message_id, call);
    const conversation = conversationOf(services, anchor);

    if (position !== undefined && position.kind !== 'offset') {
      const older = position.kind === 'before';
      const page = await readMessagePage(
        services,
        {
          progress: context.progress,
          narrow: conversation.narrow,
          range: older
            ? { kind: 'before', beforeId: position.id, limit: Math.max(1, input.before) }
            : { kind: 'since', afterId: position.id, limit: Math.max(1, input.after) },
          direction: older ? 'older' : 'newer',
        },
        call,
      );
      const cursor = nextCursor(NAME, query, page.next);
      const head =
        page.shown.length === 0
          ? `No ${older ? 'older' : 'newer'} messages around id ${anchor.id} in ${conversation.label}`
          : `${plural(page.shown.length, 'message')} ${older ? 'before' : 'after'} id ${position.id} around id ${anchor.id} in ${conversation.label}${idSpan(page.shown)}, oldest first`;
      const summary = head + pageNotes(page, cursor, older ? 'older' : 'newer');
      return {
        text: page.shown.length === 0 ? summary : `${summary}\n${page.text}`,
        data: {
          anchor_id: anchor.id,
          ids: page.shown.map((m) => m.id),
          hidden: page.hidden,
          truncated: page.truncated,
          has_older: older && page.hasMore,
          has_newer: !older && page.hasMore,
          older_cursor: older ? cursor : null,
          newer_cursor: older ? null : cursor,
        },
      };
    }

    const reader = await narrowReader(services, conversation.narrow, undefined, call);
    const result = await reader({
      kind: 'around',
      id: anchor.id,
      before: input.before,
      after: input.after,
    });
    let read = result.messages;
    // The gate read the anchor a moment ago; keep it in the window even if the narrow missed it.
    if (!read.some((m) => m.id === anchor.id)) read = [...read, anchor].sort((a, b) => a.id - b.id);
    let hasOlderRead = result.hasOlder === true;
    let hasNewerRead = result.hasNewer === true;
    // Messages that opted out of bots do not eat into either side: read a little further.
    for (let round = 0; round < 3; round++) {
      const olderNeed = input.before - visibleCount(read.filter((m) => m.id < anchor.id));
      const oldest = read[0];
      if (!hasOlderRead || olderNeed <= 0 || oldest === undefined) break;
      const more = await reader({ kind: 'before', beforeId: oldest.id, limit: olderNeed });
      read = [...more.messages, ...read];
      hasOlderRead = more.hasMore;
    }
    for (let round = 0; round < 3; round++) {
      const newerNeed = input.after - visibleCount(read.filter((m) => m.id > anchor.id));
      const newest = read[read.length - 1];
      if (!hasNewerRead || newerNeed <= 0 || newest === undefined) break;
      const more = await reader({ kind: 'since', afterId: newest.id, limit: newerNeed });
      read = [...read, ...more.messages];
      hasNewerRead = more.hasMore;
    }
    const { visible, hidden } = splitNoBots(read);
    const at = visible.findIndex((m) => m.id === anchor.id);
    const lines = (await services.lines(visible, call)).map(
      (line, i) => (visible[i]?.id === anchor.id ? ANCHOR_MARK : '') + line,
    );
    const budget = itemBudget(services);
    let { lo, hi } = centre(lines, at, budget);
    let text = lines.slice(lo, hi).join('\n');
    let truncated = lo > 0 || hi < visible.length;
    if (bytes(lines[at] as string) > budget) {
      const cut = fitToBudget([lines[at] as string], budget);
      text = cut.text;
      truncated = true;
      lo = at;
      hi = at + 1;
    }
    const shown = visible.slice(lo, hi);
    const first = shown[0] as Message;
    const last = shown[shown.length - 1] as Message;
    const cutOlder = lo > 0;
    const cutNewer = hi < visible.length;
    const hasOlder = cutOlder || hasOlderRead;
    const hasNewer = cutNewer || hasNewerRead;
    const oldestRead = Math.min(anchor.id, read[0]?.id ?? anchor.id);
    const newestRead = Math.max(anchor.id, read[read.length - 1]?.id ?? anchor.id);
    const olderAt: CursorPosition = { kind: 'before', id: cutOlder ? first.id : oldestRead };
    const newerAt: CursorPosition = { kind: 'after', id: cutNewer ? last.id : newestRead };
    const olderCursor = hasOlder ? encodeCursor(NAME, query, olderAt) : null;
    const newerCursor = hasNewer ? encodeCursor(NAME, query, newerAt) : null;
    const hiddenCount = hidden.filter(
      (m) => (!cutOlder || m.id > first.id) && (!cutNewer || m.id < last.id),
    ).length;

    const notes: string[] = [];
    if (hiddenCount > 0)
      notes.push(`${plural(hiddenCount, 'message')} hidden (opted out of bots with /nobots)`);
    if (truncated) notes.push('cut to fit the page');
    let summary = `${plural(shown.length, 'message')} around id ${anchor.id} in ${conversation.label}${idSpan(shown)}, oldest first, the anchor marked →`;
    summary += notes.length > 0 ? `; ${notes.join('; ')}.` : '.';
    summary += olderCursor === null ? ' No older messages.' : ` Older: cursor "${olderCursor}".`;
    summary += newerCursor === null ? ' No newer messages.' : ` Newer: cursor "${newerCursor}".`;
    return {
      text: `${summary}\n${text}`,
      data: {
        anchor_id: anchor.id,
        ids: shown.map((m) => m.id),
        hidden: hiddenCount,
        truncated,
        has_older: hasOlder,
        has_newer: hasNewer,
        older_cursor: olderCursor,
        newer_cursor: newerCursor,
      },
    };
  },
});
