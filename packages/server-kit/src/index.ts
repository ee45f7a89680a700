// The public API of @zmcp/server-kit. Every export below is a promise to users: adding a line is
// an API decision. What every zmcp server composes lives here; each server's own features stay in it.

/** The launcher's fleet-wide trigger claims (`ZULIP_STATE_URL`), as `runtime.backend.launcherWork` opens them. */
export type { LauncherTriggerRow, LauncherWork } from '@zmcp/fleet';
export type {
  ConsoleListenOptions,
  ConsolePanel,
  FleetView,
  OperatorConsoleOptions,
  ProgressTask,
  ProgressUpdate,
} from './console/console.js';
export { OperatorConsole } from './console/console.js';
export type { FleetWatch, WatchFleetOptions } from './console/fleet.js';
export { watchFleet } from './console/fleet.js';
export type { Html, HtmlValue } from './console/html.js';
export { escapeHtml, html, joinHtml } from './console/html.js';
export type { DeliveryPanelOptions } from './console/panels.js';
export { addDeliveryPanel, addToolCallPanel, deliveryProgress } from './console/panels.js';
export type { QueueOwnerWatch } from './console/queue-owner.js';
export { watchQueueOwner } from './console/queue-owner.js';
export type { ServerKitErrorCode, ServerKitErrorOptions } from './errors.js';
export { isServerKitError, ServerKitError } from './errors.js';
export { sharedServerEventBus } from './event-bus.js';
export { bearerTokenOf, isLoopbackHostHeader, tokenCheck } from './http-guard.js';
export { instructionLines } from './instructions.js';
export type { BadHandleReason, McpHandles, McpHandlesOptions } from './mcp-handles.js';
export { openMcpHandles } from './mcp-handles.js';
export type { CacheableMethod, McpEra, ToolCallObservation, ToolServerOptions } from './mcp-server.js';
export {
  clientSupportsElicitation,
  clientSupportsTasks,
  createToolServer,
  DEFAULT_CACHE_HINTS,
  TASKS_EXTENSION,
} from './mcp-server.js';
export type { McpTasks, McpTasksOptions } from './mcp-tasks.js';
export { createMcpTasks } from './mcp-tasks.js';
export type { McpToolCallOptions } from './mcp-tools.js';
export { callMcpTool, callMcpToolResult, listMcpTools, mcpTool, toolCallError } from './mcp-tools.js';
export type { OpenZulipRuntimeOptions, ZulipRuntime } from './runtime.js';
export { loadConfiguredCredentials, openZulipRuntime } from './runtime.js';
export type { DemoPost, DemoRealm, RunServerOptions, ServerStart } from './serve.js';
export { runServer, startDemoRealm, stateUrlSecrets } from './serve.js';
export type {
  BinReadOnly,
  BinToolsets,
  DeclaredServerSettings,
  ResolveContext,
  ServerSettings,
  ServerSettingsKit,
  ServerSettingsOptions,
  ServerSettingsShape,
  ServerSettingValues,
  SharedSettingName,
  ZulipCredentialSettings,
} from './settings.js';
export { serverSettings } from './settings.js';
