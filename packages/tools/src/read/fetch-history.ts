import type { ReadRange } from '@zmcp/core';
import { z } from 'zod';
import { MessageOutputSchema, toMessageOutput } from '../output.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { resolveConversation } from './conversation.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  idSpan,
  MessageIdSchema,
  type MessageReadPlan,
  mismatchedCursor,
  nextCursor,
  pageNotes,
  plural,
  queryOf,
  READ_ANNOTATIONS,
  readCursor,
  readMessagePage,
  StreamRefSchema,
  UserRefSchema,
} from './shared.js';

const NAME = 'fetch_history';

const InputSchema = z.object({
  stream: StreamRefSchema.optional().describe('Stream name (or id) to read. Give this or dm.'),
  topic: z
    .string()
    .max(300)
    .optional()
    .describe(
      'Topic within the stream; omit to read the whole stream. "" or "(no topic)" is the empty topic.',
    ),
  dm: z
    .array(UserRefSchema)
    .min(1)
    .max(20)
    .optional()
    .describe(
      'The people of a DM conversation (besides this bot), each by user id, email or full name. Give this or stream.',
    ),
  before: MessageIdSchema.optional().describe(
    'Only messages with ids below this one (exclusive). Without before/after the newest messages are read.',
  ),
  after: z
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe(
      'Only messages with ids above this one (exclusive), read forwards from it; 0 reads from the very beginning.',
    ),
  limit: z
    .number()
    .int()
    .min(1)
    .max(200)
    .default(20)
    .describe('Most messages to return (1-200, default 20).'),
  cursor: CursorSchema,
});

const OutputSchema = z.object({
  conversation: z.string().describe('What was read: "#stream > topic", "#stream" or "DM with …"'),
  messages: z.array(MessageOutputSchema).describe('Oldest first'),
  hidden: z.number().int().describe('Messages left out because they opted out of bots (/nobots)'),
  truncated: z.boolean().describe('The page byte budget cut the list'),
  has_more: z.boolean().describe('More messages remain in the direction read'),
  direction: z.enum(['older', 'newer']).describe('Which way next_cursor continues'),
  next_cursor: z
    .string()
    .nullable()
    .describe('Pass as cursor (with the same arguments) to continue; null at the end'),
});

/** `fetch_history`: a stream, topic or DM conversation, newest first by default, with id cursors. */
export const fetchHistoryTool = defineTool({
  name: NAME,
  title: 'Fetch conversation history',
  description:
    'Read the messages of a stream, one topic of a stream, or a DM conversation. Without before/after it returns the newest `limit` messages; `before` reads older than a message id, `after` reads newer than one (both exclusive; both together read the window between them). Messages are always listed oldest to newest, one line each: "[time id=N] [#stream > topic] Sender: body" — every id is a cursor for fetch_around or get_message. The first line says how many were found and, when more remain, the cursor to pass back (with the same arguments) for the next page: older pages when reading backwards, newer pages when reading forwards from `after`. Messages that opted out of bots (/nobots) are left out and counted.',
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
      { narrow: conversation.narrow, range, direction, beyond },
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
      data: {
        conversation: conversation.label,
        messages: page.shown.map(toMessageOutput),
        hidden: page.hidden,
        truncated: page.truncated,
        has_more: page.hasMore,
        direction,
        next_cursor: cursor,
      },
    };
  },
});
