import type { Message, Reaction } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { MessageIdSchema } from './common.js';
import { EmojiArgSchema, ReactionTypeSchema } from './emoji.js';

/** Input of both reaction tools. */
export const reactionInputSchema = z.object({
  message_id: MessageIdSchema,
  emoji: EmojiArgSchema,
  reaction_type: ReactionTypeSchema.optional().describe('Only to disambiguate a name'),
});

/** Output of both reaction tools. */
export const reactionOutputSchema = z.object({
  message_id: z.number().int(),
  emoji_name: z.string(),
  reaction_type: ReactionTypeSchema,
  changed: z.boolean(),
});

/** The bot's own reactions on a message. */
export function ownReactions(services: ToolServices, message: Message): Reaction[] {
  return (message.reactions ?? []).filter((r) => r.user_id === services.identity.user_id);
}

/** Zulip's own error code of a refused request, if any. */
export function zulipCodeOf(err: unknown): string | undefined {
  const code = (err as { zulipCode?: unknown } | null)?.zulipCode;
  return typeof code === 'string' ? code : undefined;
}
