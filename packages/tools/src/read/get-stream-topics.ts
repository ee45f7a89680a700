import { escapeMsgName, isNoBotsTopic } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  checkStreamReadable,
  itemNotes,
  nextCursor,
  offsetFrom,
  pageItems,
  plural,
  queryOf,
  READ_ANNOTATIONS,
  rangeOf,
  readCursor,
  resolveStream,
  StreamRefSchema,
  topicLabel,
} from './shared.js';

const NAME = 'get_stream_topics';

const InputSchema = z.object({
  stream: StreamRefSchema.describe('Stream name (or id).'),
  limit: z.number().int().min(1).max(200).default(50).describe('Most topics per page (1-200, default 50).'),
  cursor: CursorSchema,
});

const TopicItemSchema = z.object({
  name: z.string().describe('Topic name; "" is the empty topic, shown as (no topic)'),
  last_message_id: z.number().int().describe('Id of the newest message in the topic'),
});

const OutputSchema = z.object({
  stream: z.string(),
  stream_id: z.number().int(),
  topics: z.array(TopicItemSchema).describe('Most recently active first'),
  total: z.number().int().describe('Topics listed across all pages'),
  offset: z.number().int(),
  hidden: z.number().int().describe('Topics left out because they opted out of bots (/nobots)'),
  truncated: z.boolean().describe('The page byte budget cut the list'),
  next_cursor: z
    .string()
    .nullable()
    .describe('Pass as cursor (with the same arguments) to continue; null at the end'),
});

type TopicItem = z.infer<typeof TopicItemSchema>;

/** `get_stream_topics`: a stream's topics, most recently active first. */
export const getStreamTopicsTool = defineTool({
  name: NAME,
  title: 'List topics of a stream',
  description:
    'List the topics of a stream, most recently active first, one line each: "topic (last message id N)". Pass a topic with its stream to fetch_history to read it, or the id to fetch_around. Topics that opted out of bots (/nobots) are left out and counted; private streams this server is configured not to read are refused. Pages of `limit`; the first line gives the cursor for the next page.',
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'read',
  async handler(services: ToolServices, input, context) {
    checkDeadline(context);
    const call = callOptions(context);
    const query = queryOf(input);
    const offset = offsetFrom(readCursor(NAME, query, input.cursor, ['offset']));
    const stream = await resolveStream(services, input.stream, call);
    await checkStreamReadable(services, stream, call);
    const topics = await services.client.getStreamTopics(
      stream.stream_id,
      { allowEmptyTopicName: true },
      call,
    );
    let hidden = 0;
    const items: TopicItem[] = [];
    for (const t of topics) {
      if (isNoBotsTopic(t.name)) hidden++;
      else items.push({ name: t.name, last_message_id: t.max_id });
    }
    items.sort((a, b) => b.last_message_id - a.last_message_id);
    const page = pageItems(
      services,
      items,
      offset,
      input.limit,
      (t) => `${topicLabel(t.name)} (last message id ${t.last_message_id})`,
    );
    const cursor = nextCursor(
      NAME,
      query,
      page.nextOffset === undefined ? undefined : { kind: 'offset', offset: page.nextOffset },
    );
    const label = `#${escapeMsgName(stream.name)}`;
    let summary = `${plural(items.length, 'topic')} in ${label}, most recent first (${rangeOf(offset, page.items.length, items.length)})`;
    summary += hidden > 0 ? `; ${plural(hidden, 'topic')} hidden (opted out of bots with /nobots).` : '.';
    summary += itemNotes(page, cursor, 'topics');
    return {
      text: page.items.length === 0 ? summary : `${summary}\n${page.text}`,
      data: {
        stream: stream.name,
        stream_id: stream.stream_id,
        topics: page.items,
        total: items.length,
        offset,
        hidden,
        truncated: page.truncated,
        next_cursor: cursor,
      },
    };
  },
});
