import { escapeMsgName, isNoBotsTopic, type NarrowTermInput, type ReadRange } from '@zmcp/core';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { MessageOutputSchema, toMessageOutput } from '../output.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { dateSpan, WHEN_HELP, WhenSchema } from './get-channel-history.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  idSpan,
  type MessageReadPlan,
  mismatchedCursor,
  nextCursor,
  normalizeTopicInput,
  pageNotes,
  plural,
  queryOf,
  READ_ANNOTATIONS,
  readCursor,
  readMessagePage,
  resolveStream,
  StreamRefSchema,
  topicLabel,
  UserRefSchema,
} from './shared.js';

const NAME = 'search_messages';

/** Longest accepted search text, in characters. */
export const MAX_QUERY_LENGTH = 200;

const InputSchema = z.object({
  query: z
    .string()
    .trim()
    .min(1)
    .max(MAX_QUERY_LENGTH)
    .optional()
    .describe(
      `Words to search for in message text and topics (Zulip full-text search; at most ${MAX_QUERY_LENGTH} characters).`,
    ),
  sender: UserRefSchema.optional().describe(
    'Only messages sent by this person: user id, email or full name.',
  ),
  stream: StreamRefSchema.optional().describe(
    'Only this stream (name or id). Without it only public streams are searched unless the server reads everything.',
  ),
  topic: z.string().max(300).optional().describe('Only this topic ("" or "(no topic)" is the empty topic).'),
  has: z
    .array(z.enum(['link', 'attachment', 'image']))
    .min(1)
    .max(3)
    .optional()
    .describe('Only messages that have all of these: link, attachment, image.'),
  is: z
    .array(z.enum(['starred', 'mentioned', 'unread']))
    .min(1)
    .max(3)
    .optional()
    .describe('Only messages with all of these flags for this bot: starred, mentioned (the bot), unread.'),
  when: WhenSchema.optional().describe(
    `Only messages sent then. ${WHEN_HELP} With it, results run oldest first from the start of the range.`,
  ),
  limit: z
    .number()
    .int()
    .min(1)
    .max(100)
    .default(20)
    .describe('Most messages to return (1-100, default 20).'),
  cursor: CursorSchema,
});

const OutputSchema = z.object({
  searched: z.string().describe('Where the search ran: a stream, public streams, or everything readable'),
  public_only: z
    .boolean()
    .describe('True when the search ran over public streams only (private streams and DMs left out)'),
  messages: z.array(MessageOutputSchema).describe('Oldest first'),
  hidden: z.number().int().describe('Matches left out because they opted out of bots (/nobots)'),
  truncated: z.boolean().describe('The page byte budget cut the list'),
  has_more: z.boolean().describe('More matches remain in the direction read'),
  direction: z
    .enum(['older', 'newer'])
    .describe('Which way next_cursor continues: older (newest first), newer (with when)'),
  next_cursor: z
    .string()
    .nullable()
    .describe('Pass as cursor (with the same arguments) to continue; null at the end'),
});

