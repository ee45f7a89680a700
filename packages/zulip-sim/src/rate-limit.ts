/** The outcome of one rate-limit check. */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** UNIX seconds when the bucket is full again. */
  reset: number;
  /** Seconds until the next request is allowed (when refused). */
  retryAfter: number;
}

/** Zulip's per-user sliding-window limiter (default rule: 200 requests per 60 s). */
export class RateLimiter {
  private readonly log = new Map<number, number[]>();
  requests: number;
  windowMs: number;
  private readonly now: () => number;

  constructor(now: () => number, requests: number, windowMs: number) {
    this.now = now;
    this.requests = requests;
    this.windowMs = windowMs;
  }

  check(userId: number): RateDecision {
    const now = this.now();
    let times = this.log.get(userId);
    if (!times) {
      times = [];
      this.log.set(userId, times);
    }
    let drop = 0;
    while (drop < times.length && (times[drop] as number) <= now - this.windowMs) drop++;
    if (drop > 0) times.splice(0, drop);
    if (times.length >= this.requests) {
      const oldest = times[0] as number;
      const newest = times[times.length - 1] as number;
      return {
        allowed: false,
        limit: this.requests,
        remaining: 0,
        reset: Math.floor((newest + this.windowMs) / 1000),
        retryAfter: Math.max(0.001, (oldest + this.windowMs - now) / 1000),
      };
    }
    times.push(now);
    return {
      allowed: true,
      limit: this.requests,
      remaining: this.requests - times.length,
      reset: Math.floor((now + this.windowMs) / 1000),
      retryAfter: 0,
    };
  }

  reset(): void {
    this.log.clear();
  }
}
