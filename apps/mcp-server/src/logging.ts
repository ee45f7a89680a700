// The server logs with the logger every zmcp bin shares (`@zmcp/cli`); this module names it
// for the server's own modules.
import { type Logger, noopLogger } from '@zmcp/core';

export type { LogFields, LoggerOptions, LogLevel } from '@zmcp/cli';
export { createLogger, createRedactor, logLevels } from '@zmcp/cli';
export type { Logger };

/** A logger that drops every record; the default wherever a logger is optional. */
export const silentLogger: Logger = noopLogger;
