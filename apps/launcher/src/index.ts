// The public API of @zmcp/launcher. Every export below is a promise to users: adding a line is
// an API decision. The bin (`zulip-agent`) is src/cli.ts and is not exported.

export type { LogFields, LoggerOptions, LogLevel } from '@zmcp/cli';
export { createLogger } from '@zmcp/cli';
export type { Logger } from '@zmcp/core';
export { noopLogger as silentLogger } from '@zmcp/core';
export type { BackendInvocation, BackendName, CodexToolApproval, InvocationInput } from './backends.js';
export { backendNames, buildInvocation, SERVER_NAME } from './backends.js';
export type {
  AllowedUsers,
  LauncherConfig,
  LauncherZulipSettings,
  SettingInfo,
  StatusEmoji,
  StreamBackendRule,
} from './config.js';
export { configSettings, configVariableNames, helpText, parseConfig } from './config.js';
export type { LauncherErrorCode, LauncherErrorOptions } from './errors.js';
export { isLauncherError, LauncherError } from './errors.js';
export type {
  Launcher,
  LauncherEvent,
  LauncherOptions,
  LauncherStatus,
  SessionEndInfo,
  SessionOutcome,
} from './launcher.js';
export { createLauncher } from './launcher.js';
export type { MainIo } from './main.js';
export { main } from './main.js';
export type { HttpServerEntry, McpServerEntry, StdioServerEntry } from './mcp-config.js';
export { loadServerEntry, parseServerEntry, selectServer } from './mcp-config.js';
export type { IgnoreReason, TriggerInfo } from './triggers.js';
