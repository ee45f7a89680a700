import {
  type CallOptions,
  escapeMsgName,
  foldStreamName,
  isNoBotsMessage,
  type Message,
  sameStreamName,
  ZmcpError,
} from '@zmcp/core';
import { isDeliveryError } from '@zmcp/delivery';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { decodeCursor, encodeCursor, fitToBudget, jsonBytes } from '../page.js';
import { CursorSchema, ID_BYTES } from '../read/shared.js';
import { defineTool } from '../tool.js';
import {
  describeFailure,
  isShownUnread,
  isStreamFailure,
  itemBudget,
  type MonitorContext,
  mapInBatches,
  plural,
  type ResolvedMonitored,
  readStreamUnread,
  resolveMonitored,
  StreamNameSchema,
  type StreamUnreadRead,
  streamLabel,
} from './shared.js';

const TOOL = 'get_unread_messages';
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;
const MAX_STREAMS = 50;

const inputSchema = z.object({
  streams: z
    .array(StreamNameSchema)
    .min(1)
    .max(MAX_STREAMS)
    .optional()
    .describe('Only these monitored streams'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_LIMIT)
    .optional()
    .describe(`1-${MAX_LIMIT}, default ${DEFAULT_LIMIT}`),
  advance: z.boolean().optional().describe('Move the cursors past what is returned (default true)'),
  mark_read_in_zulip: z.boolean().optional().describe("Also set Zulip's read flag on what is returned"),
  cursor: CursorSchema,
});

const outputSchema = z.object({
  ids: z.array(z.number().int()).describe('Unread messages shown, oldest first'),
  unreadable: z.number().int().describe('Monitored streams that could not be read'),
  hidden: z.number().int(),
  advanced: z.boolean(),
  marked_read: z.number().int().nullable(),
  next_cursor: z.string().nullable(),
});

/** What the call learned of one monitored stream (its rows move cursors; they are not returned). */
interface StreamRow {
  stream: string;
  stream_id: number | null;
  returned: number;
  cursor: number | null;
  more: boolean;
  error: string | null;
}

interface Item {
  readonly message: Message;
  readonly stream: number;
  readonly shown: boolean;
}

