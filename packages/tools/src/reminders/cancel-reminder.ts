import { isZmcpError } from '@zmcp/core';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { assertWritable, callOf } from '../write/common.js';

const inputSchema = z.object({
  reminder_id: z
    .number()
    .int()
    .positive()
    .max(Number.MAX_SAFE_INTEGER)
    .describe('From remind_me or list_reminders'),
});

const outputSchema = z.object({
  reminder_id: z.number().int(),
  cancelled: z.literal(true),
});

/** `cancel_reminder`: drops one of the bot's pending reminders. */
export const cancelReminderTool = defineTool({
  name: 'cancel_reminder',
  title: 'Cancel a reminder',
  description: 'Cancel one of your pending reminders by its id (list_reminders shows them).',
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  write: true,
  toolset: 'reminders',
  async handler(services: ToolServices, input, context) {
    const call = callOf(context.signal);
    assertWritable(services);
    try {
      await services.client.deleteReminder(input.reminder_id, call);
    } catch (err) {
      if (!isZmcpError(err, 'CORE_NOT_FOUND')) throw err;
      throw new ToolError(
        'TOOLS_NOT_FOUND',
        `No pending reminder ${input.reminder_id} of yours: it was delivered or cancelled already, or never existed. list_reminders shows the pending ones.`,
        { reminderId: input.reminder_id },
      );
    }
    return {
      text: `Reminder ${input.reminder_id} cancelled.`,
      data: { reminder_id: input.reminder_id, cancelled: true as const },
    };
  },
});
