import type { z } from 'zod';
import type { ToolServices } from '../services.js';
import type { ToolDefinition } from '../tool.js';
import { cancelReminderTool } from './cancel-reminder.js';
import { listRemindersTool } from './list-reminders.js';
import { remindMeTool } from './remind-me.js';

/** The reminder tools (toolset `reminders`, opt-in): schedule, list and cancel Zulip reminders. */
export const reminderTools: readonly ToolDefinition<z.ZodObject, z.ZodObject, ToolServices>[] = [
  remindMeTool,
  listRemindersTool,
  cancelReminderTool,
];
