import { isNoBotsTopic, type Message, type Stream } from '@zmcp/core';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { readVisibleMessage } from '../read/message-access.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  assertWritable,
  ContentArgSchema,
  callOf,
  checkTopic,
  lineOf,
  MessageIdSchema,
  permalinkOf,
  readBack,
  StreamRefSchema,
  TopicArgSchema,
  whereOf,
  writeTargetOf,
} from './common.js';
import { guardLength, prepareMarkdown } from './post.js';

const inputSchema = z.object({
  message_id: MessageIdSchema,
  content: ContentArgSchema.optional().describe('New Markdown text (your own messages)'),
  topic: TopicArgSchema.optional().describe('Move it to this topic'),
  stream: StreamRefSchema.optional().describe('Move it to this stream (not with content)'),
  propagate_mode: z
    .enum(['change_one', 'change_later', 'change_all'])
    .optional()
    .describe('For a move: this message (default), it and later ones, or the whole topic'),
});

const outputSchema = z.object({
  message_id: z.number().int(),
  permalink: z.string().nullable(),
  changed: z.object({ content: z.boolean(), topic: z.boolean(), stream: z.boolean() }),
  propagate_mode: z.enum(['change_one', 'change_later', 'change_all']).nullable(),
});

/** `edit_message`: edits a message's content, or moves it to another topic or stream. */
export const editMessageTool = defineTool({
  name: 'edit_message',
  title: 'Edit or move a message',
  description:
    "Edit a message's content (your own), or move it (and optionally the rest of its topic) to another topic or stream. Returns its line as it now reads.",
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  write: true,
  toolset: 'write',
  async handler(services: ToolServices, input, context) {
    const { signal } = context;
    const call = callOf(signal);
    assertWritable(services);
    if (input.content === undefined && input.topic === undefined && input.stream === undefined) {
      throw new ToolError('TOOLS_INVALID_INPUT', 'Nothing to change: give content, topic or stream.', {
        field: 'content',
      });
    }
    if (input.content !== undefined && input.stream !== undefined) {
      throw new ToolError(
        'TOOLS_INVALID_INPUT',
        'content and stream cannot change in one call (Zulip refuses it): move the message first, then edit it.',
        { field: 'stream' },
      );
    }
    const topicArg = input.topic === undefined ? undefined : checkTopic(input.topic);
    if (topicArg !== undefined && isNoBotsTopic(topicArg)) {
      throw new ToolError('TOOLS_INVALID_INPUT', 'topic opts out of bots (/nobots); choose another.', {
        field: 'topic',
      });
    }
    const lookup = await services.directory.streamLookup(call);
    const original = await readVisibleMessage(services, input.message_id, callOf(signal));
    if (original.type === 'private' && (topicArg !== undefined || input.stream !== undefined)) {
      throw new ToolError(
        'TOOLS_INVALID_INPUT',
        `Message ${original.id} is a direct message: it has no topic and cannot move to a stream; only its content can change.`,
        { field: input.stream !== undefined ? 'stream' : 'topic' },
      );
    }
    services.policy.checkWrite(writeTargetOf(services, original), lookup);
    let target: Stream | undefined;
    if (input.stream !== undefined) {
      target = await services.directory.stream(input.stream, call);
      services.policy.checkWrite({ stream: target.stream_id }, lookup);
    }

    let content: string | undefined;
    if (input.content !== undefined) {
      const body = prepareMarkdown(services, input.content);
      if (body.trim() === '') {
        throw new ToolError(
          'TOOLS_INVALID_INPUT',
          'content is empty; to remove a message use delete_message.',
          { field: 'content' },
        );
      }
      const guarded = guardLength(services, body, [], false).content;
      if (guarded.trimEnd() !== original.content.trimEnd()) content = guarded;
    }
    const topic = topicArg !== undefined && topicArg !== original.subject ? topicArg : undefined;
    const moveStream = target !== undefined && target.stream_id !== original.stream_id ? target : undefined;
    if (content === undefined && topic === undefined && moveStream === undefined) {
      throw new ToolError(
        'TOOLS_INVALID_INPUT',
        `Nothing to change: message ${original.id} already has that ${[
          input.content !== undefined ? 'content' : '',
          input.topic !== undefined ? 'topic' : '',
          input.stream !== undefined ? 'stream' : '',
        ]
          .filter((s) => s !== '')
          .join(' and ')}.`,
        { field: 'content' },
      );
    }
    const moving = topic !== undefined || moveStream !== undefined;
    const propagateMode = moving ? (input.propagate_mode ?? 'change_one') : undefined;
    await services.client.updateMessage(
      original.id,
      {
        ...(content === undefined ? {} : { content }),
        ...(topic === undefined ? {} : { topic }),
        ...(moveStream === undefined ? {} : { streamId: moveStream.stream_id }),
        ...(propagateMode === undefined ? {} : { propagateMode }),
      },
      call,
    );

    const nowSeconds = Math.floor(services.now() / 1000);
    const expected: Message = {
      ...original,
      ...(content === undefined ? {} : { content, last_edit_timestamp: nowSeconds }),
      ...(topic === undefined ? {} : { subject: topic }),
      ...(moveStream === undefined
        ? {}
        : { stream_id: moveStream.stream_id, display_recipient: moveStream.name }),
      ...(moving ? { last_moved_timestamp: nowSeconds } : {}),
    };
    const message = await readBack(services, expected, lookup, signal);
    const permalink = permalinkOf(services, message);
    const what = [
      content === undefined ? '' : 'content edited',
      moving
        ? `moved from ${whereOf(original, services.directory.people)} to ${whereOf(message, services.directory.people)}`
        : '',
    ]
      .filter((s) => s !== '')
      .join(', ');
    const scope =
      propagateMode === 'change_all'
        ? ' (whole topic)'
        : propagateMode === 'change_later'
          ? ' (with the later messages of its topic)'
          : '';
    return {
      text: [
        `Message ${original.id}: ${what}${scope}${permalink === null ? '' : ` (${permalink})`}.`,
        await lineOf(services, message, call),
      ].join('\n'),
      data: {
        message_id: original.id,
        permalink,
        changed: {
          content: content !== undefined,
          topic: topic !== undefined,
          stream: moveStream !== undefined,
        },
        propagate_mode: propagateMode ?? null,
      },
    };
  },
});
