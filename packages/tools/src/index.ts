// The public API of @zmcp/tools. Every export below is a promise to users: adding a line is an
// API decision. Internal helpers stay unexported.

export type {
  ApprovalDecision,
  ApprovalDeskOptions,
  ApprovalOutcome,
  ApprovalRequest,
} from './approvals/desk.js';
export { ApprovalDesk, DEFAULT_APPROVAL_TIMEOUT_MS } from './approvals/desk.js';
export { permissionPromptTools } from './approvals/index.js';
export { attentionCatalog, attentionTools } from './attention/index.js';
// --- definitions, binding and the call contract ---
export type { AttentionContext } from './attention/shared.js';
export type { ToolSelection } from './catalog.js';
export {
  createCatalog,
  DEFAULT_TOOLSETS,
  isServed,
  parseToolsets,
  realmTools,
  selectTools,
  TOOLSETS,
  toolDefinitions,
} from './catalog.js';
export { channelCatalog, channelTools } from './channels/index.js';
export type { ChannelEvent, ChannelToolsContext } from './channels/shared.js';
export { channelChatId } from './channels/shared.js';
// --- services, catalogs of the monitor and the teammate session ---
export type { RealmDirectoryOptions } from './directory.js';
export { RealmDirectory } from './directory.js';
export type { ToolErrorCode } from './errors.js';
export { isToolError, ToolError } from './errors.js';
export { describeInvalidInput, failureFromError, toolFailure } from './failure.js';
export type { ToolCallOutcome, ToolCallRequest, ToolHostOptions } from './host.js';
export { ToolHost } from './host.js';
export type { JsonSchema, ToolListing } from './listing.js';
export { toolListing, typedOutputSchema } from './listing.js';
export type { McpContentBlock, McpToolResult } from './mcp-result.js';
export { toMcpResult } from './mcp-result.js';
export { describeMessageLines } from './message-lines.js';
export { MonitorChanges } from './monitor/changes.js';
export type { MonitorCatalog } from './monitor/index.js';
export { monitorCatalog, monitorTools } from './monitor/index.js';
export type { BudgetedPage, CursorPosition } from './page.js';
export { DEFAULT_PAGE_BUDGET_BYTES, decodeCursor, encodeCursor, fitToBudget } from './page.js';
export type { RealmFacts, ToolIdentity, ToolServices, ToolServicesOptions } from './services.js';
export { createToolServices, loadRealmFacts } from './services.js';
export type {
  AgentSession,
  AgentSessionLaunch,
  AgentSessionOptions,
  AgentSessionSnapshot,
  AgentSessionState,
  ListeningIndicator,
  ListenReactionType,
  SessionEnd,
} from './session/agent-session.js';
export {
  AgentSessionSnapshotSchema,
  createAgentSession,
  DEFAULT_DISMISS_EMOJI,
  DEFAULT_LISTEN_EMOJI,
  DEFAULT_PROGRESS_INTERVAL_MS,
  sameConversation,
} from './session/agent-session.js';
export type { SessionCatalog } from './session/index.js';
export { sessionCatalog, sessionTools } from './session/index.js';
export type {
  AnyToolDefinition,
  BoundTool,
  PromptDefinition,
  ResourceChanges,
  ResourceContents,
  ResourceDefinition,
  ResourceTemplateDefinition,
  ToolAnnotations,
  ToolCallContext,
  ToolDefinition,
  ToolFailure,
  ToolImage,
  ToolResult,
  ToolSuccess,
  Toolset,
} from './tool.js';
export { bindTool, bindTools, defineTool } from './tool.js';
export type { OverLength, Posted, PostOptions } from './write/post.js';
export { postMessage } from './write/post.js';
export type { EarlierSend, SendOnceOptions } from './write/send-once.js';
export { DEFAULT_SEND_ONCE_WINDOW_MS, SendOnce } from './write/send-once.js';
