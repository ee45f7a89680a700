import { isNoBotsTopic, quoteName } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  checkStreamReadable,
  itemNotes,
  limitSchema,
  nextCursor,
  OFFSET_PAGE_FIELDS,
  offsetFrom,
  pageItems,
  plural,
  queryOf,
  READ_ANNOTATIONS,
  rangeOf,
  readCursor,
  resolveStream,
  StreamRefSchema,
  streamLabel,
} from './shared.js';

const NAME = 'get_stream_topics';

const InputSchema = z.object({
  stream: StreamRefSchema,
  limit: limitSchema(200, 50),
  cursor: CursorSchema,
});

interface TopicItemFields {
  name: string;
  last_message_id: number;
}

const OutputSchema = z.object({
  stream_id: z.number().int(),
  last_message_ids: z.array(z.number().int()).describe('Newest message of each topic listed, in order'),
  total: z.number().int(),
  hidden: z.number().int().describe('Topics that opted out of bots (/nobots), left out'),
  ...OFFSET_PAGE_FIELDS,
});

type TopicItem = TopicItemFields;

/** `get_stream_topics`: a stream's topics, most recently active first. */
export const getStreamTopicsTool = defineTool({
  name: NAME,
  title: 'List topics of a stream',
  description:
    'List a stream\'s topics, most recently active first: "topic (last message id N)". Read one with fetch_history.',
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
      (t) =>
        `${t.name === '' ? '(no topic)' : quoteName(t.name, 'person')} (last message id ${t.last_message_id})`,
    );
    const cursor = nextCursor(
      NAME,
      query,
      page.nextOffset === undefined ? undefined : { kind: 'offset', offset: page.nextOffset },
    );
    const label = streamLabel(stream.name);
    let summary = `${plural(items.length, 'topic')} in ${label}, most recent first (${rangeOf(offset, page.items.length, items.length)})`;
    summary += hidden > 0 ? `; ${plural(hidden, 'topic')} hidden (opted out of bots with /nobots).` : '.';
    summary += itemNotes(page, cursor, 'topics');
    return {
      text: page.items.length === 0 ? summary : `${summary}\n${page.text}`,
      data: {
        stream_id: stream.stream_id,
        last_message_ids: page.items.map((t) => t.last_message_id),
        total: items.length,
        hidden,
        offset,
        truncated: page.truncated,
        next_cursor: cursor,
      },
    };
  },
});
