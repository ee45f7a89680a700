import type { Clock } from './clock.js';

/** What the pacer decided before a request: wait this long first (0 = go now). */
export interface PaceDecision {
  waitMs: number;
  /** Why: the bucket is empty, it is running low, or Zulip answered 429 recently. */
  reason: 'none' | 'empty' | 'low' | 'blocked';
}

const MAX_PACING_MS = 120_000;

/**
 * Per-client rate-limit state. Zulip reports the bucket on every response
 * (`X-RateLimit-Remaining`, `X-RateLimit-Reset` in UNIX seconds); the pacer spreads the
 * remaining requests over the time left once the bucket runs low, waits for the reset when it
 * is empty, and after a 429 holds every request until Retry-After has passed.
 */
export class RatePacer {
  readonly #clock: Clock;
  #remaining: number | undefined;
  #limit: number | undefined;
  #resetAtMs = 0;
  #blockedUntilMs = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Decides how long the next request should wait, and counts it against the known bucket. */
  reserve(): PaceDecision {
    const now = this.#clock.now();
    if (this.#blockedUntilMs > now) return { waitMs: this.#blockedUntilMs - now, reason: 'blocked' };
    if (this.#remaining === undefined || now >= this.#resetAtMs) {
      this.#remaining = undefined;
      return { waitMs: 0, reason: 'none' };
    }
    const untilReset = this.#resetAtMs - now;
    if (this.#remaining <= 0) return { waitMs: untilReset, reason: 'empty' };
    const lowWater = Math.max(2, Math.ceil((this.#limit ?? 0) * 0.1));
    const remaining = this.#remaining;
    this.#remaining -= 1;
    if (remaining > lowWater) return { waitMs: 0, reason: 'none' };
    // Low: share the time left evenly among the requests left, so the bucket lasts to the reset.
    return { waitMs: Math.ceil(untilReset / (remaining + 1)), reason: 'low' };
  }

  /** Records the bucket Zulip reported on a response. */
  observe(headers: Readonly<Record<string, string | string[] | undefined>>): void {
    const remaining = numberHeader(headers['x-ratelimit-remaining']);
    const reset = numberHeader(headers['x-ratelimit-reset']);
    const limit = numberHeader(headers['x-ratelimit-limit']);
    if (remaining === undefined || reset === undefined) return;
    // Reset is the server's clock; measure it against the server's Date header when there is
    // one, so a skewed local clock neither stalls us nor disables pacing.
    const now = this.#clock.now();
    const rawDate = headers.date;
    const serverNow = Date.parse((Array.isArray(rawDate) ? rawDate[0] : rawDate) ?? '');
    const untilReset = reset * 1000 - (Number.isNaN(serverNow) ? now : serverNow);
    this.#remaining = Math.max(0, Math.floor(remaining));
    this.#resetAtMs = now + Math.max(0, Math.min(untilReset, MAX_PACING_MS));
    if (limit !== undefined) this.#limit = limit;
  }

  /** Records a 429: nothing goes out until `retryAfterMs` has passed. */
  block(retryAfterMs: number): void {
    this.#blockedUntilMs = Math.max(this.#blockedUntilMs, this.#clock.now() + retryAfterMs);
    this.#remaining = 0;
    this.#resetAtMs = Math.max(this.#resetAtMs, this.#blockedUntilMs);
  }
}

function numberHeader(value: string | string[] | undefined): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  return Number.isFinite(n) ? n : undefined;
}
