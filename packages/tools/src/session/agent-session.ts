import {
  type AdmissionGate,
  type CallOptions,
  type Conversation,
  checkEmojiName,
  errorCode,
  isNoBotsMessage,
  isNoBotsTopic,
  type Logger,
  type Message,
  messageConversation,
  type NarrowTerm,
  noopLogger,
  quoteName,
  quotePerson,
  readMessage,
  readNarrow,
  sameTopic,
} from '@zmcp/core';
import {
  type InterruptNote,
  type InterruptWatcher,
  parseInterruptNotes,
  watchInterruptFile,
} from '@zmcp/delivery';
import { z } from 'zod';
import { asToolInput, ToolError } from '../errors.js';
import { fitToBudget } from '../page.js';
import { readVisibleMessage } from '../read/message-access.js';
import { checkStreamReadable, itemBudget, resolveStream, streamLabel, topicLabel } from '../read/shared.js';
import type { ToolServices } from '../services.js';
import { checkTopic } from '../write/common.js';

/** The dismiss emoji when none is configured: 🛑, which Zulip names `stop`. */
export const DEFAULT_DISMISS_EMOJI = 'stop';
/** The listening indicator when the realm has no custom `robot_ear`. */
export const DEFAULT_LISTEN_EMOJI = 'ear';
/** The custom emoji preferred as the listening indicator when the realm has it. */
export const CUSTOM_LISTEN_EMOJI = 'robot_ear';
/** How often `listen` reports progress by default, in milliseconds. */
export const DEFAULT_PROGRESS_INTERVAL_MS = 15_000;

/** Most messages one catch-up reads; more are left for the next call. */
const CATCH_UP_LIMIT = 100;
/** How many of the bot's newest messages the REST dismiss check looks at. */
const DISMISS_SCAN = 20;
/** Deadline of a clean-up request (indicator removal, typing stop), which may run after the call's own deadline. */
const CLEANUP_TIMEOUT_MS = 5_000;

/** Where a launcher started the agent: `SESSION_STREAM`, `SESSION_TOPIC`, `TRIGGER_MESSAGE_ID`. */
export interface AgentSessionLaunch {
  /** Stream name or id. Needs `topic`, unless `triggerMessageId` names the conversation. */
  stream?: string | number | undefined;
  /** Topic. Needs `stream`, unless `triggerMessageId` names the conversation. */
  topic?: string | undefined;
  /** The message that called the agent; alone, it names the conversation too. */
  triggerMessageId?: number | undefined;
}

/** Options of {@link createAgentSession}. */
export interface AgentSessionOptions {
  /** A reaction with this emoji on one of the bot's messages of the session, by a person, ends it. Default `stop` (🛑). */
  dismissEmoji?: string | undefined;
  /** The reaction shown while listening. Default the realm's custom `robot_ear` if it has one, else `ear`. */
  listenEmoji?: string | undefined;
  /** A file whose appearance wakes `listen`; its text is handed to the agent (as untrusted text). */
  interruptFile?: string | undefined;
  /** Send typing "start" when `listen` hands the agent new messages. Stops are always sent. Default true. */
  autoTyping?: boolean | undefined;
  /** Start bound to the conversation a launcher names. */
  launch?: AgentSessionLaunch | undefined;
  /** How often `listen` reports progress, in milliseconds. Default 15 000. */
  progressIntervalMs?: number | undefined;
  /** Told about best-effort failures (indicator, typing, interrupt file). Silent by default. */
  logger?: Logger | undefined;
  /**
   * Who may steer or dismiss the agent (core's admission gate, by user id): a dismiss reaction
   * or a message of the conversation from anyone else changes nothing (`listen` and `reply` never
   * hand it over). Without one, any person may dismiss and every message is handed over.
   */
  admission?: AdmissionGate | undefined;
}

/** Zulip's reaction kinds. */
export type ListenReactionType = 'unicode_emoji' | 'realm_emoji' | 'zulip_extra_emoji';

/** The reaction the bot shows on the newest message while it listens. */
export interface ListeningIndicator {
  messageId: number;
  emojiName: string;
  /** Needed to remove a custom emoji: Zulip's removal defaults to `unicode_emoji`. */
  reactionType: ListenReactionType;
}

/** Why a session ended on the conversation's side. */
export interface SessionEnd {
  /** `resolved`: an admitted person resolved the topic (Zulip's ✔ prefix); `moved`: it moved where the bot may not read. */
  reason: 'dismissed' | 'nobots' | 'resolved' | 'moved';
  stream: string;
  topic: string;
  /** Who reacted with the dismiss emoji, or resolved the topic. */
  byUserId: number | undefined;
  byName: string | undefined;
  /** The bot message the dismiss reaction is on (dismissed only). */
  messageId: number | undefined;
}

/** A snapshot of a session, for the app's status output and for tests. */
export interface AgentSessionState {
  bound: boolean;
  stream: string | undefined;
  streamId: number | undefined;
  topic: string | undefined;
  triggerMessageId: number | undefined;
  /** Newest message id of the conversation the agent has been shown or skipped on purpose (own, /nobots). */
  lastSeenId: number;
  indicator: ListeningIndicator | undefined;
  /** The last typing notification sent. */
  typing: 'started' | 'stopped' | 'none';
  ended: SessionEnd | undefined;
  listening: boolean;
  /** Interrupt texts claimed and not yet handed to the agent. */
  pendingInterrupts: number;
}

