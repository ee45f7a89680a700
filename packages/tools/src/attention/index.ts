import type { DeliveryEngine } from '@zmcp/delivery';
import type { z } from 'zod';
import type { ToolServices } from '../services.js';
import { type BoundTool, bindTools, type ToolDefinition } from '../tool.js';
import { channelMissedTool } from './channel-missed.js';
import { filtersGetTool, filtersUpdateTool } from './filters.js';
import { muteChannelTool, unmuteChannelTool } from './mute-channel.js';
import { refreshChannelsTool } from './refresh-channels.js';
import { setReactionVisibilityTool } from './set-reaction-visibility.js';
import type { AttentionContext } from './shared.js';

/** The attention tools' definitions, unbound. */
export const attentionTools: readonly ToolDefinition<z.ZodObject, z.ZodObject, AttentionContext>[] = [
  channelMissedTool,
  muteChannelTool,
  unmuteChannelTool,
  setReactionVisibilityTool,
  filtersGetTool,
  filtersUpdateTool,
  refreshChannelsTool,
];

/**
 * The attention controls of live delivery (`channel_missed`, `mute_channel`, `unmute_channel`,
 * `set_reaction_visibility`, `filters_get`, `filters_update`, `refresh_channels`), bound to one
 * session's delivery engine. Each is a thin call of the engine; the engine's filters plane keeps
 * the operator-owned list out of their reach.
 */
export function attentionCatalog(services: ToolServices, engine: DeliveryEngine): BoundTool[] {
  return bindTools(attentionTools, { services, engine });
}
