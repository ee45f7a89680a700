import { parseZulipEvent, type UnknownEvent, type ZulipEvent } from '../api/events.js';
import type { RegisterParams } from '../api/params.js';
import type { RegisterResponse } from '../api/responses.js';
import { type Clock, systemClock } from '../client/clock.js';
import { type Logger, noopLogger } from '../client/logger.js';
import { backoffDelay } from '../client/retry.js';
import type { ZulipClient } from '../client/zulip-client.js';
import { isZmcpError, ZmcpError, ZulipApiError } from '../errors.js';

/** Options of {@link EventQueue.open}: what to register for, and how to poll. */
export interface EventQueueOptions extends RegisterParams {
  /** Yield heartbeat events too (they are always acknowledged). Default false. */
  yieldHeartbeats?: boolean | undefined;
  /** Stops the queue: the iterator ends and the queue is deleted (best effort). */
  signal?: AbortSignal | undefined;
  /** Deadline of one long poll. Default: the realm's `event_queue_longpoll_timeout_seconds` (90) plus 10 s. */
  longPollTimeoutMs?: number | undefined;
  /** Backoff between failed polls or registrations: doubling from `initialMs` to `maxMs`, jittered. Default 500 ms to 30 s. */
  backoff?: { initialMs?: number | undefined; maxMs?: number | undefined } | undefined;
  logger?: Logger | undefined;
  /** Time source for backoff sleeps; tests inject one. */
  clock?: Clock | undefined;
  random?: (() => number) | undefined;
}

/**
 * The queue was lost (Zulip answered `BAD_EVENT_QUEUE_ID`) and a new one registered: events
 * between `lastEventId` on the old queue and the new queue's start were never received. Refetch
 * history for messages after `lastMessageId` up to `newMaxMessageId` to heal.
 */
export interface QueueGap {
  kind: 'gap';
  /** The queue that was lost. */
  lostQueueId: string;
  /** The last event id received on the lost queue (-1 if none). */
  lastEventId: number;
  /** The highest message id known before the loss (register's `max_message_id` or a later `message` event). */
  lastMessageId: number | undefined;
  /** The queue that replaces it. */
  newQueueId: string;
  /** The new queue's `max_message_id`: messages up to here may have been missed. */
  newMaxMessageId: number | undefined;
  /** The new registration, with fresh initial state. */
  registration: RegisterResponse;
  /** `CORE_QUEUE_LOST`, its cause Zulip's refusal. */
  error: ZmcpError;
}

/**
 * Where a queue stands, to carry on with it elsewhere ({@link EventQueue.resume}): the queue, the
 * last event received (acknowledged by the next poll), the highest message id seen, and the
 * registration it answered.
 */
export interface EventQueuePosition {
  queueId: string;
  lastEventId: number;
  lastMessageId: number | undefined;
  registration: RegisterResponse;
}

/** One thing the queue hands its consumer. */
export type QueueItem =
  | { kind: 'event'; event: ZulipEvent }
  /** An event type the library does not know; it passes through untouched. */
  | { kind: 'unknown'; event: UnknownEvent }
  /** A known event type missing a required field; acknowledged and reported, not thrown. */
  | { kind: 'invalid'; type: string | undefined; id: number | undefined; error: ZmcpError }
  | QueueGap;

const LONG_POLL_MARGIN_MS = 10_000;

/** What the iterator and `nextBatch` share: the batch being handed out and the polls behind it. */
interface BatchReader {
  buffer: QueueItem[];
  index: number;
  done: boolean;
  /** Waits for the next batch; false when the polls have ended. */
  fill(): Promise<boolean>;
  /** Ends the polls (the queue is deleted). */
  finish(): Promise<IteratorResult<QueueItem>>;
}

function fatal(err: unknown): boolean {
  if (!isZmcpError(err)) return true;
  switch (err.code) {
    case 'CORE_TIMEOUT':
    case 'CORE_NETWORK':
    case 'CORE_SERVER_ERROR':
    case 'CORE_RATE_LIMITED':
    case 'CORE_BAD_RESPONSE':
      return false;
    default:
      return true;
  }
}

function isQueueGone(err: unknown): err is ZulipApiError {
  return err instanceof ZulipApiError
    ? err.zulipCode === 'BAD_EVENT_QUEUE_ID'
    : isZmcpError(err) && (err as { zulipCode?: unknown }).zulipCode === 'BAD_EVENT_QUEUE_ID';
}

