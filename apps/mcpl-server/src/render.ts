import { escapeMsgName, escapeMsgText } from '@zmcp/core';
import type { DeliveryItem, ChannelDescriptor as ZulipChannel } from '@zmcp/delivery';
import type { ChannelDescriptor, ChannelMessage, ContentBlock, JsonObject, JsonValue } from '@zmcp/mcpl';

// How the engine's host-neutral deliveries look on the MCPL wire. The text is the engine's (core's
// message line, escaped); nothing here builds a line of its own.

/** The channel type every descriptor carries. */
export const CHANNEL_TYPE = 'zulip';

/** Most messages one `channels/open` returns as history. */
export const MAX_OPEN_HISTORY = 1000;

/**
 * A delivery channel as MCPL registers it. The address is the stream's id or the DM's user ids,
 * so a host that opens by `{type, address}` keeps the channel across a stream rename.
 */
export function mcplChannel(channel: ZulipChannel): ChannelDescriptor {
  const address: JsonObject =
    channel.kind === 'stream'
      ? { streamId: channel.streamId ?? null }
      : { userIds: [...(channel.userIds ?? [])] };
  return {
    id: channel.id,
    type: CHANNEL_TYPE,
    label: channel.label,
    direction: 'bidirectional',
    address,
    metadata: { kind: channel.kind, private: channel.private, ...address },
    capabilities: {
      history: { maxMessages: MAX_OPEN_HISTORY, supportsBeforeMessage: false, supportsSinceLastSeen: false },
    },
  };
}

/** The body of an item without its message-line head (the marker of a change line stays in front). */
export function bareText(item: Pick<DeliveryItem, 'text' | 'head'>): string {
  const at = item.head === '' ? -1 : item.text.indexOf(item.head);
  return at < 0 ? item.text : item.text.slice(0, at) + item.text.slice(at + item.head.length);
}

/** What the model reads of an item: the whole line, or with attribution off, the bare body. */
export function itemText(item: Pick<DeliveryItem, 'text' | 'head'>, attribute: boolean): string {
  return attribute ? item.text : bareText(item);
}

function safeJson(value: unknown): JsonValue | undefined {
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return value;
  // Change metadata carries Zulip's text (previous content, topics): escaped like every body.
  if (typeof value === 'string') return escapeMsgText(value);
  if (Array.isArray(value)) return value.map((v) => safeJson(v) ?? null);
  if (typeof value === 'object') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const j = safeJson(v);
      if (j !== undefined) out[k] = j;
    }
    return out;
  }
  return undefined;
}

/** The metadata of an item: what it is, and the attribution stamp when the head leads the text. */
export function itemMetadata(item: DeliveryItem, attribute: boolean): JsonObject {
  const metadata: JsonObject = {
    zulipMessageId: item.messageId,
    kind: item.kind,
    recovered: item.recovered,
  };
  if (attribute) {
    metadata.attributed = true;
    metadata.attributionHeader = item.head;
  }
  const extra = safeJson(item.metadata ?? {}) as JsonObject;
  return { ...extra, ...metadata };
}

/**
 * One delivered item as a `channels/incoming` (or history) message: the item's id (stable across
 * replays, so the host de-duplicates), the topic as `threadId` for messages (never for change
 * lines), the line as text, and any inlined images after it.
 */
export function channelMessage(
  item: DeliveryItem,
  attribute: boolean,
  images: readonly ContentBlock[] = [],
): ChannelMessage {
  return {
    channelId: item.channelId,
    messageId: item.id,
    ...(item.kind === 'message' && item.topic !== undefined ? { threadId: item.topic } : {}),
    author: { id: String(item.author.id), name: escapeMsgName(item.author.name) },
    timestamp: item.timestamp,
    content: [{ type: 'text', text: itemText(item, attribute) }, ...images],
    metadata: itemMetadata(item, attribute),
    tags: [...item.tags],
  };
}
