import { randomInt } from 'node:crypto';
import {
  type AdmissionGate,
  type Conversation,
  EventQueue,
  errorCode,
  inlineCode,
  type Logger,
  mentionSyntax,
  noopLogger,
  oneLineText,
  type ReactionEvent,
  sameTopic,
} from '@zmcp/core';
import { ToolError } from '../errors.js';
import type { ToolServices } from '../services.js';
import { postMessage } from '../write/post.js';

// Approvals in the conversation: every path that needs a person's yes (a launched agent's
// permission prompt tool, Claude Code channels' permission relay, a tool asking for confirmation)
// posts one compact prompt through here and waits for an admitted person's answer.

/** How long a prompt waits for an answer by default: 15 minutes. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 15 * 60_000;

/** Reactions that allow (✅ and its look-alikes). */
const ALLOW_EMOJI = new Set(['check', 'white_check_mark', 'check_mark', '+1', 'thumbs_up', 'like']);
/** Reactions that deny (❌ and its look-alikes). */
const DENY_EMOJI = new Set(['x', 'cross_mark', '-1', 'thumbs_down', 'no_entry']);
/** A request id: five letters without `l` (read as 1), as Claude Code's own relay ids are. */
const ID_ALPHABET = 'abcdefghijkmnopqrstuvwxyz';
const REQUEST_ID = /^[a-km-z]{5}$/;
/** A text answer: `yes abcde` / `no abcde` (also `y` / `n`), alone in its message. */
const TEXT_ANSWER = /^\s*(y|yes|n|no)\s+([a-km-z]{5})\s*$/i;
/** Longest key argument a prompt shows, in code points. */
const DETAIL_LIMIT = 200;
/** How many decided ids {@link ApprovalDesk.claims} still recognizes. */
const DECIDED_KEPT = 200;
/** Deadline of posting a prompt, in milliseconds. */
const POST_TIMEOUT_MS = 15_000;
/** Reactions kept while a prompt's message id is not known yet (the send's answer races the event). */
const EARLY_LIMIT = 100;

/** How a request ended. */
export type ApprovalOutcome = 'allowed' | 'denied' | 'timed-out' | 'ended';

/** What a person (or nobody) decided. */
export interface ApprovalDecision {
  /** The request id the prompt named. */
  id: string;
  outcome: ApprovalOutcome;
  /** True only for `allowed`: a timeout or the agent's end denies. */
  allowed: boolean;
  /** Who answered (allowed or denied), by user id. */
  byUserId: number | undefined;
  /** The prompt message, when it was posted. */
  messageId: number | undefined;
}

/** One request for a person's yes. */
export interface ApprovalRequest {
  /** The conversation the prompt goes to. */
  to: Conversation;
  /** What is asked: the tool (or action) name. Shown escaped, one line. */
  tool: string;
  /** Its key argument (a command, a path, a URL), shown escaped, one line, cut to 200 characters. */
  detail?: string | undefined;
  /** Who asks, when not the agent itself (`Claude Code`). */
  asker?: string | undefined;
  /** An id chosen by the caller (five letters a-z without l); default a fresh one. */
  id?: string | undefined;
  /** How long the prompt waits, in milliseconds; default the desk's. */
  timeoutMs?: number | undefined;
  /** Ends the wait as `ended` (the agent went away). */
  signal?: AbortSignal | undefined;
}

/** Options of {@link ApprovalDesk}. */
export interface ApprovalDeskOptions {
  /**
   * Who may answer (core's admission gate, by user id). Without one nobody can: every request
   * waits for its timeout and is denied (fail closed).
   */
  admission: AdmissionGate | undefined;
  /** Default wait of a request, in milliseconds. Default 15 minutes. */
  timeoutMs?: number | undefined;
  /** Told about prompts that could not be edited, and the event queue stopping. */
  logger?: Logger | undefined;
  /** Event-queue tuning (tests). */
  queue?: { longPollTimeoutMs?: number | undefined } | undefined;
}

