import { errorCode, formatTimestamp, parseDateRange, type ReadRange } from '@zmcp/core';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { resolveConversation } from './conversation.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  idSpan,
  limitSchema,
  MESSAGE_PAGE_FIELDS,
  messagePageData,
  nextCursor,
  pageNotes,
  plural,
  queryOf,
  READ_ANNOTATIONS,
  readCursor,
  readMessagePage,
  StreamRefSchema,
  TopicInputSchema,
} from './shared.js';

const NAME = 'get_channel_history';

/** How the date-range tools read `when`, for their field descriptions. */
export const WHEN_HELP =
  'A day or range in your time zone: today, 3 days ago, last week, 2026-09-14, 2026-09 or 2026-09-01..2026-09-14';

/** The `when` input shared by the date-range tools. */
export const WhenSchema = z.string().trim().min(1).max(100);

const InputSchema = z.object({
  stream: StreamRefSchema,
  topic: TopicInputSchema.optional().describe('One topic; omit for the whole stream'),
  when: WhenSchema.default('today').describe(WHEN_HELP),
  limit: limitSchema(200, 50),
  cursor: CursorSchema,
});

const OutputSchema = z.object({
  ...MESSAGE_PAGE_FIELDS,
  from: z.string().describe('Start of the span read (inclusive)'),
  to: z.string().describe('End of the span read (exclusive)'),
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
    if (errorCode(err) !== 'CORE_INVALID_ARGUMENT') throw err;
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
    'Read a stream or topic over a day or date range in plain words (today, last week, 2026-09-14, 2026-09-01..2026-09-14), oldest first, one message line each.',
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'browse',
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
        progress: context.progress,
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
      data: { ...messagePageData(page, cursor), from: span.from, to: span.to },
    };
  },
});
