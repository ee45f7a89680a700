import { escapeMsgName } from '@zmcp/core';
import { z } from 'zod';
import { defineTool } from '../tool.js';
import type { ChannelToolsContext } from './shared.js';

/** `channel_recent`: the last channel events pushed to the session, for catching up. */
export const channelRecentTool = defineTool({
  name: 'channel_recent',
  title: 'Recent Zulip channel events',
  description:
    'The last Zulip <channel> events pushed to this session, newest last: catch up if one may have been lost.',
  inputSchema: z.object({
    limit: z.number().int().min(1).max(50).default(20).describe('1-50, default 20'),
  }),
  outputSchema: z.object({ shown: z.number().int(), total: z.number().int() }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  write: false,
  toolset: 'read',
  async handler(context: ChannelToolsContext, input) {
    const shown = context.recent.slice(-input.limit);
    const lines = shown.map((e) => `chat_id=${escapeMsgName(e.chatId)} ${e.content}`);
    return {
      text: [
        `${shown.length} of the last ${context.recent.length} channel events, oldest first.`,
        ...lines,
      ].join('\n'),
      data: { shown: shown.length, total: context.recent.length },
    };
  },
});
