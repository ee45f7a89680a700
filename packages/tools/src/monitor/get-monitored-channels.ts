import type { CallOptions } from '@zmcp/core';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { decodeCursor, encodeCursor, fitToBudget } from '../page.js';
import { defineTool } from '../tool.js';
import {
  COUNT_LIMIT,
  countText,
  countUnread,
  itemBudget,
  LiveUpdatesSchema,
  liveUpdates,
  type MonitorContext,
  mapInBatches,
  plural,
  READ_ANNOTATIONS,
  resolveMonitored,
  streamLabel,
} from './shared.js';

const TOOL = 'get_monitored_channels';
const MAX_LIMIT = 50;

const inputSchema = z.object({
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_LIMIT)
    .optional()
    .describe(`Streams per page (1-${MAX_LIMIT}, default ${MAX_LIMIT}); each is counted with one read`),
  cursor: z
    .string()
    .min(1)
    .max(512)
    .optional()
    .describe('Continuation cursor from the previous call (its next_cursor); omit it to start over.'),
});

const outputSchema = z.object({
  streams: z.array(
    z.object({
      stream: z.string(),
      stream_id: z.number().int().nullable(),
      cursor: z
        .number()
        .int()
        .nullable()
        .describe('Id of the last message counted as read; newer ones are unread (null: none read yet)'),
      unread: z.number().int().describe(`Unread messages (the count stops at ${COUNT_LIMIT})`),
      unread_more: z.boolean().describe(`More than ${COUNT_LIMIT} are unread`),
      newest_id: z.number().int().nullable().describe('Id of the newest unread message'),
      error: z.string().nullable().describe('Why the stream could not be read, when it could not'),
    }),
  ),
  total: z.number().int().describe('How many streams this session monitors'),
  live_updates: LiveUpdatesSchema,
  next_cursor: z.string().nullable(),
});

/** `get_monitored_channels`: the monitored streams with their cursors and unread counts. */
export const getMonitoredChannelsTool = defineTool({
  name: TOOL,
  title: 'List monitored streams',
  description:
    'List the streams this session monitors (start_monitoring), each with its read cursor, how many messages are unread (newer than the cursor; not the bot’s own, not /nobots) and the newest unread id, plus whether live resource updates are running. ' +
    `Counts stop at ${COUNT_LIMIT} ("${COUNT_LIMIT}+"). Reading this moves no cursor. Streams are listed by name, ${MAX_LIMIT} per page; pass next_cursor back as cursor for more.`,
  inputSchema,
  outputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'monitor',
  async handler(context: MonitorContext, input, { signal }) {
    const { services, monitor, watcher } = context;
    const call: CallOptions = { signal };
    const limit = input.limit ?? MAX_LIMIT;
    const offset = input.cursor === undefined ? 0 : offsetOf(decodeCursor(TOOL, {}, input.cursor));
    const entries = await monitor.list();
    const lookup = await services.directory.streamLookup(call);
    const page = resolveMonitored(entries.slice(offset, offset + limit), lookup);
    const counts = await mapInBatches(page, (s) => countUnread(services, s, lookup, call));
    const rows = page.map((s, i) => {
      const c = counts[i] as (typeof counts)[number];
      return {
        stream: s.name,
        stream_id: s.streamId ?? null,
        cursor: s.cursor ?? null,
        unread: c.unread,
        unread_more: c.more,
        newest_id: c.newestId ?? null,
        error: c.error ?? null,
      };
    });
    const lines = rows.map((r) => {
      const cursor = r.cursor === null ? 'no cursor' : `cursor id=${r.cursor}`;
      if (r.error !== null) return `${streamLabel(r.stream)}: cannot be read (${r.error}); ${cursor}`;
      const newest = r.newest_id === null ? '' : `, newest id=${r.newest_id}`;
      return `${streamLabel(r.stream)}: ${countText({ unread: r.unread, more: r.unread_more, newestId: undefined, error: undefined })}${newest}, ${cursor}`;
    });
    const fitted = fitToBudget(lines, itemBudget(services));
    const shown = rows.slice(0, fitted.shown);
    const end = offset + shown.length;
    const nextCursor = end < entries.length ? encodeCursor(TOOL, {}, { kind: 'offset', offset: end }) : null;
    const live = liveUpdates(watcher);
    const unread = shown.reduce((n, r) => n + r.unread, 0);
    const anyMore = shown.some((r) => r.unread_more);
    const head =
      entries.length === 0
        ? 'No streams are monitored; call start_monitoring to begin.'
        : `${plural(entries.length, 'monitored stream')}; ${shown.length === entries.length ? '' : `streams ${offset + 1}-${end} shown, `}${unread}${anyMore ? '+' : ''} unread in them. Live updates: ${live.running ? 'running' : `off (${live.state})`}.` +
          (nextCursor === null ? '' : ' More streams: pass next_cursor as cursor.');
    return {
      text: fitted.text === '' ? head : `${head}\n${fitted.text}`,
      data: { streams: shown, total: entries.length, live_updates: live, next_cursor: nextCursor },
    };
  },
});

function offsetOf(position: ReturnType<typeof decodeCursor>): number {
  if (position.kind !== 'offset') {
    throw new ToolError(
      'TOOLS_INVALID_CURSOR',
      `Invalid cursor: it does not continue this list. Pass back next_cursor exactly as ${TOOL} returned it, or omit it to start over.`,
    );
  }
  return position.offset;
}
