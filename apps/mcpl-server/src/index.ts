// The public API of @zmcp/mcpl-server. Every export below is a promise to users: adding a line
// is an API decision. The bin (`zulip-mcpl`) is src/cli.ts and is not exported.

export type { McplConfig, SettingInfo } from './config.js';
export { configSettings, configVariableNames, helpText, MCPL_TOOLSETS, parseConfig } from './config.js';
export type { Connection } from './connection.js';
export type { McplServerErrorCode } from './errors.js';
export { McplServerError } from './errors.js';
export type { Logger, LogLevel } from './logging.js';
export { createLogger, silentLogger } from './logging.js';
export type { MainIo } from './main.js';
export { main } from './main.js';
export type { ZulipMcpl, ZulipMcplOptions } from './runtime.js';
export { CONTEXT, createZulipMcpl, HISTORY } from './runtime.js';
export { MESSAGING } from './sink.js';
