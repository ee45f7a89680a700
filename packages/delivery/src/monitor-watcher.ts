import { setTimeout as delay } from 'node:timers/promises';
import {
  type Clock,
  EventQueue,
  errorCode,
  isNoBotsMessage,
  isZmcpError,
  type Logger,
  noopLogger,
  type QueueItem,
  sameStreamName,
  type ZulipClient,
} from '@zmcp/core';
import type { MonitoredStream, MonitorStore } from './monitor-store.js';

/** Where a watcher stands: whether live updates run and, when they cannot, why. */
export type MonitorWatcherState =
  /** Nobody is watching, so no event queue is held. */
  | 'idle'
  /** Registering the event queue (or retrying after a transient failure). */
  | 'starting'
  /** The event queue is registered and polled: changes are reported as they happen. */
  | 'live'
  /** Live updates cannot run: read-only mode refuses the POST /register an event queue needs. */
  | 'unavailable'
  /** The event queue failed for good (credentials refused, say); `code` says why. */
  | 'failed';

/** A watcher's state with what a status report needs to explain it. */
export interface MonitorWatcherStatus {
  readonly state: MonitorWatcherState;
  /** One sentence on why live updates are not running, when they are not. */
  readonly detail?: string;
  /** The error code behind `failed` or a retry (`CORE_UNAUTHORIZED`, `CORE_NETWORK`, ...). */
  readonly code?: string;
}

/** What made monitored streams change. */
export type MonitorChangeCause = 'message' | 'update_message' | 'delete_message' | 'gap';

/** What a watcher reports to its listeners. */
export type MonitorWatcherEvent =
  /** Monitored streams whose unread state may have changed; re-read them from history. */
  | {
      readonly kind: 'streams';
      readonly streams: readonly MonitoredStream[];
      readonly cause: MonitorChangeCause;
    }
  /** The watcher's state changed (live updates started, stopped or could not run). */
  | { readonly kind: 'state'; readonly status: MonitorWatcherStatus };

/** Options of {@link MonitorWatcher}. */
export interface MonitorWatcherOptions {
  /** The one Zulip client; in read-only mode the watcher never runs. */
  client: ZulipClient;
  /** The monitor whose streams are watched; read again for every event, so changes apply at once. */
  monitor: MonitorStore;
  /** The bot's own user id: its own messages are not reported (they are never unread). */
  selfUserId?: number | undefined;
  logger?: Logger | undefined;
  /** Long-poll deadline of the event queue (see core's `EventQueue`); tests shorten it. */
  longPollTimeoutMs?: number | undefined;
  /** Backoff between failed registrations or polls: doubling from `initialMs` to `maxMs`. Default 500 ms to 30 s. */
  backoff?: { initialMs?: number | undefined; maxMs?: number | undefined } | undefined;
  /** Time source for backoff sleeps; tests inject one. */
  clock?: Clock | undefined;
}

/** Event types the watcher registers for: new messages, edits and moves, deletions. */
const EVENT_TYPES = ['message', 'update_message', 'delete_message'] as const;

const TRANSIENT = new Set([
  'CORE_TIMEOUT',
  'CORE_NETWORK',
  'CORE_SERVER_ERROR',
  'CORE_RATE_LIMITED',
  'CORE_BAD_RESPONSE',
]);

const READ_ONLY_DETAIL =
  'Read-only mode: Zulip event queues need POST /register, which read-only mode refuses; unread state is still read from history, without update notifications.';

const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => delay(ms, undefined, signal === undefined ? undefined : { signal }),
};

/** A failure's code for status and logs: core's code, else `UNKNOWN`. */
function zmcpCode(err: unknown): string {
  return isZmcpError(err) ? err.code : 'UNKNOWN';
}

interface Run {
  readonly stop: AbortController;
  queue: EventQueue | undefined;
  done: Promise<void>;
}

