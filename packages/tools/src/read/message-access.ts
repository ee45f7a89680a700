import {
  type CallOptions,
  dmOthers,
  errorCode,
  isNoBotsMessage,
  type Message,
  type NarrowTerm,
  readMessage,
  type User,
} from '@zmcp/core';
import { ToolError } from '../errors.js';
import type { ToolServices } from '../services.js';
import { dmLabel } from './conversation.js';
import { streamLabel, topicLabel } from './shared.js';

function notFound(id: number): ToolError {
  return new ToolError(
    'TOOLS_NOT_FOUND',
    `No message with id ${id} is available to this bot: it does not exist, was deleted, is not visible to the bot, or its people asked bots to stay out (/nobots).`,
    { messageId: id },
  );
}

/**
 * Reads one message through core's single-message gate and refuses, as not found, one the bot
 * cannot see or that opted out of bots (`/nobots`, in its content or its topic).
 * @throws ToolError `TOOLS_NOT_FOUND`; ZmcpError `CORE_ACCESS_DENIED` (a stream or DM the
 *   policy keeps closed) and the request codes.
 */
export async function readVisibleMessage(
  services: ToolServices,
  id: number,
  call: CallOptions,
): Promise<Message> {
  let message: Message;
  try {
    message = await readMessage(services.client, services.policy, id, {
      streams: await services.directory.streamLookup(call),
      call,
    });
  } catch (err) {
    const code = errorCode(err);
    // Zulip answers an unknown or inaccessible id with a 400 ("Invalid message(s)"); a message the
    // policy keeps closed gets the same answer, so a refusal tells nothing of what it refused.
    if (code === 'CORE_BAD_REQUEST' || code === 'CORE_NOT_FOUND' || code === 'CORE_ACCESS_DENIED') {
      throw notFound(id);
    }
    throw err;
  }
  if (isNoBotsMessage(message)) throw notFound(id);
  return message;
}

/**
 * The narrow of the conversation a message is in now: its stream and topic, or its DM. A `with`
 * term makes Zulip follow the message if it was moved, so the topic as read is only a hint.
 */
export function conversationOf(
  services: ToolServices,
  message: Message,
): { narrow: NarrowTerm[]; label: string } {
  if (message.type === 'stream') {
    const stream = String(message.display_recipient);
    const narrow: NarrowTerm[] = [
      { operator: 'channel', operand: message.stream_id ?? stream },
      { operator: 'topic', operand: message.subject },
      { operator: 'with', operand: message.id },
    ];
    return { narrow, label: `${streamLabel(stream)} > ${topicLabel(message.subject)}` };
  }
  const self = services.identity.user_id;
  const others = dmOthers(message.display_recipient, self);
  const people: User[] = Array.isArray(message.display_recipient)
    ? message.display_recipient
        .filter((r) => r.id !== self)
        .map((r) => ({ user_id: r.id, email: r.email, full_name: r.full_name }))
    : [];
  return {
    narrow: [
      { operator: 'dm', operand: others },
      { operator: 'with', operand: message.id },
    ],
    label: dmLabel(people, services.directory.people),
  };
}
