/** Extra `key=value` pairs of one log record. */
export type McplLogFields = Readonly<Record<string, unknown>>;

/**
 * Where the library reports what it dropped or refused: four levels, a message and optional
 * fields. The library never writes to the console; an app hands in its own logger (stderr only
 * on stdio, where stdout is the wire). Message bodies appear at `debug` only.
 */
export interface McplLogger {
  debug(message: string, fields?: McplLogFields): void;
  info(message: string, fields?: McplLogFields): void;
  warn(message: string, fields?: McplLogFields): void;
  error(message: string, fields?: McplLogFields): void;
}

/** A logger that drops every record; the default wherever a logger is optional. */
export const silentMcplLogger: McplLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};
