import { messagePermalink } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { conversationOf, readVisibleMessage } from './message-access.js';
import { callOptions, checkDeadline, MessageIdSchema, READ_ANNOTATIONS } from './shared.js';

const NAME = 'get_message_link';

const InputSchema = z.object({
  message_id: MessageIdSchema,
  follow_moves: z.boolean().default(false).describe('A link that follows the message if it is moved'),
});

const OutputSchema = z.object({
  message_id: z.number().int(),
  url: z.string(),
});

/** `get_message_link`: the permalink of a message the policy lets the bot read. */
export const getMessageLinkTool = defineTool({
  name: NAME,
  title: 'Get a message permalink',
  description: 'The Zulip web link to a message you may read, to share with people.',
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'browse',
  async handler(services: ToolServices, input, context) {
    checkDeadline(context);
    const call = callOptions(context);
    const message = await readVisibleMessage(services, input.message_id, call);
    const conversation = conversationOf(services, message);
    const url = messagePermalink(services.site, message, { conversation: input.follow_moves });
    return {
      text: `Link to message ${message.id} in ${conversation.label}: ${url}`,
      data: { message_id: message.id, url },
    };
  },
});
