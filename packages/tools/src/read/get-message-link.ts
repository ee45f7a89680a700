import { messagePermalink } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { conversationOf, readVisibleMessage } from './message-access.js';
import { callOptions, checkDeadline, MessageIdSchema, READ_ANNOTATIONS } from './shared.js';

const NAME = 'get_message_link';

const InputSchema = z.object({
  message_id: MessageIdSchema.describe('The message to link to.'),
  follow_moves: z
    .boolean()
    .default(false)
    .describe(
      'Link the conversation "with" the message, so the link follows it if it is moved later (default: a plain "near" link).',
    ),
});

const OutputSchema = z.object({
  message_id: z.number().int(),
  conversation: z.string().describe('"#stream > topic" or "DM with …"'),
  url: z.string().describe('The permalink'),
});

/** `get_message_link`: the permalink of a message the policy lets the bot read. */
export const getMessageLinkTool = defineTool({
  name: NAME,
  title: 'Get a message permalink',
  description:
    'Get the Zulip web link to a message, encoded exactly as Zulip writes its own links, to share it with people (in a reply, say). The message is read first: a link names its stream and topic, so only messages this bot may read get one; others are refused or reported as not found.',
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'people',
  async handler(services: ToolServices, input, context) {
    checkDeadline(context);
    const call = callOptions(context);
    const message = await readVisibleMessage(services, input.message_id, call);
    const conversation = conversationOf(services, message);
    const url = messagePermalink(services.site, message, { conversation: input.follow_moves });
    return {
      text: `Link to message ${message.id} in ${conversation.label}: ${url}`,
      data: { message_id: message.id, conversation: conversation.label, url },
    };
  },
});