/** `search_messages`: full-text and filter search through the access gate. */
export const searchMessagesTool = defineTool({
  name: NAME,
  title: 'Search messages',
  description:
    'Find messages by text and filters: `query` (full-text words), `sender`, `stream`, `topic`, `has` (link, attachment, image), `is` (starred, mentioned, unread), `when` (a date or range). Give at least one. Matches come newest first (the most recent `limit`), listed oldest to newest, one line each with their id — open one in context with fetch_around. With `when` the range is read from its start instead. Without `stream` the search covers public streams only unless this server reads everything; the first line says what was searched, and the cursor to pass back (with the same arguments) for more. Matches that opted out of bots (/nobots) are left out and counted.',
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
    if (
      input.query === undefined &&
      input.sender === undefined &&
      input.stream === undefined &&
      input.topic === undefined &&
      input.has === undefined &&
      input.is === undefined &&
      input.when === undefined
    ) {
      throw new ToolError(
        'TOOLS_INVALID_INPUT',
        'Invalid arguments: query: give search words or at least one filter (sender, stream, topic, has, is, when).',
      );
    }
    const span = input.when === undefined ? undefined : dateSpan(services, input.when);
    const forwards = span !== undefined;
    if (position !== undefined && (position.kind === 'after') !== forwards) throw mismatchedCursor(NAME);

    const narrow: NarrowTermInput[] = [];
    let streamLabel: string | undefined;
    let topicPart = '';
    if (input.stream !== undefined) {
      const stream = await resolveStream(services, input.stream, call);
      narrow.push({ operator: 'channel', operand: stream.stream_id });
      streamLabel = `#${escapeMsgName(stream.name)}`;
    }
    if (input.topic !== undefined) {
      const topic = normalizeTopicInput(input.topic);
      if (isNoBotsTopic(topic)) {
        throw new ToolError(
          'TOOLS_NOT_FOUND',
          `Topic ${JSON.stringify(input.topic.slice(0, 100))} is not available: its people asked bots to stay out (/nobots).`,
        );
      }
      narrow.push({ operator: 'topic', operand: topic });
      topicPart = topicLabel(topic);
    }
    if (input.sender !== undefined) {
      const { user } = await services.directory.user(input.sender, call);
      narrow.push({ operator: 'sender', operand: user.user_id });
    }
    for (const has of input.has ?? []) narrow.push({ operator: 'has', operand: has });
    for (const is of input.is ?? []) narrow.push({ operator: 'is', operand: is });
    if (input.query !== undefined) narrow.push({ operator: 'search', operand: input.query });

    let range: ReadRange;
    let beyond: MessageReadPlan['beyond'];
    if (span !== undefined) {
      const end = span.end.getTime() / 1000;
      beyond = (m) => m.timestamp >= end;
      if (position?.kind === 'after') {
        range = { kind: 'since', afterId: position.id, limit: input.limit };
      } else {
        range = { kind: 'between', from: span.start, to: span.end, limit: input.limit };
      }
    } else {
      range =
        position?.kind === 'before'
          ? { kind: 'before', beforeId: position.id, limit: input.limit }
          : { kind: 'newest', limit: input.limit };
    }
    const direction = forwards ? ('newer' as const) : ('older' as const);
    // Without a stream the narrow names no scope: the policy limits it to public streams
    // unless it reads everything (then the `unscoped` choice is not consulted). Zulip searches
    // an unscoped narrow over the messages the bot received, so when everything is readable
    // the public streams' history (streams the bot is not in) is searched beside it.
    const everything = streamLabel === undefined && services.policy.canReadDms;
    const alsoNarrow: NarrowTermInput[] | undefined = everything
      ? [...narrow, { operator: 'channels', operand: 'public' }]
      : undefined;
    const page = await readMessagePage(
      services,
      { narrow, range, direction, beyond, unscoped: 'public-streams', alsoNarrow },
      call,
    );
    const publicOnly = streamLabel === undefined && page.scope === 'public-streams';
    let where = streamLabel ?? (publicOnly ? 'public streams' : 'every stream and DM this bot can read');
    if (topicPart !== '')
      where = streamLabel === undefined ? `topic ${topicPart} of ${where}` : `${where} > ${topicPart}`;
    const cursor = nextCursor(NAME, query, page.next);
    const within = span === undefined ? '' : ` between ${span.from} and ${span.to}`;
    let head =
      page.shown.length === 0
        ? `No matches in ${where}${within}`
        : `${plural(page.shown.length, 'match', 'matches')} in ${where}${within}${idSpan(page.shown)}, oldest first`;
    head += pageNotes(page, cursor, direction);
    if (publicOnly) {
      head +=
        ' Only public streams were searched: private streams and DMs are left out of searches without a stream (name an allowed private stream with stream to search it).';
    }
    return {
      text: page.shown.length === 0 ? head : `${head}\n${page.text}`,
      data: {
        searched: where,
        public_only: publicOnly,
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
