import {
  escapeMsgAttr,
  type FormattableMessage,
  type MessageLineFormatter,
  type PersonNames,
  personLabel,
} from '@zmcp/core';
import type { DeliveryItem, DeliveryItemKind, MissedInfo } from './sink.js';

/**
 * How the engine renders what the model reads: core's one message-line formatter, escaping on,
 * and the realm's display names it tells people apart by (the author's name carries the user id
 * where the line's does).
 */
export interface Renderer {
  readonly line: MessageLineFormatter;
  readonly people: PersonNames;
}

function iso(seconds: number): string {
  const ms = seconds * 1000;
  return Number.isFinite(ms) ? new Date(ms).toISOString() : new Date(0).toISOString();
}

/** The item of a message. */
export function messageItem(
  { line, people }: Renderer,
  message: FormattableMessage,
  channelId: string,
  tags: readonly string[],
  recovered: boolean,
): DeliveryItem {
  return {
    id: String(message.id),
    kind: 'message',
    messageId: message.id,
    channelId,
    ...(message.type === 'stream' ? { topic: message.subject } : {}),
    author: { id: message.sender_id, name: personLabel(message.sender_full_name, message.sender_id, people) },
    timestamp: iso(message.timestamp),
    text: line(message),
    head: line.head(message),
    tags,
    recovered,
  };
}

const MARKERS: Readonly<Record<Exclude<DeliveryItemKind, 'message'>, string>> = {
  edited: '[edited] ',
  moved: '[moved] ',
  deleted: '[deleted] ',
  reaction: '[reaction] ',
  'reaction-remove': '[reaction] ',
};

const ID_PREFIX: Readonly<Record<Exclude<DeliveryItemKind, 'message'>, string>> = {
  edited: 'edit',
  moved: 'move',
  deleted: 'delete',
  reaction: 'reaction',
  'reaction-remove': 'reaction',
};

/**
 * A change or reaction line: a marker, then the message line the formatter writes for `shown`
 * (the message as it now reads, with the change described as its body). Its id is synthetic and
 * never advances a watermark; `messageId` is the message's own.
 */
export function changeItem(
  { line, people }: Renderer,
  kind: Exclude<DeliveryItemKind, 'message'>,
  shown: FormattableMessage,
  channelId: string,
  eventId: number,
  tags: readonly string[],
  metadata: Readonly<Record<string, unknown>>,
): DeliveryItem {
  return {
    id: `${ID_PREFIX[kind]}:${shown.id}:${eventId}`,
    kind,
    messageId: shown.id,
    channelId,
    author: { id: shown.sender_id, name: personLabel(shown.sender_full_name, shown.sender_id, people) },
    timestamp: iso(shown.timestamp),
    text: MARKERS[kind] + line(shown),
    head: line.head(shown),
    tags,
    recovered: false,
    metadata,
  };
}

/** Limits of a `<missed>` block. */
export interface MissedLimits {
  /** Most messages shown. */
  readonly maxMessages: number;
  /** Most bytes of text (UTF-8), wrapper included. */
  readonly maxBytes: number;
}

/** What a block is built from: the kept messages (oldest first, rendered), and the counts. */
export interface MissedContent {
  readonly channelId: string;
  /** Kept items, oldest first; `gapBefore` marks an item not adjacent to the one before it. */
  readonly items: readonly { readonly item: DeliveryItem; readonly gapBefore: number }[];
  readonly messages: number;
  readonly addressed: number;
  /** The first missed message id (for the elision pointer). */
  readonly firstId: number;
  readonly throughId: number;
  readonly wasOpen: boolean;
}

const encoder = new TextEncoder();
const bytes = (s: string) => encoder.encode(s).length;

/**
 * Renders a `<missed>` block: the newest kept messages that fit both limits, oldest first, with
 * a pointer to what was left out (never beginning with `[`, so it cannot pass for a message line).
 */
export function renderMissed(
  content: MissedContent,
  limits: MissedLimits,
): { text: string; items: DeliveryItem[]; info: MissedInfo } {
  const open = (shown: number) =>
    `<missed channel="${escapeMsgAttr(content.channelId)}" messages="${content.messages}" ${
      content.wasOpen ? '' : `addressed="${content.addressed}" `
    }shown="${shown}">`;
  const close = '</missed>';
  // The budget leaves room for the wrapper and one pointer line.
  let budget = limits.maxBytes - bytes(open(content.messages)) - bytes(close) - 160;
  const kept: { item: DeliveryItem; gapBefore: number }[] = [];
  for (let i = content.items.length - 1; i >= 0 && kept.length < limits.maxMessages; i--) {
    const entry = content.items[i] as { item: DeliveryItem; gapBefore: number };
    const cost = bytes(entry.item.text) + 1 + (entry.gapBefore > 0 ? 80 : 0);
    if (cost > budget) break;
    budget -= cost;
    kept.unshift(entry);
  }
  const lines: string[] = [open(kept.length)];
  const firstKept = kept[0]?.item.messageId;
  const elidedCount = content.messages - kept.length;
  let elided: MissedInfo['elided'];
  if (elidedCount > 0) {
    const toId = firstKept === undefined ? content.throughId : firstKept - 1;
    elided = { count: elidedCount, fromId: content.firstId, toId };
  }
  if (elided !== undefined && (firstKept === undefined || content.wasOpen)) {
    lines.push(
      `… ${elided.count} ${elided.count === 1 ? 'message' : 'messages'} not shown (ids ${elided.fromId}-${elided.toId}): fetch_history returns them`,
    );
  }
  kept.forEach((entry, index) => {
    if (index > 0 && entry.gapBefore > 0) {
      lines.push(`… ${entry.gapBefore} ${entry.gapBefore === 1 ? 'message' : 'messages'} not shown`);
    } else if (index === 0 && !content.wasOpen && elided !== undefined && firstKept !== undefined) {
      lines.push(
        `… ${elided.count} other ${elided.count === 1 ? 'message' : 'messages'} not shown (ids ${elided.fromId}-${content.throughId}): fetch_history returns them`,
      );
    }
    lines.push(entry.item.text);
  });
  lines.push(close);
  return {
    text: lines.join('\n'),
    items: kept.map((k) => k.item),
    info: {
      throughId: content.throughId,
      addressed: content.addressed,
      messages: content.messages,
      shown: kept.length,
      ...(elided === undefined ? {} : { elided }),
      wasOpen: content.wasOpen,
    },
  };
}
