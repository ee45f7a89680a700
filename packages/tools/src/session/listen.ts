import {
  type CallOptions,
  EventQueue,
  errorCode,
  escapeIndented,
  isNoBotsMessage,
  isNoBotsTopic,
  type Message,
  type QueueItem,
  RESOLVED_TOPIC_PREFIX,
  readMessage,
  type StreamInfoLookup,
  sameTopic,
} from '@zmcp/core';
import { z } from 'zod';
import { truncateToBytes } from '../page.js';
import { checkStreamReadable, idSpan, plural, resolveStream } from '../read/shared.js';
import type { ToolCallContext } from '../tool.js';
import { defineTool } from '../tool.js';
import { assertWritable } from '../write/common.js';
import { type Binding, type Dismissal, SessionCore } from './agent-session.js';

/** Longest interrupt text handed to the agent, in bytes; the rest is cut with a marker. */
const MAX_INTERRUPT_BYTES = 4_096;
/** Beyond timeout_seconds, how long a listen call may take: the catch-up reads and the clean-up. */
const LISTEN_DEADLINE_MARGIN_MS = 30_000;
/**
 * The default wait: under the 60 s most clients give a tool call (they cancel, or fail, a longer
 * one), with progress reported meanwhile. A longer wait is one argument away.
 */
const DEFAULT_LISTEN_SECONDS = 50;

const inputSchema = z.object({
  timeout_seconds: z
    .number()
    .int()
    .min(1)
    .max(3600)
    .default(DEFAULT_LISTEN_SECONDS)
    .describe(`Seconds to wait, 1-3600 (default ${DEFAULT_LISTEN_SECONDS}); then call listen again`),
});

const outputSchema = z.object({
  status: z.enum(['messages', 'interrupt', 'dismissed', 'ended', 'moved', 'timeout', 'cancelled']),
  stream_id: z.number().int(),
  moved: z.boolean().describe('The conversation was renamed or moved; the session follows it'),
  ids: z.array(z.number().int()).describe('New messages shown, oldest first'),
  hidden: z.number().int(),
  more_waiting: z.boolean(),
  interrupts: z.number().int().describe('Operator interrupt notes shown'),
  dismissed_by: z.number().int().nullable().describe('User id of who dismissed you'),
  waited_seconds: z.number(),
  last_seen_id: z.number().int(),
});

type Output = z.infer<typeof outputSchema>;

/** Why a listen stopped waiting. */
type Wake = 'timeout' | 'deadline' | 'cancelled' | 'interrupt' | 'rebound' | 'closed' | 'activity';

const STOP = Symbol('stop');
/** One call of `listen`: its waiting, what it collected, and its clean-up. */
class Listening {
  readonly #session: SessionCore;
  readonly #context: ToolCallContext;
  readonly #timeoutSeconds: number;
  readonly #stop = new AbortController();
  readonly #started = performance.now();
  readonly #got = new Map<number, Message>();
  readonly #hidden = new Set<number>();
  #newestId: number | undefined;
  #hasMore = false;
  #wake: Wake | undefined;
  #wakeUp!: () => void;
  readonly #woken: Promise<typeof STOP>;
  #binding: Binding;
  readonly #queues: EventQueue[] = [];
  dismissal: Dismissal | undefined;
  nobots = false;
  /** The conversation was renamed or moved (the session follows it): where from, where to. */
  moved: { from: string; to: string } | undefined;
  /** An admitted person (or, without a gate, anyone) resolved the topic: the session ends. */
  resolved: { byUserId: number | undefined; byName: string | undefined } | undefined;
  /** It moved where the bot may not read: the session ends. */
  movedOut = false;

