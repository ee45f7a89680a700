import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type AccessPolicy,
  AdmissionDirectory,
  AdmissionGate,
  type AdmissionList,
  type AdmissionPath,
  type CallOptions,
  type Clock,
  createMessageLineFormatter,
  createStreamLookup,
  type DeleteMessageEvent,
  dmOthers,
  EventQueue,
  type EventQueueOptions,
  escapeMsgName,
  type FormattableMessage,
  isNoBotsMessage,
  isZmcpError,
  type Logger,
  type Message,
  type NarrowTerm,
  noopLogger,
  PersonNames,
  personLabel,
  type QueueGap,
  type QueueItem,
  type ReactionEvent,
  type RegisterResponse,
  readMessage,
  readNarrow,
  type StreamEvent,
  type StreamInfo,
  type StreamInfoLookup,
  type SubscriptionEvent,
  sameStreamName,
  type TimeStyle,
  type UpdateMessageEvent,
  type ZulipClient,
  type ZulipEvent,
} from '@zmcp/core';
import { BoundedMap } from './bounded-map.js';
import { type CollectLimits, MissedCollector } from './catch-up.js';
import { Channel, type Entry, type Slot, slot } from './channel.js';
import {
  type ChannelKey,
  dmChannelId,
  dmKey,
  parseChannelId,
  streamChannelId,
  streamKey,
} from './channel-id.js';
import {
  type ChannelState,
  type DeliveryState,
  DeliveryStateSchema,
  MAX_ABOVE,
  StateWriter,
} from './delivery-state.js';
import { DeliveryError, isDeliveryError } from './errors.js';
import type { FiltersPatch } from './filters.js';
import type { FiltersPlane, FiltersView } from './filters-plane.js';
import { changeItem, type MissedLimits, messageItem, type Renderer, renderMissed } from './render.js';
import type {
  AnnounceOutcome,
  ChannelAnnouncement,
  ChannelDescriptor,
  DeliveryItem,
  DeliverySink,
  IncomingOutcome,
  MissedInfo,
  PushEvent,
  PushOutcome,
} from './sink.js';
import { parseSessionId, parseStateAccount, type StateKey } from './state-key.js';
import type { StateLock } from './state-lock.js';
import type { StateStore } from './state-store.js';
import { sweepHistory } from './sweep.js';
import { addressingOf, changeTags, isAddressed, messageTags, reactionTags, TAGS } from './tags.js';

/**
 * What the engine reads its events from: core's `EventQueue`, or a queue shared by a fleet that
 * hands out the same items in the same order (a {@link QueueGap} when events were lost).
 */
export interface EventSource {
  /** The registration (initial state) the items follow from. */
  readonly registration: RegisterResponse;
  /** The next items in order; `undefined` once the source has ended. */
  nextBatch(): Promise<QueueItem[] | undefined>;
  /** Stops it; the engine calls it once it no longer reads. */
  close(): Promise<void>;
}

/** Opens an {@link EventSource} registered with `params` (what the engine needs of the queue). */
export type OpenEventSource = (params: EventQueueOptions) => Promise<EventSource>;

/** Options of {@link DeliveryEngine}. */
export interface DeliveryEngineOptions {
  /** The one Zulip client. Live delivery needs an event queue, which read-only mode refuses. */
  client: ZulipClient;
  /** Decides what may be read, on every surface (live, catch-up, recovery, backscroll, reactions). */
  policy: AccessPolicy;
  /** Where watermarks, tallies and last-open channels are kept (the `delivery` state of `session`). */
  store: StateStore;
  session: string;
  /**
   * The realm and bot this state belongs to (`stateAccount({ site, userId })`). Watermarks are
   * message ids, which mean nothing on another realm: with an account the state is keyed by it,
   * as `MonitorStore` keys cursors, so another realm or bot on the same store never reads it.
   * Without one the key is unscoped (`<session>.delivery.json`): for a store that only ever
   * serves one account, such as one rooted in that account's own folder.
   */
  account?: string | undefined;
  /** The filters plane (what reaches the agent); the engine follows its changes. The caller closes it. */
  filters: FiltersPlane;
  /** Where deliveries go. */
  sink: DeliverySink;
  /** Time style and zone of message lines (core's formatter). Default `iso`, `UTC`. */
  timeStyle?: TimeStyle | undefined;
  timeZone?: string | undefined;
  /** Bounds of a `<missed>` block: messages shown (default 100), bytes (default 48,000), context around a mention (default 7). */
  catchUp?: { maxMessages?: number; maxBytes?: number; context?: number } | undefined;
  /** Most items in one `incoming` batch. Default 100. */
  maxBatch?: number | undefined;
  /** How long an offer may take before it counts as timed out. Default 30 s. */
  offerTimeoutMs?: number | undefined;
  /** How long an announcement may take before its channels count as pending. Default 5 s. */
  announceTimeoutMs?: number | undefined;
  /** Backoff before offering again after the host did not accept: doubling from `initialMs` (1 s) to `maxMs` (60 s). */
  retry?: { initialMs?: number; maxMs?: number } | undefined;
  /** Mark messages read on Zulip when the host accepts them (so people see what the agent read). Default false. */
  markRead?: boolean | undefined;
  /**
   * The least time between two state writes, so a busy channel does not fsync for every batch;
   * it is also how long an acceptance may wait to be durable. Default 100 ms; 0 writes at once.
   */
  stateWriteGapMs?: number | undefined;
  /** How many recent DM conversations to discover at start. Default 100. */
  recentDms?: number | undefined;
  /**
   * Who may wake or answer the agent (core's admission gate, by user id). With it, a DM, a
   * mention on a closed channel and a reaction from anyone else are not delivered (each refusal
   * counted once); ambient traffic of an open channel still is. Without it the filters decide.
   */
  admission?: AdmissionGate | undefined;
  logger?: Logger | undefined;
  /**
   * Told how long work goes: the start-up catch-up sweep and the sweep after an event-queue
   * expiry (a re-registration), after each page of history and at the end. For a status page or a
   * progress line; never given message content.
   */
  onProgress?: ((progress: DeliveryProgress) => void) | undefined;
  /** The clock of the snapshot's times. Default `Date.now`. */
  now?: (() => number) | undefined;
  /** Event-queue tuning (tests shorten these). */
  queue?:
    | {
        longPollTimeoutMs?: number | undefined;
        backoff?: { initialMs?: number | undefined; maxMs?: number | undefined } | undefined;
        clock?: Clock | undefined;
      }
    | undefined;
  /** Memory bounds: queued messages per channel before it reads from history instead (5000), held live messages during a replay (2000). */
  limits?: { queue?: number; held?: number } | undefined;
  /**
   * Where the engine's events come from. Default: an event queue of its own on `client`
   * (`EventQueue.open`). A fleet passes one shared by every process serving the bot
   * (`@zmcp/fleet`), so Zulip sees one queue however many engines run.
   */
  events?: OpenEventSource | undefined;
  /**
   * Longest pause between two tries of the delivery lock while `start({ waitForLock })` waits,
   * in ms. Default 10 s. A fleet's standby sets it low (its lock is a cheap query), so it takes
   * over within about that long when the holder dies.
   */
  lockRetryMaxMs?: number | undefined;
}

/** Where the engine stands. */
export type EngineState = 'idle' | 'starting' | 'running' | 'failed' | 'closed';

/** A channel as the engine reports it. */
export interface ChannelInfo {
  readonly channel: ChannelDescriptor;
  readonly open: boolean;
  /** The host refused its announcement: it stays unannounced until `refreshChannels`. */
  readonly refused: boolean;
  /** Announced but never confirmed; re-announced on the next explicit registration. */
  readonly pendingAnnouncement: boolean;
  readonly watermark: number;
  /** Ambient messages dropped while closed, since the tally was last cleared. */
  readonly missed: number;
  readonly muted: boolean;
  readonly showsReactions: boolean;
}

/** Options of `start`. */
export interface StartOptions {
  /**
   * Channels open from the start, before any delivery (a host that opens channels itself, such
   * as a Claude Code channel bridge, or a server reopening what its host had open).
   */
  readonly open?: readonly string[] | undefined;
  /**
   * While another engine holds this session's delivery state (`DELIVERY_STATE_LOCKED`), wait
   * for it instead of failing: the lock is tried again after 0.5 s, doubling to 10 s (the
   * engine's `lockRetryMaxMs`), with one
   * warning logged; `status().waitingFor` names the holder, calls that need the engine fail with
   * `DELIVERY_STATE_LOCKED` meanwhile, and `close()` ends the wait. For a server that may be
   * started while the one it replaces is still stopping. Default false: fail at once.
   */
  readonly waitForLock?: boolean | undefined;
}

/** What `start` reports. */
export interface StartReport {
  readonly channels: readonly ChannelInfo[];
  /** `<missed>` blocks queued for the host, by channel id. */
  readonly missedBlocks: readonly string[];
  /** The message id range the catch-up sweep read, when it read anything. */
  readonly swept?: { readonly afterId: number; readonly throughId: number };
}

/** What `refreshChannels` reports. */
export interface RefreshReport {
  readonly channels: readonly ChannelInfo[];
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** Announced and not confirmed yet (the retry set, at most 100). */
  readonly pendingAnnouncement: readonly string[];
  /** Refused by the host in this round. */
  readonly refused: readonly string[];
}

/** What `missed` reports: the ambient traffic a closed channel dropped, as a `<missed>` block. */
export interface MissedReport {
  readonly channelId: string;
  /** Messages tallied since the tally was last cleared. */
  readonly count: number;
  /** The block, or `""` when nothing was missed. */
  readonly text: string;
  readonly items: readonly DeliveryItem[];
  readonly info?: MissedInfo;
  /** Whether the tally was cleared. */
  readonly cleared: boolean;
}

/** How far one long piece of the engine's work has come: see `DeliveryEngineOptions.onProgress`. */
export interface DeliveryProgress {
  /** `catch-up`: the start-up sweep; `re-registration`: the sweep after an event-queue expiry. */
  readonly work: 'catch-up' | 're-registration';
  /** The message id range read: above `afterId`, through `throughId`. */
  readonly afterId: number;
  readonly throughId: number;
  /** The newest id read so far. */
  readonly reachedId: number;
  /** Messages read so far. */
  readonly messages: number;
  /** Set on the last report: `done`, or `failed` with the engine closing or an error. */
  readonly outcome?: 'done' | 'failed';
}

/** One channel's delivery figures in a {@link DeliverySnapshot}. */
export interface ChannelFigures {
  readonly channel: ChannelDescriptor;
  /**
   * The channel as people name it, not escaped (`#general`, `DM with Ann Lee`): names are chosen
   * by anyone, so escape it for wherever it goes (`channel.label` is escaped for a model).
   */
  readonly name: string;
  readonly open: boolean;
  readonly refused: boolean;
  readonly muted: boolean;
  /** Every deliverable message up to this id was accepted by the host. */
  readonly watermark: number;
  /** The newest message id seen in the channel (0: none since start). */
  readonly newestId: number;
  /** Messages known above the watermark and not accepted yet (queued or held); more may wait in history while `recovering`. */
  readonly pending: number;
  /** How long the oldest message not accepted has waited, in seconds; 0 when the channel is caught up. */
  readonly lagSeconds: number;
  /** Live messages held while the channel reads from history. */
  readonly held: number;
  /** Ambient messages dropped while closed, since the tally was last cleared. */
  readonly missed: number;
  /** Reading from history after an unaccepted offer, a gap or an overflow. */
  readonly recovering: boolean;
}

/** What {@link DeliveryEngine.snapshot} reports: everything a status page or metrics show. */
export interface DeliverySnapshot {
  readonly status: EngineStatus;
  /** The newest message id Zulip reported (registration, events, sweeps). */
  readonly head: number;
  readonly channels: readonly ChannelFigures[];
  readonly filters: {
    readonly stale: boolean;
    /** Why it is stale (no content of the file). */
    readonly staleReason?: string;
    /** When it last changed state (came into force, or went stale), as UNIX milliseconds. */
    readonly since: number;
    readonly revision: number;
    /** A short digest of the filters in force (sha-256 of their JSON, 12 hex digits). */
    readonly digest: string;
    readonly location: string;
  };
  readonly eventQueue: {
    /** When the queue was last registered (UNIX ms); undefined before start. */
    readonly registeredAt?: number;
    /** When the last batch of events arrived (UNIX ms). */
    readonly lastEventAt?: number;
    /** Re-registrations after an expiry since start. */
    readonly reRegistrations: number;
  };
  /** Since start: items the host accepted (incoming and pushed), offers it did not accept, ambient messages dropped. */
  readonly totals: { readonly accepted: number; readonly notAccepted: number; readonly dropped: number };
}

