import type { Logger } from '@zmcp/core';
import { errorCode } from '@zmcp/core';

/** How much a bin logs; `silent` logs nothing. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** The log levels, most verbose first (the values of a log-level setting). */
export const logLevels: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

/** Extra `key=value` pairs of one log record. */
export type LogFields = Readonly<Record<string, unknown>>;

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Records below this level are dropped. */
  level: LogLevel;
  /** Values that must never appear in a log line (API key, bearer token); unset entries are ignored. */
  secrets?: readonly (string | undefined)[];
  /**
   * A redactor to share (with another logger, or the status page): `secrets` are added to it, and
   * a secret the logger learns later (`logger.redact`) is redacted by everything sharing it.
   * Default: a redactor of its own.
   */
  redactor?: Redactor | undefined;
  /** Where each line goes, newline included. Defaults to `process.stderr`: stdout is the JSON-RPC wire on stdio. */
  write?: (line: string) => void;
  /** Clock for the timestamp; defaults to `new Date()`. */
  now?: () => Date;
}

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

const REDACTED = '[REDACTED]';
// Authorization header values, whatever the secret they carry.
const AUTH_HEADER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi;

// A field longer than this (say, base64 in logged tool arguments) is cut, keeping lines readable.
const MAX_FIELD_LENGTH = 2000;

/**
 * Replaces every known secret (and its JSON-escaped form) and every Authorization-style credential
 * (`Bearer ...`, `Basic ...`) in a text with `[REDACTED]`; {@link Redactor.add} teaches it one more.
 */
export interface Redactor {
  (text: string): string;
  /** Adds a secret known only at runtime; unset, empty and already known values are ignored. */
  add(secret: string | undefined): void;
}

/**
 * A function that replaces every given secret (and its JSON-escaped form) and every
 * Authorization-style credential (`Bearer ...`, `Basic ...`) in a text with `[REDACTED]`;
 * unset and empty entries are ignored. Its `add` teaches it a secret learnt later.
 */
export function createRedactor(secrets: readonly (string | undefined)[]): Redactor {
  const seen = new Set<string>();
  let known: string[] = [];
  const add = (secret: string | undefined): void => {
    if (typeof secret !== 'string' || secret.length === 0 || seen.has(secret)) return;
    seen.add(secret);
    // The JSON-escaped form too, in case a secret holds characters JSON escapes.
    known = [...new Set([...known, secret, JSON.stringify(secret).slice(1, -1)])]
      // Longest first, so a secret containing another is replaced whole.
      .sort((a, b) => b.length - a.length);
  };
  for (const secret of secrets) add(secret);
  const redact = (text: string): string => {
    let out = text.replace(AUTH_HEADER, (_, scheme: string) => `${scheme} ${REDACTED}`);
    for (const secret of known) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    return out;
  };
  return Object.assign(redact, { add });
}

function formatFull(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (value instanceof Error) {
    const code = errorCode(value);
    return JSON.stringify(code !== undefined ? `${code}: ${value.message}` : value.message);
  }
  if (typeof value === 'string') return /^[A-Za-z0-9_.:/@+-]+$/.test(value) ? value : JSON.stringify(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return '"[unserializable]"';
  }
}

function formatValue(value: unknown, redact: (text: string) => string): string {
  // Redacted before it is cut, so a cut cannot leave part of a secret behind.
  const text = redact(formatFull(value));
  return text.length > MAX_FIELD_LENGTH
    ? `${text.slice(0, MAX_FIELD_LENGTH)}...[${text.length - MAX_FIELD_LENGTH} more chars]`
    : text;
}

/**
 * Builds a bin's logger, the one it hands to the libraries: one line per record
 * (`ts level msg key=value`), written to stderr, each record on one line whatever its content,
 * long fields cut, and every known secret and Authorization-style credential replaced by
 * `[REDACTED]`. A secret known only at runtime (a person's key, their token) is taught with
 * `logger.redact(secret)` (core's `learnSecret`): from then on every logger and page sharing the
 * redactor shows it redacted. Message bodies and tool arguments belong at `debug` only.
 */
export function createLogger(options: LoggerOptions): Logger & { redact(secret: string | undefined): void } {
  const threshold = rank[options.level];
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const now = options.now ?? (() => new Date());
  const redact = options.redactor ?? createRedactor([]);
  for (const secret of options.secrets ?? []) redact.add(secret);

  const emit = (level: Exclude<LogLevel, 'silent'>, message: string, fields?: LogFields): void => {
    let line = `${now().toISOString()} ${level} ${message.replace(/\r/g, '\\r').replace(/\n/g, '\\n')}`;
    if (fields) {
      for (const [key, value] of Object.entries(fields)) {
        if (value !== undefined) line += ` ${key}=${formatValue(value, redact)}`;
      }
    }
    write(`${redact(line)}\n`);
  };

  // A level below the threshold is a no-op from the start: hot paths log at debug for free.
  const at =
    (level: Exclude<LogLevel, 'silent'>) =>
    (message: string, fields?: LogFields): void =>
      emit(level, message, fields);
  const off = (): void => {};
  return {
    debug: rank.debug < threshold ? off : at('debug'),
    info: rank.info < threshold ? off : at('info'),
    warn: rank.warn < threshold ? off : at('warn'),
    error: rank.error < threshold ? off : at('error'),
    redact: (secret) => redact.add(secret),
  };
}
