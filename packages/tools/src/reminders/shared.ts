import { errorCode, formatTimestamp, parseFutureTime } from '@zmcp/core';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import type { ToolServices } from '../services.js';

// Helpers shared by the reminder tools. Internal to the package.

/** A reminder's time as every reminder tool prints it: the agent's zone, with its offset. */
export function dueText(services: ToolServices, unixSeconds: number): string {
  return formatTimestamp(unixSeconds, { timeZone: services.timeZone });
}

/** How the reminder tools read `when`, for the field's description. */
export const WHEN_TO_REMIND_HELP =
  'When, in your time zone: in 30 minutes, in 2 hours, tomorrow 9am, friday 14:30, 2026-09-20 08:00';

/** The `when` input of `remind_me`. */
export const WhenToRemindSchema = z.string().trim().min(1).max(100);

/**
 * Reads `when` in the agent's zone at the services' clock, as whole UNIX seconds.
 * @throws ToolError `TOOLS_INVALID_INPUT` naming `when` for a time it cannot read or one not ahead.
 */
export function dueAt(services: ToolServices, when: string): number {
  try {
    const at = parseFutureTime(when, { timeZone: services.timeZone, now: services.now() });
    return Math.ceil(at.getTime() / 1000);
  } catch (err) {
    if (errorCode(err) !== 'CORE_INVALID_ARGUMENT') throw err;
    throw new ToolError('TOOLS_INVALID_INPUT', `Invalid arguments: when: ${(err as Error).message}`, {
      field: 'when',
    });
  }
}

/** The typed fields of one reminder. */
export const ReminderOutputSchema = z.object({
  reminder_id: z.number().int(),
  message_id: z.number().int().describe('The message it is about'),
  due: z.string().describe('When Zulip delivers it, in your time zone'),
  due_unix: z.number().int(),
});
