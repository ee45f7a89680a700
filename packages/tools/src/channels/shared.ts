import { type Conversation, conversationKey, ZmcpError } from '@zmcp/core';
import type { ToolServices } from '../services.js';

// The chat id of a Claude Code channel event, and what the channel tools stand on. Internal to the
// package but for what index.ts exports.

/** One channel event as it was pushed to the session: its chat id and the content the model read. */
export interface ChannelEvent {
  readonly chatId: string;
  readonly content: string;
  /** The Zulip message the event was about: `channel_reply` follows its topic when it moved. */
  readonly messageId?: number | undefined;
}

/** What the channel tools stand on: the services, the session's sender gate and its recent events. */
export interface ChannelToolsContext {
  readonly services: ToolServices;
  /**
   * The sender gate of the session: whether a person may reach it. `channel_reply` writes to a DM
   * only when every other person in it passes (the outbound gate is the inbound one).
   */
  allows(userId: number): Promise<boolean>;
  /** The events pushed to the session, oldest first; the host keeps as many as it likes. */
  readonly recent: readonly ChannelEvent[];
}

/**
 * The chat id of a conversation, as a channel event carries it and `channel_reply` takes it back:
 * `stream:<stream id>/<topic, percent-encoded>` (the exact topic, never a fallback) or, for a DM,
 * core's conversation key `dm:<user ids>`.
 */
export function channelChatId(conversation: Conversation): string {
  if (conversation.kind === 'dm') return conversationKey(conversation);
  return `stream:${conversation.streamId}/${encodeURIComponent(conversation.topic)}`;
}

/**
 * A chat id parsed back into its conversation; the topic is exact (percent-decoded).
 * @throws ZmcpError `CORE_INVALID_ARGUMENT` for a chat id this server does not give.
 */
export function parseChatId(chatId: string): Conversation {
  const stream = /^stream:([1-9][0-9]{0,15})\/(.*)$/s.exec(chatId);
  if (stream !== null) {
    try {
      return { kind: 'stream', streamId: Number(stream[1]), topic: decodeURIComponent(stream[2] as string) };
    } catch {
      // Falls through to the refusal below.
    }
  }
  const dm = /^dm:([1-9][0-9]{0,15}(?:,[1-9][0-9]{0,15})*)$/.exec(chatId);
  if (dm !== null) return { kind: 'dm', userIds: (dm[1] as string).split(',').map(Number) };
  throw new ZmcpError(
    'CORE_INVALID_ARGUMENT',
    'chat_id is not one this server gave: copy it exactly from the chat_id attribute of a <channel> event',
  );
}