/** One agent session: the conversation the agent works in, and what it has seen there. */
export interface AgentSession {
  /** The emoji whose reaction, by a person on one of the bot's messages of the session, ends it. */
  readonly dismissEmoji: string;
  /** Whether `listen` sends typing "start" when it hands over messages (stops are always sent). */
  readonly autoTyping: boolean;
  /** How often `listen` reports progress, in milliseconds. */
  readonly progressIntervalMs: number;
  /** The interrupt file watched while the session lives, if any. */
  readonly interruptFile: string | undefined;
  /** What the session is bound to and has seen. */
  state(): AgentSessionState;
  /**
   * What the session keeps between calls, as JSON, for a host that carries a session across
   * processes (2026-era HTTP, where no connection holds it): the conversation, where the agent has
   * read up to, how the session ended, and the messages handed over lately. The listening
   * indicator, typing and the interrupt file stay with the process that made them.
   */
  snapshot(): AgentSessionSnapshot;
  /**
   * Takes on what another process left (see {@link AgentSession.snapshot}). Bound to the same
   * conversation, the read position never moves back; bound elsewhere, the snapshot wins. A listen
   * running here carries on. A launch not yet bound is dropped: the snapshot is the session now.
   */
  restore(snapshot: AgentSessionSnapshot): void;
  /** Settles once the clean-up a tool left running (indicator removal, queue deletion, typing) is done. */
  settled(): Promise<void>;
  /** Stops a running listen, removes the indicator, sends typing stop and stops watching the interrupt file. Idempotent; call it at exit. */
  close(): Promise<void>;
}

/** The conversation a session is bound to. */
export interface Binding {
  stream: string;
  streamId: number;
  topic: string;
  triggerMessageId: number | undefined;
  /** Only the bot's messages after this id count for dismissal: older ones belong to earlier sessions. */
  dismissAfterId: number;
}

const BindingSchema = z.object({
  stream: z.string(),
  streamId: z.number().int(),
  topic: z.string(),
  triggerMessageId: z.number().int().nullable(),
  dismissAfterId: z.number().int(),
});

/** How many handed-over message ids a snapshot keeps: the newest ones, which a later read could meet again. */
const SNAPSHOT_HANDED_OVER = 500;

/** The stored form of an agent session between calls (see {@link AgentSession.snapshot}). */
export const AgentSessionSnapshotSchema = z.object({
  binding: BindingSchema.nullable(),
  ended: z
    .object({
      reason: z.enum(['dismissed', 'nobots', 'resolved', 'moved']),
      stream: z.string(),
      topic: z.string(),
      byUserId: z.number().int().nullable(),
      byName: z.string().nullable(),
      messageId: z.number().int().nullable(),
    })
    .nullable(),
  lastSeenId: z.number().int(),
  newestVisibleId: z.number().int().nullable(),
  handedOver: z.array(z.number().int()).max(SNAPSHOT_HANDED_OVER),
});

/** An agent session between calls, as JSON. */
export type AgentSessionSnapshot = z.infer<typeof AgentSessionSnapshotSchema>;

/** Whether two snapshots' sessions are bound to the same conversation (the read positions then compare). */
export function sameConversation(
  a: AgentSessionSnapshot['binding'],
  b: AgentSessionSnapshot['binding'],
): boolean {
  if (a === null || b === null) return a === b;
  return (
    a.streamId === b.streamId &&
    a.topic.toLowerCase() === b.topic.toLowerCase() &&
    a.dismissAfterId === b.dismissAfterId
  );
}

/** A dismiss reaction found on one of the bot's messages. */
export interface Dismissal {
  messageId: number;
  userId: number;
  name: string;
}

/** Messages of the conversation newer than last-seen, sorted. */
export interface Absorbed {
  /** Messages for the agent: not the bot's own, not /nobots. */
  visible: Message[];
  /** /nobots messages left out. */
  hidden: number;
  /** Newest id among everything read (own and hidden included). */
  newestId: number | undefined;
}

/** Messages cut to the page budget, with last-seen moved past what was shown. */
export interface Presented {
  shown: Message[];
  text: string;
  /** Messages remain for a later call (cut by the budget, or more than one read returns). */
  moreWaiting: boolean;
}

function isTimeoutAbort(signal: AbortSignal): boolean {
  const reason = signal.reason as { name?: unknown } | undefined;
  return signal.aborted && reason?.name === 'TimeoutError';
}

/**
 * The state and the mechanics behind the session tools. Internal to the package: the app holds
 * it as an {@link AgentSession}.
 */
export class SessionCore implements AgentSession {
  readonly services: ToolServices;
  readonly dismissEmoji: string;
  readonly autoTyping: boolean;
  readonly progressIntervalMs: number;
  readonly interruptFile: string | undefined;
  readonly logger: Logger;
  readonly admission: AdmissionGate | undefined;
  /** What the gate refused already (messages, dismiss reactions), so each refusal counts once. */
  readonly #refused = new Set<string>();
  readonly #listenEmojiOption: string | undefined;
  #launch: AgentSessionLaunch | undefined;
  #binding: Binding | undefined;
  #ended: SessionEnd | undefined;
  #lastSeenId = 0;
  #newestVisibleId: number | undefined;
  #indicator: ListeningIndicator | undefined;
  #typing: 'started' | 'stopped' | 'none' = 'none';
  #typingChain: Promise<void> = Promise.resolve();
  #listenStop: ((why: 'rebound' | 'closed') => void) | undefined;
  #listenEnded: Promise<void> | undefined;
  #listenEmoji: Promise<{ name: string; type: ListenReactionType; code: string | undefined }> | undefined;
  readonly #pending = new Set<Promise<unknown>>();
  /** Interrupt notes claimed and not yet handed to the agent. */
  readonly #interrupts: InterruptNote[] = [];
  /**
   * Messages the agent was handed, as message lines or inside an interrupt note that passes them
   * on: each reaches the agent once (see {@link SessionCore.handOver}).
   */
  readonly #handedOver = new Set<number>();
  readonly #interruptWaiters = new Set<() => void>();
  #watcher: InterruptWatcher | undefined;
  #closed = false;

