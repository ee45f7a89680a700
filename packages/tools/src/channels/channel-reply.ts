import { type Conversation, errorCode, escapeMsgName, type Message, ZmcpError } from '@zmcp/core';
import { z } from 'zod';
import { readVisibleMessage } from '../read/message-access.js';
import { defineTool } from '../tool.js';
import { RepeatArgSchema } from '../write/common.js';
import { postMessage } from '../write/post.js';
import { type ChannelToolsContext, channelChatId, parseChatId } from './shared.js';

/** `channel_reply`: answers a Claude Code channel event in its exact topic or DM. */
export const channelReplyTool = defineTool({
  name: 'channel_reply',
  title: 'Reply on a Zulip channel',
  description:
    'Reply to a Zulip <channel> event: pass its chat_id exactly; the text goes to that topic or DM. Long text is split into several messages.',
  inputSchema: z.object({
    chat_id: z.string().min(1).max(400).describe('The chat_id attribute of the <channel> event'),
    text: z.string().min(1).max(200_000).describe('Zulip Markdown'),
    repeat: RepeatArgSchema,
  }),
  outputSchema: z.object({
    message_ids: z.array(z.number().int()),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  write: true,
  toolset: 'write',
  async handler(context: ChannelToolsContext, input, { signal }) {
    let to = parseChatId(input.chat_id);
    // The session follows the topic: if the conversation was renamed or moved since its newest
    // event, the reply goes where it is now (read from that event's message).
    let movedTo: string | undefined;
    if (to.kind === 'stream') {
      const now = await whereNow(context, input.chat_id, to, signal);
      if (now !== undefined) {
        to = now;
        movedTo = channelChatId(now);
      }
    }
    if (to.kind === 'dm') {
      // The outbound gate: only people the inbound gate would let through.
      for (const id of to.userIds) {
        if (!(await context.allows(id))) {
          throw new ZmcpError(
            'CORE_ACCESS_DENIED',
            'chat_id names a DM with someone not allowed on this channel; nothing was sent',
          );
        }
      }
    }
    // A channel protocol delivers what it was handed: long text is split, never refused.
    const posted = await postMessage(context.services, to, input.text, {
      overLength: 'split',
      field: 'text',
      signal,
      repeat: input.repeat,
    });
    if ('isError' in posted) return posted;
    const ids = [...posted.ids];
    const where =
      movedTo === undefined
        ? escapeMsgName(input.chat_id)
        : `${escapeMsgName(movedTo)} (the conversation moved there from ${escapeMsgName(input.chat_id)}; use the new chat_id)`;
    return {
      text: `Sent ${ids.length === 1 ? `message ${ids[0]}` : `${ids.length} messages (ids ${ids.join(', ')})`} to ${where}.`,
      data: { message_ids: ids },
    };
  },
});

/** Where a stream conversation is now, from the message of its newest event, when that moved; undefined otherwise. */
async function whereNow(
  context: ChannelToolsContext,
  chatId: string,
  to: Extract<Conversation, { kind: 'stream' }>,
  signal: AbortSignal,
): Promise<Extract<Conversation, { kind: 'stream' }> | undefined> {
  const newest = [...context.recent].reverse().find((e) => e.chatId === chatId && e.messageId !== undefined);
  if (newest?.messageId === undefined) return undefined;
  let message: Message;
  try {
    message = await readVisibleMessage(context.services, newest.messageId, { signal });
  } catch (err) {
    // Gone or out of reach: the reply goes where the chat id says.
    const code = errorCode(err);
    if (code === 'TOOLS_NOT_FOUND' || code === 'CORE_ACCESS_DENIED') return undefined;
    throw err;
  }
  if (message.type !== 'stream' || message.stream_id === undefined) return undefined;
  if (message.stream_id === to.streamId && message.subject === to.topic) return undefined;
  return { kind: 'stream', streamId: message.stream_id, topic: message.subject };
}
