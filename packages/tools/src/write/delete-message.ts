import { z } from 'zod';
import { readVisibleMessage } from '../read/message-access.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { assertWritable, callOf, lineOf, MessageIdSchema, whereOf, writeTargetOf } from './common.js';

const inputSchema = z.object({
  message_id: MessageIdSchema,
});

const outputSchema = z.object({
  message_id: z.number().int(),
  deleted: z.literal(true),
});

/** `delete_message`: deletes one message for everyone. */
export const deleteMessageTool = defineTool({
  name: 'delete_message',
  title: 'Delete a message',
  description:
    'Delete a message (usually your own) for everyone, permanently. Returns the line of what was deleted.',
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  write: true,
  toolset: 'manage',
  confirm: (input) => `Delete message ${input.message_id} for everyone, permanently?`,
  async handler(services: ToolServices, input, context) {
    const { signal } = context;
    const call = callOf(signal);
    assertWritable(services);
    const lookup = await services.directory.streamLookup(call);
    const message = await readVisibleMessage(services, input.message_id, callOf(signal));
    services.policy.checkWrite(writeTargetOf(services, message), lookup);
    await services.client.deleteMessage(message.id, call);
    return {
      text: [
        `Deleted message ${message.id} in ${whereOf(message, services.directory.people)}. It read:`,
        await lineOf(services, message, call),
      ].join('\n'),
      data: { message_id: message.id, deleted: true as const },
    };
  },
});
