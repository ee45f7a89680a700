import { setTimeout as delay } from 'node:timers/promises';

/** Time as the client sees it; injectable so tests control waits without real sleeps. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real clock: `Date.now()` and timers. */
export const systemClock: Clock = Object.freeze({
  now: () => Date.now(),
  sleep: async (ms: number, signal?: AbortSignal): Promise<void> => {
    if (ms <= 0) {
      signal?.throwIfAborted();
      return;
    }
    try {
      await delay(ms, undefined, signal === undefined ? undefined : { signal });
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw err;
    }
  },
});
