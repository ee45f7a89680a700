import type { Conversation } from '@zmcp/core';
import type { DeliveryItem, ChannelDescriptor as ZulipChannel } from '@zmcp/delivery';

type StreamConversation = Extract<Conversation, { kind: 'stream' }>;

/**
 * Where a reply goes: a conversation (core's), a stream topic anchored on a message in it so that
 * it can follow the topic when it is renamed or moved.
 */
export type ReplyTarget =
  | ({ -readonly [K in keyof StreamConversation]: StreamConversation[K] } & { anchorId: number })
  | Extract<Conversation, { kind: 'dm' }>;

const MAX_CONVERSATIONS = 1000;

/**
 * Remembers, per channel, the topic the agent is answering in: the topic of the newest message
 * the host accepted there (a change line never moves it: a moderator editing an old message does
 * not retarget a reply being written), and per host conversation the topic of the message the host
 * put into it. Each stream target is anchored on a message id, so a publish can follow the topic
 * when it is renamed or moved.
 */
export class ReplyRouter {
  readonly #active = new Map<string, ReplyTarget>();
  readonly #conversations = new Map<string, { channelId: string; target: ReplyTarget }>();

  /** Notes a message the host accepted (incoming item or pushed message). */
  accepted(channel: ZulipChannel, item: DeliveryItem, conversationId?: string): void {
    if (item.kind !== 'message') return;
    const target = targetOf(channel, item);
    if (target === undefined) return;
    this.#active.set(channel.id, target);
    if (conversationId !== undefined) {
      this.#conversations.delete(conversationId);
      this.#conversations.set(conversationId, { channelId: channel.id, target });
      while (this.#conversations.size > MAX_CONVERSATIONS) {
        this.#conversations.delete(this.#conversations.keys().next().value as string);
      }
    }
  }

  /**
   * Where a publish to `channel` goes: the topic of the host's conversation when it names one of
   * this channel, else the channel's active topic; a DM channel always has its participants.
   * Undefined for a stream channel no message has arrived on: there is no topic to guess.
   */
  target(channel: ZulipChannel, conversationId: string | undefined): ReplyTarget | undefined {
    if (channel.kind === 'dm') return { kind: 'dm', userIds: [...(channel.userIds ?? [])] };
    if (conversationId !== undefined) {
      const known = this.#conversations.get(conversationId);
      if (known !== undefined && known.channelId === channel.id) return known.target;
    }
    return this.#active.get(channel.id);
  }

  /** The topic was found renamed or moved: later replies follow it. */
  moved(target: ReplyTarget, now: { streamId: number; topic: string }): void {
    if (target.kind !== 'stream') return;
    target.streamId = now.streamId;
    target.topic = now.topic;
  }
}

function targetOf(channel: ZulipChannel, item: DeliveryItem): ReplyTarget | undefined {
  if (channel.kind === 'dm') return { kind: 'dm', userIds: [...(channel.userIds ?? [])] };
  if (channel.streamId === undefined || item.topic === undefined) return undefined;
  return { kind: 'stream', streamId: channel.streamId, topic: item.topic, anchorId: item.messageId };
}
