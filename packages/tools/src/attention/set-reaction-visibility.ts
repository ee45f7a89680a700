import { z } from 'zod';
import { defineTool } from '../tool.js';
import {
  type AttentionContext,
  ChannelArgSchema,
  changeChannelFilters,
  FILTER_ANNOTATIONS,
} from './shared.js';

const inputSchema = z.object({
  channel: ChannelArgSchema,
  visible: z.boolean().describe('true: show reactions on this channel while it is open; false: hide them'),
});

const outputSchema = z.object({
  visible: z.boolean(),
  changed: z.boolean().describe('False when it already was'),
  revision: z.number().int().describe('Filters revision now in force'),
});

/** `set_reaction_visibility`: live reactions on one channel, shown or hidden. */
export const setReactionVisibilityTool = defineTool({
  name: 'set_reaction_visibility',
  title: 'Show or hide reactions',
  description:
    'Show or hide live reactions on a channel. Shown reactions arrive as [reaction] lines while the channel is open.',
  inputSchema,
  outputSchema,
  annotations: FILTER_ANNOTATIONS,
  write: false,
  toolset: 'attention',
  async handler(context: AttentionContext, input, { signal }) {
    signal.throwIfAborted();
    const { changed, revision, label } = await changeChannelFilters(context, input.channel, (id) =>
      context.engine.setReactionVisibility(id, input.visible),
    );
    const now = input.visible ? 'shown' : 'hidden';
    return {
      text: changed ? `Reactions on ${label} are ${now} now.` : `Reactions on ${label} were already ${now}.`,
      data: { visible: input.visible, changed, revision },
    };
  },
});
