import type { CallOptions } from '@zmcp/core';
import { escapeMsgName } from '@zmcp/core';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { decodeCursor, encodeCursor, fitToBudget } from '../page.js';
import { CursorSchema } from '../read/shared.js';
import { defineTool } from '../tool.js';
import {
  countText,
  countUnread,
  itemBudget,
  liveUpdates,
  type MonitorContext,
  mapInBatches,
  plural,
  READ_ANNOTATIONS,
  resolveMonitored,
  streamLabel,
} from './shared.js';

/** The most one stream's row of typed fields takes in JSON. */
const ROW_BYTES = 110;

const TOOL = 'get_monitored_channels';
const MAX_LIMIT = 50;

const inputSchema = z.object({
  limit: z.number().int().min(1).max(MAX_LIMIT).optional().describe(`1-${MAX_LIMIT}`),
  cursor: CursorSchema,
});

const outputSchema = z.object({
  streams: z.array(
    z.object({
      stream_id: z.number().int().nullable(),
      cursor: z.number().int().nullable(),
      unread: z.number().int(),
      unread_more: z.boolean(),
      newest_id: z.number().int().nullable(),
    }),
  ),
  total: z.number().int(),
  live_updates: z.boolean(),
  next_cursor: z.string().nullable(),
});

/** `get_monitored_channels`: the monitored streams with their cursors and unread counts. */
export const getMonitoredChannelsTool = defineTool({
  name: TOOL,
  title: 'List monitored streams',
  description:
    'List the streams this session monitors, each with its cursor and how many messages are unread since it.',
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
      if (r.error !== null)
        return `${streamLabel(r.stream)}: cannot be read (${escapeMsgName(r.error)}); ${cursor}`;
      const newest = r.newest_id === null ? '' : `, newest id=${r.newest_id}`;
      return `${streamLabel(r.stream)}: ${countText({ unread: r.unread, more: r.unread_more, newestId: undefined, error: undefined })}${newest}, ${cursor}`;
    });
    // Each line brings a row of typed fields: both renderings stay inside the budget.
    const fitted = fitToBudget(lines, itemBudget(services), ROW_BYTES);
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
      data: {
        streams: shown.map((r) => ({
          stream_id: r.stream_id,
          cursor: r.cursor,
          unread: r.unread,
          unread_more: r.unread_more,
          newest_id: r.newest_id,
        })),
        total: entries.length,
        live_updates: live.running,
        next_cursor: nextCursor,
      },
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
