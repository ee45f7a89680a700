/** A DM participant as Zulip lists it in `display_recipient`. */
export interface DisplayRecipientUser {
  readonly id: number;
  readonly email: string;
  readonly full_name: string;
}

/**
 * The fields of a Zulip message object the text helpers read, with Zulip's own (snake_case) names,
 * so the client's validated messages satisfy it as they are.
 */
export interface FormattableMessage {
  readonly id: number;
  readonly type: 'stream' | 'private';
  /** Stream name for a stream message; the participants (sender included) for a DM. */
  readonly display_recipient: string | readonly DisplayRecipientUser[];
  /** The topic; `""` for DMs. */
  readonly subject: string;
  /** Raw Markdown, or HTML when fetched with `apply_markdown`. */
  readonly content: string;
  readonly sender_full_name: string;
  readonly sender_id: number;
  /** Unix seconds. */
  readonly timestamp: number;
  readonly stream_id?: number | undefined;
  /** The reading account's flags; absent when the fetch path did not carry them. */
  readonly flags?: readonly string[] | undefined;
  readonly last_edit_timestamp?: number | undefined;
  readonly last_moved_timestamp?: number | undefined;
  /** `text/html` or `text/x-markdown`, when known. */
  readonly content_type?: string | undefined;
}

const MENTION_FLAGS: ReadonlySet<string> = new Set([
  'mentioned',
  'wildcard_mentioned',
  'stream_wildcard_mentioned',
  'topic_wildcard_mentioned',
]);

/** True when the message's flags say it mentions the reader (directly or by wildcard). */
export function isMentioned(message: Pick<FormattableMessage, 'flags'>): boolean {
  const flags = message.flags;
  if (flags === undefined) return false;
  for (const f of flags) if (MENTION_FLAGS.has(f)) return true;
  return false;
}
