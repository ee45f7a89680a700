import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  assertWritable,
  callOf,
  lineOf,
  MessageIdSchema,
  readTarget,
  whereOf,
  writeTargetOf,
} from './common.js';

const inputSchema = z.object({
  message_id: MessageIdSchema.describe('Id of the message to delete, as shown after "id=" in message lines'),
});

const outputSchema = z.object({
  message_id: z.number().int(),
  deleted: z.literal(true),
  type: z.enum(['stream', 'private']),
  stream: z.string().nullable(),
  topic: z.string().nullable(),
});

/** `delete_message`: deletes one message for everyone. */
export const deleteMessageTool = defineTool({
  name: 'delete_message',
  title: 'Delete a message',
  description:
    'Delete one message for everyone, permanently. Usually only your own messages, within the realm’s time limit; Zulip’s refusal comes back with its message. ' +
    'Returns what was deleted, as its message line. Deleting again reports the message as not found.',
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  write: true,
  toolset: 'manage',
  async handler(services: ToolServices, input, context) {
    const { signal } = context;
    const call = callOf(signal);
    assertWritable(services);
    const lookup = await services.directory.streamLookup(call);
    const message = await readTarget(services, input.message_id, lookup, signal);
    services.policy.checkWrite(writeTargetOf(services, message), lookup);
    await services.client.deleteMessage(message.id, call);
    const isStream = message.type === 'stream';
    return {
      text: [
        `Deleted message ${message.id} in ${whereOf(message)}. It read:`,
        lineOf(services, message),
      ].join('\n'),
      data: {
        message_id: message.id,
        deleted: true as const,
        type: message.type,
        stream: isStream ? String(message.display_recipient) : null,
        topic: isStream ? message.subject : null,
      },
    };
  },
});
