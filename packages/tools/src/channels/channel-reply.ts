import { escapeMsgName, ZmcpError } from '@zmcp/core';
import { z } from 'zod';
import { defineTool } from '../tool.js';
import { RepeatArgSchema } from '../write/common.js';
import { postMessage } from '../write/post.js';
import { type ChannelToolsContext, parseChatId } from './shared.js';

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
    const to = parseChatId(input.chat_id);
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
    return {
      text: `Sent ${ids.length === 1 ? `message ${ids[0]}` : `${ids.length} messages (ids ${ids.join(', ')})`} to ${escapeMsgName(input.chat_id)}.`,
      data: { message_ids: ids },
    };
  },
});
