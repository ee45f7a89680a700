import { escapeMsgName, formatTimestamp, type Message, messagePermalink, type User } from '@zmcp/core';
import { z } from 'zod';
import { MessageOutputSchema, toMessageOutput } from '../output.js';
import { fitToBudget } from '../page.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { conversationOf, readVisibleMessage } from './message-access.js';
import { callOptions, checkDeadline, itemBudget, MessageIdSchema, READ_ANNOTATIONS } from './shared.js';

const NAME = 'get_message';

const InputSchema = z.object({
  message_id: MessageIdSchema.describe('The message id (from any message line).'),
});

const ReactionSummarySchema = z.object({
  emoji_name: z.string(),
  count: z.number().int(),
  user_ids: z.array(z.number().int()),
});

const OutputSchema = z.object({
  message: MessageOutputSchema,
  conversation: z.string().describe('"#stream > topic" or "DM with …"'),
  sender: z
    .object({
      id: z.number().int(),
      email: z.string(),
      full_name: z.string(),
      is_bot: z
        .boolean()
        .nullable()
        .describe("From the realm's user directory; null when the sender is not in it (a system bot)"),
    })
    .describe('Who sent it, as the server records it'),
  reactions: z.array(ReactionSummarySchema).describe('Reactions grouped by emoji'),
  edited_at: z.string().nullable().describe('When the content was last edited (agent time zone), or null'),
  moved_at: z.string().nullable().describe('When it was last moved to another topic or stream, or null'),
  link: z.string().describe('Permalink to the message in the Zulip web app'),
  truncated: z.boolean().describe('The text output was cut to the page budget (structured content is whole)'),
});

/** Reactions grouped by emoji, in first-seen order. */
export function summarizeReactions(message: Message): z.infer<typeof ReactionSummarySchema>[] {
  const groups = new Map<string, z.infer<typeof ReactionSummarySchema>>();
  for (const r of message.reactions ?? []) {
    const group = groups.get(r.emoji_name) ?? { emoji_name: r.emoji_name, count: 0, user_ids: [] };
    group.count++;
    group.user_ids.push(r.user_id);
    groups.set(r.emoji_name, group);
  }
  return [...groups.values()];
}

/** `get_message`: one message in full, through the single-message gate. */
export const getMessageTool = defineTool({
  name: NAME,
  title: 'Get one message',
  description:
    "Read one message by id: its line as in history (raw Markdown body), who sent it (id, email, and whether the account is a bot, from the realm's user directory), its reactions grouped by emoji with who reacted, whether and when it was edited or moved, and its permalink. Use fetch_around to see it in its conversation. A message the bot cannot see, or that opted out of bots (/nobots), is reported as not found.",
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'read',
  async handler(services: ToolServices, input, context) {
    checkDeadline(context);
    const call = callOptions(context);
    const message = await readVisibleMessage(services, input.message_id, call);
    const users = await services.directory.users(call);
    const byId = new Map<number, User>(users.map((u) => [u.user_id, u]));
    let sender = byId.get(message.sender_id);
    if (sender === undefined) {
      // A user newer than the cached directory: ask once more before giving up on the bot flag.
      sender = await services.directory
        .user(message.sender_id, call)
        .then((r) => r.user)
        .catch(() => undefined);
    }
    const isBot = sender === undefined ? null : sender.is_bot === true;
    const conversation = conversationOf(services, message);
    const reactions = summarizeReactions(message);
    const when = (seconds: number | undefined) =>
      seconds === undefined ? null : formatTimestamp(seconds, { timeZone: services.timeZone });
    const editedAt = when(message.last_edit_timestamp);
    const movedAt = when(message.last_moved_timestamp);
    const link = messagePermalink(services.site, message);

    const kind = isBot === null ? 'unknown account' : isBot ? 'bot' : 'human';
    const head = `Message ${message.id} in ${conversation.label}, sent by ${escapeMsgName(message.sender_full_name)} <${escapeMsgName(message.sender_email)}> (id ${message.sender_id}, ${kind}).`;
    const details: string[] = [];
    if (reactions.length > 0) {
      const name = (id: number) => escapeMsgName(byId.get(id)?.full_name ?? `user ${id}`);
      details.push(
        `Reactions: ${reactions.map((r) => `:${escapeMsgName(r.emoji_name)}: ×${r.count} (${r.user_ids.map(name).join(', ')})`).join('; ')}`,
      );
    } else {
      details.push('Reactions: none');
    }
    if (editedAt !== null) details.push(`Edited: ${editedAt}`);
    if (movedAt !== null) details.push(`Moved: ${movedAt}`);
    details.push(`Link: ${link}`);
    const tail = details.join('\n');
    const budget = Math.max(200, itemBudget(services) - new TextEncoder().encode(tail).length);
    const body = fitToBudget([services.line(message)], budget);
    return {
      text: `${head}\n${body.text}\n${tail}`,
      data: {
        message: toMessageOutput(message),
        conversation: conversation.label,
        sender: {
          id: message.sender_id,
          email: message.sender_email,
          full_name: message.sender_full_name,
          is_bot: isBot,
        },
        reactions,
        edited_at: editedAt,
        moved_at: movedAt,
        link,
        truncated: body.truncated,
      },
    };
  },
});
