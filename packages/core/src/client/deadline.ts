import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';

/** Why a {@link Deadline} fired. */
export type DeadlineReason = 'aborted' | 'timeout' | 'closed';

/**
 * What undici listens on to cancel a request: an EventEmitter with `aborted`/`reason`, which
 * undici accepts in place of an AbortSignal and which costs far less to set up per call.
 */
class AbortEmitter extends EventEmitter {
  aborted = false;
  reason: unknown;
}

/**
 * One call's deadline composed with the caller's signal and the client's lifetime: the
 * request is cancelled when any of them fires, and `reason()` says which fired first.
 */
export class Deadline {
  readonly timeoutMs: number;
  /** What the request is sent with. */
  readonly emitter = new AbortEmitter();
  readonly #expiresAt: number;
  readonly #callerSignal: AbortSignal | undefined;
  readonly #registry: Set<Deadline> | undefined;
  #controller: AbortController | undefined;
  #timer: NodeJS.Timeout | undefined;
  #firedBy: DeadlineReason | undefined;
  readonly #onCallerAbort = (): void => this.fire('aborted', this.#callerSignal?.reason);

  /** `registry` is the client's set of live deadlines, which `close()` fires all at once. */
  constructor(timeoutMs: number, callerSignal: AbortSignal | undefined, registry?: Set<Deadline>) {
    this.timeoutMs = timeoutMs;
    this.#callerSignal = callerSignal;
    this.#registry = registry;
    this.#expiresAt = performance.now() + timeoutMs;
    if (callerSignal?.aborted) {
      this.fire('aborted', callerSignal.reason);
      return;
    }
    callerSignal?.addEventListener('abort', this.#onCallerAbort, { once: true });
    registry?.add(this);
    this.#timer = setTimeout(
      () => this.fire('timeout', new Error(`deadline of ${timeoutMs} ms passed`)),
      timeoutMs,
    );
  }

  /** Fires the deadline (first reason wins); idempotent. */
  fire(reason: DeadlineReason, value: unknown): void {
    if (this.#firedBy !== undefined) return;
    this.#firedBy = reason;
    this.emitter.aborted = true;
    this.emitter.reason = value;
    this.emitter.emit('abort');
    this.#controller?.abort(value);
  }

  /** An AbortSignal that fires with the deadline, for waits between attempts (made on first use). */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#firedBy !== undefined) this.#controller.abort(this.emitter.reason);
    }
    return this.#controller.signal;
  }

  /** Milliseconds left before the deadline (0 once passed). */
  remaining(): number {
    return Math.max(0, this.#expiresAt - performance.now());
  }

  /** What fired first, or undefined while nothing has. */
  reason(): DeadlineReason | undefined {
    return this.#firedBy;
  }

  /** Releases the timer, the listener and the registration. */
  dispose(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#callerSignal?.removeEventListener('abort', this.#onCallerAbort);
    this.#registry?.delete(this);
  }
}
