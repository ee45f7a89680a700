import { isNoBotsTopic, quoteName } from '@zmcp/core';
import { z } from 'zod';
import { defineListTool } from './list-tool.js';
import { checkStreamReadable, plural, resolveStream, StreamRefSchema, streamLabel } from './shared.js';

interface TopicItem {
  name: string;
  last_message_id: number;
}

/** `get_stream_topics`: a stream's topics, most recently active first. */
export const getStreamTopicsTool = defineListTool({
  name: 'get_stream_topics',
  title: 'List topics of a stream',
  description:
    'List a stream\'s topics, most recently active first: "topic (last message id N)". Read one with fetch_history.',
  toolset: 'read',
  query: { stream: StreamRefSchema },
  limit: { max: 200, fallback: 50 },
  output: {
    stream_id: z.number().int(),
    last_message_ids: z.array(z.number().int()).describe('Newest message of each topic listed, in order'),
    hidden: z.number().int().describe('Topics that opted out of bots (/nobots), left out'),
  },
  noun: 'topics',
  async list(services, input, call) {
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
    return { items, stream, hidden };
  },
  line: (t) =>
    `${t.name === '' ? '(no topic)' : quoteName(t.name, 'person')} (last message id ${t.last_message_id})`,
  summary: ({ items, stream, hidden }, range) =>
    `${plural(items.length, 'topic')} in ${streamLabel(stream.name)}, most recent first (${range})` +
    (hidden > 0 ? `; ${plural(hidden, 'topic')} hidden (opted out of bots with /nobots).` : '.'),
  data: ({ stream, hidden }, shown) => ({
    stream_id: stream.stream_id,
    last_message_ids: shown.map((t) => t.last_message_id),
    hidden,
  }),
});
