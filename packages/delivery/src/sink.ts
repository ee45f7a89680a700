/** A channel as the engine registers it with a host: a stream, or a DM conversation. */
export interface ChannelDescriptor {
  /** `zulip:<stream>` or `zulip:dm:<sorted user ids>`; unique within a session. */
  readonly id: string;
  readonly kind: 'stream' | 'dm';
  /** A human label (`#general`, `DM with Ann Lee`), escaped for display; names are chosen by anyone. */
  readonly label: string;
  /** The stream's id, for a stream channel. */
  readonly streamId?: number;
  /** The other participants, for a DM channel. */
  readonly userIds?: readonly number[];
  /** A private stream or a DM. */
  readonly private: boolean;
}

/** What an item is about. */
export type DeliveryItemKind = 'message' | 'edited' | 'moved' | 'deleted' | 'reaction' | 'reaction-remove';

/**
 * One thing delivered to the agent: a message, a change line (edit, move, deletion) or a reaction
 * line. `text` is the model-facing rendering (core's message line, escaped); the other fields are
 * Zulip's values as they are, for a host to route on: treat them as untrusted.
 */
export interface DeliveryItem {
  /**
   * Stable across replays, so a host can de-duplicate: the message id (`"17206924"`) for a
   * message; `edit:<id>:<n>`, `move:<id>:<n>`, `delete:<id>:<n>`, `reaction:<id>:<n>` otherwise.
   */
  readonly id: string;
  readonly kind: DeliveryItemKind;
  /** The Zulip message the item is about (what `fetch_around` takes). */
  readonly messageId: number;
  readonly channelId: string;
  /** The topic of a stream message: where a reply goes. Absent for DMs and change lines. */
  readonly topic?: string;
  /** Who wrote the message (for a reaction: who reacted). */
  readonly author: { readonly id: number; readonly name: string };
  /** When the message was sent, ISO 8601. */
  readonly timestamp: string;
  /** The line the model reads: core's message line, with `[edited] `/`[moved] `/`[deleted] `/`[reaction] ` before it for change and reaction lines. */
  readonly text: string;
  /** The head of the message line exactly as the formatter wrote it (the prefix a host strips for a bare body). */
  readonly head: string;
  /** RFC-001 tags. */
  readonly tags: readonly string[];
  /** True when recovered from history (after a queue gap or an offer the host did not accept) rather than live. */
  readonly recovered: boolean;
  /** Change lines: `change`, `targetMessageId(s)`, `previousContent`, `previousTopic`, `movedToChannelId`, `actorId`, `mentioned`, `previouslyMentioned`. Reactions: `emoji`, `op`. */
  readonly metadata?: Readonly<Record<string, unknown>>;
}

/** Messages for one open channel, in order. */
export interface IncomingBatch {
  readonly channel: ChannelDescriptor;
  readonly items: readonly DeliveryItem[];
}

/** What a `<missed>` catch-up block covers. */
export interface MissedInfo {
  /** Message ids after the channel's watermark up to this one are covered (shown, elided or counted). */
  readonly throughId: number;
  /** Missed messages that would have reached the agent (for a closed channel: mentions and DMs). */
  readonly addressed: number;
  /** Missed messages in all. */
  readonly messages: number;
  /** Messages shown in the block. */
  readonly shown: number;
  /** Messages not shown, oldest first: the range to read with the history tools. */
  readonly elided?: { readonly count: number; readonly fromId: number; readonly toId: number };
  /** Whether the channel was open when the session last ran (full backscroll) or not (mentions ± context). */
  readonly wasOpen: boolean;
}

/** An event pushed to the agent outside any open channel. */
export interface PushEvent {
  /** Stable across replays: `msg:<id>`, `change:<item id>`, `missed:<channel>:<from>-<to>`. */
  readonly eventId: string;
  /** A mention or DM on a closed channel, an addressed change line, or a `<missed>` catch-up block. */
  readonly kind: 'message' | 'change' | 'missed';
  readonly channel: ChannelDescriptor;
  /** What the model reads. */
  readonly text: string;
  readonly tags: readonly string[];
  readonly timestamp: string;
  /** The items the event carries (one for a message or a change; the shown messages of a block). */
  readonly items: readonly DeliveryItem[];
  readonly missed?: MissedInfo;
}

/** A host's answer to a batch: per-item acceptance, a refusal of the whole batch, or nothing (lost). */
export type IncomingOutcome =
  | { readonly kind: 'answered'; readonly accepted: readonly string[] }
  | { readonly kind: 'refused'; readonly reason?: string }
  | { readonly kind: 'lost'; readonly reason?: string };

/** A host's answer to a push. */
export type PushOutcome =
  | { readonly kind: 'answered'; readonly accepted: boolean; readonly reason?: string }
  | { readonly kind: 'lost'; readonly reason?: string };

/** A change of the registered channels. */
export interface ChannelAnnouncement {
  readonly added: readonly ChannelDescriptor[];
  readonly removed: readonly string[];
}

/** A host's answer to an announcement: itemized results (unlisted ids are pending, not refused), or nothing. */
export type AnnounceOutcome =
  | {
      readonly kind: 'answered';
      readonly results: readonly {
        readonly id: string;
        readonly accepted: boolean;
        readonly reason?: string;
      }[];
    }
  | { readonly kind: 'lost'; readonly reason?: string };

/**
 * Where deliveries go: the host, behind whatever protocol it speaks (MCPL `channels/incoming`
 * and `push/event`, Claude Code channel notifications, a blocking wait tool). The engine never
 * knows the wire format; it learns only what was accepted. Calls on one channel never overlap;
 * calls on different channels may. A call that throws counts as lost; one that outlives the
 * engine's offer timeout is aborted through `signal` and counts as timed out. Whatever was not
 * accepted is offered again later, with the same ids.
 */
export interface DeliverySink {
  /** Offers messages on an open channel; the answer lists the ids the host accepted. */
  incoming(batch: IncomingBatch, signal: AbortSignal): Promise<IncomingOutcome>;
  /** Pushes an event: a mention or DM on a closed channel, an addressed change, a `<missed>` block. */
  push(event: PushEvent, signal: AbortSignal): Promise<PushOutcome>;
  /** Announces channels that appeared or went away; a sink without it has no registration step. */
  announce?: ((change: ChannelAnnouncement, signal: AbortSignal) => Promise<AnnounceOutcome>) | undefined;
}
