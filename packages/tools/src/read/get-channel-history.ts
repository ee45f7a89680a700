import { formatTimestamp, parseDateRange, type ReadRange } from '@zmcp/core';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { MessageOutputSchema, toMessageOutput } from '../output.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { resolveConversation } from './conversation.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  idSpan,
  nextCursor,
  pageNotes,
  plural,
  queryOf,
  READ_ANNOTATIONS,
  readCursor,
  readMessagePage,
  StreamRefSchema,
} from './shared.js';

const NAME = 'get_channel_history';

/** How the date-range tools read `when`, for their field descriptions. */
export const WHEN_HELP =
  'A date or range in the agent\'s time zone: "today", "yesterday", "3 days ago", "last week", "last 7 days", "monday", "2026-09-14", "2026-09", "2026-09-14T09:00", or a range "2026-09-01..2026-09-14" (either end may be open).';

/** The `when` input shared by the date-range tools. */
export const WhenSchema = z.string().trim().min(1).max(100);

const InputSchema = z.object({
  stream: StreamRefSchema.describe('Stream name (or id) to read.'),
  topic: z
    .string()
    .max(300)
    .optional()
    .describe('Only this topic; omit for the whole stream. "" or "(no topic)" is the empty topic.'),
  when: WhenSchema.default('today').describe(`${WHEN_HELP} Default: today.`),
  limit: z
    .number()
    .int()
    .min(1)
    .max(200)
    .default(50)
    .describe('Most messages to return (1-200, default 50).'),
  cursor: CursorSchema,
});

const OutputSchema = z.object({
  conversation: z.string().describe('"#stream" or "#stream > topic"'),
  range: z
    .object({
      from: z.string().describe('Start of the range (inclusive), in the agent time zone'),
      to: z.string().describe('End of the range (exclusive), in the agent time zone'),
      time_zone: z.string(),
    })
    .describe('The span `when` was read as'),
  messages: z.array(MessageOutputSchema).describe('Oldest first'),
  hidden: z.number().int().describe('Messages left out because they opted out of bots (/nobots)'),
  truncated: z.boolean().describe('The page byte budget cut the list'),
  has_more: z.boolean().describe('More messages of the range remain'),
  next_cursor: z
    .string()
    .nullable()
    .describe('Pass as cursor (with the same arguments) to continue; null at the end'),
});

/**
 * Reads `when` in the agent's zone at the services' clock.
 * @throws ToolError `TOOLS_INVALID_INPUT` naming `when` for a date it cannot read.
 */
export function dateSpan(
  services: ToolServices,
  when: string,
): { start: Date; end: Date; from: string; to: string } {
  let span: { start: Date; end: Date };
  try {
    span = parseDateRange(when, { timeZone: services.timeZone, now: services.now() });
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'CORE_INVALID_ARGUMENT') throw err;
    throw new ToolError('TOOLS_INVALID_INPUT', `Invalid arguments: when: ${(err as Error).message}`);
  }
  const fmt = (d: Date) => formatTimestamp(Math.floor(d.getTime() / 1000), { timeZone: services.timeZone });
  return { start: span.start, end: span.end, from: fmt(span.start), to: fmt(span.end) };
}

/** `get_channel_history`: a stream or topic over a natural date range, oldest first. */
export const getChannelHistoryTool = defineTool({
  name: NAME,
  title: 'Channel history by date',
  description:
    'Read what was said in a stream (or one of its topics) over a day or date range given in plain words — "today", "yesterday", "3 days ago", "last week", "2026-09-14", "2026-09-01..2026-09-14" — read in the agent\'s time zone. Messages are listed oldest first, one line each with their id (use fetch_around or fetch_history to go further from any of them). The first line gives the exact span read, how many messages were found and, when more of the range remains, the cursor to pass back (with the same arguments) for the next page. Messages that opted out of bots (/nobots) are left out and counted.',
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'read',
  async handler(services: ToolServices, input, context) {
    checkDeadline(context);
    const call = callOptions(context);
    const query = queryOf(input);
    const position = readCursor(NAME, query, input.cursor, ['after']);
    const span = dateSpan(services, input.when);
    const conversation = await resolveConversation(
      services,
      { stream: input.stream, topic: input.topic },
      call,
    );
    const endSeconds = span.end.getTime() / 1000;
    const range: ReadRange =
      position === undefined
        ? { kind: 'between', from: span.start, to: span.end, limit: input.limit }
        : { kind: 'since', afterId: position.kind === 'after' ? position.id : 0, limit: input.limit };
    const page = await readMessagePage(
      services,
      {
        narrow: conversation.narrow,
        range,
        direction: 'newer',
        beyond: (m) => m.timestamp >= endSeconds,
      },
      call,
    );
    const cursor = nextCursor(NAME, query, page.next);
    const within = `between ${span.from} and ${span.to} (${services.timeZone})`;
    const head =
      page.shown.length === 0
        ? `No ${position === undefined ? '' : 'more '}messages in ${conversation.label} ${within}`
        : `${plural(page.shown.length, 'message')} in ${conversation.label} ${within}${idSpan(page.shown)}, oldest first`;
    const summary = head + pageNotes(page, cursor, 'newer');
    return {
      text: page.shown.length === 0 ? summary : `${summary}\n${page.text}`,
      data: {
        conversation: conversation.label,
        range: { from: span.from, to: span.to, time_zone: services.timeZone },
        messages: page.shown.map(toMessageOutput),
        hidden: page.hidden,
        truncated: page.truncated,
        has_more: page.hasMore,
        next_cursor: cursor,
      },
    };
  },
});
