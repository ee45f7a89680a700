import { conversationKey } from '@zmcp/core';
import { DeliveryError } from './errors.js';

/** What a channel id names: a stream by name, or a DM conversation by its other participants' ids. */
export type ParsedChannelId =
  | { readonly kind: 'stream'; readonly name: string }
  | { readonly kind: 'dm'; readonly userIds: readonly number[] };

const PREFIX = 'zulip:';
const DM_PREFIX = 'zulip:dm:';
const MAX_ID_LENGTH = 2_000;

// `%` and `:` are escaped so that no stream name (say "dm:4,7") can spell a DM channel id,
// and control characters so that an id is always one line.
const ESCAPED = /[%:\u0000-\u001f\u007f]/g;

/**
 * The channel id of a stream: `zulip:<name>`, with `%`, `:` and control characters of the name
 * percent-encoded (`zulip:ops%3Aalerts` for "ops:alerts"), so a stream can never spell a DM id.
 * The id follows the stream's name; the engine keys its state by stream id, so a rename keeps it.
 */
export function streamChannelId(name: string): string {
  return `${PREFIX}${name.replace(ESCAPED, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)}`;
}

/**
 * The channel id of a DM conversation: `zulip:dm:<ids>`, the participants other than the bot,
 * ascending and comma-separated (`zulip:dm:8,21`). A DM with itself is the bot's own id.
 */
export function dmChannelId(userIds: readonly number[]): string {
  return `${PREFIX}${conversationKey({ kind: 'dm', userIds })}`;
}

function normalizeUserIds(userIds: readonly number[]): number[] {
  return [...new Set(userIds)].sort((a, b) => a - b);
}

function invalid(id: unknown, why: string): DeliveryError {
  const shown =
    typeof id === 'string' ? JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id) : typeof id;
  return new DeliveryError('DELIVERY_INVALID_ARGUMENT', `invalid channel id ${shown}: ${why}`, {
    details: { field: 'channelId', reason: why },
  });
}

/**
 * Parses a channel id: `zulip:<stream name>` (percent-decoded) or `zulip:dm:<ids>`.
 *
 * @throws DeliveryError `DELIVERY_INVALID_ARGUMENT` naming what is wrong with the id.
 */
export function parseChannelId(id: unknown): ParsedChannelId {
  if (typeof id !== 'string') throw invalid(id, 'expected a string');
  if (id.length > MAX_ID_LENGTH) throw invalid(id, `longer than ${MAX_ID_LENGTH} characters`);
  if (!id.startsWith(PREFIX)) throw invalid(id, 'it does not start with "zulip:"');
  if (id.startsWith(DM_PREFIX)) {
    const body = id.slice(DM_PREFIX.length);
    if (!/^[1-9][0-9]{0,15}(,[1-9][0-9]{0,15})*$/.test(body)) {
      throw invalid(id, 'a DM channel lists user ids, ascending and comma-separated ("zulip:dm:8,21")');
    }
    const userIds = body.split(',').map(Number);
    if (!userIds.every(Number.isSafeInteger)) throw invalid(id, 'a user id is too large');
    const sorted = normalizeUserIds(userIds);
    if (sorted.length !== userIds.length || sorted.some((u, i) => u !== userIds[i])) {
      throw invalid(id, 'user ids must be ascending, without repeats');
    }
    return { kind: 'dm', userIds: sorted };
  }
  const encoded = id.slice(PREFIX.length);
  if (encoded === '') throw invalid(id, 'the stream name is empty');
  if (/[:\u0000-\u001f\u007f]/.test(encoded))
    throw invalid(id, '":" and control characters must be percent-encoded');
  let name: string;
  try {
    name = encoded.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => {
      const code = Number.parseInt(hex, 16);
      if (code !== 0x25 && code !== 0x3a && code >= 0x20 && code !== 0x7f) throw new Error(hex);
      return String.fromCharCode(code);
    });
  } catch {
    throw invalid(id, 'only "%", ":" and control characters are percent-encoded');
  }
  if (/%(?![0-9A-Fa-f]{2})/.test(encoded)) throw invalid(id, 'a "%" must start an escape such as %25');
  return { kind: 'stream', name };
}

/** The engine's internal key of a channel: by stream id (rename-proof) or by DM participants. */
export type ChannelKey = string;

/** The key of a stream channel. */
export function streamKey(streamId: number): ChannelKey {
  return `s${streamId}`;
}

/** The key of a DM channel (participants other than the bot). */
export function dmKey(userIds: readonly number[]): ChannelKey {
  return `d${normalizeUserIds(userIds).join(',')}`;
}
