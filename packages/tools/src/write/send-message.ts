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
  RepeatArgSchema,
  StreamRefSchema,
  sendAndShow,
  streamTopic,
  TopicArgSchema,
} from './common.js';
import { preparePost } from './post.js';

const inputSchema = z.object({
  stream: StreamRefSchema,
  topic: TopicArgSchema.describe('Topic to post in (at most 60 characters); a new name starts one'),
  content: ContentArgSchema.optional().describe('Zulip Markdown'),
  attachments: AttachmentsSchema.optional().describe(ATTACHMENTS_HELP),
  repeat: RepeatArgSchema,
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
    'Post to a stream topic. Markdown is fixed up for Zulip; too long is refused, never cut; attachments are uploaded and linked. After a failure, read the topic first; the same text there again within minutes is refused unless repeat.',
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
    const prepared = await preparePost(
      services,
      { kind: 'stream', streamId: stream.stream_id, topic },
      input.content,
      { overLength: 'refuse', attachments, signal, repeat: input.repeat },
    );
    const sent = await sendAndShow(services, prepared, signal);
    if ('isError' in sent) return sent;
    const permalink = sent.permalink;
    return {
      text: [
        `Sent message ${sent.id} to ${streamTopic(stream.name, topic)}${attachmentsNote(sent.uploaded.length)}${permalink === null ? '' : ` (${permalink})`}.`,
        sent.line,
      ].join('\n'),
      data: {
        message_id: sent.id,
        permalink,
        stream_id: stream.stream_id,
        attachments: sent.uploaded.length,
        normalized: sent.normalized,
        length: sent.length,
        limit: services.maxMessageLength,
      },
    };
  },
});
