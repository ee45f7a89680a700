import type { Message } from '@zmcp/core';
import { z } from 'zod';

/** A message as tools return it in `structuredContent`: what a program needs, nothing of the wire's noise. */
export const MessageOutputSchema = z.object({
  id: z.number().int().describe('Message id: realm-global, increasing; usable as a cursor'),
  type: z.enum(['stream', 'private']),
  stream: z.string().optional().describe('Stream name (stream messages)'),
  stream_id: z.number().int().optional(),
  topic: z.string().optional().describe('Topic (stream messages)'),
  recipients: z
    .array(z.object({ id: z.number().int(), email: z.string(), full_name: z.string() }))
    .optional()
    .describe('Participants (direct messages), sender included'),
  sender_id: z.number().int(),
  sender_email: z.string(),
  sender_full_name: z.string(),
  timestamp: z.number().describe('UNIX seconds'),
  content: z.string().describe('Raw Markdown as the sender wrote it'),
  flags: z.array(z.string()).optional(),
  edited: z.boolean().optional(),
  moved: z.boolean().optional(),
  reactions: z
    .array(
      z.object({
        emoji_name: z.string(),
        emoji_code: z.string(),
        reaction_type: z.string(),
        user_id: z.number(),
      }),
    )
    .optional(),
});
/** A message in tool output. */
export type MessageOutput = z.infer<typeof MessageOutputSchema>;

/** Projects a Zulip message onto {@link MessageOutputSchema}. */
export function toMessageOutput(message: Message): MessageOutput {
  const out: MessageOutput = {
    id: message.id,
    type: message.type,
    sender_id: message.sender_id,
    sender_email: message.sender_email,
    sender_full_name: message.sender_full_name,
    timestamp: message.timestamp,
    content: message.content,
  };
  if (message.type === 'stream') {
    if (typeof message.display_recipient === 'string') out.stream = message.display_recipient;
    if (message.stream_id !== undefined) out.stream_id = message.stream_id;
    out.topic = message.subject;
  } else if (Array.isArray(message.display_recipient)) {
    out.recipients = message.display_recipient.map((r) => ({
      id: r.id,
      email: r.email,
      full_name: r.full_name,
    }));
  }
  if (message.flags !== undefined) out.flags = message.flags;
  if (message.last_edit_timestamp !== undefined) out.edited = true;
  if (message.last_moved_timestamp !== undefined) out.moved = true;
  if (message.reactions !== undefined && message.reactions.length > 0) {
    out.reactions = message.reactions.map((r) => ({
      emoji_name: r.emoji_name,
      emoji_code: r.emoji_code,
      reaction_type: r.reaction_type,
      user_id: r.user_id,
    }));
  }
  return out;
}
