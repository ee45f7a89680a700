import { z } from 'zod';
import { defineTool } from '../tool.js';
import {
  type AttentionContext,
  ChannelArgSchema,
  changeChannelFilters,
  FILTER_ANNOTATIONS,
} from './shared.js';

const inputSchema = z.object({
  channel: ChannelArgSchema.describe('Stream channel id (zulip:<stream>) or stream name'),
});

const outputSchema = z.object({
  muted: z.boolean(),
  changed: z.boolean().describe('False when it already was'),
  revision: z.number().int().describe('Filters revision now in force'),
});

/** `mute_channel`: nothing from a stream reaches the agent on any surface. */
export const muteChannelTool = defineTool({
  name: 'mute_channel',
  title: 'Mute a stream',
  description:
    'Mute a stream: nothing from it reaches you on any surface (live, mentions, catch-up), until unmute_channel. Reading tools still read it.',
  inputSchema,
  outputSchema,
  annotations: FILTER_ANNOTATIONS,
  write: false,
  toolset: 'attention',
  async handler(context: AttentionContext, input, { signal }) {
    signal.throwIfAborted();
    const { changed, revision, label } = await changeChannelFilters(context, input.channel, (id) =>
      context.engine.muteChannel(id),
    );
    return {
      text: changed
        ? `Muted ${label}: nothing from it reaches you now; unmute_channel undoes it.`
        : `${label} was already muted.`,
      data: { muted: true, changed, revision },
    };
  },
});

/** `unmute_channel`: a muted stream reaches the agent again. */
export const unmuteChannelTool = defineTool({
  name: 'unmute_channel',
  title: 'Unmute a stream',
  description: 'Unmute a stream muted with mute_channel (or by the operator): its messages reach you again.',
  inputSchema,
  outputSchema,
  annotations: FILTER_ANNOTATIONS,
  write: false,
  toolset: 'attention',
  async handler(context: AttentionContext, input, { signal }) {
    signal.throwIfAborted();
    const { changed, revision, label } = await changeChannelFilters(context, input.channel, (id) =>
      context.engine.unmuteChannel(id),
    );
    return {
      text: changed ? `Unmuted ${label}: its messages reach you again.` : `${label} was not muted.`,
      data: { muted: false, changed, revision },
    };
  },
});
