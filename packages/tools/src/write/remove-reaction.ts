import { readVisibleMessage } from '../read/message-access.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { assertWritable, callOf, whereOf, writeTargetOf } from './common.js';
import { parseEmoji, resolveReaction } from './emoji.js';
import { ownReactions, reactionInputSchema, reactionOutputSchema, zulipCodeOf } from './reaction-common.js';

/** `remove_reaction`: takes one of this bot's reactions off a message. */
export const removeReactionTool = defineTool({
  name: 'remove_reaction',
  title: 'Remove a reaction',
  description: 'Remove one of your own emoji reactions from a message. Already gone: nothing changes.',
  inputSchema: reactionInputSchema,
  outputSchema: reactionOutputSchema,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  write: true,
  toolset: 'manage',
  async handler(services: ToolServices, input, context) {
    const { signal } = context;
    const call = callOf(signal);
    assertWritable(services);
    const emoji = parseEmoji(input.emoji);
    const lookup = await services.directory.streamLookup(call);
    const message = await readVisibleMessage(services, input.message_id, callOf(signal));
    services.policy.checkWrite(writeTargetOf(services, message), lookup);
    const { type, code } = await resolveReaction(
      services,
      emoji,
      input.reaction_type,
      ownReactions(services, message),
      call,
    );
    try {
      // reaction_type always goes along: Zulip's DELETE assumes unicode_emoji without it, so a
      // custom emoji would never come off.
      await services.client.removeReaction(
        message.id,
        { emojiName: emoji.name, reactionType: type, ...(code === undefined ? {} : { emojiCode: code }) },
        call,
      );
    } catch (err) {
      if (zulipCodeOf(err) === 'REACTION_DOES_NOT_EXIST') {
        return {
          text: `Message ${message.id} in ${whereOf(message, services.directory.people)} has no :${emoji.name}: reaction from this bot; nothing changed.`,
          data: {
            message_id: message.id,
            emoji_name: emoji.name,
            reaction_type: type,
            changed: false,
          },
        };
      }
      throw err;
    }
    return {
      text: `Removed this bot's :${emoji.name}: reaction from message ${message.id} in ${whereOf(message, services.directory.people)}.`,
      data: { message_id: message.id, emoji_name: emoji.name, reaction_type: type, changed: true },
    };
  },
});
