// The public API of @zmcp/cli. Every export below is a promise to users: adding a line is an
// API decision. What every zmcp bin shares lives here; each bin's own settings stay in the bin.

export type {
  HelpTextOptions,
  LegacySetting,
  ReportProblem,
  SettingKey,
  Settings,
  SettingsOptions,
  SettingsShape,
  SettingValues,
} from './define.js';
export { configurationProblems, defineSettings, invalidConfigurationMessage } from './define.js';
export type { CliErrorCode, CliErrorOptions } from './errors.js';
export { CliError, isCliError } from './errors.js';
export type { BinContext, BinIo, BinMain, MainSpec, TextSink } from './exit.js';
export {
  answerHelpOrVersion,
  defineMain,
  ExitCode,
  reportInvalidConfiguration,
  runBin,
  waitForAbort,
} from './exit.js';
export type { LogFields, LoggerOptions, LogLevel, Redactor } from './logging.js';
export { createLogger, createRedactor, logLevels } from './logging.js';
export { expandHome, homeDirectory } from './paths.js';
export { quoteForError } from './quote.js';
export { readmeTable, writeReadmeTable } from './readme.js';
export type {
  Check,
  DerivedSettingMeta,
  Setting,
  SettingInfo,
  SettingMeta,
  SettingProblem,
} from './settings.js';
export {
  flagSwitch,
  integer,
  matching,
  oneOf,
  optionalBoolean,
  optionalInteger,
  parsedBy,
  problem,
  setting,
  splitList,
  streamAllowlist,
  strictBoolean,
  text,
  textWithDefault,
  timeZone,
} from './settings.js';
export { readPackageVersion } from './version.js';
export type { ZulipSiteValues } from './zulip.js';
export {
  checkZulipSite,
  startupConfigurationProblem,
  zulipAccountSettings,
  zulipCredential,
} from './zulip.js';
