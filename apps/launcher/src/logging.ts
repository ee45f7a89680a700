/** How much the launcher logs; `silent` logs nothing. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** The log levels, most verbose first. */
export const logLevels: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

/** Extra `key=value` pairs of one log record. */
export type LogFields = Readonly<Record<string, unknown>>;

/** The logger the launcher writes to and hands to the libraries. Message bodies belong at `debug` only. */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** A logger that drops every record. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };
const REDACTED = '[REDACTED]';
const AUTH_HEADER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi;

/**
 * A function replacing every known secret (and its JSON-escaped form), and any
 * `Bearer`/`Basic` credential, with `[REDACTED]`. Secrets shorter than 4 characters are ignored.
 */
export function createRedactor(secrets: readonly (string | undefined)[]): (text: string) => string {
  const known = [
    ...new Set(
      secrets
        .filter((s): s is string => typeof s === 'string' && s.length >= 4)
        .flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]),
    ),
  ].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text.replace(AUTH_HEADER, (_m, scheme: string) => `${scheme} ${REDACTED}`);
    for (const secret of known) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    return out;
  };
}

function formatValue(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
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

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  level: LogLevel;
  /** Values that must never appear in a line; unset entries are ignored. */
  secrets?: readonly (string | undefined)[];
  /** Where each line goes, newline included. Default: stderr. */
  write?: (line: string) => void;
  now?: () => Date;
}

/** One line per record (`ts level msg key=value`) with every known secret redacted. */
export function createLogger(options: LoggerOptions): Logger {
  const threshold = rank[options.level];
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const now = options.now ?? (() => new Date());
  const redact = createRedactor(options.secrets ?? []);
  const emit = (level: Exclude<LogLevel, 'silent'>, message: string, fields?: LogFields): void => {
    if (rank[level] < threshold) return;
    let line = `${now().toISOString()} ${level} ${message.replace(/\r/g, '\\r').replace(/\n/g, '\\n')}`;
    for (const [key, value] of Object.entries(fields ?? {})) {
      if (value === undefined) continue;
      // Redacted before it is cut, so a cut cannot leave part of a secret behind.
      const shown = redact(formatValue(value));
      line += ` ${key}=${shown.length > 2000 ? `${shown.slice(0, 2000)}...` : shown}`;
    }
    write(`${redact(line)}\n`);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}