interface Pending {
  readonly id: string;
  readonly request: ApprovalRequest;
  readonly head: string;
  messageId: number | undefined;
  /** Set once decided; a decision made while the prompt was still being posted is shown after. */
  decision: { outcome: ApprovalOutcome; byUserId: number | undefined } | undefined;
  /** The edit showing the outcome, once started: the request answers after it. */
  edited: Promise<void> | undefined;
  readonly settle: (decision: Omit<ApprovalDecision, 'id' | 'messageId' | 'allowed'>) => void;
}

/** A fresh request id. */
function freshId(): string {
  let id = '';
  for (let i = 0; i < 5; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}

/**
 * The one approvals module: posts a compact prompt in a conversation (a short request id, the tool
 * and its key argument, escaped, and how to answer) and waits for a ✅ / ❌ reaction on it, or a
 * `yes <id>` / `no <id>` message, from a person the admission gate admits; anyone else's answer is
 * ignored (and counted by the gate). A timeout, the request's signal or {@link close} denies. The
 * prompt is then edited to show the outcome and who decided. Its event queue (reactions and
 * messages) runs only while a prompt waits.
 */
export class ApprovalDesk {
  readonly #services: ToolServices;
  readonly #admission: AdmissionGate | undefined;
  readonly #timeoutMs: number;
  readonly #logger: Logger;
  readonly #queueOptions: ApprovalDeskOptions['queue'];
  readonly #pending = new Map<string, Pending>();
  readonly #early: ReactionEvent[] = [];
  /** Ids decided lately: a late or racing `yes <id>` still names a request, not chat. */
  readonly #decided = new Set<string>();
  readonly #edits = new Set<Promise<void>>();
  #queue: EventQueue | undefined;
  #opening: Promise<EventQueue> | undefined;
  #closed = false;

  constructor(services: ToolServices, options: ApprovalDeskOptions) {
    this.#services = services;
    this.#admission = options.admission;
    const timeout = options.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
    if (!Number.isFinite(timeout) || timeout < 1) {
      throw new ToolError('TOOLS_INVALID_INPUT', 'timeoutMs must be a positive number of milliseconds.', {
        field: 'timeoutMs',
      });
    }
    this.#timeoutMs = timeout;
    this.#logger = options.logger ?? noopLogger;
    this.#queueOptions = options.queue;
  }

  /** The ids of the requests waiting for an answer. */
  waiting(): string[] {
    return [...this.#pending.keys()];
  }

  /**
   * Posts the prompt and waits for the answer. Never throws for a person's silence: a timeout, the
   * signal or {@link close} resolve as denied.
   * @throws ToolError `TOOLS_INVALID_INPUT` for a malformed or already waiting id; the send's own
   *   codes (`CORE_ACCESS_DENIED`, request codes) when the prompt cannot be posted.
   */
  async request(request: ApprovalRequest): Promise<ApprovalDecision> {
    const id = (request.id ?? this.#unusedId()).toLowerCase();
    if (!REQUEST_ID.test(id)) {
      throw new ToolError('TOOLS_INVALID_INPUT', 'An approval id is five letters a-z without l.', {
        field: 'id',
      });
    }
    if (this.#pending.has(id)) {
      throw new ToolError('TOOLS_INVALID_INPUT', `Approval ${id} is already waiting.`, { field: 'id' });
    }
    if (this.#closed)
      return { id, outcome: 'ended', allowed: false, byUserId: undefined, messageId: undefined };
    const detail = request.detail === undefined ? '' : oneLineText(request.detail, DETAIL_LIMIT);
    const asker =
      request.asker === undefined ? '' : `${oneLineText(request.asker, 60).replace(/[*_`[\]|@#:]/g, '')} `;
    const head = `**${id}** ${asker}asks to use ${inlineCode(request.tool, 100)}${detail === '' ? '' : `: ${inlineCode(detail)}`}`;
    let settle!: Pending['settle'];
    const settled = new Promise<Omit<ApprovalDecision, 'id' | 'messageId' | 'allowed'>>((resolve) => {
      settle = resolve;
    });
    const pending: Pending = {
      id,
      request,
      head,
      messageId: undefined,
      decision: undefined,
      edited: undefined,
      settle,
    };
    this.#pending.set(id, pending);
    const timeout = setTimeout(
      () => this.#decide(pending, { outcome: 'timed-out', byUserId: undefined }),
      request.timeoutMs ?? this.#timeoutMs,
    );
    timeout.unref();
    const onAbort = () => this.#decide(pending, { outcome: 'ended', byUserId: undefined });
    request.signal?.addEventListener('abort', onAbort, { once: true });
    if (request.signal?.aborted) onAbort();
    // close() waits for a prompt being posted too: its outcome must reach it before the process ends.
    let posted!: () => void;
    const posting = new Promise<void>((resolve) => {
      posted = resolve;
    });
    this.#edits.add(posting);
    try {
      // The queue first: an answer given the moment the prompt appears is not missed.
      await this.#ensureQueue();
      const minutes = Math.max(1, Math.round((request.timeoutMs ?? this.#timeoutMs) / 60_000));
      const text = `🔐 ${head}\nReact :check: to allow or :cross_mark: to deny, or reply \`yes ${id}\` / \`no ${id}\` (${minutes} min; no answer denies).`;
      const posted = await postMessage(this.#services, request.to, text, {
        overLength: 'refuse',
        // Not the request's signal: a prompt that reached Zulip must be known here, to be edited.
        signal: AbortSignal.timeout(POST_TIMEOUT_MS),
        repeat: true,
      });
      if ('isError' in posted) {
        throw new ToolError('TOOLS_INTERNAL', `The approval prompt was not posted: ${posted.text}`, {
          sendCode: posted.code,
        });
      }
      pending.messageId = posted.ids[0];
      if (pending.decision !== undefined) pending.edited = this.#track(this.#edit(pending, pending.decision));
      for (const event of this.#early.filter((e) => e.message_id === pending.messageId))
        this.#onReaction(event);
    } catch (err) {
      if (this.#pending.get(id) === pending) {
        this.#pending.delete(id);
        this.#idle();
      }
      clearTimeout(timeout);
      request.signal?.removeEventListener('abort', onAbort);
      throw err;
    } finally {
      this.#edits.delete(posting);
      posted();
    }
    const decision = await settled;
    // The prompt shows the outcome before the caller acts on it (an agent going away may not wait).
    await pending.edited;
    clearTimeout(timeout);
    request.signal?.removeEventListener('abort', onAbort);
    return {
      id,
      ...decision,
      allowed: decision.outcome === 'allowed',
      messageId: pending.messageId,
    };
  }

  /**
   * Whether a message text answers a request waiting or decided lately (`yes abcde`): a host that
   * forwards messages to an agent drops it then. The answer itself is taken from the desk's own
   * event queue.
   */
  claims(text: string): boolean {
    const match = TEXT_ANSWER.exec(text);
    if (match === null) return false;
    const id = (match[2] as string).toLowerCase();
    return this.#pending.has(id) || this.#decided.has(id);
  }

  /** Denies every waiting request (`ended`), waits for the prompts' edits, and stops the queue. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const pending of [...this.#pending.values()])
      this.#decide(pending, { outcome: 'ended', byUserId: undefined });
    while (this.#edits.size > 0) await Promise.all([...this.#edits]);
    await this.#opening?.catch(() => undefined);
    const queue = this.#queue;
    this.#queue = undefined;
    await queue?.close();
  }

  #unusedId(): string {
    for (;;) {
      const id = freshId();
      if (!this.#pending.has(id)) return id;
    }
  }

  async #ensureQueue(): Promise<void> {
    if (this.#queue !== undefined) return;
    this.#opening ??= EventQueue.open(this.#services.client, {
      eventTypes: ['reaction', 'message'],
      applyMarkdown: false,
      longPollTimeoutMs: this.#queueOptions?.longPollTimeoutMs,
      logger: this.#logger,
    });
    let queue: EventQueue;
    try {
      queue = await this.#opening;
    } finally {
      this.#opening = undefined;
    }
    if (this.#queue !== undefined) {
      await queue.close();
      return;
    }
    this.#queue = queue;
    void (async () => {
      try {
        for await (const item of queue) {
          if (item.kind !== 'event') continue;
          const event = item.event;
          if (event.type === 'reaction') this.#onReaction(event);
          else if (event.type === 'message') this.#onMessage(event.message);
        }
      } catch (err) {
        this.#logger.warn('the approvals desk stopped reading answers', { err: errorCode(err) });
      }
    })();
  }

  /** Stops the queue when nothing waits any more. */
  #idle(): void {
    if (this.#pending.size > 0 || this.#queue === undefined) return;
    const queue = this.#queue;
    this.#queue = undefined;
    this.#early.length = 0;
    this.#track(queue.close());
  }

  #onReaction(event: ReactionEvent): void {
    if (event.op !== 'add') return;
    const allow = ALLOW_EMOJI.has(event.emoji_name);
    if (!allow && !DENY_EMOJI.has(event.emoji_name)) return;
    const pending = [...this.#pending.values()].find((p) => p.messageId === event.message_id);
    if (pending === undefined) {
      if (this.#pending.size > 0 && [...this.#pending.values()].some((p) => p.messageId === undefined)) {
        this.#early.push(event);
        if (this.#early.length > EARLY_LIMIT) this.#early.shift();
      }
      return;
    }
    if (event.user_id === this.#services.identity.user_id) return;
    // The gate decides by user id, and counts and logs a refusal (never the content).
    if (this.#admission?.check(event.user_id, 'approval') !== true) return;
    this.#decide(pending, { outcome: allow ? 'allowed' : 'denied', byUserId: event.user_id });
  }

  #onMessage(message: {
    sender_id: number;
    content: string;
    type: string;
    stream_id?: number | undefined;
    subject?: string | undefined;
  }): void {
    const match = TEXT_ANSWER.exec(message.content);
    if (match === null) return;
    const pending = this.#pending.get((match[2] as string).toLowerCase());
    if (pending === undefined || message.sender_id === this.#services.identity.user_id) return;
    // An answer counts in the prompt's conversation, or in a DM to the bot.
    const to = pending.request.to;
    const here =
      message.type !== 'stream' ||
      (to.kind === 'stream' &&
        message.stream_id === to.streamId &&
        message.subject !== undefined &&
        sameTopic(message.subject, to.topic));
    if (!here) return;
    if (this.#admission?.check(message.sender_id, 'approval') !== true) return;
    const yes = (match[1] as string).toLowerCase().startsWith('y');
    this.#decide(pending, { outcome: yes ? 'allowed' : 'denied', byUserId: message.sender_id });
  }

  #decide(pending: Pending, decision: { outcome: ApprovalOutcome; byUserId: number | undefined }): void {
    if (this.#pending.get(pending.id) !== pending) return;
    this.#pending.delete(pending.id);
    pending.decision = decision;
    this.#decided.add(pending.id);
    if (this.#decided.size > DECIDED_KEPT)
      this.#decided.delete(this.#decided.values().next().value as string);
    pending.settle(decision);
    if (pending.messageId !== undefined) pending.edited = this.#track(this.#edit(pending, decision));
    this.#idle();
  }

  /** Edits the prompt to show the outcome and who decided; best effort (the edit window may be over). */
  async #edit(
    pending: Pending,
    decision: { outcome: ApprovalOutcome; byUserId: number | undefined },
  ): Promise<void> {
    const who =
      decision.byUserId === undefined
        ? ''
        : mentionSyntax({ user_id: decision.byUserId, full_name: '' }, { silent: true });
    const outcome = {
      allowed: `✅ ${pending.head}\nAllowed by ${who}.`,
      denied: `❌ ${pending.head}\nDenied by ${who}.`,
      'timed-out': `⌛ ${pending.head}\nNo answer in time: denied.`,
      ended: `⏹ ${pending.head}\nThe agent ended before an answer: denied.`,
    }[decision.outcome];
    try {
      await this.#services.client.updateMessage(
        pending.messageId as number,
        { content: outcome },
        { timeoutMs: 5_000 },
      );
    } catch (err) {
      this.#logger.warn('an approval prompt could not be edited to show its outcome', {
        messageId: pending.messageId,
        err: errorCode(err),
      });
    }
  }

  #track(work: Promise<unknown>): Promise<void> {
    const p = work.then(
      () => undefined,
      () => undefined,
    );
    this.#edits.add(p);
    void p.finally(() => this.#edits.delete(p));
    return p;
  }
}
