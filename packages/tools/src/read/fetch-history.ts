import type { ReadRange } from '@zmcp/core';
import { z } from 'zod';
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
  MessageIdSchema,
  type MessageReadPlan,
  messagePageData,
  mismatchedCursor,
  nextCursor,
  pageNotes,
  plural,
  queryOf,
  READ_ANNOTATIONS,
  readCursor,
  readMessagePage,
  StreamRefSchema,
  TopicInputSchema,
  UserRefSchema,
} from './shared.js';

const NAME = 'fetch_history';

const InputSchema = z.object({
  stream: StreamRefSchema.optional().describe('Stream name or id; give this or dm'),
  topic: TopicInputSchema.optional().describe('One topic of the stream; omit for the whole stream'),
  dm: z
    .array(UserRefSchema)
    .min(1)
    .max(20)
    .optional()
    .describe('The other people of a DM (ids, emails or names); give this or stream'),
  before: MessageIdSchema.optional().describe('Only messages older than this id'),
  after: z
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe('Only messages newer than this id, read forwards (0: from the start)'),
  limit: limitSchema(200, 20),
  cursor: CursorSchema,
});

const OutputSchema = z.object({
  ...MESSAGE_PAGE_FIELDS,
  direction: z.enum(['older', 'newer']).describe('Which way next_cursor continues'),
});

/** `fetch_history`: a stream, topic or DM conversation, newest first by default, with id cursors. */
export const fetchHistoryTool = defineTool({
  name: NAME,
  title: 'Fetch conversation history',
  description:
    'Read a stream, one of its topics, or a DM, one message line each, oldest to newest. By default the newest `limit` messages; `before`/`after` (message ids) read older or newer. The first line says what was found and gives a cursor when more remain.',
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
    const conversation = await resolveConversation(services, input, call);
    const forwards = input.after !== undefined;
    if (position !== undefined && (position.kind === 'after') !== forwards) throw mismatchedCursor(NAME);
    let range: ReadRange;
    let beyond: MessageReadPlan['beyond'];
    if (forwards) {
      const from = position?.kind === 'after' ? position.id : (input.after as number);
      range = { kind: 'since', afterId: from, limit: input.limit };
      const upper = input.before;
      if (upper !== undefined) beyond = (m) => m.id >= upper;
    } else {
      const upper = position?.kind === 'before' ? position.id : input.before;
      range =
        upper === undefined
          ? { kind: 'newest', limit: input.limit }
          : { kind: 'before', beforeId: upper, limit: input.limit };
    }
    const direction = forwards ? ('newer' as const) : ('older' as const);
    const page = await readMessagePage(
      services,
      { progress: context.progress, narrow: conversation.narrow, range, direction, beyond },
      call,
    );
    const cursor = nextCursor(NAME, query, page.next);
    const head =
      page.shown.length === 0
        ? `No messages in ${conversation.label}${forwards ? ` after id ${input.after}` : input.before === undefined ? '' : ` before id ${input.before}`}`
        : `${plural(page.shown.length, 'message')} in ${conversation.label}${idSpan(page.shown)}, oldest first`;
    const summary = head + pageNotes(page, cursor, direction);
    return {
      text: page.shown.length === 0 ? summary : `${summary}\n${page.text}`,
      data: { ...messagePageData(page, cursor), direction },
    };
  },
});
