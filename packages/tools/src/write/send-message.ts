import { isNoBotsTopic } from '@zmcp/core';
import { AttachmentsSchema } from '@zmcp/uploads';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  ATTACHMENTS_HELP,
  assertWritable,
  attachmentsNote,
  ContentArgSchema,
  callOf,
  checkTopic,
  guardLength,
  lineOf,
  permalinkOf,
  prepareBody,
  readBack,
  StreamRefSchema,
  sendFailure,
  sentStreamMessage,
  streamTopic,
  TopicArgSchema,
  uploadAll,
} from './common.js';

const inputSchema = z.object({
  stream: StreamRefSchema,
  topic: TopicArgSchema.describe('Topic to post in (at most 60 characters); a new name starts one'),
  content: ContentArgSchema.optional().describe('Zulip Markdown; refused, never cut, when too long'),
  attachments: AttachmentsSchema.optional().describe(ATTACHMENTS_HELP),
});

const outputSchema = z.object({
  message_id: z.number().int(),
  permalink: z.string().nullable(),
  stream_id: z.number().int(),
  attachments: z.number().int().describe('Files uploaded and linked'),
  normalized: z.boolean().describe('The Markdown fixes changed the text'),
  length: z.number().int().describe('Code points sent'),
  limit: z.number().int().describe("The realm's limit"),
});

/** `send_message`: posts to a stream topic, with optional attachments. */
export const sendMessageTool = defineTool({
  name: 'send_message',
  title: 'Send a stream message',
  description:
    'Post to a stream topic. Markdown is fixed up for Zulip; too long is refused, never cut; attachments are uploaded and linked. Sent once: after a failure, read the topic before sending again.',
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  write: true,
  toolset: 'write',
  async handler(services: ToolServices, input, context) {
    const { signal } = context;
    const call = callOf(signal);
    assertWritable(services);
    const topic = checkTopic(input.topic);
    if (isNoBotsTopic(topic)) {
      throw new ToolError('TOOLS_INVALID_INPUT', 'topic opts out of bots (/nobots); post somewhere else.', {
        field: 'topic',
      });
    }
    const attachments = input.attachments ?? [];
    const stream = await services.directory.stream(input.stream, call);
    const lookup = await services.directory.streamLookup(call);
    services.policy.checkWrite({ stream: stream.stream_id }, lookup);
    const prepared = prepareBody(services, input.content, attachments);
    const uploaded = await uploadAll(services, attachments, signal);
    const { content, length } = guardLength(services, prepared.body, uploaded, false);
    // One POST, never repeated here: the client does not retry a send that may have arrived.
    let sent: { id: number };
    try {
      // readBySender: the bot wrote it, so it is not unread for the bot.
      sent = await services.client.sendMessage(
        { type: 'stream', to: stream.stream_id, topic, content, readBySender: true },
        call,
      );
    } catch (err) {
      return sendFailure(err);
    }
    const message = await readBack(
      services,
      sentStreamMessage(services, sent.id, stream, topic, content),
      lookup,
      signal,
    );
    const permalink = permalinkOf(services, message);
    return {
      text: [
        `Sent message ${sent.id} to ${streamTopic(stream.name, topic)}${attachmentsNote(uploaded.length)}${permalink === null ? '' : ` (${permalink})`}.`,
        lineOf(services, message),
      ].join('\n'),
      data: {
        message_id: sent.id,
        permalink,
        stream_id: stream.stream_id,
        attachments: uploaded.length,
        normalized: prepared.normalized,
        length,
        limit: services.maxMessageLength,
      },
    };
  },
});