  constructor(session: SessionCore, binding: Binding, context: ToolCallContext, timeoutSeconds: number) {
    this.#session = session;
    this.#binding = binding;
    this.#context = context;
    this.#timeoutSeconds = timeoutSeconds;
    this.#woken = new Promise((resolve) => {
      this.#wakeUp = () => resolve(STOP);
    });
  }

  get call(): CallOptions {
    return { signal: this.#stop.signal };
  }

  get binding(): Binding {
    return this.#binding;
  }

  get wake(): Wake | undefined {
    return this.#wake;
  }

  /**
   * Stops waiting (the first reason wins). A timeout, cancel or interrupt also aborts whatever
   * request is in flight; after activity nothing is in flight, and the queue is deleted by
   * {@link Listening.release} once the result is out.
   */
  finish(why: Wake): void {
    if (this.#wake !== undefined) return;
    this.#wake = why;
    this.#wakeUp();
    if (why !== 'activity') this.#stop.abort();
  }

  /** Deletes the queues and aborts anything left; runs after the result has been handed back. */
  release(): void {
    this.#stop.abort();
    for (const queue of this.#queues.splice(0)) this.#session.track(queue.close());
  }

  /** True once there is something to hand the agent. */
  get ready(): boolean {
    return (
      this.#got.size > 0 ||
      this.dismissal !== undefined ||
      this.nobots ||
      this.moved !== undefined ||
      this.movedOut
    );
  }

  /**
   * Takes messages of the conversation newer than last-seen; the bot's own, /nobots ones, those
   * an interrupt note passed on and those from people the gate does not admit only move last-seen. An event-queue message passes the same
   * readability check as a REST read.
   */
  collect(messages: readonly Message[], lookup: StreamInfoLookup): void {
    const services = this.#session.services;
    const self = services.identity.user_id;
    for (const m of messages) {
      if (m.id <= this.#session.lastSeenId || !this.#session.inConversation(this.#binding, m)) continue;
      if (!services.policy.isReadable(m, lookup)) continue;
      if (this.#newestId === undefined || m.id > this.#newestId) this.#newestId = m.id;
      if (isNoBotsMessage(m)) this.#hidden.add(m.id);
      // The bot's own, and what an interrupt note already passed on: seen, not handed over again.
      else if (m.sender_id === self || this.#session.handedOver(m.id)) this.#session.sawVisible(m.id);
      // Someone the gate does not admit cannot steer the agent: the message wakes nothing.
      else if (this.#session.fromAdmitted(m)) this.#got.set(m.id, m);
    }
  }

  /** The REST side: dismiss reactions and messages already there (also after a queue gap). */
  async checkpoint(call: CallOptions): Promise<void> {
    const b = this.#binding;
    const [dismissal, since] = await Promise.all([
      this.#session.findDismissal(b, call),
      this.#session.readSince(b, call),
    ]);
    if (dismissal !== undefined) this.dismissal ??= dismissal;
    this.collect(since.messages, await this.#session.services.directory.streamLookup(call));
    if (since.hasMore) this.#hasMore = true;
    // A rename, move or resolution made while nobody listened.
    const now = await this.#session.whereNow(b, call);
    if (now !== undefined) await this.applyMove(now, now.byUserId, call);
  }

  /**
   * Follows the conversation to where it went: a rename or move carries the binding (and `listen`
   * says so); a topic now resolved (Zulip's ✔ prefix) by a person the gate admits ends the session
   * as a dismissal does; /nobots, or a stream the bot may not read, ends it too.
   */
  async applyMove(
    move: { streamId: number; topic: string },
    byUserId: number | undefined,
    call: CallOptions,
  ): Promise<void> {
    const session = this.#session;
    const b = this.#binding;
    if (isNoBotsTopic(move.topic)) {
      this.nobots = true;
      return;
    }
    let stream = { streamId: b.streamId, stream: b.stream };
    if (move.streamId !== b.streamId) {
      try {
        const target = await resolveStream(session.services, move.streamId, call);
        await checkStreamReadable(session.services, target, call);
        stream = { streamId: target.stream_id, stream: target.name };
      } catch (err) {
        const code = errorCode(err);
        if (code !== 'CORE_ACCESS_DENIED' && code !== 'TOOLS_NOT_FOUND') throw err;
        this.movedOut = true;
        return;
      }
    }
    const from = session.label(b);
    const resolvedNow =
      move.topic.startsWith(RESOLVED_TOPIC_PREFIX) && !b.topic.startsWith(RESOLVED_TOPIC_PREFIX);
    this.#binding = session.retopic(move.topic, stream) ?? { ...b, ...stream, topic: move.topic };
    this.moved = { from, to: session.label(this.#binding) };
    if (!resolvedNow) return;
    // Like a dismissal: only a person the gate admits ends the session (fail closed when unknown).
    const admitted =
      byUserId === undefined
        ? session.admission === undefined
        : session.admitted(byUserId, 'dismissal', `resolved:${stream.streamId}:${move.topic}:${byUserId}`);
    if (!admitted) return;
    const byName = byUserId === undefined ? undefined : (await session.person(byUserId, call)).name;
    this.resolved = { byUserId, byName };
  }

  /** Handles one queue item; true when the queue must be registered anew (the topic moved). */
  async handle(item: QueueItem): Promise<boolean> {
    if (item.kind === 'gap') {
      // The queue was lost and replaced: whatever happened in between is read back from history.
      await this.checkpoint(this.call);
      return false;
    }
    if (item.kind !== 'event') return false;
    const event = item.event;
    const b = this.#binding;
    const services = this.#session.services;
    if (event.type === 'message') {
      this.collect([event.message], await services.directory.streamLookup(this.call));
      return false;
    }
    if (event.type === 'reaction') {
      // Queue narrows do not filter reactions: check the reacted-on message is ours and here.
      if (event.op !== 'add' || event.emoji_name !== this.#session.dismissEmoji) return false;
      if (event.user_id === services.identity.user_id) return false;
      let message: Message;
      try {
        message = await readMessage(services.client, services.policy, event.message_id, {
          streams: await services.directory.streamLookup(this.call),
          call: this.call,
        });
      } catch (err) {
        const code = errorCode(err);
        if (code === 'CORE_ACCESS_DENIED' || code === 'CORE_BAD_REQUEST' || code === 'CORE_NOT_FOUND')
          return false;
        throw err;
      }
      const found = await this.#session.dismisses(b, message, event.emoji_name, event.user_id, this.call);
      if (found !== undefined) this.dismissal ??= found;
      return false;
    }
    if (event.type === 'update_message') {
      // A whole topic renamed or moved (Zulip's "change_all"), this one: the session follows it.
      if (
        event.propagate_mode !== 'change_all' ||
        event.orig_subject === undefined ||
        event.stream_id !== b.streamId ||
        !sameTopic(event.orig_subject, b.topic) ||
        (event.subject === undefined && event.new_stream_id === undefined)
      )
        return false;
      await this.applyMove(
        { streamId: event.new_stream_id ?? b.streamId, topic: event.subject ?? b.topic },
        event.user_id ?? undefined,
        this.call,
      );
      return false;
    }
    return false;
  }

  /**
   * Waits for activity on a queue registered for the conversation; true when the topic moved.
   * Each wake takes every item already received in one batch (the queue's `nextBatch`), so what
   * arrived together is handed over together; the next poll starts only when there is nothing left
   * to hand over, so waking costs no request.
   */
  async wait(queue: EventQueue): Promise<boolean> {
    while (this.#wake === undefined) {
      const batch = queue.nextBatch();
      batch.catch(() => undefined);
      const items = await Promise.race([batch, this.#woken]);
      if (items === STOP || items === undefined) return false;
      for (const item of items) if (await this.handle(item)) return true;
      if (this.ready) this.finish('activity');
    }
    return false;
  }

  /** Registers for the conversation's events and waits, following the topic if it is renamed. */
  async run(): Promise<void> {
    const session = this.#session;
    const services = session.services;
    await session.ensureSubscribed(this.#binding, this.call);
    // What `present` prints tells people apart by the realm's names: know them first.
    await services.directory.knownPeople(this.call);
    while (this.#wake === undefined) {
      const b = this.#binding;
      const queue = await EventQueue.open(services.client, {
        eventTypes: ['message', 'reaction', 'update_message'],
        narrow: [
          ['channel', b.stream],
          ['topic', b.topic],
        ],
        signal: this.#stop.signal,
        logger: session.logger,
      });
      this.#queues.push(queue);
      // Anything between the first look and the registration.
      await this.checkpoint(this.call);
      if (this.ready) {
        this.finish('activity');
        return;
      }
      await session.addIndicator(this.call);
      if (!(await this.wait(queue))) return;
      // The topic moved: the old queue goes, a new one is narrowed to the new name.
      const old = this.#queues.pop();
      if (old !== undefined) session.track(old.close());
    }
  }

  elapsedSeconds(): number {
    return Math.round(performance.now() - this.#started) / 1000;
  }

  /** Starts the timeout and progress timers; returns what stops them. */
  startTimers(): () => void {
    const timer = setTimeout(() => this.finish('timeout'), this.#timeoutSeconds * 1000);
    const label = this.#session.label(this.#binding);
    const progress = setInterval(() => {
      this.#context.progress({
        progress: this.elapsedSeconds(),
        total: this.#timeoutSeconds,
        message: `Listening in ${label} for ${Math.round(this.elapsedSeconds())} s`,
      });
    }, this.#session.progressIntervalMs);
    return () => {
      clearTimeout(timer);
      clearInterval(progress);
    };
  }

  /**
   * What was collected, cut to the page budget, and the interrupt notes claimed (each message once:
   * the session's `handOver` decides); last-seen moves past what is handed over.
   */
  result(): { text: string; data: Output } {
    const session = this.#session;
    const b = this.#binding;
    const label = session.label(b);
    const moved = this.#wake === 'rebound' || this.#wake === 'closed';
    // A reply made meanwhile may already have handed some of these over.
    const visible = [...this.#got.values()]
      .filter((m) => m.id > session.lastSeenId && !session.handedOver(m.id))
      .sort((x, y) => x.id - y.id);
    const { presented, notes: interrupts } = session.handOver(
      moved ? undefined : { visible, hidden: this.#hidden.size, newestId: this.#newestId },
      this.#hasMore,
      escapeInterrupt,
    );
    const hidden = moved ? 0 : this.#hidden.size;
    const waited = this.elapsedSeconds();
    const capped = this.#wake === 'deadline';
    let status: Output['status'];
    if (this.dismissal !== undefined) status = 'dismissed';
    else if (this.nobots || this.resolved !== undefined || this.movedOut) status = 'ended';
    else if (presented.shown.length > 0) status = 'messages';
    else if (interrupts.length > 0) status = 'interrupt';
    else if (this.moved !== undefined) status = 'moved';
    else if (this.#wake === 'cancelled' || moved) status = 'cancelled';
    else status = 'timeout';

    const parts: string[] = [];
    if (this.moved !== undefined && status !== 'ended' && status !== 'dismissed') {
      parts.push(
        `The conversation moved from ${this.moved.from} to ${this.moved.to}; your session follows it: reply and listen go there now.`,
      );
    }
    if (presented.shown.length > 0) {
      let head = `${plural(presented.shown.length, 'new message')} in ${label}${idSpan(presented.shown)}, oldest first`;
      if (hidden > 0) head += `; ${plural(hidden, 'message')} hidden (opted out of bots with /nobots)`;
      if (presented.moreWaiting) head += '; more are waiting: call listen again and it returns them at once';
      parts.push(`${head}. Answer with reply, then listen again.`, presented.text);
    }
    if (interrupts.length > 0) {
      parts.push(
        `The operator interrupted your listen (interrupt file; untrusted text, ${plural(interrupts.length, 'note')}):`,
        ...interrupts.map((t) => `  Interrupt: ${t}`),
      );
    }
    if (status === 'dismissed' || status === 'ended') {
      const ended = session.ended;
      parts.push(ended === undefined ? `The session in ${label} is over.` : session.endedMessage(ended));
    } else if (status === 'timeout') {
      parts.push(
        `No new messages in ${label} after ${Math.round(waited)} s${hidden > 0 ? ` (${plural(hidden, 'message')} hidden: opted out of bots with /nobots)` : ''}${capped ? "; the server's tool deadline ended the wait before timeout_seconds" : ''}. Call listen again to keep waiting, or end_session when you are done.`,
      );
    } else if (status === 'cancelled') {
      parts.push(
        `Stopped listening in ${label} after ${Math.round(waited)} s: ${moved ? 'the session was moved or ended' : 'the call was cancelled'}.`,
      );
    }
    const d = this.dismissal;
    return {
      text: parts.join('\n'),
      data: {
        status,
        stream_id: b.streamId,
        moved: this.moved !== undefined,
        ids: presented.shown.map((m) => m.id),
        hidden,
        more_waiting: presented.moreWaiting,
        interrupts: interrupts.length,
        dismissed_by: d === undefined ? null : d.userId,
        waited_seconds: waited,
        last_seen_id: session.lastSeenId,
      },
    };
  }
}

/** Runs `work` once the current turn of the event loop (and the result it returns) is done. */
function afterThisTurn(work: () => void): Promise<void> {
  return new Promise((resolve) => {
    setImmediate(() => {
      work();
      resolve();
    });
  });
}

/** An interrupt note as the model reads it: escaped, and every line after its first indented. */
function escapeInterrupt(text: string): string {
  const escaped = escapeIndented(text.trim(), '    ');
  const cut = truncateToBytes(escaped, MAX_INTERRUPT_BYTES);
  return cut === escaped ? cut : `${cut} [… truncated]`;
}

/** `listen`: waits for follow-ups in the bound conversation. */
export const listenTool = defineTool({
  name: 'listen',
  title: 'Wait for follow-ups',
  description:
    'Wait for follow-ups in your bound conversation after you replied: returns new messages, a dismissal, an operator interrupt, or a timeout (normal: call listen again).',
  inputSchema,
  outputSchema,
  // Registers an event queue (a POST): not available in read-only mode.
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  write: true,
  toolset: 'session',
  // Waiting is the point: the wait plus room for the catch-up reads and the clean-up.
  deadlineMs: (input) => input.timeout_seconds * 1000 + LISTEN_DEADLINE_MARGIN_MS,
  async handler(session: SessionCore, input, context) {
    const services = session.services;
    assertWritable(services);
    await session.settled();
    const b = await session.requireBinding({ signal: context.signal });
    const listening = new Listening(session, b, context, input.timeout_seconds);
    const endListen = session.beginListen((why) => listening.finish(why));
    const onAbort = () =>
      listening.finish(SessionCore.deadlinePassed(context.signal) ? 'deadline' : 'cancelled');
    if (context.signal.aborted) onAbort();
    else context.signal.addEventListener('abort', onAbort, { once: true });
    const stopTimers = listening.startTimers();
    let working = false;
    const offInterrupt = session.onInterrupt(() => listening.finish('interrupt'));
    try {
      session.typing(b, 'stop');
      await session.watchInterrupts();
      // Messages already there are handed over at once.
      await listening.checkpoint({ signal: context.signal });
      if (!listening.ready && listening.wake === undefined) await listening.run();
    } catch (err) {
      // Stopped mid-request (timeout, deadline, cancel, interrupt, session moved): not a failure.
      if (listening.wake === undefined) {
        if (!context.signal.aborted) throw err;
        onAbort();
      }
    } finally {
      stopTimers();
      offInterrupt();
      context.signal.removeEventListener('abort', onAbort);
      listening.finish('activity');
      // Clean-up goes out after the result, off the path from a message to the agent.
      session.track(
        afterThisTurn(() => {
          listening.release();
          session.removeIndicator();
          // The agent is about to work on what arrived.
          if (working) session.typing(listening.binding, 'start');
        }),
      );
      endListen();
    }
    const d = listening.dismissal;
    if (d !== undefined) {
      session.end({ reason: 'dismissed', byUserId: d.userId, byName: d.name, messageId: d.messageId });
    } else if (listening.nobots) {
      session.end({ reason: 'nobots', byUserId: undefined, byName: undefined, messageId: undefined });
    } else if (listening.resolved !== undefined) {
      const r = listening.resolved;
      session.end({ reason: 'resolved', byUserId: r.byUserId, byName: r.byName, messageId: undefined });
    } else if (listening.movedOut) {
      session.end({ reason: 'moved', byUserId: undefined, byName: undefined, messageId: undefined });
    }
    const out = listening.result();
    working = out.data.status === 'messages' && session.autoTyping;
    return out;
  },
});