/**
 * A Zulip event queue as an async iterable. It long-polls, acknowledges by `last_event_id`,
 * backs off (jittered, capped) on failures and keeps trying through a server restart, and when
 * Zulip has dropped the queue it registers a new one and yields a {@link QueueGap} before the
 * new queue's events. Iterate it once, or take whole batches with {@link nextBatch}; leaving the
 * loop, {@link close} or the signal ends it and deletes the queue.
 */
export class EventQueue implements AsyncIterable<QueueItem> {
  readonly #client: ZulipClient;
  readonly #options: EventQueueOptions;
  readonly #stop = new AbortController();
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #random: () => number;
  #registration: RegisterResponse;
  #queueId: string;
  #lastEventId: number;
  #lastMessageId: number | undefined;
  #iterating = false;
  #batchReader: BatchReader | undefined;
  #batchTail: Promise<void> = Promise.resolve();
  #closing: Promise<void> | undefined;
  readonly #onAbort = (): void => void this.close();

  private constructor(client: ZulipClient, options: EventQueueOptions, registration: RegisterResponse) {
    this.#client = client;
    this.#options = options;
    this.#logger = options.logger ?? noopLogger;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#registration = registration;
    this.#queueId = registration.queue_id;
    this.#lastEventId = registration.last_event_id;
    this.#lastMessageId = registration.max_message_id;
    options.signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /**
   * Registers a queue and returns it, ready to iterate; its initial state is in {@link registration}.
   * @throws {ZmcpError} `CORE_READ_ONLY` (registering is a POST), `CORE_ABORTED`, `CORE_UNAUTHORIZED`,
   *   `CORE_BAD_REQUEST`, and the other request codes of {@link ZulipClient.register}.
   */
  static async open(client: ZulipClient, options: EventQueueOptions = {}): Promise<EventQueue> {
    if (options.signal?.aborted) {
      throw new ZmcpError('CORE_ABORTED', 'The event queue was aborted before it was registered');
    }
    const registration = await client.register(registerParams(options), { signal: options.signal });
    return new EventQueue(client, options, registration);
  }

  /**
   * Carries on with a queue registered earlier (by this process or another) from `position`,
   * without registering: the first poll asks for the events after `position.lastEventId`. When
   * Zulip has dropped the queue meanwhile, a new one is registered and a {@link QueueGap} comes
   * first, as for any lost queue. The registration's initial state is `position`'s, as old as it is.
   */
  static resume(client: ZulipClient, options: EventQueueOptions, position: EventQueuePosition): EventQueue {
    if (options.signal?.aborted) {
      throw new ZmcpError('CORE_ABORTED', 'The event queue was aborted before it was resumed');
    }
    const queue = new EventQueue(client, options, position.registration);
    queue.#queueId = position.queueId;
    queue.#lastEventId = position.lastEventId;
    queue.#lastMessageId = position.lastMessageId;
    return queue;
  }

  /** Where the queue stands now, for {@link resume}. */
  get position(): EventQueuePosition {
    return {
      queueId: this.#queueId,
      lastEventId: this.#lastEventId,
      lastMessageId: this.#lastMessageId,
      registration: this.#registration,
    };
  }

  /** The current queue's id (it changes after a re-registration). */
  get queueId(): string {
    return this.#queueId;
  }

  /** The highest event id received, acknowledged on the next poll. */
  get lastEventId(): number {
    return this.#lastEventId;
  }

  /** The highest message id seen: the registration's `max_message_id` or a later `message` event. */
  get lastMessageId(): number | undefined {
    return this.#lastMessageId;
  }

  /** The latest registration (initial state). */
  get registration(): RegisterResponse {
    return this.#registration;
  }

  /** Whether the queue has been stopped. */
  get closed(): boolean {
    return this.#stop.signal.aborted;
  }

  /**
   * Stops polling, ends the iterator and deletes the queue on Zulip (best effort: a failure,
   * or read-only mode, leaves it to expire on its own). With `keep`, the queue is left on Zulip
   * for another poller to {@link resume} (Zulip expires it when nobody polls for ~10 minutes).
   * Idempotent.
   */
  close(options: { keep?: boolean } = {}): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    this.#stop.abort();
    this.#options.signal?.removeEventListener('abort', this.#onAbort);
    const queueId = this.#queueId;
    if (options.keep === true) {
      this.#closing = Promise.resolve();
      return this.#closing;
    }
    this.#closing = this.#client
      .deleteQueue(queueId, { timeoutMs: 5_000, retry: { maxAttempts: 2 } })
      .catch((err: unknown) => {
        this.#logger.debug('could not delete the event queue; it will expire on its own', {
          queueId,
          code: isZmcpError(err) ? err.code : undefined,
        });
      });
    return this.#closing;
  }

  /**
   * Every item already received and not yet handed out, in order, in one call. It waits for the
   * next long poll only when nothing is buffered, so a consumer learns what is pending without
   * depending on how many turns of the event loop a call takes. Resolves to `undefined` once the
   * queue has ended (closed, aborted, or the iterator left). The next poll, which acknowledges
   * what was handed out, starts only when the consumer asks again. Shares its position with the
   * iterator; concurrent calls are answered one after the other.
   * @throws {ZmcpError} a fatal error of the queue (`CORE_UNAUTHORIZED`, `CORE_BAD_REQUEST`,
   *   `CORE_CLOSED`...), once; transient ones are retried.
   */
  nextBatch(): Promise<QueueItem[] | undefined> {
    const run = this.#batchTail.then(() => this.#takeBatch());
    this.#batchTail = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  async #takeBatch(): Promise<QueueItem[] | undefined> {
    const reader = this.#reader();
    while (!reader.done) {
      if (reader.index < reader.buffer.length) {
        if (this.#stop.signal.aborted) {
          await reader.finish();
          return undefined;
        }
        const out = reader.index === 0 ? reader.buffer : reader.buffer.slice(reader.index);
        reader.buffer = [];
        reader.index = 0;
        return out;
      }
      if (!(await reader.fill())) break;
    }
    reader.done = true;
    return undefined;
  }

  /**
   * The events, in order. Single use; {@link nextBatch} reads from the same position.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT` on a second iteration; from `next()`, a fatal
   *   error (`CORE_UNAUTHORIZED`, `CORE_BAD_REQUEST`, `CORE_CLOSED`...); transient ones are retried.
   */
  [Symbol.asyncIterator](): AsyncIterator<QueueItem> {
    if (this.#iterating) {
      throw new ZmcpError('CORE_INVALID_ARGUMENT', 'An event queue can be iterated only once');
    }
    this.#iterating = true;
    const reader = this.#reader();
    return {
      next: async (): Promise<IteratorResult<QueueItem>> => {
        while (!reader.done) {
          if (reader.index < reader.buffer.length) {
            if (this.#stop.signal.aborted) return reader.finish();
            return { done: false, value: reader.buffer[reader.index++] as QueueItem };
          }
          if (!(await reader.fill())) break;
        }
        reader.done = true;
        return { done: true, value: undefined };
      },
      return: () => reader.finish(),
    };
  }

  /** The one reader over the polls, shared by the iterator and {@link nextBatch}. */
  #reader(): BatchReader {
    if (this.#batchReader !== undefined) return this.#batchReader;
    // Polls hand over whole batches; items leave one by one without a generator resume per
    // item, which is most of the cost at tens of thousands of events a second.
    const batches = this.#run();
    const reader: BatchReader = {
      buffer: [],
      index: 0,
      done: false,
      fill: async () => {
        let r: IteratorResult<QueueItem[]>;
        try {
          r = await batches.next();
        } catch (err) {
          reader.done = true;
          throw err;
        }
        if (r.done) return false;
        reader.buffer = r.value;
        reader.index = 0;
        return true;
      },
      finish: async () => {
        reader.done = true;
        reader.buffer = [];
        await batches.return(undefined);
        return { done: true, value: undefined };
      },
    };
    this.#batchReader = reader;
    return reader;
  }

  #longPollTimeout(): number {
    if (this.#options.longPollTimeoutMs !== undefined) return this.#options.longPollTimeoutMs;
    const seconds = this.#registration.event_queue_longpoll_timeout_seconds;
    return (typeof seconds === 'number' && seconds > 0 ? seconds * 1000 : 90_000) + LONG_POLL_MARGIN_MS;
  }

  /** Sleeps the backoff for the given failure count; false if the queue was stopped meanwhile. */
  async #backoff(failures: number, atLeastMs = 0): Promise<boolean> {
    const policy = {
      baseDelayMs: this.#options.backoff?.initialMs ?? 500,
      maxDelayMs: this.#options.backoff?.maxMs ?? 30_000,
    };
    const delay = Math.max(atLeastMs, backoffDelay(failures, policy, this.#random));
    try {
      await this.#clock.sleep(delay, this.#stop.signal);
      return !this.#stop.signal.aborted;
    } catch {
      return false;
    }
  }

  async *#run(): AsyncGenerator<QueueItem[]> {
    const yieldHeartbeats = this.#options.yieldHeartbeats ?? false;
    let failures = 0;
    try {
      while (!this.#stop.signal.aborted) {
        let raw: { type: string; id: number }[];
        try {
          const res = await this.#client.getEvents(
            { queueId: this.#queueId, lastEventId: this.#lastEventId },
            { timeoutMs: this.#longPollTimeout(), signal: this.#stop.signal, retry: false },
          );
          raw = res.events;
          failures = 0;
        } catch (err) {
          if (this.#stop.signal.aborted) return;
          if (isQueueGone(err)) {
            const gap = await this.#reregister(err);
            if (gap === undefined) return;
            yield [gap];
            continue;
          }
          if (fatal(err)) throw err;
          failures += 1;
          const retryAfterMs =
            err instanceof ZulipApiError && err.retryAfter !== undefined ? err.retryAfter * 1000 : 0;
          this.#logger.warn('event poll failed; retrying', {
            queueId: this.#queueId,
            code: (err as ZmcpError).code,
            failures,
          });
          // A poll that simply outlived its deadline is no failure of the server: poll again at once.
          if (isZmcpError(err, 'CORE_TIMEOUT') && failures === 1) continue;
          if (!(await this.#backoff(failures, retryAfterMs))) return;
          continue;
        }
        const batch: QueueItem[] = [];
        for (const ev of raw) {
          if (ev.id > this.#lastEventId) this.#lastEventId = ev.id;
          if (ev.type === 'heartbeat' && !yieldHeartbeats) continue;
          const parsed = parseZulipEvent(ev);
          if (parsed.kind === 'event' && parsed.event.type === 'message') {
            const event = parsed.event;
            // Flags travel beside the message; fold them in so a message is complete on its own.
            if (event.message.flags === undefined && event.flags !== undefined)
              event.message.flags = event.flags;
            if (this.#lastMessageId === undefined || event.message.id > this.#lastMessageId) {
              this.#lastMessageId = event.message.id;
            }
          } else if (parsed.kind === 'invalid') {
            this.#logger.warn('Zulip sent a malformed event; acknowledged and passed on as invalid', {
              type: parsed.type,
              id: parsed.id,
            });
          }
          batch.push(parsed);
        }
        // The next poll (which acknowledges this batch) waits until the consumer has taken it all.
        if (batch.length > 0) yield batch;
      }
    } finally {
      await this.close();
    }
  }

  /** Registers a replacement queue, retrying transient failures until it works or the queue is stopped. */
  async #reregister(cause: ZulipApiError): Promise<QueueGap | undefined> {
    const lost = {
      queueId: this.#queueId,
      lastEventId: this.#lastEventId,
      lastMessageId: this.#lastMessageId,
    };
    this.#logger.warn('the event queue is gone; registering a new one', {
      queueId: lost.queueId,
      lastEventId: lost.lastEventId,
    });
    let failures = 0;
    while (!this.#stop.signal.aborted) {
      try {
        const registration = await this.#client.register(registerParams(this.#options), {
          signal: this.#stop.signal,
        });
        this.#registration = registration;
        this.#queueId = registration.queue_id;
        this.#lastEventId = registration.last_event_id;
        const newMax = registration.max_message_id;
        if (newMax !== undefined && (this.#lastMessageId === undefined || newMax > this.#lastMessageId)) {
          this.#lastMessageId = newMax;
        }
        return {
          kind: 'gap',
          lostQueueId: lost.queueId,
          lastEventId: lost.lastEventId,
          lastMessageId: lost.lastMessageId,
          newQueueId: registration.queue_id,
          newMaxMessageId: newMax,
          registration,
          error: new ZmcpError(
            'CORE_QUEUE_LOST',
            `Event queue ${lost.queueId} was lost after event ${lost.lastEventId}; events until queue ${registration.queue_id} began were not received`,
            {
              cause,
              details: { ...lost, newQueueId: registration.queue_id, newMaxMessageId: newMax },
            },
          ),
        };
      } catch (err) {
        if (this.#stop.signal.aborted) return undefined;
        if (fatal(err)) throw err;
        failures += 1;
        this.#logger.warn('registering a new event queue failed; retrying', {
          code: (err as ZmcpError).code,
          failures,
        });
        const retryAfterMs =
          err instanceof ZulipApiError && err.retryAfter !== undefined ? err.retryAfter * 1000 : 0;
        if (!(await this.#backoff(failures, retryAfterMs))) return undefined;
      }
    }
    return undefined;
  }
}

function registerParams(options: EventQueueOptions): RegisterParams {
  return {
    eventTypes: options.eventTypes,
    fetchEventTypes: options.fetchEventTypes,
    narrow: options.narrow,
    allPublicStreams: options.allPublicStreams,
    applyMarkdown: options.applyMarkdown,
    clientGravatar: options.clientGravatar,
    includeSubscribers: options.includeSubscribers,
    clientCapabilities: options.clientCapabilities,
    queueLifespanSecs: options.queueLifespanSecs,
  };
}
