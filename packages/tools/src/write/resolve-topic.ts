import {
  codePointLength,
  isNoBotsTopic,
  MAX_TOPIC_LENGTH,
  type Message,
  RESOLVED_TOPIC_PREFIX,
  readNarrow,
  type StreamInfoLookup,
} from '@zmcp/core';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  assertWritable,
  callOf,
  checkTopic,
  StreamRefSchema,
  streamTopic,
  TopicArgSchema,
} from './common.js';

const inputSchema = z.object({
  stream: StreamRefSchema,
  topic: TopicArgSchema.describe('The topic, with or without its "✔ " prefix'),
  unresolve: z.boolean().optional().describe('Take the "✔ " prefix off again'),
});

const outputSchema = z.object({
  stream_id: z.number().int(),
  message_id: z.number().int().describe('The newest message of the topic'),
  resolved: z.boolean(),
  changed: z.boolean(),
});

/** The topic without any resolved prefix (Zulip strips repeated ones too). */
function baseName(topic: string): string {
  return topic.replace(/^(?:✔\s*)+/u, '').trim();
}

async function newestIn(
  services: ToolServices,
  streamName: string,
  topic: string,
  lookup: StreamInfoLookup,
  signal: AbortSignal,
): Promise<Message | undefined> {
  const res = await readNarrow(services.client, services.policy, {
    narrow: [
      { operator: 'channel', operand: streamName },
      { operator: 'topic', operand: topic },
    ],
    range: { kind: 'newest', limit: 1 },
    streams: lookup,
    call: callOf(signal),
  });
  return res.messages[res.messages.length - 1];
}

/** `resolve_topic`: marks a topic resolved (or unresolved), Zulip's way. */
export const resolveTopicTool = defineTool({
  name: 'resolve_topic',
  title: 'Resolve a topic',
  description: 'Mark a topic resolved (renamed with a "✔ " prefix, as Zulip does), or unresolved again.',
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  write: true,
  toolset: 'manage',
  async handler(services: ToolServices, input, context) {
    const { signal } = context;
    const call = callOf(signal);
    assertWritable(services);
    const base = baseName(checkTopic(input.topic));
    if (base === '') {
      throw new ToolError('TOOLS_INVALID_INPUT', 'topic is only the resolved mark; name the topic.', {
        field: 'topic',
      });
    }
    const resolvedName = `${RESOLVED_TOPIC_PREFIX}${base}`;
    const unresolve = input.unresolve === true;
    if (!unresolve && codePointLength(resolvedName) > MAX_TOPIC_LENGTH) {
      throw new ToolError(
        'TOOLS_INVALID_INPUT',
        `"${RESOLVED_TOPIC_PREFIX}" plus the topic would be ${codePointLength(resolvedName)} characters, over Zulip's ${MAX_TOPIC_LENGTH}, and Zulip would cut it; rename the topic shorter first (edit_message with propagate_mode change_all).`,
        { field: 'topic' },
      );
    }
    const stream = await services.directory.stream(input.stream, call);
    const lookup = await services.directory.streamLookup(call);
    const notFound = () =>
      new ToolError(
        'TOOLS_NOT_FOUND',
        `No topic ${JSON.stringify(base)} in ${streamTopic(stream.name)} is visible to this bot.`,
        { stream: stream.name, topic: base },
      );
    if (isNoBotsTopic(base)) throw notFound();
    services.policy.checkWrite({ stream: stream.stream_id }, lookup);
    const from = unresolve ? resolvedName : base;
    const to = unresolve ? base : resolvedName;
    const source = await newestIn(services, stream.name, from, lookup, signal);
    if (source === undefined) {
      const there = await newestIn(services, stream.name, to, lookup, signal);
      if (there === undefined) throw notFound();
      return {
        text: `${streamTopic(stream.name, there.subject)} is already ${unresolve ? 'unresolved' : 'resolved'}; nothing changed.`,
        data: {
          stream_id: stream.stream_id,
          message_id: there.id,
          resolved: !unresolve,
          changed: false,
        },
      };
    }
    // Zulip matches topics case-insensitively: keep the topic's own spelling.
    const actual = baseName(source.subject);
    const newTopic = unresolve ? actual : `${RESOLVED_TOPIC_PREFIX}${actual}`;
    await services.client.updateMessage(source.id, { topic: newTopic, propagateMode: 'change_all' }, call);
    return {
      text: `${unresolve ? 'Unresolved' : 'Resolved'} ${streamTopic(stream.name, source.subject)}: it is now ${streamTopic(stream.name, newTopic)}.`,
      data: {
        stream_id: stream.stream_id,
        message_id: source.id,
        resolved: !unresolve,
        changed: true,
      },
    };
  },
});
