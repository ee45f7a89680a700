import type { MonitorStore, MonitorWatcher } from '@zmcp/delivery';
import type { z } from 'zod';
import type { ToolServices } from '../services.js';
import {
  type BoundTool,
  bindTools,
  type ResourceDefinition,
  type ResourceTemplateDefinition,
  type ToolDefinition,
} from '../tool.js';
import { MonitorChanges } from './changes.js';
import { getMonitoredChannelsTool } from './get-monitored-channels.js';
import { getUnreadMessagesTool } from './get-unread-messages.js';
import { channelUnreadTemplate, monitoringStatusResource, unreadSummaryResource } from './resources.js';
import type { MonitorContext } from './shared.js';
import { startMonitoringTool } from './start-monitoring.js';
import { stopMonitoringTool } from './stop-monitoring.js';

/** The read state a plain MCP client keeps through this server: tools, resources, and their changes. */
export interface MonitorCatalog {
  /** `start_monitoring`, `stop_monitoring`, `get_monitored_channels`, `get_unread_messages`, bound. */
  tools: BoundTool[];
  /** `zulip://unread/summary` (text) and `zulip://monitoring/status` (JSON). */
  resources: ResourceDefinition[];
  /** `zulip://channel/{stream}/unread`, one per monitored stream. */
  resourceTemplates: ResourceTemplateDefinition[];
  /**
   * Which resource URIs changed: the monitor tools report what they change, and while someone
   * listens the watcher's event queue reports new, edited and deleted messages.
   */
  changes: MonitorChanges;
}

/** The monitor tools' definitions, unbound. */
export const monitorTools: readonly ToolDefinition<z.ZodObject, z.ZodObject, MonitorContext>[] = [
  startMonitoringTool,
  stopMonitoringTool,
  getMonitoredChannelsTool,
  getUnreadMessagesTool,
];

/**
 * Builds the plain-MCP monitor of one session over its `MonitorStore` (the per-session cursors):
 * the tools that start, stop, list and read it, the resources that show it, and the source of
 * resource changes. Without a `watcher`, the resources still read fine but nothing reports
 * messages as they arrive.
 */
export function monitorCatalog(
  services: ToolServices,
  monitor: MonitorStore,
  watcher?: MonitorWatcher | undefined,
): MonitorCatalog {
  const changes = new MonitorChanges(watcher);
  const context: MonitorContext = { services, monitor, watcher, changes };
  return {
    tools: bindTools(monitorTools, context),
    resources: [unreadSummaryResource(context), monitoringStatusResource(context)],
    resourceTemplates: [channelUnreadTemplate(context)],
    changes,
  };
}
