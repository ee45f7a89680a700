// What a conversation is, once: a stream topic by stream id, or a DM by the people in it other
// than the reader. Every package that keys, compares or addresses conversations calls these.

import type { FormattableMessage } from './message.js';

/**
 * One conversation of a realm: a topic of a stream, by stream id (names are chosen by anyone),
 * or a DM, by its participants other than the reader (the bot), ascending.
 */
export type Conversation =
  | { readonly kind: 'stream'; readonly streamId: number; readonly topic: string }
  | { readonly kind: 'dm'; readonly userIds: readonly number[] };

/**
 * The people of a DM other than the reader: the `id`s of its `display_recipient`, without
 * `selfUserId`, ascending and without repeats; the reader alone for its DM with itself. A stream
 * message's `display_recipient` (its stream name) has no participants: the reader alone.
 */
export function dmOthers(
  recipients: FormattableMessage['display_recipient'] | readonly { readonly id: number }[],
  selfUserId: number,
): number[] {
  const ids = typeof recipients === 'string' ? [] : recipients.map((r) => r.id);
  const others = [...new Set(ids)].filter((id) => id !== selfUserId).sort((a, b) => a - b);
  return others.length === 0 ? [selfUserId] : others;
}

/**
 * A topic name folded as Zulip matches topics: case-insensitively (no trimming, no Unicode
 * normalization: Zulip does neither when it matches a topic).
 */
export function foldTopic(topic: string): string {
  return topic.toLowerCase();
}

/** Whether two topic names name one topic of a stream (Zulip matches topics case-insensitively). */
export function sameTopic(a: string, b: string): boolean {
  return foldTopic(a) === foldTopic(b);
}

/**
 * The one key of a conversation: `stream:<stream id>:<topic, folded by foldTopic>` or
 * `dm:<user ids, ascending, comma-separated>`. Two spellings of a topic that Zulip takes for one
 * (`Deploys`, `deploys`) have one key; a key never holds a stream name.
 */
export function conversationKey(conversation: Conversation): string {
  if (conversation.kind === 'dm') {
    const ids = [...new Set(conversation.userIds)].sort((a, b) => a - b);
    return `dm:${ids.join(',')}`;
  }
  return `stream:${conversation.streamId}:${foldTopic(conversation.topic)}`;
}

/**
 * The conversation a message is in: its stream (by `stream_id`) and topic, or its DM's people
 * other than `selfUserId` ({@link dmOthers}). Undefined for a stream message without `stream_id`.
 */
export function messageConversation(
  message: Pick<FormattableMessage, 'type' | 'display_recipient' | 'subject' | 'stream_id'>,
  selfUserId: number,
): Conversation | undefined {
  if (message.type === 'private')
    return { kind: 'dm', userIds: dmOthers(message.display_recipient, selfUserId) };
  if (message.stream_id === undefined) return undefined;
  return { kind: 'stream', streamId: message.stream_id, topic: message.subject };
}
