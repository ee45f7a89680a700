import type { z } from 'zod';
import { type BoundTool, bindTools, type ToolDefinition } from '../tool.js';
import { channelRecentTool } from './channel-recent.js';
import { channelReplyTool } from './channel-reply.js';
import type { ChannelToolsContext } from './shared.js';

/** The Claude Code channel tools' definitions (`channel_reply`, `channel_recent`), unbound. */
export const channelTools: readonly ToolDefinition<z.ZodObject, z.ZodObject, ChannelToolsContext>[] = [
  channelReplyTool,
  channelRecentTool,
];

/**
 * The tools of a Claude Code channel session, bound to it: `channel_reply` answers a channel event
 * in its exact topic or DM (posted as every tool posts, long text split rather than refused, a DM
 * only to people the session's sender gate lets through), `channel_recent` lists the events pushed.
 * The host keeps the transport: the events, the sender gate, the permission relay.
 */
export function channelCatalog(context: ChannelToolsContext): BoundTool[] {
  return bindTools(channelTools, context);
}
