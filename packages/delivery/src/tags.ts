import type { FormattableMessage } from '@zmcp/core';

/**
 * RFC-001 tags: what an event is, for the host's wake policy. They describe, never authorize.
 * The `chat:*` core closure (`chat:mention` and `chat:dm` imply `chat:addressed`, `chat:dm`
 * implies `chat:private`) is emitted directly, and `chat:ambient` never sits beside an addressed tag.
 */
export const TAGS = {
  addressed: 'chat:addressed',
  mention: 'chat:mention',
  dm: 'chat:dm',
  ambient: 'chat:ambient',
  broadcast: 'chat:broadcast',
  toSelf: 'chat:to-self',
  fromHuman: 'chat:from-human',
  fromBot: 'chat:from-bot',
  fromSelf: 'chat:from-self',
  edited: 'chat:edited',
  deleted: 'chat:deleted',
  reaction: 'chat:reaction',
  reactionRemove: 'chat:reaction-remove',
  hasImage: 'chat:has-image',
  hasFile: 'chat:has-file',
  hasLink: 'chat:has-link',
  private: 'chat:private',
  group: 'chat:group',
  moved: 'zulip:moved',
  missed: 'zulip:missed',
} as const;

/** The `chat:*` tags this package emits, for a feature set's tag ontology (`coreTags`). */
export const CORE_TAGS: readonly string[] = Object.values(TAGS).filter((t) => t.startsWith('chat:'));

/** How a message addresses the agent, from its flags as the bot reads it. */
export type Addressing = 'dm' | 'mention' | 'broadcast' | 'ambient';

const WILDCARD_FLAGS = ['wildcard_mentioned', 'stream_wildcard_mentioned', 'topic_wildcard_mentioned'];

/** Whether a message is a DM, mentions the bot by name, by wildcard, or neither. */
export function addressingOf(
  message: Pick<FormattableMessage, 'type' | 'flags' | 'sender_id'>,
  selfUserId: number,
): Addressing {
  if (message.type === 'private') return 'dm';
  if (message.sender_id === selfUserId) return 'ambient';
  const flags = message.flags ?? [];
  if (flags.includes('mentioned')) return 'mention';
  if (flags.some((f) => WILDCARD_FLAGS.includes(f))) return 'broadcast';
  return 'ambient';
}

/** True for a DM or a mention (by name or wildcard): what reaches the agent on a closed channel. */
export function isAddressed(addressing: Addressing): boolean {
  return addressing !== 'ambient';
}

const IMAGE_UPLOAD = /\/user_uploads\/[^\s)\]"'<>]+\.(?:png|jpe?g|gif|webp|bmp|svg|heic|avif)\b/i;
const ANY_UPLOAD = /\/user_uploads\/(?!thumbnail\/|temporary\/)[^\s)\]"'<>]+/i;
const LINK = /\bhttps?:\/\/[^\s<>]+/i;
const MARKDOWN_IMAGE = /!\[[^\]]*\]\(/;

function addressingTags(
  addressing: Addressing,
  message: Pick<FormattableMessage, 'display_recipient'>,
): string[] {
  switch (addressing) {
    case 'dm': {
      const group = Array.isArray(message.display_recipient) && message.display_recipient.length > 2;
      return group
        ? [TAGS.dm, TAGS.addressed, TAGS.private, TAGS.group]
        : [TAGS.dm, TAGS.addressed, TAGS.private];
    }
    case 'mention':
      return [TAGS.mention, TAGS.addressed];
    case 'broadcast':
      return [TAGS.broadcast, TAGS.addressed];
    default:
      return [TAGS.ambient];
  }
}

/** Who wrote a message, as a tag. */
export function senderTag(senderId: number, selfUserId: number, isBot: boolean): string {
  if (senderId === selfUserId) return TAGS.fromSelf;
  return isBot ? TAGS.fromBot : TAGS.fromHuman;
}

/** The tags of a delivered message: addressing, sender, and content modality. */
export function messageTags(
  message: Pick<FormattableMessage, 'type' | 'flags' | 'sender_id' | 'display_recipient' | 'content'>,
  selfUserId: number,
  senderIsBot: boolean,
): string[] {
  const tags = addressingTags(addressingOf(message, selfUserId), message);
  tags.push(senderTag(message.sender_id, selfUserId, senderIsBot));
  const content = message.content;
  if (content.includes('/user_uploads/')) {
    if (IMAGE_UPLOAD.test(content)) tags.push(TAGS.hasImage);
    else if (ANY_UPLOAD.test(content)) tags.push(TAGS.hasFile);
  } else if (MARKDOWN_IMAGE.test(content)) {
    tags.push(TAGS.hasImage);
  }
  if (content.includes('http') && LINK.test(content)) tags.push(TAGS.hasLink);
  return tags;
}

/**
 * The tags of a change line: `chat:edited` (plus `zulip:moved` for a move) or `chat:deleted`,
 * with the addressing a message would carry as it now reads, so a tag-keyed wake policy wakes
 * on a change exactly when it would wake on the message.
 */
export function changeTags(
  change: 'edited' | 'moved' | 'deleted',
  addressing: Addressing,
  message: Pick<FormattableMessage, 'display_recipient'>,
): string[] {
  const base =
    change === 'deleted' ? [TAGS.deleted] : change === 'moved' ? [TAGS.edited, TAGS.moved] : [TAGS.edited];
  return [...base, ...addressingTags(addressing, message)];
}

/** Reaction-only tags, so a tag-keyed policy can ignore reactions: `chat:reaction`/`-remove`, `chat:to-self`. */
export function reactionTags(op: 'add' | 'remove', onOwnMessage: boolean): string[] {
  const tags: string[] = [op === 'add' ? TAGS.reaction : TAGS.reactionRemove];
  if (onOwnMessage) tags.push(TAGS.toSelf);
  return tags;
}
