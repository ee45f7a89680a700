import { randomUUID } from 'node:crypto';
import { ApiError } from './errors.js';

/** What a queue was registered with. */
export interface QueueSettings {
  userId: number;
  /** `null` = every event type. */
  eventTypes: Set<string> | null;
  /** Legacy `[operator, operand]` pairs; filters message events only. */
  narrow: [string, string][];
  allPublicStreams: boolean;
  applyMarkdown: boolean;
  clientGravatar: boolean;
  capabilities: Record<string, boolean>;
  /** Idle lifetime asked for (`queue_lifespan_secs`), in ms; 0 = the server default. */
  lifespanMs: number;
}

/** A blocked GET /events waiting for events. */
export interface Poll {
  deliver(events: Record<string, unknown>[]): void;
  fail(error: ApiError): void;
}

export type QueueEvent = Record<string, unknown> & { id: number; type: string };

export class EventQueue {
  readonly id: string;
  readonly settings: QueueSettings;
  events: QueueEvent[] = [];
  nextEventId = 0;
  newestPrunedId = -1;
  lastConnection: number;
  poll: Poll | null = null;
  heartbeat: NodeJS.Timeout | null = null;
  flushScheduled = false;

  constructor(id: string, settings: QueueSettings, now: number) {
    this.id = id;
    this.settings = settings;
    this.lastConnection = now;
  }

  accepts(type: string): boolean {
    return type === 'heartbeat' || this.settings.eventTypes === null || this.settings.eventTypes.has(type);
  }

  /** Queues fed every public-stream message (as Zulip does for all_public_streams or narrowed queues). */
  get wantsPublicStreams(): boolean {
    return this.settings.allPublicStreams || this.settings.narrow.length > 0;
  }
}

const MAX_LIFESPAN_MS = 7 * 24 * 3600 * 1000;

/** Zulip's BAD_EVENT_QUEUE_ID refusal. */
export function badQueue(queueId: string): ApiError {
  return new ApiError(400, 'BAD_EVENT_QUEUE_ID', `Bad event queue ID: ${queueId}`, { queue_id: queueId });
}

/** The event queues of the realm: creation, delivery, long-polls, heartbeats and idle expiry. */
export class QueueManager {
  private readonly queues = new Map<string, EventQueue>();
  private readonly byUser = new Map<number, Set<EventQueue>>();
  private sweeper: NodeJS.Timeout | null = null;
  heartbeatMs: number;
  idleMs: number;
  private readonly now: () => number;

  constructor(now: () => number, heartbeatMs: number, idleMs: number) {
    this.now = now;
    this.heartbeatMs = heartbeatMs;
    this.idleMs = idleMs;
    this.startSweeper();
  }

  private startSweeper(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = setInterval(() => this.sweep(), Math.max(50, Math.min(this.idleMs, 10_000)));
    this.sweeper.unref();
  }

  setTimings(heartbeatMs: number, idleMs: number): void {
    this.heartbeatMs = heartbeatMs;
    this.idleMs = idleMs;
    this.startSweeper();
  }

  create(settings: QueueSettings): EventQueue {
    const queue = new EventQueue(randomUUID(), settings, this.now());
    this.queues.set(queue.id, queue);
    let set = this.byUser.get(settings.userId);
    if (!set) {
      set = new Set();
      this.byUser.set(settings.userId, set);
    }
    set.add(queue);
    return queue;
  }

  private timeoutOf(queue: EventQueue): number {
    const asked = Math.min(queue.settings.lifespanMs, MAX_LIFESPAN_MS);
    return Math.max(this.idleMs, asked);
  }

  private expired(queue: EventQueue): boolean {
    return queue.poll === null && this.now() - queue.lastConnection >= this.timeoutOf(queue);
  }

  /** The live queue with this id, garbage-collecting it first if it has idled out. */
  get(id: string): EventQueue | undefined {
    const queue = this.queues.get(id);
    if (queue && this.expired(queue)) {
      this.remove(queue.id);
      return undefined;
    }
    return queue;
  }

  forUser(userId: number): EventQueue[] {
    const set = this.byUser.get(userId);
    if (!set) return [];
    const out: EventQueue[] = [];
    for (const queue of set) if (this.get(queue.id)) out.push(queue);
    return out;
  }