/**
 * Watches the monitored streams of one session for changes while someone listens: the first
 * listener registers a Zulip event queue for `message`, `update_message` and `delete_message`
 * events, the last one leaving deletes it. Each event on a monitored stream (matched by stream
 * id, else by name) is reported as a change of that stream; the bot's own messages, `/nobots`
 * messages and re-renders are not. When Zulip drops the queue, a new one is registered and every
 * monitored stream is reported as changed, since what happened in between is unknown. Zulip only
 * sends stream events to subscribers, so a stream the bot is not subscribed to is never reported.
 * In read-only mode the queue cannot be registered: the watcher reports `unavailable` and
 * never runs.
 */
export class MonitorWatcher {
  readonly #client: ZulipClient;
  readonly #monitor: MonitorStore;
  readonly #selfUserId: number | undefined;
  readonly #logger: Logger;
  readonly #options: MonitorWatcherOptions;
  readonly #clock: Clock;
  readonly #listeners = new Set<(event: MonitorWatcherEvent) => void>();
  #status: MonitorWatcherStatus;
  #run: Run | undefined;
  #closed = false;

  constructor(options: MonitorWatcherOptions) {
    this.#client = options.client;
    this.#monitor = options.monitor;
    this.#selfUserId = options.selfUserId;
    this.#logger = options.logger ?? noopLogger;
    this.#options = options;
    this.#clock = options.clock ?? realClock;
    this.#status = this.#client.readOnly
      ? { state: 'unavailable', detail: READ_ONLY_DETAIL }
      : { state: 'idle' };
  }

  /** The current state: `live` while changes are being reported. */
  get status(): MonitorWatcherStatus {
    return this.#status;
  }

  /** How many listeners are watching. */
  get listenerCount(): number {
    return this.#listeners.size;
  }