/** `get_unread_messages`: what is new in the monitored streams since this session's cursors. */
export const getUnreadMessagesTool = defineTool({
  name: TOOL,
  title: 'Get unread messages',
  description:
    "Read what is new in the monitored streams since each stream's cursor, oldest first, as message lines; by default the cursors then move past it (advance: false peeks).",
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  write: false,
  toolset: 'monitor',
  async handler(context: MonitorContext, input, { signal }) {
    const { services, monitor, changes } = context;
    const call: CallOptions = { signal };
    const advance = input.advance ?? true;
    const limit = input.limit ?? DEFAULT_LIMIT;
    const markRead = input.mark_read_in_zulip === true;
    if (markRead && services.policy.readOnly) {
      throw new ZmcpError(
        'CORE_READ_ONLY',
        'mark_read_in_zulip sets Zulip’s read flag, a write that read-only mode refuses; nothing was read or moved. Call again without mark_read_in_zulip: unread messages and cursors work in read-only mode.',
        { details: { reason: 'read-only', field: 'mark_read_in_zulip' } },
      );
    }
    const query = {
      streams: input.streams === undefined ? null : [...new Set(input.streams.map(foldStreamName))].sort(),
    };
    let after = 0;
    if (input.cursor !== undefined) {
      const position = decodeCursor(TOOL, query, input.cursor);
      if (position.kind !== 'after') {
        throw new ToolError(
          'TOOLS_INVALID_CURSOR',
          `Invalid cursor: it does not continue this read. Pass back next_cursor exactly as ${TOOL} returned it, or omit it.`,
        );
      }
      after = position.id;
    }

    const lookup = await services.directory.streamLookup(call);
    const all = resolveMonitored(await monitor.list(), lookup);
    let selected = all;
    if (input.streams !== undefined) {
      selected = [];
      for (const name of input.streams) {
        const id = lookup(name)?.stream_id;
        const hit = all.find(
          (s) =>
            sameStreamName(s.name, name) ||
            sameStreamName(s.entry.name, name) ||
            (id !== undefined && s.streamId === id),
        );
        if (hit === undefined) {
          throw new ToolError(
            'TOOLS_NOT_FOUND',
            `Stream ${JSON.stringify(name)} is not monitored: call start_monitoring for it first, or leave it out of streams (get_monitored_channels lists the monitored ones).`,
            { field: 'streams', stream: name },
          );
        }
        if (!selected.includes(hit)) selected.push(hit);
      }
    }
    if (selected.length === 0) {
      return {
        text: 'No streams are monitored, so nothing is unread; call start_monitoring to begin.',
        data: {
          ids: [],
          unreadable: 0,
          hidden: 0,
          advanced: false,
          marked_read: markRead ? 0 : null,
          next_cursor: null,
        },
      };
    }

    // One read per stream, from its cursor (or the page position, if further).
    const reads = await mapInBatches(selected, async (s) => {
      try {
        return await readStreamUnread(services, s, Math.max(s.cursor ?? 0, after), limit, lookup, call);
      } catch (err) {
        if (!isStreamFailure(err)) throw err;
        return describeFailure(err);
      }
    });

    // A stream with more to fetch bounds what can be shown in id order: beyond its last fetched
    // message it may hold older ids than the other streams' next ones.
    let horizon = Number.POSITIVE_INFINITY;
    let maxFetched = 0;
    const items: Item[] = [];
    reads.forEach((read, index) => {
      if (typeof read === 'string') return;
      const last = read.fetched.at(-1)?.id;
      if (last !== undefined) maxFetched = Math.max(maxFetched, last);
      if (read.hasMore && last !== undefined) horizon = Math.min(horizon, last);
      for (const message of read.fetched) {
        items.push({ message, stream: index, shown: isShownUnread(services, message) });
      }
    });
    const inReach = items.filter((i) => i.message.id <= horizon).sort((a, b) => a.message.id - b.message.id);
    const candidates = inReach.filter((i) => i.shown);
    const capped = candidates.slice(0, limit);
    // Streams that could not be read are reported inside the budget too: their lines first (at
    // most half the budget), the messages in what is left.
    const failed = selected
      .map((s, index) => ({ s, read: reads[index] }))
      .filter((x): x is { s: ResolvedMonitored; read: string } => typeof x.read === 'string');
    const errorLines = fitToBudget(
      failed.map((x) => `${streamLabel(x.s.name)}: could not be read (${escapeMsgName(x.read)})`),
      Math.floor(itemBudget(services) / 2),
    );
    const page = fitToBudget(
      await services.lines(
        capped.map((i) => i.message),
        call,
      ),
      itemBudget(services) - (errorLines.text === '' ? 0 : jsonBytes(errorLines.text) + 2),
      ID_BYTES,
    );
    const shown = capped.slice(0, page.shown);
    const cutShort = shown.length < candidates.length;
    // Everything up to stopId has been returned or skipped, in every stream read.
    const stopId =
      items.length === 0
        ? undefined
        : cutShort
          ? (shown.at(-1) as Item).message.id
          : Number.isFinite(horizon)
            ? horizon
            : maxFetched;
    const consumed = (i: Item) => stopId !== undefined && i.message.id <= stopId;

    let markedRead: number | null = null;
    if (markRead) {
      const ids = shown.map((i) => i.message.id);
      if (ids.length > 0) {
        await services.client.updateMessageFlags({ messages: ids, op: 'add', flag: 'read' }, call);
      }
      markedRead = ids.length;
    }

    const rows: StreamRow[] = [];
    const moved: string[] = [];
    for (const [index, s] of selected.entries()) {
      const read = reads[index] as StreamUnreadRead | string;
      if (typeof read === 'string') {
        rows.push(row(s, 0, s.cursor, false, read));
        continue;
      }
      const mine = items.filter((i) => i.stream === index);
      const lastConsumed = mine.filter(consumed).at(-1)?.message.id;
      let cursor = s.cursor;
      if (advance && lastConsumed !== undefined && lastConsumed > (cursor ?? 0)) {
        try {
          cursor = (await monitor.advance(s.entry, lastConsumed)).lastReadId;
          moved.push(s.entry.name);
        } catch (err) {
          // Stopped meanwhile by another call: nothing to move.
          if (!isDeliveryError(err, 'DELIVERY_NOT_MONITORED')) throw err;
        }
      }
      const returned = shown.filter((i) => i.stream === index).length;
      const more = read.hasMore || mine.some((i) => !consumed(i) && i.shown);
      rows.push(row(s, returned, cursor, more, null));
    }
    if (moved.length > 0) changes.cursorsMoved(moved);

    const hidden = items.filter((i) => consumed(i) && isNoBotsMessage(i.message)).length;
    const more = rows.some((r) => r.more);
    const nextCursor =
      more && stopId !== undefined ? encodeCursor(TOOL, query, { kind: 'after', id: stopId }) : null;
    const streamsWith = rows.filter((r) => r.returned > 0).length;
    const parts = [
      shown.length === 0
        ? `No unread messages in ${plural(selected.length, 'monitored stream')}`
        : `${plural(shown.length, 'unread message')} from ${streamsWith} of ${plural(selected.length, 'monitored stream')}, oldest first`,
    ];
    if (hidden > 0) parts.push(`${hidden} hidden (/nobots)`);
    let head = `${parts.join('; ')}.`;
    if (shown.length > 0) head += advance ? ' Cursors moved past them.' : ' Cursors not moved (peek).';
    if (markedRead !== null && markedRead > 0)
      head += ` Marked ${plural(markedRead, 'message')} read in Zulip.`;
    head += more
      ? advance
        ? ' More unread remain: call get_unread_messages again.'
        : ' More unread remain: pass next_cursor as cursor.'
      : ' Nothing more is unread.';
    if (failed.length > 0) head += ` ${plural(failed.length, 'stream')} could not be read.`;
    const body = [errorLines.text, page.text].filter((t) => t !== '').join('\n');
    return {
      text: body === '' ? head : `${head}\n${body}`,
      data: {
        ids: shown.map((i) => i.message.id),
        unreadable: failed.length,
        hidden,
        advanced: moved.length > 0,
        marked_read: markedRead,
        next_cursor: nextCursor,
      },
    };
  },
});

function row(
  s: ResolvedMonitored,
  returned: number,
  cursor: number | undefined,
  more: boolean,
  error: string | null,
): StreamRow {
  return {
    stream: escapeMsgName(s.name),
    stream_id: s.streamId ?? null,
    returned,
    cursor: cursor ?? null,
    more,
    error: error === null ? null : escapeMsgName(error),
  };
}
