/**
 * Where the library reports what it does. Libraries don't print: hand one in to see retries,
 * rate-limit waits and queue re-registrations. Fields never carry credentials or message bodies.
 */
export interface Logger {
  debug(message: string, fields?: Readonly<Record<string, unknown>>): void;
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  error(message: string, fields?: Readonly<Record<string, unknown>>): void;
  /**
   * Learns a secret known only at runtime (a person's API key decrypted for their token, the
   * token itself): every later record of this logger, and of every logger or page sharing its
   * redactor, shows it as `[REDACTED]`. Optional: a logger that does not redact ignores it; call
   * it through {@link learnSecret}. Unset and empty values are ignored.
   */
  redact?(secret: string | undefined): void;
}

/** Tells `logger` a secret it must never show (see {@link Logger.redact}); a no-op for a logger that does not redact. */
export function learnSecret(logger: Logger, secret: string | undefined): void {
  logger.redact?.(secret);
}

const noop = (): void => {};

/** A logger that discards everything; the default. */
export const noopLogger: Logger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop });

/** Replaces every occurrence of each secret in `text` with `[redacted]`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length > 0) out = out.split(secret).join('[redacted]');
  return out;
}

/** Deep-copies JSON-like data with every string passed through {@link redactSecrets}. */
export function redactValue(value: unknown, secrets: readonly string[], depth = 0): unknown {
  if (typeof value === 'string') return redactSecrets(value, secrets);
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, secrets, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value))
    out[redactSecrets(k, secrets)] = redactValue(v, secrets, depth + 1);
  return out;
}