  constructor(services: ToolServices, options: AgentSessionOptions) {
    this.services = services;
    this.dismissEmoji = asToolInput(() =>
      checkEmojiName(options.dismissEmoji ?? DEFAULT_DISMISS_EMOJI, { field: 'dismissEmoji' }),
    );
    this.#listenEmojiOption =
      options.listenEmoji === undefined
        ? undefined
        : asToolInput(() => checkEmojiName(options.listenEmoji as string, { field: 'listenEmoji' }));
    this.autoTyping = options.autoTyping ?? true;
    const interval = options.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS;
    if (!Number.isFinite(interval) || interval < 1) {
      throw new ToolError(
        'TOOLS_INVALID_INPUT',
        'progressIntervalMs must be a positive number of milliseconds.',
        {
          field: 'progressIntervalMs',
        },
      );
    }
    this.progressIntervalMs = interval;
    if (options.interruptFile !== undefined && options.interruptFile.trim() === '') {
      throw new ToolError('TOOLS_INVALID_INPUT', 'interruptFile must be a path, not empty.', {
        field: 'interruptFile',
      });
    }
    this.interruptFile = options.interruptFile;
    this.logger = options.logger ?? noopLogger;
    this.admission = options.admission;
    this.#launch = checkLaunch(options.launch);
  }

  // ---------------------------------------------------------------- state

  state(): AgentSessionState {
    const b = this.#binding;
    return {
      bound: b !== undefined,
      stream: b?.stream,
      streamId: b?.streamId,
      topic: b?.topic,
      triggerMessageId: b?.triggerMessageId,
      lastSeenId: this.#lastSeenId,
      indicator: this.#indicator === undefined ? undefined : { ...this.#indicator },
      typing: this.#typing,
      ended: this.#ended === undefined ? undefined : { ...this.#ended },
      listening: this.#listenStop !== undefined,
      pendingInterrupts: this.#interrupts.length,
    };
  }

