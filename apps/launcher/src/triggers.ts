import { createHash } from 'node:crypto';
import { conversationKey, dmOthers, foldTopic, isNoBotsMessage, type Message } from '@zmcp/core';
import { z } from 'zod';

/** A message that calls for an agent: who sent it, and the conversation it belongs to. */
export interface TriggerInfo {
  messageId: number;
  kind: 'stream' | 'dm';
  /** Core's one key of the conversation (`conversationKey`): `stream:<id>:<topic, folded>` or `dm:<sorted user ids>`. */
  conversation: string;
  /** Stream triggers only. */
  streamId: number | undefined;
  stream: string | undefined;
  topic: string | undefined;
  /** DM triggers only: the participants besides the bot, sorted. */
  dmUserIds: readonly number[] | undefined;
  senderId: number;
  senderEmail: string;
  senderName: string;
  /** UNIX seconds. */
  timestamp: number;
  /** DM triggers only: the message is `/new` (or starts with it), which starts a fresh session. */
  fresh?: boolean | undefined;
}

/** The shape of a {@link TriggerInfo} in the launcher's state file. */
export const TriggerInfoSchema = z.object({
  messageId: z.number().int().positive(),
  kind: z.enum(['stream', 'dm']),
  conversation: z.string().min(1),
  streamId: z.number().int().optional(),
  stream: z.string().optional(),
  topic: z.string().optional(),
  dmUserIds: z.array(z.number().int()).optional(),
  senderId: z.number().int(),
  senderEmail: z.string(),
  senderName: z.string(),
  timestamp: z.number(),
  fresh: z.boolean().optional(),
});

/** A trigger in its JSON form (undefined fields left out). */
export type StoredTrigger = z.infer<typeof TriggerInfoSchema>;

/** Why a message the launcher saw starts nothing. */
export type IgnoreReason =
  /** The bot's own message. */
  | 'own-message'
  /** A stream message without a direct mention of the bot, or a group DM without one. */
  | 'not-addressed'
  /** The message or its topic opted out of bots (`/nobots`). */
  | 'nobots'
  /** The admission gate (the allowlist) refused the sender. */
  | 'not-allowed'
  /** Direct messages are switched off. */
  | 'direct-messages-off';

/** A DM that starts a fresh session: `/new`, alone or before the first request. */
const NEW_SESSION = /^\s*\/new(\s|$)/;

/** What one message means to the launcher. */
export type Classification =
  | { kind: 'trigger'; trigger: TriggerInfo }
  | { kind: 'ignored'; reason: IgnoreReason; messageId: number; senderId: number };

/** What {@link classifyMessage} needs to decide. */
export interface ClassifyOptions {
  selfUserId: number;
  /**
   * The admission gate, asked last, once the message would be a trigger: whether its sender may
   * reach an agent that way (a mention, a DM, or a follow-up where an agent runs). Decided by user id.
   */
  admit: (senderId: number, trigger: TriggerInfo) => boolean;
  directMessages: boolean;
}

/**
 * Decides whether a message starts (or reaches) an agent: a direct @-mention of the bot in a
 * stream topic, a one-to-one DM to it, or a group DM that mentions it; never the bot's own
 * messages, never `/nobots` ones (content or topic), and only from someone the gate admits.
 */
export function classifyMessage(message: Message, options: ClassifyOptions): Classification {
  const ignored = (reason: IgnoreReason): Classification => ({
    kind: 'ignored',
    reason,
    messageId: message.id,
    senderId: message.sender_id,
  });
  if (message.sender_id === options.selfUserId) return ignored('own-message');
  // Only a mention of the bot itself: wildcard mentions (@all, @topic) call no agent.
  const mentioned = message.flags?.includes('mentioned') === true;
  let trigger: TriggerInfo;
  if (message.type === 'stream') {
    if (!mentioned) return ignored('not-addressed');
    const streamId = message.stream_id;
    if (streamId === undefined || typeof message.display_recipient !== 'string')
      return ignored('not-addressed');
    trigger = {
      messageId: message.id,
      kind: 'stream',
      conversation: conversationKey({ kind: 'stream', streamId, topic: message.subject }),
      streamId,
      stream: message.display_recipient,
      topic: message.subject,
      dmUserIds: undefined,
      senderId: message.sender_id,
      senderEmail: message.sender_email,
      senderName: message.sender_full_name,
      timestamp: message.timestamp,
    };
  } else {
    if (!options.directMessages) return ignored('direct-messages-off');
    const others = dmOthers(message.display_recipient, options.selfUserId);
    // Only the bot: a DM nobody else is in calls no agent.
    if (others.includes(options.selfUserId)) return ignored('not-addressed');
    if (others.length > 1 && !mentioned) return ignored('not-addressed');
    trigger = {
      messageId: message.id,
      kind: 'dm',
      conversation: conversationKey({ kind: 'dm', userIds: others }),
      streamId: undefined,
      stream: undefined,
      topic: undefined,
      dmUserIds: others,
      senderId: message.sender_id,
      senderEmail: message.sender_email,
      senderName: message.sender_full_name,
      timestamp: message.timestamp,
      ...(NEW_SESSION.test(message.content) ? { fresh: true } : {}),
    };
  }
  if (isNoBotsMessage(message)) return ignored('nobots');
  if (!options.admit(message.sender_id, trigger)) return ignored('not-allowed');
  return { kind: 'trigger', trigger };
}

/** A file-name-safe name of a conversation: `stream-<id>-<hash of the topic>` or `dm-<ids>`. */
export function conversationSlug(
  trigger: Pick<TriggerInfo, 'kind' | 'streamId' | 'topic' | 'dmUserIds'>,
): string {
  if (trigger.kind === 'dm') return `dm-${(trigger.dmUserIds ?? []).join('-')}`;
  const topic = createHash('sha256')
    .update(foldTopic(trigger.topic ?? ''))
    .digest('hex')
    .slice(0, 12);
  return `stream-${trigger.streamId}-${topic}`;
}

/** The JSON form of a trigger, for the state file. */
export function storeTrigger(t: TriggerInfo): StoredTrigger {
  return JSON.parse(JSON.stringify(t)) as StoredTrigger;
}

/** A trigger read back from the state file. */
export function loadTrigger(t: StoredTrigger): TriggerInfo {
  return {
    messageId: t.messageId,
    kind: t.kind,
    conversation: t.conversation,
    streamId: t.streamId,
    stream: t.stream,
    topic: t.topic,
    dmUserIds: t.dmUserIds,
    senderId: t.senderId,
    senderEmail: t.senderEmail,
    senderName: t.senderName,
    timestamp: t.timestamp,
    ...(t.fresh === true ? { fresh: true } : {}),
  };
}