/** The engine's health, for a status resource or a log line. */
export interface EngineStatus {
  readonly state: EngineState;
  /** The error code behind `failed`. */
  readonly code?: string;
  readonly filtersStale: boolean;
  readonly channels: number;
  readonly openChannels: number;
  /** Messages waiting in channel queues. */
  readonly queued: number;
  /** Channels waiting to read from history (after an unaccepted offer, a gap or an overflow). */
  readonly recovering: number;
  /** Consecutive failed state writes (0 when the last one worked). */
  readonly stateWriteFailures: number;
  /** While `start({ waitForLock })` waits: the lock's holder (`file`, `pid`, `host`, `since`). */
  readonly waitingFor?: Readonly<Record<string, unknown>>;
}

const RETRY_SET_LIMIT = 100;
const SEEN_LIMIT = 20_000;
const CACHE_LIMIT = 2_000;
const REPLAY_PAGE = 1_000;
const READ_FLAG_BATCH = 1_000;

const EVENT_TYPES = [
  'message',
  'update_message',
  'delete_message',
  'reaction',
  'subscription',
  'stream',
  'realm_user',
] as const;

interface StreamFacts extends StreamInfo {
  readonly stream_id: number;
  name: string;
  invite_only: boolean;
  subscribed: boolean;
}

interface UserFacts {
  name: string;
  email: string;
  isBot: boolean;
}

type OfferResult<T> = { kind: 'ok'; value: T } | { kind: 'lost' | 'timeout'; reason: string };

function codeOf(err: unknown): string {
  return isZmcpError(err) || isDeliveryError(err) ? (err as { code: string }).code : 'UNKNOWN';
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new DeliveryError('DELIVERY_INVALID_ARGUMENT', `${name} must be a non-negative integer`, {
      details: { field: name },
    });
  }
  return value;
}

/**
 * The live-delivery engine of one session: every message that may reach the agent reaches it
 * once, in order per channel, across refusals, lost batches, queue expiry, Zulip restarts and
 * process restarts. It keeps the channel registry, routes each message (open channel → incoming;
 * mention or DM on a closed channel → push; ambient on a closed channel → dropped and counted),
 * advances a durable watermark per channel only past what the host accepted, replays from
 * history what it did not, catches up after downtime with one sweep, and surfaces edits, moves,
 * deletions and reactions. It is host-neutral: deliveries go to a {@link DeliverySink}.
 */
export class DeliveryEngine {
  readonly #o: DeliveryEngineOptions;
  readonly #client: ZulipClient;
  readonly #policy: AccessPolicy;
  readonly #sink: DeliverySink;
  readonly #filters: FiltersPlane;
  readonly #logger: Logger;
  readonly #key: StateKey;
  readonly #writer: StateWriter;
  /** The store's lock on this session's delivery state, held from start to close. */
  #lock: StateLock | undefined;
  /** Who holds that lock while `start({ waitForLock })` waits for it. */
  #waitingFor: Readonly<Record<string, unknown>> | undefined;
  readonly #stop = new AbortController();
  readonly #missedLimits: MissedLimits;
  readonly #collect: CollectLimits;
  readonly #maxBatch: number;
  readonly #offerTimeoutMs: number;
  readonly #announceTimeoutMs: number;
  readonly #retryInitial: number;
  readonly #retryMax: number;
  readonly #queueLimit: number;
  readonly #heldLimit: number;
  #state: EngineState = 'idle';
  #failure: string | undefined;
  #queue: EventSource | undefined;
  #loop: Promise<void> | undefined;
  #ready: Promise<void> | undefined;
  #render!: Renderer;
  /** The realm's display names, kept current from the queue, so every line tells people apart. */
  readonly #people = new PersonNames();
  #self = 0;
  #head = 0;
  readonly #streams = new Map<number, StreamFacts>();
  #lookup: StreamInfoLookup = () => undefined;
  readonly #users = new Map<number, UserFacts>();
  /** Who holds which address, for the filters' DM list (emails resolved to ids, as every gate does). */
  readonly #directory = new AdmissionDirectory();
  #dmGate: { list: AdmissionList; gate: AdmissionGate } | undefined;
  /** Messages the admission gate refused live, so a replay does not count them again. */
  readonly #refused = new BoundedMap<number, true>(2_000);
  readonly #channels = new Map<ChannelKey, Channel>();
  readonly #retrySet = new Set<ChannelKey>();
  readonly #seen = new BoundedMap<number, ChannelKey>(SEEN_LIMIT);
  readonly #cache = new BoundedMap<number, Message>(CACHE_LIMIT);
  #unsubscribeFilters: (() => void) | undefined;
  #readIds: number[] = [];
  #readFlushing = false;
  readonly #background = new Set<Promise<unknown>>();
  #discoveredDuringStart: Channel[] | undefined;
  /** While a batch of events is routed: the channels to offer once it is done. */
  #deferred: Set<Channel> | undefined;
  readonly #ownChanges = new Set<number>();
  readonly #now: () => number;
  #registeredAt: number | undefined;
  #lastEventAt: number | undefined;
  #reRegistrations = 0;
  #filtersSince: number;
  readonly #totals = { accepted: 0, notAccepted: 0, dropped: 0 };

