import { z } from 'zod';
import { readVisibleMessage } from '../read/message-access.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { assertWritable, callOf, MessageIdSchema, whereOf, writeTargetOf } from '../write/common.js';
import { dueAt, dueText, ReminderOutputSchema, WHEN_TO_REMIND_HELP, WhenToRemindSchema } from './shared.js';

/** Zulip's longest reminder note (`max_reminder_note_length`). */
const MAX_NOTE_LENGTH = 1000;

const inputSchema = z.object({
  message_id: MessageIdSchema.describe('The message to come back to'),
  when: WhenToRemindSchema.describe(WHEN_TO_REMIND_HELP),
  note: z.string().trim().min(1).max(MAX_NOTE_LENGTH).optional().describe('What to do then, for yourself'),
});

/** `remind_me`: asks Zulip to remind the bot of a message later. */
export const remindMeTool = defineTool({
  name: 'remind_me',
  title: 'Remind me later',
  description:
    'Schedule a Zulip reminder about a message: at that time Notification Bot sends you a direct message quoting it (and your note). See them with list_reminders, drop one with cancel_reminder.',
  inputSchema,
  outputSchema: ReminderOutputSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  write: true,
  toolset: 'reminders',
  async handler(services: ToolServices, input, context) {
    const call = callOf(context.signal);
    assertWritable(services);
    const due = dueAt(services, input.when);
    await services.client.requireFeature('reminders', 'Reminders', call);
    if (input.note !== undefined)
      await services.client.requireFeature('reminderNote', 'A reminder note', call);
    // The message must be one this session reads, in a conversation it may write to.
    const message = await readVisibleMessage(services, input.message_id, call);
    services.policy.checkWrite(writeTargetOf(services, message), await services.directory.streamLookup(call));
    const { reminder_id } = await services.client.createReminder(
      { messageId: message.id, scheduledDeliveryTimestamp: due, note: input.note },
      call,
    );
    const at = dueText(services, due);
    return {
      text: `Reminder ${reminder_id} set for ${at} (${services.timeZone}) about message ${message.id} in ${whereOf(message, services.directory.people)}: Notification Bot will send you a direct message then, quoting it${input.note === undefined ? '' : ' with your note'}.`,
      data: { reminder_id, message_id: message.id, due: at, due_unix: due },
    };
  },
});
