// The public API of @zmcp/mcp-server. Every export below is a promise to users: adding a
// line is an API decision. The bin (`zulip-mcp`) is src/cli.ts and is not exported.

export type {
  Config,
  HttpSettings,
  LegacySetting,
  SessionSettings,
  SettingInfo,
  ZulipCredentialSettings,
} from './config.js';
export { configSettings, configVariableNames, helpText, legacySettings, parseConfig } from './config.js';
export type { McpServerErrorCode } from './errors.js';
export { McpServerError } from './errors.js';
export type {
  AuthorizationInfo,
  CallerLimits,
  HttpAdmin,
  HttpListen,
  HttpServerContext,
  HttpServerOptions,
  RunningHttpServer,
  SessionCloseReason,
} from './http.js';
export { startHttpServer } from './http.js';
export type { LogFields, Logger, LoggerOptions, LogLevel } from './logging.js';
export { createLogger, silentLogger } from './logging.js';
export type { MainIo } from './main.js';
export { main } from './main.js';
export type { CreateMcpServerOptions } from './server.js';
export { createMcpServer } from './server.js';
export type { AgentSessionServices, Services } from './services.js';
