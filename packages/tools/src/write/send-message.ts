import { isNoBotsTopic } from '@zmcp/core';
import { AttachmentsSchema } from '@zmcp/uploads';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { MessageOutputSchema, toMessageOutput } from '../output.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
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
  toUploadedOutput,
  UploadedOutputSchema,
  uploadAll,
} from './common.js';

const inputSchema = z.object({
  stream: StreamRefSchema.describe('Stream to post in: its name (e.g. "general") or its id'),
  topic: TopicArgSchema.describe(
    'Topic (thread) to post in, at most 60 characters; an existing topic continues it, a new name starts one',
  ),
  content: ContentArgSchema.optional().describe(
    'Message text in Zulip Markdown. May be omitted when attachments are given. Refused, never cut, when longer than the realm allows',
  ),
  attachments: AttachmentsSchema.optional().describe(
    'Files to attach (at most 10): { file: "<root>/<path>" } for a file under an upload root, or { data: "<base64>", name: "chart.png" } for inline bytes; optional mime_type. Linked at the end of the message',
  ),
});

const outputSchema = z.object({
  message_id: z.number().int().describe('Id of the new message'),
  permalink: z.string().nullable().describe('Link to the message in the Zulip web app'),
  stream: z.string(),
  stream_id: z.number().int(),
  topic: z.string(),
  attachments: z.array(UploadedOutputSchema),
  normalized: z.boolean().describe('Whether the Markdown fixes changed the text'),
  length: z.number().int().describe('Length sent, in code points'),
  limit: z.number().int().describe("The realm's message length limit"),
  message: MessageOutputSchema,
});

/** `send_message`: posts to a stream topic, with optional attachments. */
export const sendMessageTool = defineTool({
  name: 'send_message',
  title: 'Send a stream message',
  description:
    'Post a message to a Zulip stream, in a topic. Use it to answer in a conversation you read (same stream and topic) or to start a new topic. ' +
    'Markdown is fixed up for Zulip (a table gets the blank line it needs). A message longer than the realm allows is refused with its length and the limit, never cut: shorten or split it. ' +
    'Topics longer than 60 characters are refused (Zulip would cut them). Attachments are uploaded first, one at a time, and linked at the end of the message. ' +
    'Sent once: on a failure nothing is retried, so check the stream before sending again. ' +
    'Returns the new message id, its permalink and the message line as it now reads.',
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
        stream: stream.name,
        stream_id: stream.stream_id,
        topic,
        attachments: uploaded.map(toUploadedOutput),
        normalized: prepared.normalized,
        length,
        limit: services.maxMessageLength,
        message: toMessageOutput(message),
      },
    };
  },
});
