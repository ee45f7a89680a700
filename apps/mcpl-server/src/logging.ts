import type { Logger as CoreLogger } from '@zmcp/core';
import type { McplLogger } from '@zmcp/mcpl';

/** How much the server logs; `silent` logs nothing. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** The log levels, most verbose first. */
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

/** The logger the app hands to every library (core, delivery, tools, mcpl): one shape fits all four. */
export type Logger = CoreLogger & McplLogger;

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };
// Authorization header values, whatever the secret they carry.
const AUTH_HEADER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi;
const MAX_FIELD = 1000;

/** A logger that drops everything. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

function shown(value: unknown): string {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return JSON.stringify(typeof code === 'string' ? `${code}: ${value.message}` : value.message);
  }
  if (typeof value === 'string') return /^[A-Za-z0-9_.:/@+-]+$/.test(value) ? value : JSON.stringify(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return '"[unserializable]"';
  }
}

/**
 * One line per record on stderr (stdout is the protocol): `time level message key=value`, every
 * given secret and every Authorization-style credential replaced by `[REDACTED]`.
 */
export function createLogger(options: {
  level: LogLevel;
  secrets?: readonly (string | undefined)[];
  write?: (line: string) => void;
}): Logger {
  const threshold = rank[options.level];
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const secrets = (options.secrets ?? [])
    .filter((s): s is string => typeof s === 'string' && s.length > 0)
    .sort((a, b) => b.length - a.length);
  const redact = (text: string) => {
    let out = text.replace(AUTH_HEADER, (_, scheme: string) => `${scheme} [REDACTED]`);
    for (const secret of secrets) out = out.split(secret).join('[REDACTED]');
    return out;
  };
  const emit = (level: Exclude<LogLevel, 'silent'>, message: string, fields?: object) => {
    if (rank[level] < threshold) return;
    let line = `${new Date().toISOString()} ${level} ${message.replace(/[\r\n]/g, ' ')}`;
    for (const [key, value] of Object.entries(fields ?? {})) {
      if (value === undefined) continue;
      const text = redact(shown(value));
      line += ` ${key}=${text.length > MAX_FIELD ? `${text.slice(0, MAX_FIELD)}...` : text}`;
    }
    write(`${redact(line)}\n`);
  };
  return {
    debug: (message, fields) => emit('debug', message, fields),
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
  };
}
