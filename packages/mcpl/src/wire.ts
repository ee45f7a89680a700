import { McplError } from './errors.js';
import { isPlainObject, type JsonObject, type JsonValue } from './json.js';

/** A content block (App. B.1): text, image or audio (inline data or a uri), or a resource. */
export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image' | 'audio'; data: string; mimeType: string }
  | { type: 'image' | 'audio'; uri: string }
  | { type: 'resource'; uri: string };

/** Which way a channel carries messages. */
export type ChannelDirection = 'outbound' | 'inbound' | 'bidirectional';

/** A channel as a server registers it (§14.2), with the extensions hosts use (INTEROP.md). */
export interface ChannelDescriptor {
  /** Unique within the connection. */
  id: string;
  /** Platform or provider (`zulip`, `discord`). */
  type: string;
  /** Human label. */
  label: string;
  direction: ChannelDirection;
  address?: JsonValue;
  metadata?: JsonObject;
  /** A bootstrap preference for hosts that decide which channels start open. */
  initiallyOpen?: boolean;
  /** What the channel supports, e.g. `history: { maxMessages, supportsBeforeMessage, supportsSinceLastSeen }`. */
  capabilities?: JsonObject;
}

/** One inbound message (§14.3), as `channels/incoming` and open-with-history carry it. */
export interface ChannelMessage {
  channelId: string;
  messageId: string;
  threadId?: string;
  author: { id: string; name: string };
  /** ISO 8601. */
  timestamp: string;
  content: ContentBlock[];
  metadata?: JsonObject;
  /** Namespaced tags (§16); the library closes them under §16.3 before sending. */
  tags?: string[];
}

/** The history a host asks for when it opens a channel. */
export interface ChannelHistoryRequest {
  limit?: number;
  beforeMessageId?: string;
  sinceLastSeen?: boolean;
}

const directions = new Set(['outbound', 'inbound', 'bidirectional']);

function fail(what: string, why: string): never {
  throw new McplError('MCPL_INVALID_ARGUMENT', `${what}: ${why}`);
}

/** True for a well-formed content block. */
export function isContentBlock(value: unknown): value is ContentBlock {
  if (!isPlainObject(value)) return false;
  switch (value.type) {
    case 'text':
      return typeof value.text === 'string';
    case 'image':
    case 'audio':
      return (
        (typeof value.data === 'string' && typeof value.mimeType === 'string') ||
        typeof value.uri === 'string'
      );
    case 'resource':
      return typeof value.uri === 'string';
    default:
      return false;
  }
}

/**
 * Checks a descriptor the app hands the library.
 *
 * @throws McplError `MCPL_INVALID_ARGUMENT` naming the field.
 */
export function checkDescriptor(value: ChannelDescriptor): ChannelDescriptor {
  const what = `channel ${JSON.stringify(String(value?.id).slice(0, 80))}`;
  if (!isPlainObject(value)) fail('channel descriptor', 'not an object');
  if (typeof value.id !== 'string' || value.id === '') fail(what, 'id must be a non-empty string');
  if (typeof value.type !== 'string' || value.type === '') fail(what, 'type must be a non-empty string');
  if (typeof value.label !== 'string') fail(what, 'label must be a string');
  if (!directions.has(value.direction)) fail(what, 'direction must be outbound, inbound or bidirectional');
  if (value.metadata !== undefined && !isPlainObject(value.metadata))
    fail(what, 'metadata must be an object');
  return value;
}

/**
 * What is wrong with an inbound message (§14.3), or undefined when it is well formed: the
 * one rule both ends apply, the server to what the app hands it and the host at receipt.
 */
export function messageProblem(value: unknown): string | undefined {
  if (!isPlainObject(value)) return 'not an object';
  if (typeof value.channelId !== 'string') return 'channelId must be a string';
  if (typeof value.messageId !== 'string' || value.messageId === '')
    return 'messageId must be a non-empty string';
  const author = value.author;
  if (!isPlainObject(author) || typeof author.id !== 'string' || typeof author.name !== 'string') {
    return 'author must be { id, name } strings';
  }
  if (typeof value.timestamp !== 'string') return 'timestamp must be an ISO 8601 string';
  const content = value.content;
  if (!Array.isArray(content)) return 'content must be an array of content blocks';
  for (const block of content)
    if (!isContentBlock(block)) return 'content must be an array of content blocks';
  return undefined;
}

/**
 * Checks an inbound message the app hands the library.
 *
 * @throws McplError `MCPL_INVALID_ARGUMENT` naming the field.
 */
export function checkMessage(value: ChannelMessage): ChannelMessage {
  const problem = messageProblem(value);
  if (problem === undefined) return value;
  if (!isPlainObject(value)) fail('channel message', problem);
  fail(`message ${JSON.stringify(String(value.messageId).slice(0, 80))}`, problem);
}

/** Canonical key of an address for matching `channels/open` by `{type, address}`. */
export function addressKey(type: string, address: unknown): string {
  return `${type}\u0000${stableJson(address ?? null)}`;
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (isPlainObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${stableJson(value[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