  /**
   * @throws DeliveryError `DELIVERY_INVALID_SESSION_ID`; `DELIVERY_INVALID_ARGUMENT` for a bad limit or account.
   */
  constructor(options: DeliveryEngineOptions) {
    this.#o = options;
    // Every concurrent offer and read listens on the stop signal.
    setMaxListeners(0, this.#stop.signal);
    this.#client = options.client;
    this.#policy = options.policy;
    this.#sink = options.sink;
    this.#filters = options.filters;
    this.#logger = options.logger ?? noopLogger;
    this.#now = options.now ?? Date.now;
    this.#filtersSince = this.#now();
    const session = parseSessionId(options.session);
    this.#key =
      options.account === undefined
        ? { session, kind: 'delivery' }
        : { account: parseStateAccount(options.account), session, kind: 'delivery' };
    this.#writer = new StateWriter(
      options.store,
      this.#key,
      () => this.#snapshot(),
      this.#logger,
      positive(options.stateWriteGapMs, 100, 'stateWriteGapMs'),
    );
    this.#missedLimits = {
      maxMessages: Math.max(1, positive(options.catchUp?.maxMessages, 100, 'catchUp.maxMessages')),
      maxBytes: Math.max(1_000, positive(options.catchUp?.maxBytes, 48_000, 'catchUp.maxBytes')),
    };
    this.#collect = {
      maxMessages: this.#missedLimits.maxMessages,
      context: positive(options.catchUp?.context, 7, 'catchUp.context'),
    };
    this.#maxBatch = Math.max(1, positive(options.maxBatch, 100, 'maxBatch'));
    this.#offerTimeoutMs = Math.max(1, positive(options.offerTimeoutMs, 30_000, 'offerTimeoutMs'));
    this.#announceTimeoutMs = Math.max(1, positive(options.announceTimeoutMs, 5_000, 'announceTimeoutMs'));
    this.#retryInitial = Math.max(1, positive(options.retry?.initialMs, 1_000, 'retry.initialMs'));
    this.#retryMax = Math.max(this.#retryInitial, positive(options.retry?.maxMs, 60_000, 'retry.maxMs'));
    this.#queueLimit = Math.max(1, positive(options.limits?.queue, 5_000, 'limits.queue'));
    this.#heldLimit = Math.max(1, positive(options.limits?.held, 2_000, 'limits.held'));
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Starts delivery: loads the state, registers the event queue, discovers the channels
   * (subscriptions and recent DMs) and announces them, sweeps history once for what was missed
   * (queuing a `<missed>` block per channel), then releases the live events held meanwhile.
   *
   * @throws DeliveryError `DELIVERY_UNKNOWN_CHANNEL` for an id in `options.open`;
   *   `DELIVERY_STATE_CORRUPT` (the state file is left as is),
   *   `DELIVERY_IO_FAILED`, `DELIVERY_NOT_RUNNING` when started twice or after `close`;
   *   ZmcpError `CORE_READ_ONLY` (an event queue needs POST /register) and the request codes.
   */
  async start(options: StartOptions = {}): Promise<StartReport> {
    if (this.#state !== 'idle') {
      throw new DeliveryError(
        'DELIVERY_NOT_RUNNING',
        `the delivery engine cannot start: it is ${this.#state}`,
        {
          details: { state: this.#state },
        },
      );
    }
    this.#state = 'starting';
    let release!: () => void;
    let fail!: (err: unknown) => void;
    this.#ready = new Promise<void>((resolve, reject) => {
      release = resolve;
      fail = reject;
    });
    this.#ready.catch(() => undefined);
    try {
      // Two engines on one delivery state would both deliver and overwrite each other's watermarks.
      this.#lock = await this.#takeLock(options.waitForLock === true);
      if ((this.#state as EngineState) === 'closed') {
        throw new DeliveryError('DELIVERY_NOT_RUNNING', 'the delivery engine was closed while it started', {
          details: { state: 'closed' },
        });
      }
      return await this.#startUp(release, options.open ?? []);
    } catch (err) {
      fail(err);
      // A close during start-up stays a close.
      if ((this.#state as EngineState) !== 'closed') this.#state = 'failed';
      this.#failure = codeOf(err);
      await this.#queue?.close();
      await this.#releaseLock();
      throw err;
    }
  }

  async #startUp(discovered: () => void, open: readonly string[]): Promise<StartReport> {
    const saved = await this.#o.store.read(this.#key, DeliveryStateSchema);
    const openSource: OpenEventSource = this.#o.events ?? ((params) => EventQueue.open(this.#client, params));
    const queue = await openSource({
      eventTypes: [...EVENT_TYPES],
      fetchEventTypes: ['message', 'realm_user', 'subscription', 'stream'],
      clientCapabilities: { bulk_message_deletion: true },
      applyMarkdown: false,
      longPollTimeoutMs: this.#o.queue?.longPollTimeoutMs,
      backoff: this.#o.queue?.backoff,
      clock: this.#o.queue?.clock,
      logger: this.#logger,
    });
    this.#queue = queue;
    this.#registeredAt = this.#now();
    const reg = queue.registration;
    if (reg.user_id === undefined) {
      throw new DeliveryError(
        'DELIVERY_INVALID_ARGUMENT',
        'Zulip did not say which user the bot is (no user_id in /register)',
      );
    }
    this.#self = reg.user_id;
    this.#render = {
      line: createMessageLineFormatter({
        escape: true,
        selfUserId: this.#self,
        timeStyle: this.#o.timeStyle,
        timeZone: this.#o.timeZone,
        people: this.#people,
      }),
      people: this.#people,
    };
    // An empty realm answers -1.
    const through = Math.max(0, reg.max_message_id ?? saved?.head ?? 0);
    // A channel the session never saw starts where the last run stopped (or now, on a first run).
    const previousHead = saved?.head ?? through;
    this.#head = previousHead;
    this.#applyRegistration(reg);
    for (const [key, state] of Object.entries(saved?.channels ?? {})) this.#restore(key, state);
    await this.#discover(previousHead);
    let wasStale = this.#filters.stale;
    this.#unsubscribeFilters = this.#filters.subscribe((event) => {
      if (event.kind === 'reloaded' || !wasStale) this.#filtersSince = this.#now();
      wasStale = event.kind === 'stale';
      if (event.kind === 'reloaded') this.#onFiltersChanged();
    });
    for (const id of open) {
      const c = this.#find(id);
      if (c === undefined) {
        throw new DeliveryError(
          'DELIVERY_UNKNOWN_CHANNEL',
          `unknown channel ${JSON.stringify(id.slice(0, 200))} in start's open list`,
          {
            details: { channelId: id.slice(0, 200) },
          },
        );
      }
      c.open = true;
      c.wasOpen = true;
      c.refused = false;
    }
    discovered();
    const initial = [...this.#channels.values()].filter((c) => c.registered && !c.refused);
    await this.#announce(initial, [], false);
    this.#discoveredDuringStart = [];

    // The sweep: live events wait in the queue (nothing polls it) until it is done.
    const missedBlocks: string[] = [];
    let swept: StartReport['swept'];
    const registered = [...this.#channels.values()].filter((c) => c.registered);
    const from = Math.min(through, ...registered.map((c) => c.w));
    if (through > from) {
      const collectors = new Map<Channel, MissedCollector>();
      await this.#sweepWithRetry('catch-up', from, through, (m) => {
        const c = this.#channelFor(m, previousHead);
        if (c === undefined || m.id <= c.w || c.above.has(m.id)) return;
        const verdict = this.#judge(c, m);
        if (verdict === 'skip') return;
        let collector = collectors.get(c);
        if (collector === undefined) {
          collector = new MissedCollector(c.wasOpen || c.open, this.#collect);
          collectors.set(c, collector);
        }
        collector.add(m, isAddressed(addressingOf(m, this.#self)));
      });
      swept = { afterId: from, throughId: through };
      for (const [c, collector] of collectors) {
        if (collector.ambient > 0) {
          // A closed channel's ambient traffic is counted, as it would have been live.
          c.ambient += collector.ambient;
          c.ambientFrom ??= collector.firstId;
          c.ambientTo = through;
        }
        if (!collector.hasContent) continue;
        const event = this.#missedEvent(c, collector, through);
        c.queue.push({ t: 'missed', event, through });
        missedBlocks.push(c.id);
      }
    }
    this.#head = Math.max(this.#head, through);
    for (const c of this.#channels.values()) {
      if (c.lastEnqueued < through) c.lastEnqueued = through;
      if (c.queue.length === 0) c.advance(through);
    }
    // Channels the sweep found (a DM from someone new) are announced before their blocks go out.
    const found = this.#discoveredDuringStart ?? [];
    this.#discoveredDuringStart = undefined;
    if (found.length > 0) await this.#announce(found, [], false);
    // Durable before anything is delivered: a crash from here on restarts from these
    // watermarks, never from "now" (which would skip what arrives meanwhile).
    this.#writer.mark();
    await this.#writer.flush();
    this.#state = 'running';
    this.#loop = this.#run();
    for (const c of this.#channels.values()) this.#pump(c);
    return { channels: this.channels(), missedBlocks, ...(swept === undefined ? {} : { swept }) };
  }

  /**
   * Stops delivery: the event queue is deleted, offers in flight are abandoned (their messages
   * stay unaccepted and are offered again next time), and the state is written.
   *
   * @throws DeliveryError `DELIVERY_IO_FAILED` when the final state write fails.
   */
  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.#stop.abort();
    this.#unsubscribeFilters?.();
    for (const c of this.#channels.values()) {
      if (c.retryTimer !== undefined) clearTimeout(c.retryTimer);
    }
    await this.#queue?.close();
    await this.#loop;
    await Promise.allSettled([...this.#background]);
    try {
      await this.#writer.flush();
    } finally {
      await this.#releaseLock();
    }
  }

  /** The store's lock on the delivery state; with `wait`, tried again until it is free or the engine closes. */
  async #takeLock(wait: boolean): Promise<StateLock | undefined> {
    const store = this.#o.store;
    if (store.lock === undefined) return undefined;
    const most = Math.max(50, positive(this.#o.lockRetryMaxMs, 10_000, 'lockRetryMaxMs'));
    for (let delay = Math.min(500, most); ; delay = Math.min(delay * 2, most)) {
      try {
        const lock = await store.lock(this.#key);
        if (this.#waitingFor !== undefined) this.#logger.info('the delivery state is free: starting');
        this.#waitingFor = undefined;
        return lock;
      } catch (err) {
        if (!wait || !isDeliveryError(err, 'DELIVERY_STATE_LOCKED')) {
          this.#waitingFor = undefined;
          throw err;
        }
        if (this.#waitingFor === undefined) {
          this.#logger.warn('waiting for the delivery state: another engine delivers for this session', {
            ...err.details,
          });
        }
        this.#waitingFor = { ...err.details };
      }
      try {
        await sleep(delay, undefined, { signal: this.#stop.signal });
      } catch {
        this.#waitingFor = undefined;
        throw new DeliveryError(
          'DELIVERY_NOT_RUNNING',
          'the delivery engine was closed while it waited for its state',
          {
            details: { state: 'closed' },
          },
        );
      }
    }
  }

  async #releaseLock(): Promise<void> {
    const lock = this.#lock;
    this.#lock = undefined;
    await lock?.release().catch((err: unknown) => {
      this.#logger.warn('the delivery state lock was not released', { code: codeOf(err) });
    });
  }

  /** Resolves once everything accepted so far is in the store. @throws the store's error. */
  flush(): Promise<void> {
    return this.#writer.flush();
  }

  /** The engine's health. */
  status(): EngineStatus {
    let queued = 0;
    let recovering = 0;
    let open = 0;
    let count = 0;
    for (const c of this.#channels.values()) {
      if (!c.registered) continue;
      count += 1;
      queued += c.queue.length;
      if (c.replayNeeded) recovering += 1;
      if (c.open) open += 1;
    }
    return {
      state: this.#state,
      ...(this.#failure === undefined ? {} : { code: this.#failure }),
      filtersStale: this.#filters.stale,
      channels: count,
      openChannels: open,
      queued,
      recovering,
      stateWriteFailures: this.#writer.failures,
      ...(this.#waitingFor === undefined ? {} : { waitingFor: this.#waitingFor }),
    };
  }

  /**
   * Everything a status page or metrics show, read-only: the engine's health, each registered
   * channel's watermark and lag, the filters plane (stale or in force, since when, a digest), the
   * event queue's registration and last event time, and running totals. Carries no message content.
   */
  snapshot(): DeliverySnapshot {
    const now = this.#now();
    const channels: ChannelFigures[] = [];
    for (const c of this.#channels.values()) {
      if (!c.registered) continue;
      let pending = c.held.length;
      let oldest: number | undefined;
      for (let i = 0; ; i++) {
        const e = c.queue.at(i);
        if (e === undefined) break;
        if (e.t !== 'm' || e.m.id <= c.w || c.above.has(e.m.id)) continue;
        pending += 1;
        if (oldest === undefined || e.m.timestamp < oldest) oldest = e.m.timestamp;
      }
      for (const m of c.held) if (oldest === undefined || m.timestamp < oldest) oldest = m.timestamp;
      const behind = Math.max(c.newestSeen, c.lastEnqueued) > c.w;
      if (!behind) c.unacceptedSince = undefined;
      else if (c.unacceptedSince !== undefined)
        oldest = Math.min(oldest ?? c.unacceptedSince, c.unacceptedSince);
      const info = this.#info(c);
      const name =
        c.target.kind === 'stream'
          ? `#${this.#streamOf(c)?.name ?? c.id.slice(6)}`
          : `DM with ${c.target.userIds.map((u) => this.#users.get(u)?.name ?? `user ${u}`).join(', ')}`;
      channels.push({
        channel: info.channel,
        name,
        open: info.open,
        refused: info.refused,
        muted: info.muted,
        watermark: c.w,
        newestId: c.newestSeen,
        pending,
        lagSeconds: behind && oldest !== undefined ? Math.max(0, Math.round(now / 1000 - oldest)) : 0,
        held: c.held.length,
        missed: c.ambient,
        recovering: c.replayNeeded,
      });
    }
    channels.sort((a, b) => (a.channel.id < b.channel.id ? -1 : a.channel.id > b.channel.id ? 1 : 0));
    const view = this.#filters.view();
    return {
      status: this.status(),
      head: this.#head,
      channels,
      filters: {
        stale: view.stale,
        ...(view.staleReason === undefined ? {} : { staleReason: view.staleReason }),
        since: this.#filtersSince,
        revision: view.revision,
        digest: createHash('sha256').update(JSON.stringify(view.filters)).digest('hex').slice(0, 12),
        location: view.location,
      },
      eventQueue: {
        ...(this.#registeredAt === undefined ? {} : { registeredAt: this.#registeredAt }),
        ...(this.#lastEventAt === undefined ? {} : { lastEventAt: this.#lastEventAt }),
        reRegistrations: this.#reRegistrations,
      },
      totals: { ...this.#totals },
    };
  }

  // ---------------------------------------------------------------- the host's calls

  /** Every registered channel. */
  channels(): ChannelInfo[] {
    const out: ChannelInfo[] = [];
    for (const c of this.#channels.values()) if (c.registered) out.push(this.#info(c));
    return out.sort((a, b) => (a.channel.id < b.channel.id ? -1 : a.channel.id > b.channel.id ? 1 : 0));
  }

  /**
   * Opens a channel (the host confirms it): its messages now arrive as `incoming`. Returns the
   * channel and, when asked, up to `backscroll` recent messages the agent may read, gathered
   * before the open takes effect. An unknown id is looked up again once before it fails.
   *
   * @throws DeliveryError `DELIVERY_UNKNOWN_CHANNEL`, `DELIVERY_INVALID_ARGUMENT` (malformed id),
   *   `DELIVERY_NOT_RUNNING`; ZmcpError request codes (backscroll).
   */
  async openChannel(
    channelId: string,
    options: { backscroll?: number } = {},
  ): Promise<{ channel: ChannelDescriptor; backscroll: DeliveryItem[] }> {
    const c = await this.#resolve(channelId);
    const backscroll: DeliveryItem[] = [];
    const limit = positive(options.backscroll, 0, 'backscroll');
    if (limit > 0) {
      const res = await readNarrow(this.#client, this.#policy, {
        narrow: this.#narrowOf(c),
        range: { kind: 'before', beforeId: c.w + 1, limit: Math.min(limit, 5_000) },
        streams: this.#lookup,
        call: this.#call(),
      });
      for (const m of res.messages) {
        if (this.#judge(c, m, true) === 'skip') continue;
        backscroll.push(this.#item(c, m, true));
      }
    }
    c.refused = false;
    c.open = true;
    c.wasOpen = true;
    this.#retrySet.delete(c.key);
    this.#writer.mark();
    this.#pump(c);
    return { channel: this.#descriptor(c), backscroll };
  }

  /**
   * The newest messages of a channel the agent may read, as items: for context injected before
   * inference, or a host's own look back. The access policy and the filters apply (a muted
   * stream gives nothing); nothing is delivered and no watermark moves.
   *
   * @throws DeliveryError `DELIVERY_UNKNOWN_CHANNEL`, `DELIVERY_INVALID_ARGUMENT`,
   *   `DELIVERY_NOT_RUNNING`; ZmcpError request codes.
   */
  async recent(channelId: string, limit: number): Promise<DeliveryItem[]> {
    const c = await this.#resolve(channelId);
    const n = Math.min(positive(limit, 0, 'limit'), 5_000);
    if (n === 0) return [];
    const res = await readNarrow(this.#client, this.#policy, {
      narrow: this.#narrowOf(c),
      range: { kind: 'newest', limit: n },
      streams: this.#lookup,
      call: this.#call(),
    });
    return res.messages.filter((m) => this.#judge(c, m, true) !== 'skip').map((m) => this.#item(c, m, true));
  }

  /**
   * Closes a channel (the host confirms it): mentions and DMs on it are pushed, ambient traffic
   * is dropped and counted.
   *
   * @throws DeliveryError `DELIVERY_UNKNOWN_CHANNEL`, `DELIVERY_INVALID_ARGUMENT`, `DELIVERY_NOT_RUNNING`.
   */
  async closeChannel(channelId: string): Promise<ChannelInfo> {
    const c = await this.#resolve(channelId);
    c.open = false;
    c.wasOpen = false;
    this.#retrySet.delete(c.key);
    this.#writer.mark();
    this.#pump(c);
    return this.#info(c);
  }

  /**
   * Enumerates every visible channel again (subscriptions and streams), registers what is new,
   * drops what is gone, and announces again the channels never confirmed and those refused.
   *
   * @throws DeliveryError `DELIVERY_NOT_RUNNING`; ZmcpError request codes.
   */
  async refreshChannels(): Promise<RefreshReport> {
    await this.#whenReady();
    const before = new Set([...this.#channels.values()].filter((c) => c.registered).map((c) => c.id));
    const [subscriptions, streams] = await Promise.all([
      this.#client.getSubscriptions({}, this.#call()),
      this.#client.getStreams({}, this.#call()),
    ]);
    this.#setStreams(streams, subscriptions);
    const changed = this.#reconcile();
    // Asking again is the agent's decision: refused channels are announced once more.
    const again = [...changed.added];
    for (const c of this.#channels.values()) {
      if (c.refused && c.registered) again.push(c);
      c.refused = false;
    }
    const refused = await this.#announce(again, changed.removed, true);
    const after = this.channels();
    return {
      channels: after,
      added: after.map((i) => i.channel.id).filter((id) => !before.has(id)),
      removed: [...before].filter((id) => !after.some((i) => i.channel.id === id)),
      pendingAnnouncement: [...this.#retrySet].map((k) => this.#channels.get(k)?.id ?? k),
      refused,
    };
  }

  /** Mutes a stream channel: nothing from it reaches the agent on any surface. @throws as `updateFilters`, and `DELIVERY_INVALID_ARGUMENT` for a DM channel. */
  async muteChannel(channelId: string): Promise<FiltersView> {
    const ref = this.#streamRef(await this.#resolveStream(channelId));
    const current = this.#filters.filters.document.mutedStreams ?? [];
    if (this.#filters.filters.isMuted(ref)) return this.#filters.view();
    // By id: a rename (by anyone) cannot unmute it.
    return this.#filters.update({ mutedStreams: [...current, ref.streamId] });
  }

  /** Unmutes a stream channel (every entry naming it, by id or name, is removed). @throws as `muteChannel`. */
  async unmuteChannel(channelId: string): Promise<FiltersView> {
    const c = await this.#resolveStream(channelId);
    const ref = this.#streamRef(c);
    const current = this.#filters.filters.document.mutedStreams ?? [];
    const kept = current.filter((e) =>
      typeof e === 'number' ? e !== ref.streamId : !sameStreamName(e, ref.name),
    );
    if (kept.length === current.length) return this.#filters.view();
    return this.#filters.update({ mutedStreams: kept.length === 0 ? null : kept });
  }

  /** Shows or hides live reactions on a channel. @throws as `updateFilters`; `DELIVERY_UNKNOWN_CHANNEL`. */
  async setReactionVisibility(channelId: string, visible: boolean): Promise<FiltersView> {
    const c = await this.#resolve(channelId);
    const current = this.#filters.filters.document.reactionChannels ?? [];
    const others = current.filter((id) => !this.#sameChannel(id, c));
    if (visible === others.length < current.length) return this.#filters.view();
    const next = visible ? [...others, c.id] : others;
    return this.#filters.update({ reactionChannels: next.length === 0 ? null : next });
  }

  /** The filters in force, as `filters_get` shows them. */
  filtersView(): FiltersView {
    return this.#filters.view();
  }

  /**
   * Changes the filters (`filters_update`).
   *
   * @throws DeliveryError `DELIVERY_FILTERS_STALE` while the file is invalid or missing;
   *   `DELIVERY_FILTERS_OPERATOR_ONLY`; `DELIVERY_FILTERS_INVALID`; `DELIVERY_IO_FAILED`.
   */
  updateFilters(patch: FiltersPatch): Promise<FiltersView> {
    return this.#filters.update(patch);
  }

  /**
   * The ambient traffic a channel dropped while closed, read back from history as a `<missed>`
   * block (`channel_missed`); `clear` resets the tally.
   *
   * @throws DeliveryError `DELIVERY_UNKNOWN_CHANNEL`, `DELIVERY_INVALID_ARGUMENT`,
   *   `DELIVERY_NOT_RUNNING`; ZmcpError request codes.
   */
  async missed(channelId: string, options: { clear?: boolean; limit?: number } = {}): Promise<MissedReport> {
    const c = await this.#resolve(channelId);
    const count = c.ambient;
    const from = c.ambientFrom;
    const to = c.ambientTo;
    let text = '';
    let items: DeliveryItem[] = [];
    let info: MissedInfo | undefined;
    if (count > 0 && from !== undefined && to !== undefined) {
      const limit = Math.min(positive(options.limit, this.#missedLimits.maxMessages, 'limit'), 5_000);
      const res = await readNarrow(this.#client, this.#policy, {
        narrow: this.#narrowOf(c),
        range: { kind: 'since', afterId: from - 1, limit: Math.max(limit, 1) * 4 },
        streams: this.#lookup,
        call: this.#call(),
      });
      const kept = res.messages.filter((m) => m.id <= to && this.#judge(c, m, true) !== 'skip');
      const rendered = renderMissed(
        {
          channelId: c.id,
          items: kept.map((m) => ({ item: this.#item(c, m, true), gapBefore: 0 })),
          messages: Math.max(count, kept.length),
          addressed: 0,
          firstId: from,
          throughId: to,
          wasOpen: true,
        },
        { maxMessages: Math.max(limit, 1), maxBytes: this.#missedLimits.maxBytes },
      );
      text = rendered.text;
      items = rendered.items;
      info = rendered.info;
    }
    const clear = options.clear === true;
    if (clear) {
      c.ambient = 0;
      c.ambientFrom = undefined;
      c.ambientTo = undefined;
      this.#writer.mark();
    }
    return { channelId: c.id, count, text, items, ...(info === undefined ? {} : { info }), cleared: clear };
  }

  /**
   * Tells the engine the session itself is about to delete or edit these messages (a
   * `delete_message` tool, a rollback): their change lines are not surfaced, since the agent's
   * own doing is not news to it. Zulip's deletion events do not say who deleted.
   */
  suppressChanges(messageIds: readonly number[]): void {
    for (const id of messageIds) {
      this.#ownChanges.delete(id);
      this.#ownChanges.add(id);
    }
    while (this.#ownChanges.size > 1_000)
      this.#ownChanges.delete(this.#ownChanges.values().next().value as number);
  }

  /** A hint that the host answers again (it reconnected): channels waiting out a backoff are offered at once. */
  retryNow(): void {
    for (const c of this.#channels.values()) {
      if (!c.waiting) continue;
      if (c.retryTimer !== undefined) clearTimeout(c.retryTimer);
      c.retryTimer = undefined;
      c.waiting = false;
      this.#pump(c);
    }
  }

  // ---------------------------------------------------------------- registry

  #applyRegistration(reg: RegisterResponse): void {
    if (reg.streams !== undefined || reg.subscriptions !== undefined) {
      this.#setStreams(reg.streams ?? [], reg.subscriptions ?? []);
    }
    for (const u of reg.realm_users ?? []) {
      this.#users.set(u.user_id, { name: u.full_name, email: u.email, isBot: u.is_bot === true });
    }
    if (reg.realm_users !== undefined) {
      this.#people.replace([...this.#users].map(([user_id, u]) => ({ user_id, full_name: u.name })));
      this.#directory.loadRegistration(reg);
    }
  }

  /** Whether the filters' DM list (`dmUsers`, absent or empty: anyone) lets this sender DM the agent. */
  #dmAdmits(senderId: number): boolean {
    const list = this.#filters.filters.dmList;
    if (list === undefined) return true;
    if (this.#dmGate?.list !== list) {
      void this.#dmGate?.gate.close();
      this.#dmGate = {
        list,
        gate: new AdmissionGate(list, {
          setting: 'the filters file’s dmUsers',
          directory: this.#directory,
          logger: this.#logger,
        }),
      };
    }
    return this.#dmGate.gate.admits(senderId);
  }

  /** The admission gate's word on a message (true without a gate); a live refusal counts once. */
  #admitted(m: Message, path: AdmissionPath, history: boolean): boolean {
    const gate = this.#o.admission;
    if (gate === undefined || gate.admits(m.sender_id)) return true;
    if (!history && this.#refused.get(m.id) === undefined) {
      this.#refused.set(m.id, true);
      gate.check(m.sender_id, path);
    }
    return false;
  }

  #setStreams(streams: readonly StreamInfo[], subscriptions: readonly StreamInfo[]): void {
    this.#streams.clear();
    for (const s of streams) {
      if (s.stream_id === undefined) continue;
      this.#streams.set(s.stream_id, {
        stream_id: s.stream_id,
        name: s.name,
        invite_only: s.invite_only,
        subscribed: false,
      });
    }
    for (const s of subscriptions) {
      if (s.stream_id === undefined) continue;
      this.#streams.set(s.stream_id, {
        stream_id: s.stream_id,
        name: s.name,
        invite_only: s.invite_only,
        subscribed: true,
      });
    }
    this.#rebuildLookup();
  }

  #rebuildLookup(): void {
    this.#lookup = createStreamLookup(this.#streams.values());
  }

  #restore(key: string, s: ChannelState): void {
    const target = key.startsWith('s')
      ? ({ kind: 'stream', streamId: Number(key.slice(1)) } as const)
      : ({ kind: 'dm', userIds: key.slice(1).split(',').map(Number) } as const);
    const c = new Channel(key, target, s.id, s.w);
    for (const a of s.above ?? []) if (a > s.w) c.above.add(a);
    c.wasOpen = s.open === true;
    c.refused = s.refused === true;
    c.ambient = s.ambient ?? 0;
    c.ambientFrom = s.ambientFrom;
    c.ambientTo = s.ambientTo;
    for (const id of s.seen ?? []) {
      c.recentSeen.push(id);
      this.#noteSeen(id, key);
    }
    this.#channels.set(key, c);
  }

  /** Stream facts for a channel's target; undefined when the stream is unknown. */
  #streamOf(c: Channel): StreamFacts | undefined {
    return c.target.kind === 'stream' ? this.#streams.get(c.target.streamId) : undefined;
  }

  #streamRef(c: Channel): { streamId: number; name: string } {
    const facts = this.#streamOf(c);
    const streamId = c.target.kind === 'stream' ? c.target.streamId : 0;
    return { streamId, name: facts?.name ?? '' };
  }

  /** Whether a stream may be a channel: subscribed, readable by the policy, allowed by the filters. */
  #eligibleStream(facts: StreamFacts): boolean {
    return (
      facts.subscribed &&
      this.#policy.canReadStream(facts.stream_id, this.#lookup) &&
      this.#filters.filters.allowsStream({ streamId: facts.stream_id, name: facts.name })
    );
  }

  #streamChannel(facts: StreamFacts, watermark: number): Channel {
    const key = streamKey(facts.stream_id);
    let c = this.#channels.get(key);
    if (c === undefined) {
      c = new Channel(
        key,
        { kind: 'stream', streamId: facts.stream_id },
        streamChannelId(facts.name),
        watermark,
      );
      this.#channels.set(key, c);
    }
    c.id = streamChannelId(facts.name);
    return c;
  }

  #dmChannel(userIds: readonly number[], watermark: number): Channel {
    const key = dmKey(userIds);
    let c = this.#channels.get(key);
    if (c === undefined) {
      c = new Channel(key, { kind: 'dm', userIds: [...userIds] }, dmChannelId(userIds), watermark);
      this.#channels.set(key, c);
    }
    return c;
  }

  async #discover(watermark: number): Promise<void> {
    for (const facts of this.#streams.values()) {
      if (this.#eligibleStream(facts)) this.#streamChannel(facts, watermark).registered = true;
    }
    for (const c of this.#channels.values()) {
      if (c.target.kind === 'dm' && this.#policy.canReadDms) c.registered = true;
    }
    if (!this.#policy.canReadDms) return;
    const recent = positive(this.#o.recentDms, 100, 'recentDms');
    if (recent === 0) return;
    const res = await readNarrow(this.#client, this.#policy, {
      narrow: [{ operator: 'is', operand: 'dm' }],
      range: { kind: 'newest', limit: recent },
      streams: this.#lookup,
      call: this.#call(),
    });
    for (const m of res.messages) {
      if (!Array.isArray(m.display_recipient)) continue;
      if (m.sender_id !== this.#self && !this.#dmAdmits(m.sender_id)) continue;
      this.#dmChannel(dmOthers(m.display_recipient, this.#self), watermark).registered = true;
    }
  }

  /** Registers and unregisters stream channels after the streams or the filters changed. */
  #reconcile(): { added: Channel[]; removed: string[] } {
    const added: Channel[] = [];
    const removed: string[] = [];
    for (const facts of this.#streams.values()) {
      const key = streamKey(facts.stream_id);
      const existing = this.#channels.get(key);
      const eligible = this.#eligibleStream(facts);
      if (eligible && (existing === undefined || !existing.registered)) {
        const c = this.#streamChannel(facts, this.#head);
        c.registered = true;
        added.push(c);
      } else if (eligible && existing !== undefined && existing.id !== streamChannelId(facts.name)) {
        // Renamed: the id follows the name; the state follows the stream.
        removed.push(existing.id);
        existing.id = streamChannelId(facts.name);
        added.push(existing);
      } else if (!eligible && existing?.registered === true) {
        existing.registered = false;
        existing.open = false;
        removed.push(existing.id);
        this.#retrySet.delete(existing.key);
      }
    }
    for (const c of this.#channels.values()) {
      if (c.target.kind === 'stream' && c.registered && !this.#streams.has(c.target.streamId)) {
        c.registered = false;
        c.open = false;
        removed.push(c.id);
        this.#retrySet.delete(c.key);
      }
    }
    if (added.length > 0 || removed.length > 0) this.#writer.mark();
    return { added, removed };
  }

  /**
   * Announces channels; explicit registrations also re-announce the retry set. Returns the ids
   * the host refused. Channels are usable before the answer comes.
   */
  async #announce(
    added: readonly Channel[],
    removed: readonly string[],
    explicit: boolean,
  ): Promise<string[]> {
    const announce = this.#sink.announce?.bind(this.#sink);
    if (announce === undefined) return [];
    const chans = new Map<ChannelKey, Channel>();
    for (const c of added) if (c.registered && !c.refused) chans.set(c.key, c);
    if (explicit) {
      for (const key of this.#retrySet) {
        const c = this.#channels.get(key);
        if (c?.registered === true && !c.refused) chans.set(key, c);
      }
    }
    if (chans.size === 0 && removed.length === 0) return [];
    const change: ChannelAnnouncement = {
      added: [...chans.values()].map((c) => this.#descriptor(c)),
      removed,
    };
    const outcome = await this.#offer<AnnounceOutcome>(
      (signal) => announce(change, signal),
      this.#announceTimeoutMs,
    );
    const refused: string[] = [];
    const answered = new Map<string, boolean>();
    if (outcome.kind === 'ok' && outcome.value.kind === 'answered') {
      for (const r of outcome.value.results) answered.set(r.id, r.accepted === true);
    }
    for (const c of chans.values()) {
      const verdict = answered.get(c.id);
      if (verdict === true) {
        this.#retrySet.delete(c.key);
      } else if (verdict === false) {
        // An itemized refusal is the host's answer: closed, unannounced until asked again.
        c.refused = true;
        c.open = false;
        this.#retrySet.delete(c.key);
        refused.push(c.id);
      } else {
        this.#retrySet.delete(c.key);
        this.#retrySet.add(c.key);
        while (this.#retrySet.size > RETRY_SET_LIMIT) {
          const oldest = this.#retrySet.values().next().value as ChannelKey;
          this.#retrySet.delete(oldest);
        }
      }
    }
    if (refused.length > 0) this.#writer.mark();
    return refused;
  }

  async #whenReady(): Promise<void> {
    const holder = this.#waitingFor;
    if (holder !== undefined) {
      throw new DeliveryError(
        'DELIVERY_STATE_LOCKED',
        `live delivery waits: another server (pid ${String(holder.pid)}) delivers for this session`,
        { details: holder },
      );
    }
    if (this.#state === 'closed' || this.#state === 'idle' || this.#ready === undefined) {
      throw new DeliveryError('DELIVERY_NOT_RUNNING', `the delivery engine is ${this.#state}`, {
        details: { state: this.#state },
      });
    }
    await this.#ready;
  }

  #find(channelId: string): Channel | undefined {
    const parsed = parseChannelId(channelId);
    if (parsed.kind === 'dm') {
      const c = this.#channels.get(dmKey(parsed.userIds));
      if (c?.registered === true) return c;
      if (!this.#policy.canReadDms || !parsed.userIds.every((u) => this.#users.has(u))) return undefined;
      const fresh = this.#dmChannel(parsed.userIds, this.#head);
      fresh.registered = true;
      fresh.lastEnqueued = Math.max(fresh.lastEnqueued, this.#head);
      return fresh;
    }
    const facts = this.#lookup(parsed.name);
    if (facts?.stream_id === undefined) return undefined;
    const c = this.#channels.get(streamKey(facts.stream_id));
    return c?.registered === true ? c : undefined;
  }

  async #resolve(channelId: string): Promise<Channel> {
    await this.#whenReady();
    const found = this.#find(channelId);
    if (found !== undefined) return found;
    await this.refreshChannels();
    const again = this.#find(channelId);
    if (again !== undefined) return again;
    throw new DeliveryError(
      'DELIVERY_UNKNOWN_CHANNEL',
      `unknown channel ${JSON.stringify(channelId.slice(0, 200))}: no stream or DM conversation this session can see has that id`,
      { details: { channelId: channelId.slice(0, 200) } },
    );
  }

  async #resolveStream(channelId: string): Promise<Channel> {
    const c = await this.#resolve(channelId);
    if (c.target.kind !== 'stream') {
      throw new DeliveryError(
        'DELIVERY_INVALID_ARGUMENT',
        'only stream channels can be muted; DM senders are filtered by dmUsers',
        {
          details: { field: 'channelId' },
        },
      );
    }
    return c;
  }

  #sameChannel(id: string, c: Channel): boolean {
    try {
      const parsed = parseChannelId(id);
      if (parsed.kind === 'dm') return c.key === dmKey(parsed.userIds);
      const facts = this.#streamOf(c);
      return facts !== undefined && sameStreamName(parsed.name, facts.name);
    } catch {
      return false;
    }
  }

  #showsReactions(c: Channel): boolean {
    const facts = this.#streamOf(c);
    if (c.target.kind === 'stream')
      return facts !== undefined && this.#filters.filters.showsReactions({ streamName: facts.name });
    return this.#filters.filters.showsReactions({ key: c.key });
  }

  #descriptor(c: Channel): ChannelDescriptor {
    if (c.target.kind === 'stream') {
      const facts = this.#streamOf(c);
      return {
        id: c.id,
        kind: 'stream',
        label: `#${escapeMsgName(facts?.name ?? c.id.slice(6))}`,
        streamId: c.target.streamId,
        private: facts?.invite_only ?? true,
      };
    }
    const names = c.target.userIds.map((u) => {
      const name = this.#users.get(u)?.name;
      return escapeMsgName(name === undefined ? `user ${u}` : personLabel(name, u, this.#people));
    });
    return {
      id: c.id,
      kind: 'dm',
      label: `DM with ${names.join(', ')}`,
      userIds: c.target.userIds,
      private: true,
    };
  }

  #info(c: Channel): ChannelInfo {
    const facts = this.#streamOf(c);
    return {
      channel: this.#descriptor(c),
      open: c.open,
      refused: c.refused,
      pendingAnnouncement: this.#retrySet.has(c.key),
      watermark: c.w,
      missed: c.ambient,
      muted:
        facts !== undefined && this.#filters.filters.isMuted({ streamId: facts.stream_id, name: facts.name }),
      showsReactions: this.#showsReactions(c),
    };
  }

  #narrowOf(c: Channel): NarrowTerm[] {
    return c.target.kind === 'stream'
      ? [{ operator: 'channel', operand: c.target.streamId }]
      : [{ operator: 'dm', operand: [...c.target.userIds] }];
  }

  #call(): CallOptions {
    return { signal: this.#stop.signal };
  }

  #onFiltersChanged(): void {
    const changed = this.#reconcile();
    if (changed.added.length > 0 || changed.removed.length > 0) {
      this.#track(this.#announce(changed.added, changed.removed, true));
    }
    for (const c of this.#channels.values()) this.#pump(c);
  }

  // ---------------------------------------------------------------- routing

  /**
   * The channel a message belongs to, registering one the message path discovers (a new DM, a
   * stream seen before its subscription event). Undefined when the message is for no channel:
   * unreadable to the policy, or a stream the filters' allowlist keeps out.
   */
  #channelFor(m: Message, watermark?: number): Channel | undefined {
    if (!this.#policy.isReadable(m, this.#lookup)) return undefined;
    let c: Channel;
    if (m.type === 'stream') {
      const id = m.stream_id ?? this.#lookup(String(m.display_recipient))?.stream_id;
      if (id === undefined) return undefined;
      let facts = this.#streams.get(id);
      if (facts === undefined) {
        facts = { stream_id: id, name: String(m.display_recipient), invite_only: true, subscribed: true };
        this.#streams.set(id, facts);
        this.#rebuildLookup();
      }
      if (!this.#filters.filters.allowsStream({ streamId: id, name: facts.name })) return undefined;
      const existing = this.#channels.get(streamKey(id));
      if (existing?.registered === true) return existing;
      facts.subscribed = true;
      c = this.#streamChannel(facts, watermark ?? m.id - 1);
    } else {
      if (!Array.isArray(m.display_recipient)) return undefined;
      // A sender the filters keep out opens no conversation.
      if (m.sender_id !== this.#self && !this.#dmAdmits(m.sender_id)) return undefined;
      const users = dmOthers(m.display_recipient, this.#self);
      const existing = this.#channels.get(dmKey(users));
      if (existing?.registered === true) return existing;
      for (const r of m.display_recipient) {
        if (!this.#users.has(r.id)) {
          this.#users.set(r.id, { name: r.full_name, email: r.email, isBot: false });
          this.#people.set(r.id, r.full_name);
        }
      }
      c = this.#dmChannel(users, watermark ?? m.id - 1);
    }
    c.registered = true;
    this.#discoveredDuringStart?.push(c);
    // The message path announces, and the delivery waits for that answer (bounded); it never
    // re-announces the retry set.
    if (this.#state === 'running' && !c.refused) {
      const announcing = this.#announce([c], [], false).then(
        () => undefined,
        () => undefined,
      );
      c.announcing = announcing;
      this.#track(
        announcing.then(() => {
          if (c.announcing === announcing) c.announcing = undefined;
          this.#pump(c);
        }),
      );
    }
    this.#writer.mark();
    return c;
  }

  /**
   * What happens to a message at the front of a channel: `skip` (not for the agent: its own,
   * unreadable, filtered, muted, `/nobots`), `incoming` (open channel), `push` (a mention or DM on
   * a closed channel) or `drop` (ambient on a closed channel, counted). With `history`, the bot's
   * own messages are kept (backscroll and blocks show the whole conversation).
   */
  #judge(c: Channel, m: Message, history = false): 'skip' | 'incoming' | 'push' | 'drop' {
    if (!c.registered) return 'skip';
    if (m.sender_id === this.#self) {
      if (!history) this.#remember(c, m);
      if (!history) return 'skip';
    }
    if (!this.#policy.isReadable(m, this.#lookup)) return 'skip';
    if (m.type === 'stream') {
      const facts = this.#streamOf(c);
      const ref = {
        streamId: m.stream_id ?? facts?.stream_id ?? 0,
        name: facts?.name ?? String(m.display_recipient),
      };
      if (!this.#filters.filters.passesStream(ref)) return 'skip';
    } else if (m.sender_id !== this.#self && !this.#dmAdmits(m.sender_id)) {
      return 'skip';
    }
    if (isNoBotsMessage(m)) return 'skip';
    // The admission gate: a DM, or a mention that would wake the agent, from anyone else is no
    // one's business here. The bot's own messages (kept in history) are not asked about.
    if (m.sender_id !== this.#self && m.type !== 'stream' && !this.#admitted(m, 'dm', history)) return 'skip';
    if (c.open) return 'incoming';
    if (!isAddressed(addressingOf(m, this.#self))) return 'drop';
    return m.sender_id === this.#self || this.#admitted(m, 'mention', history) ? 'push' : 'skip';
  }

  #item(c: Channel, m: Message, recovered: boolean): DeliveryItem {
    const isBot = this.#users.get(m.sender_id)?.isBot === true;
    return messageItem(this.#render, m, c.id, messageTags(m, this.#self, isBot), recovered);
  }

  #onMessage(m: Message, recovered: boolean): void {
    if (m.id > this.#head) this.#head = m.id;
    const c = this.#channelFor(m);
    if (c === undefined) return;
    if (m.id > c.newestSeen) c.newestSeen = m.id;
    if (c.replayNeeded) {
      if (!recovered) this.#hold(c, m);
      return;
    }
    if (m.id <= c.lastEnqueued) return;
    if (c.queue.length >= this.#queueLimit) {
      // Too much waiting: read it from history once the queue drains.
      c.replayNeeded = true;
      if (!recovered) this.#hold(c, m);
      return;
    }
    c.queue.push({ t: 'm', m, recovered });
    c.lastEnqueued = m.id;
    this.#pump(c);
  }

  #hold(c: Channel, m: Message): void {
    if (c.held.length >= this.#heldLimit) {
      c.held = [];
      c.heldOverflowed = true;
      return;
    }
    c.held.push(m);
  }

  /** Offers what is at the front of a channel's queue, one offer at a time. */
  #pump(c: Channel): void {
    if (this.#deferred !== undefined) {
      this.#deferred.add(c);
      return;
    }
    if (c.busy || c.waiting || this.#state !== 'running' || c.announcing !== undefined) return;
    while (true) {
      const e = c.queue.at(0);
      if (e === undefined) {
        if (c.replayNeeded && !c.replayRunning) this.#track(this.#replay(c));
        return;
      }
      if (e.t === 'missed') {
        this.#track(this.#offerMissed(c, e));
        return;
      }
      if (e.t === 'p') {
        if (!e.done) {
          c.busy = true;
          void e.ready.then(() => {
            c.busy = false;
            this.#pump(c);
          });
          return;
        }
        c.queue.drop(1);
        for (let i = e.entries.length - 1; i >= 0; i--) c.queue.unshift(e.entries[i] as Entry);
        continue;
      }
      if (e.t === 'c') {
        if (c.open && c.registered) {
          this.#track(this.#offerBatch(c));
          return;
        }
        if (e.addressed && !e.reaction && c.registered) {
          this.#track(this.#offerChange(c, e.item));
          return;
        }
        c.queue.drop(1);
        continue;
      }
      const m = e.m;
      if (m.id <= c.w) {
        c.queue.drop(1);
        continue;
      }
      if (c.above.has(m.id)) {
        c.queue.drop(1);
        c.advance(m.id);
        this.#writer.mark();
        continue;
      }
      const verdict = this.#judge(c, m);
      if (verdict === 'skip' || verdict === 'drop') {
        c.queue.drop(1);
        if (verdict === 'drop') {
          c.tallyAmbient(m.id);
          this.#totals.dropped += 1;
        }
        c.advance(m.id);
        this.#writer.mark();
        continue;
      }
      if (verdict === 'push') {
        this.#track(this.#offerPush(c, e));
        return;
      }
      this.#track(this.#offerBatch(c));
      return;
    }
  }

  async #offer<T>(call: (signal: AbortSignal) => Promise<T>, timeoutMs: number): Promise<OfferResult<T>> {
    const controller = new AbortController();
    const onStop = () => controller.abort(new Error('the engine closed'));
    this.#stop.signal.addEventListener('abort', onStop, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<OfferResult<T>>((resolve) => {
      timer = setTimeout(() => {
        controller.abort(new Error('the offer timed out'));
        resolve({ kind: 'timeout', reason: `no answer within ${timeoutMs} ms` });
      }, timeoutMs);
      // After the current turn: an answer that has already arrived wins over the abort.
      controller.signal.addEventListener(
        'abort',
        () => setImmediate(() => resolve({ kind: 'lost', reason: 'aborted' })),
        { once: true },
      );
    });
    try {
      const answered = call(controller.signal).then(
        (value): OfferResult<T> => ({ kind: 'ok', value }),
        (err: unknown): OfferResult<T> => ({
          kind: 'lost',
          reason: err instanceof Error ? err.message.slice(0, 200) : 'the sink failed',
        }),
      );
      return await Promise.race([answered, timedOut]);
    } finally {
      clearTimeout(timer);
      this.#stop.signal.removeEventListener('abort', onStop);
    }
  }

  async #offerBatch(c: Channel): Promise<void> {
    c.busy = true;
    // The run of entries at the front that goes in one batch, with their verdicts.
    const run: { e: Entry; deliver: boolean }[] = [];
    const items: DeliveryItem[] = [];
    for (let i = 0; items.length < this.#maxBatch; i++) {
      const e = c.queue.at(i);
      if (e === undefined || e.t === 'missed' || e.t === 'p') break;
      if (e.t === 'c') {
        run.push({ e, deliver: true });
        items.push(e.item);
        continue;
      }
      if (e.m.id <= c.w || c.above.has(e.m.id)) {
        run.push({ e, deliver: false });
        continue;
      }
      const verdict = this.#judge(c, e.m);
      if (verdict === 'push' || verdict === 'drop') break;
      if (verdict === 'skip') {
        run.push({ e, deliver: false });
        continue;
      }
      run.push({ e, deliver: true });
      items.push(this.#item(c, e.m, e.recovered));
      this.#remember(c, e.m);
    }
    let outcome: OfferResult<IncomingOutcome> | undefined;
    if (items.length > 0) {
      const batch = { channel: this.#descriptor(c), items };
      const sink = this.#sink;
      outcome = await this.#offer((signal) => sink.incoming(batch, signal), this.#offerTimeoutMs);
    }
    c.queue.drop(run.length);
    const accepted =
      outcome === undefined
        ? new Set<string>()
        : outcome.kind === 'ok' && outcome.value.kind === 'answered'
          ? new Set(outcome.value.accepted)
          : new Set<string>();
    let prefix = true;
    let missing = false;
    let oldestMissing: number | undefined;
    const readIds: number[] = [];
    for (const { e, deliver } of run) {
      if (e.t !== 'm') continue;
      const id = e.m.id;
      if (!deliver) {
        if (prefix) c.advance(id);
        continue;
      }
      if (accepted.has(String(id))) {
        this.#totals.accepted += 1;
        readIds.push(id);
        if (prefix) c.advance(id);
        else if (c.above.size < MAX_ABOVE) c.above.add(id);
      } else {
        if (!missing) oldestMissing = e.m.timestamp;
        prefix = false;
        missing = true;
      }
    }
    this.#writer.mark();
    this.#markRead(readIds);
    c.busy = false;
    if (missing) {
      this.#notAccepted(c, outcome === undefined ? 'nothing offered' : this.#why(outcome), oldestMissing);
    } else if (accepted.size > 0) this.#answered(c);
    this.#pump(c);
  }

  async #offerPush(c: Channel, e: Extract<Entry, { t: 'm' }>): Promise<void> {
    c.busy = true;
    const item = this.#item(c, e.m, e.recovered);
    this.#remember(c, e.m);
    const event: PushEvent = {
      eventId: `msg:${e.m.id}`,
      kind: 'message',
      channel: this.#descriptor(c),
      text: item.text,
      tags: item.tags,
      timestamp: item.timestamp,
      items: [item],
    };
    const sink = this.#sink;
    const outcome = await this.#offer<PushOutcome>(
      (signal) => sink.push(event, signal),
      this.#offerTimeoutMs,
    );
    c.busy = false;
    if (outcome.kind === 'ok' && outcome.value.kind === 'answered' && outcome.value.accepted) {
      if (c.queue.at(0) === e) c.queue.drop(1);
      c.advance(e.m.id);
      this.#totals.accepted += 1;
      this.#writer.mark();
      this.#markRead([e.m.id]);
      this.#answered(c);
    } else {
      if (c.queue.at(0) === e) c.queue.drop(1);
      this.#notAccepted(c, this.#why(outcome), e.m.timestamp);
    }
    this.#pump(c);
  }

  async #offerChange(c: Channel, item: DeliveryItem): Promise<void> {
    c.busy = true;
    const event: PushEvent = {
      eventId: `change:${item.id}`,
      kind: 'change',
      channel: this.#descriptor(c),
      text: item.text,
      tags: item.tags,
      timestamp: item.timestamp,
      items: [item],
    };
    const sink = this.#sink;
    await this.#offer<PushOutcome>((signal) => sink.push(event, signal), this.#offerTimeoutMs);
    // Change lines are not replayed: a later read shows the message as it now is.
    c.queue.drop(1);
    c.busy = false;
    this.#pump(c);
  }

  async #offerMissed(c: Channel, e: Extract<Entry, { t: 'missed' }>): Promise<void> {
    c.busy = true;
    const sink = this.#sink;
    const outcome = await this.#offer<PushOutcome>(
      (signal) => sink.push(e.event, signal),
      this.#offerTimeoutMs,
    );
    c.busy = false;
    if (outcome.kind === 'ok' && outcome.value.kind === 'answered' && outcome.value.accepted) {
      c.queue.drop(1);
      c.advance(e.through);
      this.#totals.accepted += 1;
      this.#writer.mark();
      this.#markRead(e.event.items.map((i) => i.messageId));
      this.#answered(c);
    } else {
      // The block stays in front: nothing after it is offered until the host takes it.
      this.#wait(c, this.#why(outcome));
    }
    this.#pump(c);
  }

  #why(outcome: OfferResult<IncomingOutcome | PushOutcome>): string {
    if (outcome.kind !== 'ok') return outcome.kind === 'timeout' ? 'timed out' : `lost: ${outcome.reason}`;
    const v = outcome.value;
    if (v.kind === 'lost') return 'lost';
    if (v.kind === 'refused') return 'refused';
    return 'not accepted';
  }

  /** Something offered was not accepted: read it again from history, after a backoff. */
  #notAccepted(c: Channel, why: string, oldestTimestamp?: number): void {
    this.#totals.notAccepted += 1;
    // The queue's messages go back to history: remember how old the oldest of them is.
    for (let i = 0; ; i++) {
      const e = c.queue.at(i);
      if (e === undefined) break;
      if (e.t === 'm' && e.m.id > c.w) {
        oldestTimestamp = Math.min(oldestTimestamp ?? e.m.timestamp, e.m.timestamp);
        break;
      }
    }
    if (oldestTimestamp !== undefined) {
      c.unacceptedSince = Math.min(c.unacceptedSince ?? oldestTimestamp, oldestTimestamp);
    }
    c.queue.filter((e) => e.t !== 'm');
    c.lastEnqueued = c.w;
    c.replayNeeded = true;
    this.#wait(c, why);
  }

  #wait(c: Channel, why: string): void {
    if (this.#state === 'closed') return;
    c.failures += 1;
    const delay = Math.min(this.#retryMax, this.#retryInitial * 2 ** Math.min(c.failures - 1, 20));
    this.#logger.debug('the host did not accept a delivery; offering again later', {
      channel: c.key,
      why,
      delayMs: delay,
    });
    c.waiting = true;
    if (c.retryTimer !== undefined) clearTimeout(c.retryTimer);
    c.retryTimer = setTimeout(() => {
      c.retryTimer = undefined;
      c.waiting = false;
      this.#pump(c);
    }, delay);
    c.retryTimer.unref();
  }

  /** The host accepted something: it answers again, so channels waiting on it go at once. */
  #answered(c: Channel): void {
    c.failures = 0;
    for (const other of this.#channels.values()) {
      if (other !== c && other.waiting && other.retryTimer !== undefined) {
        clearTimeout(other.retryTimer);
        other.retryTimer = undefined;
        other.waiting = false;
        this.#pump(other);
      }
    }
  }

  /** Reads a channel's messages after `lastEnqueued` from history into its queue. */
  async #replay(c: Channel): Promise<void> {
    c.replayRunning = true;
    c.busy = true;
    c.heldOverflowed = false;
    try {
      const res = await readNarrow(this.#client, this.#policy, {
        narrow: this.#narrowOf(c),
        range: { kind: 'since', afterId: c.lastEnqueued, limit: REPLAY_PAGE },
        streams: this.#lookup,
        call: this.#call(),
      });
      if (this.#state === 'closed') return;
      for (const m of res.messages) {
        if (m.id <= c.lastEnqueued) continue;
        c.queue.push({ t: 'm', m, recovered: true });
        c.lastEnqueued = m.id;
        if (m.id > c.newestSeen) c.newestSeen = m.id;
      }
      if (!res.hasMore && !c.heldOverflowed) {
        // Caught up: the live messages held meanwhile follow, without the ones history returned.
        c.replayNeeded = false;
        const held = c.held.sort((a, b) => a.id - b.id);
        c.held = [];
        for (const m of held) {
          if (m.id <= c.lastEnqueued) continue;
          c.queue.push({ t: 'm', m, recovered: false });
          c.lastEnqueued = m.id;
        }
      }
      c.busy = false;
    } catch (err) {
      c.busy = false;
      if (this.#state === 'closed') return;
      const code = codeOf(err);
      if (code === 'CORE_ACCESS_DENIED' || code === 'CORE_BAD_REQUEST' || code === 'CORE_NOT_FOUND') {
        // The channel cannot be read any more (access withdrawn, stream gone): nothing to replay.
        this.#logger.warn('a channel can no longer be read; its replay is abandoned', {
          channel: c.key,
          code,
        });
        c.replayNeeded = false;
        c.held = [];
      } else {
        this.#logger.warn('reading a channel from history failed; retrying', { channel: c.key, code });
        this.#wait(c, code);
      }
    } finally {
      c.replayRunning = false;
    }
    this.#pump(c);
  }

  #missedEvent(c: Channel, collector: MissedCollector, through: number): PushEvent {
    const rendered = renderMissed(
      {
        channelId: c.id,
        items: collector.kept().map((k) => ({ item: this.#item(c, k.m, true), gapBefore: k.gapBefore })),
        messages: collector.messages,
        addressed: collector.addressed,
        firstId: collector.firstId ?? through,
        throughId: through,
        wasOpen: collector.wasOpen,
      },
      this.#missedLimits,
    );
    const tags = new Set<string>([TAGS.missed]);
    for (const item of rendered.items) {
      for (const t of item.tags) {
        if (
          t === TAGS.mention ||
          t === TAGS.dm ||
          t === TAGS.broadcast ||
          t === TAGS.addressed ||
          t === TAGS.private
        )
          tags.add(t);
      }
    }
    if (!tags.has(TAGS.addressed)) tags.add(TAGS.ambient);
    for (const item of rendered.items) this.#noteSeen(item.messageId, c.key);
    return {
      eventId: `missed:${c.id}:${collector.firstId ?? through}-${through}`,
      kind: 'missed',
      channel: this.#descriptor(c),
      text: rendered.text,
      tags: [...tags],
      timestamp: new Date().toISOString(),
      items: rendered.items,
      missed: rendered.info,
    };
  }

  // ---------------------------------------------------------------- the event loop

  async #run(): Promise<void> {
    const queue = this.#queue as EventSource;
    try {
      while (this.#state === 'running') {
        const batch = await queue.nextBatch();
        if (batch === undefined) break;
        if (batch.some((item) => item.kind === 'event')) this.#lastEventAt = this.#now();
        // A whole batch is routed before anything is offered, so each channel's messages go
        // out together (one offer per channel, not one per message).
        this.#deferred = new Set();
        for (const item of batch) {
          if (this.#state !== 'running') break;
          if (item.kind === 'gap') {
            this.#releaseDeferred();
            await this.#heal(item);
            this.#deferred = new Set();
          } else {
            this.#handle(item);
          }
        }
        this.#releaseDeferred();
        // One turn before the next long poll: the offers just made reach the host first, instead
        // of waiting behind the set-up of a request that will block anyway.
        await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (err) {
      if (this.#state === 'running') {
        this.#state = 'failed';
        this.#failure = codeOf(err);
        this.#logger.error('the delivery event queue failed', { code: this.#failure });
      }
    }
  }

  #releaseDeferred(): void {
    const deferred = this.#deferred;
    this.#deferred = undefined;
    if (deferred !== undefined) for (const c of deferred) this.#pump(c);
  }

  #handle(item: QueueItem): void {
    if (item.kind !== 'event') return;
    try {
      this.#onEvent(item.event);
    } catch (err) {
      this.#logger.warn('an event could not be handled', { type: item.event.type, code: codeOf(err) });
    }
  }

  #onEvent(event: ZulipEvent): void {
    switch (event.type) {
      case 'message':
        this.#onMessage(event.message, false);
        return;
      case 'update_message':
        this.#track(this.#onUpdate(event));
        return;
      case 'delete_message':
        this.#onDelete(event);
        return;
      case 'reaction':
        this.#track(this.#onReaction(event));
        return;
      case 'subscription':
        this.#onSubscription(event);
        return;
      case 'stream':
        this.#onStream(event);
        return;
      case 'realm_user': {
        const p = event.person as { user_id: number; full_name?: unknown; email?: unknown; is_bot?: unknown };
        const known = this.#users.get(p.user_id);
        const name = typeof p.full_name === 'string' ? p.full_name : (known?.name ?? `user ${p.user_id}`);
        this.#users.set(p.user_id, {
          name,
          email: typeof p.email === 'string' ? p.email : (known?.email ?? ''),
          isBot: typeof p.is_bot === 'boolean' ? p.is_bot : (known?.isBot ?? false),
        });
        this.#people.set(p.user_id, name);
        this.#directory.apply(event);
        return;
      }
      default:
        return;
    }
  }

  /** A lost queue: what it would have carried is read from history, every channel at once. */
  async #heal(gap: QueueGap): Promise<void> {
    this.#applyRegistration(gap.registration);
    const changed = this.#reconcile();
    if (changed.added.length > 0 || changed.removed.length > 0) {
      this.#track(this.#announce(changed.added, changed.removed, true));
    }
    const from = Math.max(0, gap.lastMessageId ?? this.#head);
    const through = Math.max(0, gap.newMaxMessageId ?? from);
    this.#reRegistrations += 1;
    this.#registeredAt = this.#now();
    if (through > from) {
      await this.#sweepWithRetry('re-registration', from, through, (m) => this.#onMessage(m, true));
    }
    if (through > this.#head) this.#head = through;
    this.#writer.mark();
  }

  async #sweepWithRetry(
    work: DeliveryProgress['work'],
    afterId: number,
    throughId: number,
    visit: (m: Message) => void,
  ): Promise<void> {
    const report = this.#o.onProgress;
    let reached = afterId;
    let read = 0;
    const tell = (outcome?: 'done' | 'failed') => {
      try {
        report?.({
          work,
          afterId,
          throughId,
          reachedId: reached,
          messages: read,
          ...(outcome ? { outcome } : {}),
        });
      } catch (err) {
        this.#logger.debug('a progress listener failed', { code: codeOf(err) });
      }
    };
    tell();
    try {
      await this.#sweepPages(afterId, throughId, visit, (id, messages) => {
        reached = Math.max(reached, id);
        read = messages;
        tell();
      });
    } catch (err) {
      tell('failed');
      throw err;
    }
    reached = throughId;
    tell('done');
  }

  async #sweepPages(
    afterId: number,
    throughId: number,
    visit: (m: Message) => void,
    onPage: (reachedId: number, messages: number) => void,
  ): Promise<void> {
    const extra: NarrowTerm[][] = [];
    for (const c of this.#channels.values()) {
      if (!c.registered || c.target.kind !== 'stream') continue;
      const facts = this.#streamOf(c);
      if (facts?.invite_only === true) extra.push(this.#narrowOf(c));
    }
    let failures = 0;
    while (true) {
      try {
        let last = afterId;
        await sweepHistory({
          client: this.#client,
          policy: this.#policy,
          streams: this.#lookup,
          afterId,
          throughId,
          extra,
          visit: (m) => {
            // A retried sweep starts over; what was visited already is skipped.
            if (extra.length === 0 && m.id <= last) return;
            last = Math.max(last, m.id);
            visit(m);
          },
          onPage,
          signal: this.#stop.signal,
        });
        return;
      } catch (err) {
        if (this.#stop.signal.aborted) throw err;
        const code = codeOf(err);
        if (code === 'CORE_ACCESS_DENIED' || code === 'CORE_UNAUTHORIZED') throw err;
        failures += 1;
        const delay = Math.min(this.#retryMax, this.#retryInitial * 2 ** Math.min(failures - 1, 20));
        this.#logger.warn('the history sweep failed; retrying', { code, failures, delayMs: delay });
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, delay);
          this.#stop.signal.addEventListener(
            'abort',
            () => {
              clearTimeout(t);
              resolve();
            },
            { once: true },
          );
        });
        if (this.#stop.signal.aborted) throw err;
      }
    }
  }

  #onSubscription(event: SubscriptionEvent): void {
    if (event.op !== 'add' && event.op !== 'remove') return;
    for (const s of event.subscriptions ?? []) {
      const existing = this.#streams.get(s.stream_id);
      const invite = (s as { invite_only?: unknown }).invite_only;
      this.#streams.set(s.stream_id, {
        stream_id: s.stream_id,
        name: s.name,
        invite_only: typeof invite === 'boolean' ? invite : (existing?.invite_only ?? true),
        subscribed: event.op === 'add',
      });
    }
    this.#rebuildLookup();
    const changed = this.#reconcile();
    this.#track(this.#announce(changed.added, changed.removed, true));
  }

  #onStream(event: StreamEvent): void {
    if (event.op === 'create') {
      for (const s of event.streams ?? []) {
        const full = s as { stream_id: number; name?: unknown; invite_only?: unknown };
        if (typeof full.name !== 'string' || this.#streams.has(full.stream_id)) continue;
        this.#streams.set(full.stream_id, {
          stream_id: full.stream_id,
          name: full.name,
          invite_only: full.invite_only === true,
          subscribed: false,
        });
      }
    } else if (event.op === 'delete') {
      for (const s of event.streams ?? []) this.#streams.delete(s.stream_id);
    } else if (event.op === 'update' && event.stream_id !== undefined) {
      const facts = this.#streams.get(event.stream_id);
      if (facts === undefined) return;
      if (event.property === 'name' && typeof event.value === 'string') facts.name = event.value;
      if (event.property === 'invite_only' && typeof event.value === 'boolean')
        facts.invite_only = event.value;
    } else {
      return;
    }
    this.#rebuildLookup();
    const changed = this.#reconcile();
    if (changed.added.length > 0 || changed.removed.length > 0) {
      this.#track(this.#announce(changed.added, changed.removed, true));
    }
  }

  // ---------------------------------------------------------------- changes and reactions

  #noteSeen(id: number, key: ChannelKey): void {
    this.#seen.set(id, key);
  }

  /** Records that a message was offered (or is the bot's own), for its later changes. */
  #remember(c: Channel, m: Message): void {
    this.#noteSeen(m.id, c.key);
    c.noteSeen(m.id);
    this.#cache.set(m.id, m);
  }

  async #current(id: number): Promise<Message | undefined> {
    const cached = this.#cache.get(id);
    if (cached !== undefined) return cached;
    try {
      return await readMessage(this.#client, this.#policy, id, { streams: this.#lookup, call: this.#call() });
    } catch {
      return undefined;
    }
  }

  /** Holds a channel's place for change lines that need a read first, so they keep their order. */
  #reserve(c: Channel): Slot | undefined {
    if (c.queue.length >= this.#queueLimit) return undefined;
    const s = slot();
    c.queue.push(s);
    return s;
  }

  #enqueueChange(c: Channel, item: DeliveryItem, addressed: boolean, reaction: boolean): void {
    if (c.queue.length >= this.#queueLimit) return;
    c.queue.push({ t: 'c', item, addressed, reaction });
    this.#pump(c);
  }

  #streamVisible(streamId: number): boolean {
    const facts = this.#streams.get(streamId);
    if (facts === undefined) return false;
    return (
      this.#policy.canReadStream(streamId, this.#lookup) &&
      this.#filters.filters.passesStream({ streamId, name: facts.name })
    );
  }

  async #onUpdate(event: UpdateMessageEvent): Promise<void> {
    if (event.rendering_only === true) return;
    if (event.user_id === this.#self) return;
    const target = event.message_id;
    if (this.#ownChanges.delete(target)) return;
    const key = this.#seen.get(target);
    if (key === undefined) return;
    const c = this.#channels.get(key);
    if (c === undefined || !c.registered) return;
    if (c.target.kind === 'stream' && !this.#streamVisible(c.target.streamId)) return;
    const place = this.#reserve(c);
    if (place === undefined) return;
    const out: Entry[] = [];
    try {
      await this.#changesOf(event, c, key, out);
    } finally {
      place.fill(out);
      this.#pump(c);
    }
  }

  async #changesOf(event: UpdateMessageEvent, c: Channel, key: ChannelKey, out: Entry[]): Promise<void> {
    const target = event.message_id;
    const before = this.#cache.get(target);
    const wasMentioned = before !== undefined && isAddressed(addressingOf(before, this.#self));
    const ids = event.message_ids ?? [target];
    const movedStream = event.new_stream_id !== undefined && event.new_stream_id !== event.stream_id;
    const movedTopic =
      event.orig_subject !== undefined && event.subject !== undefined && event.subject !== event.orig_subject;
    const edited =
      event.content !== undefined && event.orig_content !== undefined && event.content !== event.orig_content;
    let now = before;
    if (now !== undefined) {
      now = {
        ...now,
        ...(event.content === undefined ? {} : { content: event.content }),
        ...(event.subject === undefined ? {} : { subject: event.subject }),
        ...(event.flags === undefined ? {} : { flags: event.flags }),
        ...(event.edit_timestamp === undefined || !edited
          ? {}
          : { last_edit_timestamp: event.edit_timestamp }),
        ...(event.edit_timestamp === undefined || !(movedStream || movedTopic)
          ? {}
          : { last_moved_timestamp: event.edit_timestamp }),
      };
      if (movedStream && event.new_stream_id !== undefined) {
        const dest = this.#streams.get(event.new_stream_id);
        now = {
          ...now,
          stream_id: event.new_stream_id,
          display_recipient: dest?.name ?? now.display_recipient,
        };
      }
    } else {
      now = await this.#current(target);
      if (now === undefined) return;
    }
    const mentioned = isAddressed(addressingOf(now, this.#self));
    const addressing = addressingOf(now, this.#self);
    const destVisible =
      !movedStream || (event.new_stream_id !== undefined && this.#streamVisible(event.new_stream_id));
    const actor = event.user_id ?? undefined;
    const common = {
      targetMessageId: target,
      targetMessageIds: ids,
      ...(actor === undefined ? {} : { actorId: actor }),
      mentioned,
      ...(before === undefined ? {} : { previouslyMentioned: wasMentioned }),
    };
    if (edited) {
      const shown = destVisible
        ? now
        : {
            ...now,
            stream_id: before?.stream_id,
            display_recipient: before?.display_recipient ?? now.display_recipient,
          };
      const item = changeItem(
        this.#render,
        'edited',
        shown as FormattableMessage,
        c.id,
        event.id,
        changeTags('edited', addressing, now),
        {
          change: 'edited',
          ...common,
          ...(event.orig_content === undefined ? {} : { previousContent: event.orig_content }),
        },
      );
      out.push({ t: 'c', item, addressed: mentioned || wasMentioned, reaction: false });
    }
    if (movedStream || movedTopic) {
      const by = actor === undefined ? '' : ` [by user ${actor}]`;
      const count = ids.length === 1 ? '1 message' : `${ids.length} messages`;
      let body: string;
      let shown: FormattableMessage;
      let movedTo: string | undefined;
      if (!destVisible) {
        body = `moved to a stream this session cannot read (${count})${by}; it is no longer visible here`;
        shown = {
          ...now,
          stream_id: event.stream_id,
          display_recipient: before?.display_recipient ?? this.#streamOf(c)?.name ?? '',
          subject: event.orig_subject ?? now.subject,
          content: body,
        };
      } else {
        const fromStream = movedStream ? `${JSON.stringify(this.#streamOf(c)?.name ?? '')} > ` : '';
        body = `${movedStream ? 'moved' : 'topic changed'} from ${fromStream}${JSON.stringify(event.orig_subject ?? '')} (${count})${by}`;
        shown = { ...now, content: body };
        if (movedStream && event.new_stream_id !== undefined) {
          const dest = this.#channels.get(streamKey(event.new_stream_id));
          movedTo = dest?.id ?? streamChannelId(this.#streams.get(event.new_stream_id)?.name ?? '');
        }
      }
      const item = changeItem(
        this.#render,
        'moved',
        shown,
        c.id,
        event.id,
        changeTags('moved', addressing, now),
        {
          change: 'moved',
          ...common,
          ...(event.orig_subject === undefined ? {} : { previousTopic: event.orig_subject }),
          ...(movedTo === undefined ? {} : { movedToChannelId: movedTo }),
          ...(destVisible ? {} : { visible: false }),
        },
      );
      out.push({ t: 'c', item, addressed: mentioned || wasMentioned, reaction: false });
      // The messages now live where they went.
      const destKey = movedStream && event.new_stream_id !== undefined ? streamKey(event.new_stream_id) : key;
      for (const id of ids) {
        if (!destVisible) {
          this.#seen.delete(id);
          this.#cache.delete(id);
          continue;
        }
        if (this.#seen.has(id)) this.#noteSeen(id, destKey);
        const m = this.#cache.get(id);
        if (m !== undefined) {
          this.#cache.set(id, {
            ...m,
            ...(event.subject === undefined ? {} : { subject: event.subject }),
            ...(movedStream && event.new_stream_id !== undefined
              ? {
                  stream_id: event.new_stream_id,
                  display_recipient: this.#streams.get(event.new_stream_id)?.name ?? m.display_recipient,
                }
              : {}),
          });
        }
      }
    }
    if (edited && !(movedStream || movedTopic) && this.#cache.has(target))
      this.#cache.set(target, now as Message);
  }

  #onDelete(event: DeleteMessageEvent): void {
    const ids = event.message_ids ?? (event.message_id === undefined ? [] : [event.message_id]);
    for (const id of ids) {
      if (this.#ownChanges.delete(id)) {
        this.#seen.delete(id);
        this.#cache.delete(id);
        continue;
      }
      const key = this.#seen.get(id);
      if (key === undefined) continue;
      const c = this.#channels.get(key);
      this.#seen.delete(id);
      const before = this.#cache.get(id);
      this.#cache.delete(id);
      if (c === undefined || !c.registered) continue;
      if (c.target.kind === 'stream' && !this.#streamVisible(c.target.streamId)) continue;
      const body =
        before === undefined
          ? 'no longer visible: deleted, or moved where this session cannot read it'
          : `no longer visible: deleted, or moved where this session cannot read it; it read ${JSON.stringify(before.content)}`;
      const shown: FormattableMessage =
        before !== undefined
          ? { ...before, content: body }
          : {
              id,
              type: event.message_type === 'private' ? 'private' : 'stream',
              display_recipient: c.target.kind === 'stream' ? (this.#streamOf(c)?.name ?? '') : [],
              subject: event.topic ?? '',
              content: body,
              sender_full_name: '(unknown)',
              sender_id: 0,
              timestamp: Math.floor(Date.now() / 1000),
              ...(event.stream_id === undefined ? {} : { stream_id: event.stream_id }),
            };
      const addressing =
        before === undefined ? (c.target.kind === 'dm' ? 'dm' : 'ambient') : addressingOf(before, this.#self);
      const item = changeItem(
        this.#render,
        'deleted',
        shown,
        c.id,
        event.id,
        changeTags('deleted', addressing, shown),
        {
          change: 'deleted',
          targetMessageId: id,
          targetMessageIds: ids,
          ...(before === undefined
            ? {}
            : { previousContent: before.content, previouslyMentioned: isAddressed(addressing) }),
        },
      );
      this.#enqueueChange(c, item, isAddressed(addressing), false);
    }
  }

  async #onReaction(event: ReactionEvent): Promise<void> {
    if (event.user_id === this.#self) return;
    const key = this.#seen.get(event.message_id);
    if (key === undefined) return;
    const c = this.#channels.get(key);
    if (c === undefined || !c.registered || !c.open || !this.#showsReactions(c)) return;
    if (c.target.kind === 'stream' && !this.#streamVisible(c.target.streamId)) return;
    if (this.#filters.filters.suppresses(event)) return;
    if (this.#o.admission !== undefined && !this.#o.admission.check(event.user_id, 'reaction')) return;
    const place = this.#reserve(c);
    if (place === undefined) return;
    const out: Entry[] = [];
    try {
      await this.#reactionOf(event, c, out);
    } finally {
      place.fill(out);
      this.#pump(c);
    }
  }

  async #reactionOf(event: ReactionEvent, c: Channel, out: Entry[]): Promise<void> {
    const target = await this.#current(event.message_id);
    if (target === undefined) return;
    const reactor = this.#users.get(event.user_id);
    const shown: FormattableMessage = {
      ...target,
      sender_id: event.user_id,
      sender_full_name: reactor?.name ?? `user ${event.user_id}`,
      content: `${event.op === 'add' ? 'reacted' : 'removed the reaction'} :${event.emoji_name}:`,
      flags: [],
      last_edit_timestamp: undefined,
      last_moved_timestamp: undefined,
    };
    const item = changeItem(
      this.#render,
      event.op === 'add' ? 'reaction' : 'reaction-remove',
      shown,
      c.id,
      event.id,
      reactionTags(event.op, target.sender_id === this.#self),
      { emoji: event.emoji_name, op: event.op, targetMessageId: event.message_id },
    );
    out.push({ t: 'c', item, addressed: false, reaction: true });
  }

  // ---------------------------------------------------------------- read flags and state

  #markRead(ids: readonly number[]): void {
    if (this.#o.markRead !== true || ids.length === 0 || this.#client.readOnly) return;
    for (const id of ids) this.#readIds.push(id);
    if (this.#readFlushing) return;
    this.#readFlushing = true;
    this.#track(
      (async () => {
        try {
          while (this.#readIds.length > 0 && this.#state === 'running') {
            const chunk = this.#readIds.splice(0, READ_FLAG_BATCH);
            try {
              await this.#client.updateMessageFlags(
                { messages: chunk, op: 'add', flag: 'read' },
                this.#call(),
              );
            } catch (err) {
              this.#logger.warn('could not mark delivered messages read', { code: codeOf(err) });
            }
          }
        } finally {
          this.#readFlushing = false;
        }
      })(),
    );
  }

  #track(p: Promise<unknown>): void {
    const tracked = p.catch((err: unknown) => {
      this.#logger.error('a delivery task failed', { code: codeOf(err) });
    });
    this.#background.add(tracked);
    void tracked.finally(() => this.#background.delete(tracked));
  }

  #snapshot(): DeliveryState {
    const channels: Record<string, ChannelState> = {};
    for (const c of this.#channels.values()) {
      const above = [...c.above].filter((a) => a > c.w).sort((a, b) => a - b);
      channels[c.key] = {
        id: c.id,
        w: c.w,
        ...(above.length === 0 ? {} : { above }),
        ...(c.open || (c.wasOpen && !c.registered) ? { open: true as const } : {}),
        ...(c.refused ? { refused: true as const } : {}),
        ...(c.ambient > 0 ? { ambient: c.ambient } : {}),
        ...(c.ambientFrom === undefined ? {} : { ambientFrom: c.ambientFrom }),
        ...(c.ambientTo === undefined ? {} : { ambientTo: c.ambientTo }),
        ...(c.recentSeen.length === 0 ? {} : { seen: [...c.recentSeen] }),
      };
    }
    return { version: 1, head: this.#head, channels };
  }
}
