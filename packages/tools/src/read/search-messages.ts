import { type CallOptions, isNoBotsTopic, type NarrowTerm, quotePerson, type ReadRange } from '@zmcp/core';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { dateSpan, WHEN_HELP, WhenSchema } from './get-channel-history.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  idSpan,
  limitSchema,
  MESSAGE_PAGE_FIELDS,
  type MessageReadPlan,
  messagePageData,
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
  streamLabel,
  TopicInputSchema,
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
    .describe('Words to find in messages and topics'),
  sender: UserRefSchema.optional().describe('Sender: id, email or name'),
  mentions: UserRefSchema.optional().describe('Who is @-mentioned (not @all): id, email or name'),
  stream: StreamRefSchema.optional(),
  topic: TopicInputSchema.optional(),
  has: z
    .array(z.enum(['link', 'attachment', 'image']))
    .min(1)
    .max(3)
    .optional(),
  is: z
    .array(z.enum(['starred', 'mentioned', 'unread']))
    .min(1)
    .max(3)
    .optional(),
  when: WhenSchema.optional().describe(`${WHEN_HELP}; read forwards`),
  limit: limitSchema(100, 20),
  cursor: CursorSchema,
});

const OutputSchema = z.object({
  ...MESSAGE_PAGE_FIELDS,
  public_only: z.boolean().describe('Only public streams were searched'),
  direction: z.enum(['older', 'newer']),
});

/**
 * Adds the narrow term for messages that mention `userId` directly: Zulip's `mentions` operator
 * where the realm has it (feature level 446). Older realms can tell only the bot's own mentions,
 * by its `mentioned` flag: `is:mentioned` (which also takes wildcard mentions) narrowed to the
 * flag, returned as the filter of what really matches.
 * @throws ToolError `TOOLS_INVALID_INPUT` for someone else's mentions on an older realm.
 */
async function mentionsTerm(
  services: ToolServices,
  userId: number,
  narrow: NarrowTerm[],
  call: CallOptions,
): Promise<MessageReadPlan['keep']> {
  if (await services.client.hasFeature('mentionsOperator', call)) {
    narrow.push({ operator: 'mentions', operand: userId });
    return undefined;
  }
  if (userId !== services.identity.user_id) {
    const level = await services.client.getFeatureLevel(call);
    throw new ToolError(
      'TOOLS_INVALID_INPUT',
      `Invalid arguments: mentions: this realm runs Zulip at feature level ${level}, which can find mentions of this bot only; mentions of anyone else need Zulip 12 (feature level 446). Search for the person's name with query instead.`,
      { field: 'mentions' },
    );
  }
  narrow.push({ operator: 'is', operand: 'mentioned' });
  return (m) => m.flags?.includes('mentioned') === true;
}

/** `search_messages`: full-text and filter search through the access gate. */
export const searchMessagesTool = defineTool({
  name: NAME,
  title: 'Search messages',
  description:
    'Search messages by words and filters (at least one). The newest matches, oldest first, a line each; without stream only public streams are searched, unless the server reads everything.',
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
      input.mentions === undefined &&
      input.stream === undefined &&
      input.topic === undefined &&
      input.has === undefined &&
      input.is === undefined &&
      input.when === undefined
    ) {
      throw new ToolError(
        'TOOLS_INVALID_INPUT',
        'Invalid arguments: query: give search words or at least one filter (sender, mentions, stream, topic, has, is, when).',
      );
    }
    const span = input.when === undefined ? undefined : dateSpan(services, input.when);
    const forwards = span !== undefined;
    if (position !== undefined && (position.kind === 'after') !== forwards) throw mismatchedCursor(NAME);

    const narrow: NarrowTerm[] = [];
    let streamName: string | undefined;
    let topicPart = '';
    if (input.stream !== undefined) {
      const stream = await resolveStream(services, input.stream, call);
      narrow.push({ operator: 'channel', operand: stream.stream_id });
      streamName = streamLabel(stream.name);
    }
    if (input.topic !== undefined) {
      const topic = normalizeTopicInput(input.topic);
      if (isNoBotsTopic(topic)) {
        throw new ToolError(
          'TOOLS_NOT_FOUND',
          `Topic ${topicLabel(input.topic.slice(0, 100))} is not available: its people asked bots to stay out (/nobots).`,
        );
      }
      narrow.push({ operator: 'topic', operand: topic });
      topicPart = topicLabel(topic);
    }
    if (input.sender !== undefined) {
      const { user } = await services.directory.user(input.sender, call);
      narrow.push({ operator: 'sender', operand: user.user_id });
    }
    let keep: MessageReadPlan['keep'];
    let mentioning = '';
    if (input.mentions !== undefined) {
      const { user } = await services.directory.user(input.mentions, call);
      mentioning = ` mentioning ${quotePerson(user.full_name, user.user_id, 'member', services.directory.people)}`;
      keep = await mentionsTerm(services, user.user_id, narrow, call);
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
    const everything = streamName === undefined && services.policy.canReadDms;
    const alsoNarrow: NarrowTerm[] | undefined = everything
      ? [...narrow, { operator: 'channels', operand: 'public' }]
      : undefined;
    const page = await readMessagePage(
      services,
      {
        progress: context.progress,
        narrow,
        range,
        direction,
        beyond,
        unscoped: 'public-streams',
        alsoNarrow,
        keep,
      },
      call,
    );
    const publicOnly = streamName === undefined && page.scope === 'public-streams';
    let where = streamName ?? (publicOnly ? 'public streams' : 'every stream and DM this bot can read');
    if (topicPart !== '')
      where = streamName === undefined ? `topic ${topicPart} of ${where}` : `${where} > ${topicPart}`;
    const cursor = nextCursor(NAME, query, page.next);
    const within = `${mentioning}${span === undefined ? '' : ` between ${span.from} and ${span.to}`}`;
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
      data: { ...messagePageData(page, cursor), public_only: publicOnly, direction },
    };
  },
});