  all(): EventQueue[] {
    this.sweep();
    return [...this.queues.values()];
  }

  /** Queues fed public-stream messages whatever their owner's subscriptions. */
  publicStreamQueues(): EventQueue[] {
    const out: EventQueue[] = [];
    for (const queue of this.queues.values())
      if (queue.wantsPublicStreams && this.get(queue.id)) out.push(queue);
    return out;
  }

  /** Puts one event in a queue (if its event_types accept it) and wakes a blocked poll. */
  push(queue: EventQueue, event: Record<string, unknown> & { type: string }): void {
    if (!queue.accepts(event.type) || !this.queues.has(queue.id)) return;
    const withId = { ...event, id: queue.nextEventId++ } as QueueEvent;
    queue.events.push(withId);
    if (queue.poll && !queue.flushScheduled) {
      queue.flushScheduled = true;
      // Events emitted by one action arrive together, as one response.
      setImmediate(() => {
        queue.flushScheduled = false;
        this.flush(queue);
      });
    }
  }

  private flush(queue: EventQueue): void {
    const poll = queue.poll;
    if (!poll || queue.events.length === 0) return;
    this.detach(queue);
    poll.deliver(queue.events.slice());
  }

  private detach(queue: EventQueue): void {
    queue.poll = null;
    if (queue.heartbeat) clearTimeout(queue.heartbeat);
    queue.heartbeat = null;
    queue.lastConnection = this.now();
  }

  /**
   * Acknowledges events through `lastEventId` with Zulip's checks: an id below one
   * already pruned, or one the queue never had, is an error.
   */
  acknowledge(queue: EventQueue, lastEventId: number): void {
    if (lastEventId < queue.newestPrunedId) {
      throw new ApiError(400, 'BAD_REQUEST', `An event newer than ${lastEventId} has already been pruned!`);
    }
    while (queue.events.length > 0 && (queue.events[0] as QueueEvent).id <= lastEventId) {
      queue.newestPrunedId = (queue.events.shift() as QueueEvent).id;
    }
    if (lastEventId !== queue.newestPrunedId) {
      throw new ApiError(400, 'BAD_REQUEST', `Event ${lastEventId} was not in this queue`);
    }
  }

  /** Blocks a poll on an empty queue; a poll already waiting there is answered first. */
  wait(queue: EventQueue, poll: Poll): void {
    this.release(queue);
    queue.poll = poll;
    queue.lastConnection = this.now();
    queue.heartbeat = setTimeout(() => {
      queue.heartbeat = null;
      this.push(queue, { type: 'heartbeat' });
    }, this.heartbeatMs);
  }

  /** Ends the poll waiting on a queue, if any, with the queue's current contents. */
  release(queue: EventQueue): void {
    const earlier = queue.poll;
    if (!earlier) return;
    this.detach(queue);
    earlier.deliver(queue.events.slice());
  }

  /** Forgets a poll whose connection went away. */
  abandon(queue: EventQueue, poll: Poll): void {
    if (queue.poll === poll) this.detach(queue);
  }

  /** Marks a queue as just used (any GET /events on it). */
  touch(queue: EventQueue): void {
    queue.lastConnection = this.now();
  }

  /** Deletes a queue; a poll waiting on it is answered with BAD_EVENT_QUEUE_ID. */
  remove(id: string): boolean {
    const queue = this.queues.get(id);
    if (!queue) return false;
    this.queues.delete(id);
    this.byUser.get(queue.settings.userId)?.delete(queue);
    const poll = queue.poll;
    if (queue.heartbeat) clearTimeout(queue.heartbeat);
    queue.heartbeat = null;
    queue.poll = null;
    poll?.fail(badQueue(id));
    return true;
  }

  removeForUser(userId: number): void {
    for (const queue of [...(this.byUser.get(userId) ?? [])]) this.remove(queue.id);
  }

  removeAll(): void {
    for (const id of [...this.queues.keys()]) this.remove(id);
  }

  /** Drops every waiting poll without answering (their sockets are gone), keeping the queues. */
  dropPolls(): void {
    for (const queue of this.queues.values()) if (queue.poll) this.detach(queue);
  }

  sweep(): void {
    for (const queue of [...this.queues.values()]) if (this.expired(queue)) this.remove(queue.id);
  }

  dispose(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    this.dropPolls();
  }
}
