import { readVisibleMessage } from '../read/message-access.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { assertWritable, callOf, whereOf, writeTargetOf } from './common.js';
import { parseEmoji, resolveReaction } from './emoji.js';
import { ownReactions, reactionInputSchema, reactionOutputSchema, zulipCodeOf } from './reaction-common.js';

/** `add_reaction`: reacts to a message with an emoji. */
export const addReactionTool = defineTool({
  name: 'add_reaction',
  title: 'React to a message',
  description: 'React to a message with an emoji. Already there: nothing changes.',
  inputSchema: reactionInputSchema,
  outputSchema: reactionOutputSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  write: true,
  toolset: 'write',
  async handler(services: ToolServices, input, context) {
    const { signal } = context;
    const call = callOf(signal);
    assertWritable(services);
    const emoji = parseEmoji(input.emoji);
    const lookup = await services.directory.streamLookup(call);
    const message = await readVisibleMessage(services, input.message_id, callOf(signal));
    services.policy.checkWrite(writeTargetOf(services, message), lookup);
    const mine = ownReactions(services, message);
    const { type, code } = await resolveReaction(services, emoji, input.reaction_type, mine, call);
    const already = () => ({
      text: `Message ${message.id} in ${whereOf(message, services.directory.people)} already has this bot's :${emoji.name}: reaction; nothing changed.`,
      data: { message_id: message.id, emoji_name: emoji.name, reaction_type: type, changed: false },
    });
    if (mine.some((r) => r.emoji_name === emoji.name && r.reaction_type === type)) return already();
    try {
      await services.client.addReaction(
        message.id,
        { emojiName: emoji.name, reactionType: type, ...(code === undefined ? {} : { emojiCode: code }) },
        call,
      );
    } catch (err) {
      if (zulipCodeOf(err) === 'REACTION_ALREADY_EXISTS') return already();
      throw err;
    }
    return {
      text: `Reacted :${emoji.name}: to message ${message.id} in ${whereOf(message, services.directory.people)}.`,
      data: { message_id: message.id, emoji_name: emoji.name, reaction_type: type, changed: true },
    };
  },
});
