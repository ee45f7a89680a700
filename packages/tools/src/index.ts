// The public API of @zmcp/tools. Every export below is a promise to users.

export { createCatalog } from './catalog.js';
export type { RealmDirectoryOptions } from './directory.js';
export { RealmDirectory } from './directory.js';
export type { ToolErrorCode } from './errors.js';
export { ToolInputError } from './errors.js';
export { MonitorChanges } from './monitor/changes.js';
export type { MonitorCatalog } from './monitor/index.js';
export { monitorCatalog } from './monitor/index.js';
export type { MessageOutput } from './output.js';
export { MessageOutputSchema, toMessageOutput } from './output.js';
export type { BudgetedPage, CursorPosition } from './page.js';
export { DEFAULT_PAGE_BUDGET_BYTES, decodeCursor, encodeCursor, fitToBudget } from './page.js';
export { defineTool, describeInvalidInput, failureFromError, runTool, toolFailure } from './run.js';
export type { RealmFacts, ToolIdentity, ToolServices, ToolServicesOptions } from './services.js';
export { createToolServices, loadRealmFacts } from './services.js';
export type {
  AgentSession,
  AgentSessionLaunch,
  AgentSessionOptions,
  AgentSessionState,
  ListeningIndicator,
  ListenReactionType,
  SessionEnd,
} from './session/agent-session.js';
export {
  createAgentSession,
  DEFAULT_DISMISS_EMOJI,
  DEFAULT_LISTEN_EMOJI,
  DEFAULT_PROGRESS_INTERVAL_MS,
} from './session/agent-session.js';
export type { SessionErrorCode } from './session/errors.js';
export type { SessionCatalog } from './session/index.js';
export { sessionCatalog } from './session/index.js';
export type {
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
} from './tool.js';
