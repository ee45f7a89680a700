import { z } from 'zod';
import { defineListTool } from '../read/list-tool.js';
import { plural } from '../read/shared.js';
import { dueText, ReminderOutputSchema } from './shared.js';

interface Pending {
  reminder_id: number;
  message_id: number;
  due: string;
  due_unix: number;
  failed: boolean;
}

/** `list_reminders`: the bot's reminders Zulip has not delivered yet. */
export const listRemindersTool = defineListTool({
  name: 'list_reminders',
  title: 'List my reminders',
  description:
    'List the reminders you scheduled (remind_me) that Zulip has not delivered yet, soonest first: id, when, and the message each is about.',
  toolset: 'reminders',
  query: {},
  limit: { max: 200, fallback: 50 },
  output: { reminders: z.array(ReminderOutputSchema) },
  noun: 'reminders',
  async list(services, _input, call) {
    const items: Pending[] = (await services.client.getReminders(call))
      .map((r) => {
        const due = Math.floor(r.scheduled_delivery_timestamp);
        return {
          reminder_id: r.reminder_id,
          message_id: r.reminder_target_message_id,
          due: dueText(services, due),
          due_unix: due,
          failed: r.failed === true,
        };
      })
      .sort((a, b) => a.due_unix - b.due_unix || a.reminder_id - b.reminder_id);
    return { items };
  },
  line: (r) =>
    `reminder ${r.reminder_id}: ${r.due}, about message ${r.message_id}${r.failed ? ' (Zulip could not deliver it)' : ''}`,
  summary: ({ items }, range) =>
    items.length === 0
      ? 'No reminders pending.'
      : `${plural(items.length, 'reminder')} pending (${range}), soonest first; fetch_around shows a message in its conversation.`,
  data: (_listing, shown) => ({
    reminders: shown.map(({ failed: _failed, ...r }) => r),
  }),
});