  /**
   * Calls `listener` with every change until the returned function is called. The first
   * listener starts the event queue; the returned function resolves once the queue is deleted
   * when it removes the last one. Listeners added after {@link close} are never called.
   */
  watch(listener: (event: MonitorWatcherEvent) => void): () => Promise<void> {
    if (this.#closed) return async () => {};
    const entry = (event: MonitorWatcherEvent) => listener(event);
    this.#listeners.add(entry);
    if (this.#listeners.size === 1) this.#start();
    let removed = false;
    return async () => {
      if (removed) return;
      removed = true;
      this.#listeners.delete(entry);
      if (this.#listeners.size === 0) await this.#stop();
    };
  }

  /** Stops watching for good: forgets every listener and deletes the event queue. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#listeners.clear();
    await this.#stop();
  }

  #setStatus(status: MonitorWatcherStatus): void {
    const prev = this.#status;
    if (prev.state === status.state && prev.detail === status.detail && prev.code === status.code) return;
    this.#status = status;
    this.#emit({ kind: 'state', status });
  }

  #emit(event: MonitorWatcherEvent): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (err) {
        this.#logger.warn('a monitor watcher listener threw', { code: zmcpCode(err) });
      }
    }
  }

  #start(): void {
    if (this.#client.readOnly) {
      this.#setStatus({ state: 'unavailable', detail: READ_ONLY_DETAIL });
      return;
    }
    const run: Run = { stop: new AbortController(), queue: undefined, done: Promise.resolve() };
    this.#run = run;
    run.done = this.#loop(run).catch((err: unknown) => {
      this.#logger.error('the monitor watcher stopped unexpectedly', { code: zmcpCode(err) });
    });
  }

  async #stop(): Promise<void> {
    const run = this.#run;
    if (run === undefined) return;
    this.#run = undefined;
    run.stop.abort();
    await run.queue?.close();
    await run.done;
    if (this.#run === undefined && this.#status.state !== 'unavailable') this.#setStatus({ state: 'idle' });
  }

  async #sleep(failures: number, signal: AbortSignal): Promise<boolean> {
    const initial = this.#options.backoff?.initialMs ?? 500;
    const max = this.#options.backoff?.maxMs ?? 30_000;
    const ms = Math.min(max, initial * 2 ** Math.min(failures - 1, 20));
    try {
      await this.#clock.sleep(ms, signal);
      return !signal.aborted;
    } catch {
      return false;
    }
  }

  async #open(run: Run): Promise<EventQueue | undefined> {
    this.#setStatus({ state: 'starting' });
    let failures = 0;
    while (!run.stop.signal.aborted) {
      try {
        // Not aborted through the signal: a registration that completes is always deleted below.
        const queue = await EventQueue.open(this.#client, {
          eventTypes: [...EVENT_TYPES],
          fetchEventTypes: ['message'],
          clientCapabilities: { bulk_message_deletion: true },
          longPollTimeoutMs: this.#options.longPollTimeoutMs,
          backoff: this.#options.backoff,
          clock: this.#options.clock,
          logger: this.#logger,
        });
        if (run.stop.signal.aborted) {
          await queue.close();
          return undefined;
        }
        return queue;
      } catch (err) {
        if (run.stop.signal.aborted) return undefined;
        const code = zmcpCode(err);
        if (code === 'CORE_READ_ONLY') {
          this.#setStatus({ state: 'unavailable', detail: READ_ONLY_DETAIL });
          return undefined;
        }
        if (!TRANSIENT.has(code)) {
          this.#setStatus({ state: 'failed', code, detail: `Registering the event queue failed (${code}).` });
          return undefined;
        }
        failures += 1;
        this.#logger.warn('registering the monitor event queue failed; retrying', { code, failures });
        this.#setStatus({
          state: 'starting',
          code,
          detail: `Registering the event queue failed (${code}); retrying.`,
        });
        if (!(await this.#sleep(failures, run.stop.signal))) return undefined;
      }
    }
    return undefined;
  }

  async #loop(run: Run): Promise<void> {
    const queue = await this.#open(run);
    if (queue === undefined) return;
    run.queue = queue;
    this.#setStatus({ state: 'live' });
    try {
      for await (const item of queue) {
        if (run.stop.signal.aborted) break;
        await this.#handle(item);
      }
    } catch (err) {
      if (!run.stop.signal.aborted) {
        const code = zmcpCode(err);
        this.#logger.error('the monitor event queue failed', { code });
        this.#setStatus({ state: 'failed', code, detail: `The event queue failed (${code}).` });
      }
    } finally {
      await queue.close();
    }
  }

  async #handle(item: QueueItem): Promise<void> {
    if (item.kind === 'gap') {
      const streams = await this.#monitored();
      if (streams.length > 0) this.#emit({ kind: 'streams', streams, cause: 'gap' });
      return;
    }
    if (item.kind !== 'event') return;
    const event = item.event;
    let ids: number[] = [];
    let name: string | undefined;
    let cause: MonitorChangeCause;
    if (event.type === 'message') {
      const m = event.message;
      if (m.type !== 'stream') return;
      if (this.#selfUserId !== undefined && m.sender_id === this.#selfUserId) return;
      if (isNoBotsMessage(m)) return;
      if (m.stream_id !== undefined) ids = [m.stream_id];
      if (typeof m.display_recipient === 'string') name = m.display_recipient;
      cause = 'message';
    } else if (event.type === 'update_message') {
      if (event.rendering_only === true) return;
      ids = [event.stream_id, event.new_stream_id].filter((id): id is number => id !== undefined);
      if (ids.length === 0) return;
      cause = 'update_message';
    } else if (event.type === 'delete_message') {
      if (event.message_type !== 'stream' || event.stream_id === undefined) return;
      ids = [event.stream_id];
      cause = 'delete_message';
    } else {
      return;
    }
    const monitored = await this.#monitored();
    const changed = monitored.filter((s) =>
      s.streamId !== undefined
        ? ids.includes(s.streamId)
        : (name !== undefined && sameStreamName(s.name, name)) || (name === undefined && ids.length > 0),
    );
    if (changed.length > 0) this.#emit({ kind: 'streams', streams: changed, cause });
  }

  async #monitored(): Promise<MonitoredStream[]> {
    try {
      return await this.#monitor.list();
    } catch (err) {
      this.#logger.warn('could not read the monitored streams', { code: errorCode(err) });
      return [];
    }
  }
}
