import {
  escapeMsgName,
  formatTimestamp,
  type Message,
  messagePermalink,
  quoteName,
  quotePerson,
  type User,
} from '@zmcp/core';
import { z } from 'zod';
import { fitToBudget, jsonBytes } from '../page.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { conversationOf, readVisibleMessage } from './message-access.js';
import { callOptions, checkDeadline, itemBudget, MessageIdSchema, READ_ANNOTATIONS } from './shared.js';

const NAME = 'get_message';

const InputSchema = z.object({
  message_id: MessageIdSchema,
});

const ReactionSummarySchema = z.object({
  emoji_name: z.string(),
  count: z.number().int(),
  user_ids: z.array(z.number().int()),
});

const OutputSchema = z.object({
  message_id: z.number().int(),
  sender_id: z.number().int(),
  sender_is_bot: z.boolean().nullable().describe('null: not in the user directory'),
  stream_id: z.number().int().nullable(),
  reactions: z.array(ReactionSummarySchema),
  edited: z.boolean(),
  moved: z.boolean(),
  link: z.string(),
  truncated: z.boolean(),
});

/** Reactions grouped by emoji, in first-seen order. */
export function summarizeReactions(message: Message): z.infer<typeof ReactionSummarySchema>[] {
  const groups = new Map<string, z.infer<typeof ReactionSummarySchema>>();
  for (const r of message.reactions ?? []) {
    const group = groups.get(r.emoji_name) ?? {
      emoji_name: escapeMsgName(r.emoji_name),
      count: 0,
      user_ids: [],
    };
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
    'One message in detail: its line, the sender (id, bot or human), reactions with who reacted, when it was edited or moved, and its permalink.',
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
    const head = `Message ${message.id} in ${conversation.label}, sent by ${quoteName(message.sender_full_name, 'person')} (${quoteName(message.sender_email, 'member')}, id ${message.sender_id}, ${kind}).`;
    const details: string[] = [];
    if (reactions.length > 0) {
      const name = (id: number) => {
        const person = byId.get(id);
        return person === undefined
          ? `user ${id}`
          : quotePerson(person.full_name, id, 'member', services.directory.people);
      };
      details.push(
        `Reactions: ${reactions.map((r) => `:${r.emoji_name}: ×${r.count} (${r.user_ids.map(name).join(', ')})`).join('; ')}`,
      );
    } else {
      details.push('Reactions: none');
    }
    if (editedAt !== null) details.push(`Edited: ${editedAt}`);
    if (movedAt !== null) details.push(`Moved: ${movedAt}`);
    details.push(`Link: ${link}`);
    const tail = details.join('\n');
    const budget = Math.max(200, itemBudget(services) - jsonBytes(tail) - 24 * reactions.length);
    const body = fitToBudget(await services.lines([message], call), budget);
    return {
      text: `${head}\n${body.text}\n${tail}`,
      data: {
        message_id: message.id,
        sender_id: message.sender_id,
        sender_is_bot: isBot,
        stream_id: message.stream_id ?? null,
        reactions,
        edited: editedAt !== null,
        moved: movedAt !== null,
        link,
        truncated: body.truncated,
      },
    };
  },
});
