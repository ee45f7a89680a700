/** How the client retries a failed call. Only idempotent calls are retried after 5xx or torn connections. */
export interface RetryPolicy {
  /** Attempts in total for idempotent calls failing with 5xx or network errors (1 = no retry). */
  readonly maxAttempts: number;
  /** First backoff delay; each later one doubles up to `maxDelayMs`; every delay is jittered to between half and all of it. */
  readonly baseDelayMs: number;
  /** Ceiling of one backoff delay. */
  readonly maxDelayMs: number;
  /** How many 429 answers are waited out (per Retry-After) before giving up with `CORE_RATE_LIMITED`. */
  readonly maxRateLimitWaits: number;
  /** A Retry-After longer than this is not waited out: the call fails with `CORE_RATE_LIMITED` at once. */
  readonly maxRetryAfterMs: number;
}

/** The default retry policy: 4 attempts, 250 ms doubling to 8 s, 3 rate-limit waits of at most 60 s. */
export const defaultRetryPolicy: RetryPolicy = Object.freeze({
  maxAttempts: 4,
  baseDelayMs: 250,
  maxDelayMs: 8_000,
  maxRateLimitWaits: 3,
  maxRetryAfterMs: 60_000,
});

/** No retries at all: one attempt, no rate-limit waits. */
export const noRetryPolicy: RetryPolicy = Object.freeze({
  maxAttempts: 1,
  baseDelayMs: 0,
  maxDelayMs: 0,
  maxRateLimitWaits: 0,
  maxRetryAfterMs: 0,
});

/** Jittered exponential backoff (half to all of the doubled delay) for the given retry number (1 for the first retry). */
export function backoffDelay(
  retry: number,
  policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>,
  random: () => number,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  // Never zero, so that a burst of failing clients still spreads out.
  return Math.max(1, Math.round(ceiling * (0.5 + random() / 2)));
}

/**
 * Reads a Retry-After value (delta seconds, possibly fractional as Zulip sends it, or an
 * HTTP date) into milliseconds; undefined when absent or unreadable.
 */
export function parseRetryAfter(value: unknown, nowMs: number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value * 1000 : undefined;
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}