  snapshot(): AgentSessionSnapshot {
    const b = this.#binding;
    const e = this.#ended;
    return {
      binding:
        b === undefined
          ? null
          : {
              stream: b.stream,
              streamId: b.streamId,
              topic: b.topic,
              triggerMessageId: b.triggerMessageId ?? null,
              dismissAfterId: b.dismissAfterId,
            },
      ended:
        e === undefined
          ? null
          : {
              reason: e.reason,
              stream: e.stream,
              topic: e.topic,
              byUserId: e.byUserId ?? null,
              byName: e.byName ?? null,
              messageId: e.messageId ?? null,
            },
      lastSeenId: this.#lastSeenId,
      newestVisibleId: this.#newestVisibleId ?? null,
      handedOver: [...this.#handedOver].slice(-SNAPSHOT_HANDED_OVER),
    };
  }

  restore(snapshot: AgentSessionSnapshot): void {
    const stored = AgentSessionSnapshotSchema.parse(snapshot);
    const here = this.snapshot();
    const same = sameConversation(here.binding, stored.binding);
    this.#launch = undefined;
    const b = stored.binding;
    this.#binding =
      b === null
        ? undefined
        : {
            stream: b.stream,
            streamId: b.streamId,
            topic: b.topic,
            triggerMessageId: b.triggerMessageId ?? undefined,
            dismissAfterId: b.dismissAfterId,
          };
    const e = stored.ended;
    this.#ended =
      e === null
        ? undefined
        : {
            reason: e.reason,
            stream: e.stream,
            topic: e.topic,
            byUserId: e.byUserId ?? undefined,
            byName: e.byName ?? undefined,
            messageId: e.messageId ?? undefined,
          };
    this.#lastSeenId = same ? Math.max(this.#lastSeenId, stored.lastSeenId) : stored.lastSeenId;
    const newest = stored.newestVisibleId ?? undefined;
    this.#newestVisibleId =
      same && this.#newestVisibleId !== undefined && (newest === undefined || this.#newestVisibleId > newest)
        ? this.#newestVisibleId
        : newest;
    for (const id of stored.handedOver) this.#handedOver.add(id);
  }

  get lastSeenId(): number {
    return this.#lastSeenId;
  }

  get binding(): Binding | undefined {
    return this.#binding;
  }

  get ended(): SessionEnd | undefined {
    return this.#ended;
  }

  /** `#stream > topic`, printed as message lines print them. */
  label(b: Pick<Binding, 'stream' | 'topic'>): string {
    return `${streamLabel(b.stream)} > ${topicLabel(b.topic)}`;
  }

  /** Binds the session to a conversation (set_context, a launch), forgetting the previous one. */
  bind(binding: Binding, lastSeenId: number, newestVisibleId: number | undefined): void {
    this.#listenStop?.('rebound');
    this.#launch = undefined;
    this.removeIndicator();
    this.#binding = binding;
    this.#ended = undefined;
    this.#lastSeenId = lastSeenId;
    this.#newestVisibleId = newestVisibleId;
  }

  /** Follows the bound topic to its new name (renamed, or resolved with ✔), and stream when it moved to another. */
  retopic(topic: string, stream?: { streamId: number; stream: string }): Binding | undefined {
    if (this.#binding === undefined) return undefined;
    this.#binding = { ...this.#binding, topic, ...(stream ?? {}) };
    return this.#binding;
  }

  /**
   * Where the bound conversation is now, read from a message of it (the trigger, else the message
   * the session started after): undefined when it is still where the binding says, or the message
   * is gone. A move made while nobody listened is found this way.
   */
  async whereNow(
    b: Binding,
    call: CallOptions,
  ): Promise<{ streamId: number; topic: string; byUserId: number | undefined } | undefined> {
    const anchor = b.triggerMessageId ?? (b.dismissAfterId > 0 ? b.dismissAfterId : undefined);
    if (anchor === undefined) return undefined;
    let m: Message;
    try {
      m = await readMessage(this.services.client, this.services.policy, anchor, {
        streams: await this.services.directory.streamLookup(call),
        call,
      });
    } catch (err) {
      const code = errorCode(err);
      // Deleted, or moved out of the bot's reach: the caller cannot tell, the binding stays.
      if (code === 'CORE_ACCESS_DENIED' || code === 'CORE_BAD_REQUEST' || code === 'CORE_NOT_FOUND')
        return undefined;
      throw err;
    }
    if (m.type !== 'stream' || m.stream_id === undefined) return undefined;
    if (m.stream_id === b.streamId && m.subject === b.topic) return undefined;
    // Who moved it last: the newest entry of its edit history that names a topic or stream change.
    const last = (m.edit_history ?? []).find(
      (e) =>
        (e as Record<string, unknown>).prev_topic !== undefined ||
        (e as Record<string, unknown>).prev_stream !== undefined,
    ) as Record<string, unknown> | undefined;
    const by = last?.user_id;
    return { streamId: m.stream_id, topic: m.subject, byUserId: typeof by === 'number' ? by : undefined };
  }

  /** Clears the binding (end_session); returns what was bound. */
  unbind(): Binding | undefined {
    const was = this.#binding;
    this.#listenStop?.('rebound');
    this.#launch = undefined;
    this.#binding = undefined;
    this.#ended = undefined;
    this.removeIndicator();
    if (was !== undefined) this.typing(was, 'stop');
    return was;
  }

  /** Ends the session on the conversation's side (dismissed, or the topic opted out of bots). */
  end(end: Omit<SessionEnd, 'stream' | 'topic'>): SessionEnd {
    const b = this.#binding;
    this.#listenStop?.('rebound');
    const ended: SessionEnd = { ...end, stream: b?.stream ?? '', topic: b?.topic ?? '' };
    this.#ended = ended;
    this.#binding = undefined;
    this.removeIndicator();
    if (b !== undefined) this.typing(b, 'stop');
    return ended;
  }

  /** What the model is told when it uses a session that ended. */
  endedMessage(ended: SessionEnd): string {
    const where = this.label(ended);
    if (ended.reason === 'nobots') {
      return `The session in ${where} is over: the topic was renamed to opt out of bots (/nobots). Do not post there.`;
    }
    if (ended.reason === 'moved') {
      return `The session in ${where} is over: the topic was moved where you may not read. Call end_session.`;
    }
    if (ended.reason === 'resolved') {
      const who =
        ended.byUserId === undefined
          ? 'someone'
          : quotePerson(
              ended.byName ?? `user ${ended.byUserId}`,
              ended.byUserId,
              'person',
              this.services.directory.people,
            );
      return `The session in ${where} is over: ${who} resolved the topic, which ends it as a dismissal does. Do not post there again; call end_session.`;
    }
    return `The session in ${where} is over: ${ended.byName === undefined ? 'someone' : ended.byUserId === undefined ? quoteName(ended.byName, 'person') : quotePerson(ended.byName, ended.byUserId, 'person', this.services.directory.people)} reacted :${this.dismissEmoji}: to your message ${ended.messageId ?? '?'}, which dismisses you. Do not post there again; call set_context only if someone asks for you again.`;
  }

  /**
   * The bound conversation; a pending launch is resolved first.
   * @throws ToolError `TOOLS_SESSION_ENDED` after a dismissal, `TOOLS_NO_SESSION` when nothing is bound;
   *   a launch that names something unreadable fails with the read's own error.
   */
  async requireBinding(call: CallOptions): Promise<Binding> {
    if (this.#binding !== undefined) return this.#binding;
    if (this.#ended !== undefined) throw new ToolError('TOOLS_SESSION_ENDED', this.endedMessage(this.#ended));
    const launch = this.#launch;
    if (launch !== undefined) {
      try {
        await this.#bindLaunch(launch, call);
      } catch (err) {
        // A launch that names something the bot cannot use stays broken: let the model choose.
        const code = errorCode(err);
        if (code === 'TOOLS_NOT_FOUND' || code === 'TOOLS_INVALID_INPUT' || code === 'CORE_ACCESS_DENIED') {
          if (this.#launch === launch) this.#launch = undefined;
        }
        throw err;
      }
      if (this.#binding !== undefined) return this.#binding;
    }
    throw new ToolError(
      'TOOLS_NO_SESSION',
      'No conversation is bound to this session. Call set_context with the stream and topic you were called to (and the trigger message id) first.',
    );
  }

  /**
   * Where a question for the people of this session goes: the bound topic, else the conversation
   * of the launch (a DM launch included, which never binds).
   * @throws ToolError `TOOLS_SESSION_ENDED`, `TOOLS_NO_SESSION`; the read's own codes.
   */
  async conversation(call: CallOptions): Promise<Conversation> {
    const launch = this.#launch;
    if (this.#binding === undefined && this.#ended === undefined && launch?.triggerMessageId !== undefined) {
      const trigger = await readVisibleMessage(this.services, launch.triggerMessageId, call);
      if (trigger.type === 'private') {
        const dm = messageConversation(trigger, this.services.identity.user_id);
        if (dm !== undefined) return dm;
      }
    }
    const b = await this.requireBinding(call);
    return { kind: 'stream', streamId: b.streamId, topic: b.topic };
  }

  async #bindLaunch(launch: AgentSessionLaunch, call: CallOptions): Promise<void> {
    let streamRef = launch.stream;
    let topic = launch.topic;
    if (launch.triggerMessageId !== undefined && (streamRef === undefined || topic === undefined)) {
      const trigger = await readVisibleMessage(this.services, launch.triggerMessageId, call);
      if (trigger.type !== 'stream') {
        throw new ToolError(
          'TOOLS_INVALID_INPUT',
          `The launch trigger message ${trigger.id} is a direct message; a session is bound to a stream topic.`,
          { field: 'triggerMessageId' },
        );
      }
      streamRef = trigger.stream_id ?? String(trigger.display_recipient);
      topic = trigger.subject;
    }
    const target = await this.resolveTarget(
      streamRef as string | number,
      topic as string,
      launch.triggerMessageId,
      call,
    );
    let lastSeen = launch.triggerMessageId ?? 0;
    let newestVisible = launch.triggerMessageId;
    if (launch.triggerMessageId === undefined) {
      const newest = await readNarrow(this.services.client, this.services.policy, {
        narrow: this.narrow(target),
        range: { kind: 'newest', limit: 1 },
        streams: await this.services.directory.streamLookup(call),
        call,
      });
      const last = newest.messages[newest.messages.length - 1];
      lastSeen = last?.id ?? 0;
      newestVisible = last !== undefined && !isNoBotsMessage(last) ? last.id : undefined;
    }
    if (this.#launch !== launch) return; // set_context bound something else meanwhile
    this.bind({ ...target, dismissAfterId: launch.triggerMessageId ?? lastSeen }, lastSeen, newestVisible);
  }

  /**
   * Checks a conversation the session may bind to: a stream the policy lets the bot read, a topic
   * it could reply in that does not opt out of bots, and a trigger message inside it.
   * @throws ToolError `TOOLS_NOT_FOUND`, `TOOLS_INVALID_INPUT`; ZmcpError `CORE_ACCESS_DENIED`.
   */
  async resolveTarget(
    streamRef: string | number,
    topicRaw: string,
    triggerId: number | undefined,
    call: CallOptions,
  ): Promise<Omit<Binding, 'dismissAfterId'> & { trigger: Message | undefined }> {
    const stream = await resolveStream(this.services, streamRef, call);
    await checkStreamReadable(this.services, stream, call);
    let topic = checkTopic(topicRaw);
    if (isNoBotsTopic(topic)) {
      throw new ToolError(
        'TOOLS_INVALID_INPUT',
        'topic opts out of bots (/nobots); a session cannot be bound there.',
        { field: 'topic' },
      );
    }
    let trigger: Message | undefined;
    if (triggerId !== undefined) {
      trigger = await readVisibleMessage(this.services, triggerId, call);
      if (
        trigger.type !== 'stream' ||
        trigger.stream_id !== stream.stream_id ||
        !sameTopic(trigger.subject, topic)
      ) {
        throw new ToolError(
          'TOOLS_INVALID_INPUT',
          `trigger_message_id ${triggerId} is not in ${streamLabel(stream.name)} > ${topicLabel(topic)}; pass the stream and topic the message is in.`,
          { field: 'trigger_message_id' },
        );
      }
      // Zulip matches topics case-insensitively; answer in the topic as it is spelled there.
      topic = trigger.subject;
    }
    return { stream: stream.name, streamId: stream.stream_id, topic, triggerMessageId: triggerId, trigger };
  }

  /** The narrow of a bound conversation. */
  narrow(b: Pick<Binding, 'streamId' | 'topic'>): NarrowTerm[] {
    return [
      { operator: 'channel', operand: b.streamId },
      { operator: 'topic', operand: b.topic },
    ];
  }

  /** Whether a message belongs to the bound conversation. */
  inConversation(b: Binding, m: Message): boolean {
    return m.type === 'stream' && m.stream_id === b.streamId && sameTopic(m.subject, b.topic);
  }

  // ---------------------------------------------------------------- what arrived

  /**
   * Splits messages newer than last-seen into what the agent sees, /nobots ones, and the bot's own;
   * a message an interrupt note already passed on, or one from someone the gate does not admit, is
   * skipped like the bot's own.
   */
  absorb(messages: readonly Message[]): Absorbed {
    const self = this.services.identity.user_id;
    const visible: Message[] = [];
    let hidden = 0;
    let newestId: number | undefined;
    const sorted = [...messages].sort((a, b) => a.id - b.id);
    for (const m of sorted) {
      if (m.id <= this.#lastSeenId) continue;
      if (newestId !== undefined && m.id === newestId) continue;
      newestId = m.id;
      if (isNoBotsMessage(m)) hidden++;
      else if (m.sender_id !== self && !this.#handedOver.has(m.id) && this.fromAdmitted(m)) visible.push(m);
    }
    return { visible, hidden, newestId };
  }

  /**
   * Reads what arrived in the conversation after last-seen, through the read gate.
   * @throws ZmcpError `CORE_ACCESS_DENIED` and the request codes.
   */
  async catchUp(b: Binding, call: CallOptions): Promise<Absorbed & { hasMore: boolean }> {
    // What `present` prints tells people apart by the realm's names: know them first.
    await this.services.directory.knownPeople(call);
    const res = await this.readSince(b, call);
    return { ...this.absorb(res.messages), hasMore: res.hasMore };
  }

  /**
   * The conversation's messages after last-seen (at most one catch-up's worth), through the read gate.
   * @throws ZmcpError `CORE_ACCESS_DENIED` and the request codes.
   */
  async readSince(b: Binding, call: CallOptions): Promise<{ messages: Message[]; hasMore: boolean }> {
    const res = await readNarrow(this.services.client, this.services.policy, {
      narrow: this.narrow(b),
      range: { kind: 'since', afterId: this.#lastSeenId, limit: CATCH_UP_LIMIT },
      streams: await this.services.directory.streamLookup(call),
      call,
    });
    return { messages: res.messages.filter((m) => this.inConversation(b, m)), hasMore: res.hasMore };
  }

  /**
   * Cuts absorbed messages to the page budget (less `reserveBytes`) and moves last-seen past what
   * is shown, never past a message that was cut off.
   */
  present(absorbed: Absorbed, hasMore: boolean, reserveBytes = 0): Presented {
    const lines = absorbed.visible.map((m) => this.services.line(m));
    const budget = Math.max(200, itemBudget(this.services) - reserveBytes);
    const fit = lines.length === 0 ? { text: '', shown: 0 } : fitToBudget(lines, budget);
    const shown = absorbed.visible.slice(0, fit.shown);
    const cut = shown.length < absorbed.visible.length;
    const last = shown[shown.length - 1];
    if (!cut) {
      if (absorbed.newestId !== undefined) this.advance(absorbed.newestId);
    } else if (last !== undefined) {
      this.advance(last.id);
    }
    if (last !== undefined) this.sawVisible(last.id);
    this.shown(shown);
    return { shown, text: fit.text, moreWaiting: cut || hasMore };
  }

  /** Records messages the agent was shown as message lines (by any tool). */
  shown(messages: readonly Pick<Message, 'id'>[]): void {
    for (const m of messages) this.#handedOver.add(m.id);
  }

  /** Whether the agent was handed this message already, as a message line or inside an interrupt note. */
  handedOver(id: number): boolean {
    return this.#handedOver.has(id);
  }

  /**
   * What `listen` hands the agent now: the messages (cut to the page budget, see
   * {@link SessionCore.present}), then the interrupt notes claimed so far, each rendered by
   * `render`. The one place that decides, by message id, that a message reaches the agent once:
   * a note passing on a message shown now or before is dropped, and a message passed on in a
   * note is recorded, so no later read shows it again ({@link SessionCore.absorb} and listen's
   * collection skip it).
   */
  handOver(
    absorbed: Absorbed | undefined,
    hasMore: boolean,
    render: (note: string) => string,
  ): { presented: Presented; notes: string[] } {
    const claimed = this.#interrupts.splice(0);
    const reserve = claimed.reduce((n, note) => n + render(note.text).length, 0);
    const presented =
      absorbed === undefined
        ? { shown: [], text: '', moreWaiting: false }
        : this.present(absorbed, hasMore, reserve);
    const notes: string[] = [];
    for (const note of claimed) {
      if (note.messageId !== undefined) {
        if (this.#handedOver.has(note.messageId)) continue;
        this.#handedOver.add(note.messageId);
      }
      notes.push(render(note.text));
    }
    return { presented, notes };
  }

  /** Moves last-seen forward (never back). */
  advance(id: number): void {
    if (id > this.#lastSeenId) this.#lastSeenId = id;
  }

  /** Records the newest message the listening indicator may go on. */
  sawVisible(id: number): void {
    if (this.#newestVisibleId === undefined || id > this.#newestVisibleId) this.#newestVisibleId = id;
  }

  // ---------------------------------------------------------------- admission

  /**
   * Whether the gate lets `userId` reach the agent by `path` (true without a gate). A refusal is
   * counted once per `key` (a message, a reaction), however often the same thing is read again.
   */
  admitted(userId: number, path: 'follow-up' | 'dismissal', key: string): boolean {
    const gate = this.admission;
    if (gate === undefined || gate.admits(userId)) return true;
    if (!this.#refused.has(key)) {
      if (this.#refused.size >= 10_000) this.#refused.clear();
      this.#refused.add(key);
      gate.check(userId, path);
    }
    return false;
  }

  /** Whether a message of the conversation may reach the agent: the gate admits its sender. */
  fromAdmitted(m: Pick<Message, 'id' | 'sender_id'>): boolean {
    return this.admitted(m.sender_id, 'follow-up', `m${m.id}`);
  }

  // ---------------------------------------------------------------- dismissal

  /** Whether a user is a person (not a bot); unknown users are fetched once, then counted as people. */
  async person(userId: number, call: CallOptions): Promise<{ human: boolean; name: string }> {
    if (userId === this.services.identity.user_id)
      return { human: false, name: this.services.identity.full_name };
    let user = (await this.services.directory.users(call)).find((u) => u.user_id === userId);
    if (user === undefined) {
      this.services.directory.invalidate('users');
      user = (await this.services.directory.users(call)).find((u) => u.user_id === userId);
    }
    return { human: user?.is_bot !== true, name: user?.full_name ?? `user ${userId}` };
  }

  /** Whether a reaction by `userId` with `emojiName` on `message` dismisses the bound session. */
  async dismisses(
    b: Binding,
    message: Message,
    emojiName: string,
    userId: number,
    call: CallOptions,
  ): Promise<Dismissal | undefined> {
    if (emojiName !== this.dismissEmoji) return undefined;
    if (message.sender_id !== this.services.identity.user_id) return undefined;
    if (message.id <= b.dismissAfterId || !this.inConversation(b, message)) return undefined;
    // With a gate, only the people it admits dismiss; without one, any person (not a bot).
    if (!this.admitted(userId, 'dismissal', `r${message.id}:${userId}`)) return undefined;
    const who = await this.person(userId, call);
    if (this.admission === undefined && !who.human) return undefined;
    return { messageId: message.id, userId, name: who.name };
  }

  /**
   * The REST dismiss check: the bot's recent messages of this session in the conversation, and a
   * dismiss reaction on one of them by a person.
   */
  async findDismissal(b: Binding, call: CallOptions): Promise<Dismissal | undefined> {
    const self = this.services.identity.user_id;
    const res = await readNarrow(this.services.client, this.services.policy, {
      narrow: [...this.narrow(b), { operator: 'sender', operand: self }],
      range: { kind: 'newest', limit: DISMISS_SCAN },
      streams: await this.services.directory.streamLookup(call),
      call,
    });
    for (const m of [...res.messages].reverse()) {
      for (const r of m.reactions ?? []) {
        if (r.user_id === self) continue;
        const found = await this.dismisses(b, m, r.emoji_name, r.user_id, call);
        if (found !== undefined) return found;
      }
    }
    return undefined;
  }

  // ---------------------------------------------------------------- indicator, typing, subscription

  /** Background work (clean-up after a call) the next call and `close()` wait for. */
  track(work: Promise<unknown>): void {
    const p = work.catch((err: unknown) =>
      this.logger.debug('session clean-up failed', { err: codeOf(err) }),
    );
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p));
  }

  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }

  /**
   * Whether the policy lets the bot act in the stream: the write allowlist covers everything the
   * bot does there, a listening indicator and a typing notice included, not only messages.
   */
  async mayWriteIn(streamId: number, call: CallOptions = {}): Promise<boolean> {
    try {
      this.services.policy.checkWrite({ stream: streamId }, await this.services.directory.streamLookup(call));
      return true;
    } catch {
      return false;
    }
  }

  /** Sends a typing notification to the conversation, in order with earlier ones; best effort, never where writes are refused. */
  typing(b: Pick<Binding, 'streamId' | 'topic'>, op: 'start' | 'stop'): void {
    if (this.services.policy.readOnly) return;
    this.#typing = op === 'start' ? 'started' : 'stopped';
    const send = async () => {
      if (!(await this.mayWriteIn(b.streamId, { timeoutMs: CLEANUP_TIMEOUT_MS }))) return;
      await this.services.client
        .setTyping(
          { op, type: 'stream', streamId: b.streamId, topic: b.topic },
          { timeoutMs: CLEANUP_TIMEOUT_MS },
        )
        .catch((err: unknown) => this.logger.debug('typing notification failed', { op, err: codeOf(err) }));
    };
    this.#typingChain = this.#typingChain.then(send);
    this.track(this.#typingChain);
  }

  /** The listening indicator's emoji: the configured one, else the realm's `robot_ear`, else `ear`. */
  listenEmoji(
    call: CallOptions,
  ): Promise<{ name: string; type: ListenReactionType; code: string | undefined }> {
    if (this.#listenEmoji === undefined) {
      const wanted = this.#listenEmojiOption;
      this.#listenEmoji = (async () => {
        const custom = await this.services.client.getRealmEmoji(call);
        const find = (name: string) => custom.find((e) => e.name === name && e.deactivated !== true);
        const name =
          wanted ?? (find(CUSTOM_LISTEN_EMOJI) !== undefined ? CUSTOM_LISTEN_EMOJI : DEFAULT_LISTEN_EMOJI);
        const realm = find(name);
        if (realm !== undefined) return { name, type: 'realm_emoji' as const, code: realm.id };
        if (name === 'zulip') return { name, type: 'zulip_extra_emoji' as const, code: 'zulip' };
        return { name, type: 'unicode_emoji' as const, code: undefined };
      })();
      // A failed lookup is asked again next time.
      this.#listenEmoji.catch(() => {
        this.#listenEmoji = undefined;
      });
    }
    return this.#listenEmoji;
  }

  /** Puts the listening indicator on the newest message the agent has seen; best effort, and only where the bot may write. */
  async addIndicator(call: CallOptions): Promise<void> {
    if (this.services.policy.readOnly || this.#indicator !== undefined) return;
    const target = this.#newestVisibleId;
    const bound = this.#binding;
    if (target === undefined || bound === undefined) return;
    if (!(await this.mayWriteIn(bound.streamId, call))) return;
    const giveUp = (err: unknown): void => {
      if (errorCode(err) === 'CORE_ABORTED') throw err;
      this.logger.debug('could not add the listening indicator', { err: codeOf(err) });
    };
    let emoji: { name: string; type: ListenReactionType; code: string | undefined };
    try {
      emoji = await this.listenEmoji(call);
    } catch (err) {
      giveUp(err);
      return;
    }
    try {
      // Not abortable: a reaction that reached Zulip must be known here, or it would never come off.
      await this.services.client.addReaction(
        target,
        { emojiName: emoji.name, emojiCode: emoji.code, reactionType: emoji.type },
        { timeoutMs: CLEANUP_TIMEOUT_MS },
      );
    } catch (err) {
      // Already there (left by an earlier process): it is ours to remove all the same.
      if ((err as { zulipCode?: unknown }).zulipCode !== 'REACTION_ALREADY_EXISTS') {
        giveUp(err);
        return;
      }
    }
    this.#indicator = { messageId: target, emojiName: emoji.name, reactionType: emoji.type };
  }

  /** Removes the listening indicator, with its reaction type so a custom emoji comes off too; in the background. */
  removeIndicator(): void {
    const indicator = this.#indicator;
    if (indicator === undefined) return;
    this.#indicator = undefined;
    this.track(
      this.services.client
        .removeReaction(
          indicator.messageId,
          { emojiName: indicator.emojiName, reactionType: indicator.reactionType },
          { timeoutMs: CLEANUP_TIMEOUT_MS },
        )
        .catch((err: unknown) => {
          if ((err as { zulipCode?: unknown }).zulipCode === 'REACTION_DOES_NOT_EXIST') return;
          this.logger.warn('could not remove the listening indicator', {
            messageId: indicator.messageId,
            err: codeOf(err),
          });
        }),
    );
  }

  /** Subscribes the bot to the stream unless it is already subscribed: Zulip sends events only to subscribers. */
  async ensureSubscribed(b: Binding, call: CallOptions): Promise<void> {
    const subs = await this.services.directory.subscriptions(call);
    if (subs.some((s) => s.stream_id === b.streamId)) return;
    this.services.directory.invalidate('subscriptions');
    const fresh = await this.services.directory.subscriptions(call);
    if (fresh.some((s) => s.stream_id === b.streamId)) return;
    // Subscribing is something the bot does in the stream: the write allowlist decides it.
    this.services.policy.checkWrite({ stream: b.streamId }, await this.services.directory.streamLookup(call));
    await this.services.client.subscribe({ subscriptions: [{ name: b.stream }] }, call);
    this.services.directory.invalidate('subscriptions');
  }

  // ---------------------------------------------------------------- listen bookkeeping

  /**
   * Marks a listen as running; `stop` is called when set_context, end_session or close() ends it.
   * @throws ToolError `TOOLS_SESSION_BUSY` when one is running already.
   */
  beginListen(stop: (why: 'rebound' | 'closed') => void): () => void {
    if (this.#listenStop !== undefined) {
      throw new ToolError(
        'TOOLS_SESSION_BUSY',
        'A listen is already running in this session; wait for it to return instead of calling listen again.',
      );
    }
    if (this.#closed) throw new ToolError('TOOLS_NO_SESSION', 'The session is closed.');
    this.#listenStop = stop;
    let ended!: () => void;
    this.#listenEnded = new Promise((resolve) => {
      ended = resolve;
    });
    return () => {
      if (this.#listenStop === stop) {
        this.#listenStop = undefined;
        this.#listenEnded = undefined;
      }
      ended();
    };
  }

  /** Starts watching the interrupt file (once per session); settles when the watch is in place. */
  async watchInterrupts(): Promise<void> {
    if (this.interruptFile === undefined || this.#closed) return;
    if (this.#watcher === undefined) {
      this.#watcher = watchInterruptFile(
        this.interruptFile,
        (text) => {
          // A note passing on a message the agent already has is no news: it wakes nothing.
          const fresh = parseInterruptNotes(text).filter(
            (note) => note.messageId === undefined || !this.#handedOver.has(note.messageId),
          );
          if (fresh.length === 0) return;
          this.#interrupts.push(...fresh);
          for (const wake of [...this.#interruptWaiters]) wake();
        },
        { onError: (err) => this.logger.warn('interrupt file failed', { err: codeOf(err) }) },
      );
    }
    const watcher = this.#watcher;
    try {
      await watcher.ready;
    } catch (err) {
      // The next listen tries again.
      if (this.#watcher === watcher) this.#watcher = undefined;
      await watcher.close();
      throw err;
    }
  }

  /** Calls `wake` whenever an interrupt is claimed, until the returned function is called. */
  onInterrupt(wake: () => void): () => void {
    this.#interruptWaiters.add(wake);
    if (this.#interrupts.length > 0) wake();
    return () => this.#interruptWaiters.delete(wake);
  }

  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      const listen = this.#listenEnded;
      this.#listenStop?.('closed');
      // A running listen hands its clean-up over as it returns.
      await listen;
      const b = this.#binding;
      this.removeIndicator();
      if (b !== undefined) this.typing(b, 'stop');
      const watcher = this.#watcher;
      this.#watcher = undefined;
      if (watcher !== undefined) this.track(watcher.close());
    }
    await this.settled();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** True when a signal fired because the app's shared deadline passed (not a client cancel). */
  static deadlinePassed(signal: AbortSignal): boolean {
    return isTimeoutAbort(signal);
  }
}

function codeOf(err: unknown): unknown {
  return errorCode(err) ?? (err instanceof Error ? err.name : 'unknown');
}

function checkLaunch(launch: AgentSessionLaunch | undefined): AgentSessionLaunch | undefined {
  if (launch === undefined) return undefined;
  const stream = typeof launch.stream === 'string' && launch.stream.trim() === '' ? undefined : launch.stream;
  const topic = typeof launch.topic === 'string' && launch.topic.trim() === '' ? undefined : launch.topic;
  const trigger = launch.triggerMessageId;
  if (trigger !== undefined && !(Number.isSafeInteger(trigger) && trigger > 0)) {
    throw new ToolError('TOOLS_INVALID_INPUT', 'launch.triggerMessageId must be a positive message id.', {
      field: 'launch.triggerMessageId',
    });
  }
  if (stream === undefined && topic === undefined && trigger === undefined) return undefined;
  if (trigger === undefined && (stream === undefined || topic === undefined)) {
    throw new ToolError(
      'TOOLS_INVALID_INPUT',
      'launch needs both a stream and a topic (SESSION_STREAM and SESSION_TOPIC), or a trigger message id (TRIGGER_MESSAGE_ID).',
      { field: stream === undefined ? 'launch.stream' : 'launch.topic' },
    );
  }
  return { stream, topic, triggerMessageId: trigger };
}

/**
 * Creates the state of one agent session (one per MCP session): the conversation it is bound to,
 * what it has seen there, its listening indicator, typing and interrupt file. Nothing is sent and
 * nothing is watched until a tool runs.
 * @throws ToolError `TOOLS_INVALID_INPUT` for a malformed emoji name, interval, interrupt-file
 *   path, or a launch naming a stream without a topic (or the reverse) and no trigger.
 */
export function createAgentSession(services: ToolServices, options: AgentSessionOptions = {}): AgentSession {
  return new SessionCore(services, options);
}
