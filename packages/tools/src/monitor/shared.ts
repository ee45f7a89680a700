import {
  type CallOptions,
  isNoBotsMessage,
  isZmcpError,
  type Message,
  quoteName,
  readNarrow,
  type StreamInfoLookup,
} from '@zmcp/core';
import type { MonitoredStream, MonitorStore, MonitorWatcher, MonitorWatcherStatus } from '@zmcp/delivery';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import type { MonitorChanges } from './changes.js';

// Helpers shared by the monitor tools and resources. Internal to the package.

/** What every monitor tool and resource stands on. */
export interface MonitorContext {
  readonly services: ToolServices;
  readonly monitor: MonitorStore;
  readonly watcher: MonitorWatcher | undefined;
  readonly changes: MonitorChanges;
}

/** The fixed resource URIs, and the template of the per-stream one. */
export const SUMMARY_URI = 'zulip://unread/summary';
export const STATUS_URI = 'zulip://monitoring/status';
export const CHANNEL_URI_TEMPLATE = 'zulip://channel/{stream}/unread';

/** The unread resource of one monitored stream; the name is URI-encoded. */
export function channelUri(name: string): string {
  return `zulip://channel/${encodeURIComponent(name)}/unread`;
}

export { itemBudget, plural, READ_ANNOTATIONS } from '../read/shared.js';

/** A stream leading a line of a list (`#name: status`): quoted where it holds a delimiter there. */
export function streamLabel(name: string): string {
  return `#${quoteName(name, 'person')}`;
}

/** A stream name input. */
export const StreamNameSchema = z.string().trim().min(1).max(200);

/** Live updates as the status resource and get_monitored_channels report them. */
export const LiveUpdatesSchema = z.object({
  running: z.boolean().describe('Whether resource-updated notifications are being sent as messages arrive'),
  state: z.enum(['idle', 'starting', 'live', 'unavailable', 'failed', 'none']),
  detail: z.string().nullable().describe('Why live updates are not running, when they are not'),
});
/** Live updates, as reported. */
export type LiveUpdates = z.infer<typeof LiveUpdatesSchema>;

/** Reports the watcher's state for a status display. */
export function liveUpdates(watcher: MonitorWatcher | undefined): LiveUpdates {
  if (watcher === undefined) {
    return { running: false, state: 'none', detail: 'This server runs no event queue for the monitor.' };
  }
  const status: MonitorWatcherStatus = watcher.status;
  const detail =
    status.detail ??
    (status.state === 'idle'
      ? 'Starts when a client subscribes to a zulip:// resource; stops when the last subscription ends.'
      : status.state === 'starting'
        ? 'Registering a Zulip event queue.'
        : null);
  return { running: status.state === 'live', state: status.state, detail };
}

/** One monitored stream with what the realm says of it now. */
export interface ResolvedMonitored {
  readonly entry: MonitoredStream;
  /** The stream's current name (it follows a rename when the id is known). */
  readonly name: string;
  readonly streamId: number | undefined;
  /** The id of the last message read; messages above it are unread. */
  readonly cursor: number | undefined;
}

/** The monitored streams, each with its current name when the bot can still see it. */
export function resolveMonitored(
  entries: readonly MonitoredStream[],
  lookup: StreamInfoLookup,
): ResolvedMonitored[] {
  return entries.map((entry) => {
    const info = entry.streamId === undefined ? lookup(entry.name) : lookup(entry.streamId);
    return {
      entry,
      name: info?.name ?? entry.name,
      streamId: entry.streamId ?? info?.stream_id,
      cursor: entry.lastReadId,
    };
  });
}

/** What one stream's unread read found. */
export interface StreamUnreadRead {
  /** Every message fetched above the cursor, oldest first, including the hidden ones. */
  readonly fetched: readonly Message[];
  /** The ones the agent sees: not the bot's own, not `/nobots`. */
  readonly visible: readonly Message[];
  /** `/nobots` messages among `fetched`. */
  readonly hidden: number;
  /** More messages exist beyond the last fetched one. */
  readonly hasMore: boolean;
}

/** Whether a fetched message is shown as unread: not the bot's own, not opted out. */
export function isShownUnread(services: ToolServices, message: Message): boolean {
  return message.sender_id !== services.identity.user_id && !isNoBotsMessage(message);
}

/**
 * Reads up to `limit` messages of one monitored stream newer than `afterId`, oldest first,
 * through the one read gate.
 * @throws ZmcpError `CORE_ACCESS_DENIED` and the request codes of core's `readNarrow`.
 */
export async function readStreamUnread(
  services: ToolServices,
  stream: ResolvedMonitored,
  afterId: number,
  limit: number,
  lookup: StreamInfoLookup,
  call: CallOptions,
): Promise<StreamUnreadRead> {
  const res = await readNarrow(services.client, services.policy, {
    narrow: [{ operator: 'channel', operand: stream.streamId ?? stream.name }],
    range: { kind: 'since', afterId, limit },
    streams: lookup,
    call,
  });
  const visible: Message[] = [];
  let hidden = 0;
  for (const m of res.messages) {
    if (m.sender_id === services.identity.user_id) continue;
    if (isNoBotsMessage(m)) hidden++;
    else visible.push(m);
  }
  return { fetched: res.messages, visible, hidden, hasMore: res.hasMore };
}

/** Failures that concern one stream (it is gone or closed to this session), not the whole call. */
export function isStreamFailure(err: unknown): boolean {
  return isZmcpError(err) && (err.code === 'CORE_ACCESS_DENIED' || err.code === 'CORE_BAD_REQUEST');
}

/** A short, safe description of a per-stream failure. */
export function describeFailure(err: unknown): string {
  if (isZmcpError(err)) return `${err.code}: ${err.message}`;
  return 'unexpected failure';
}

/** How many unread messages a count looks at per stream before it reports "N+". */
export const COUNT_LIMIT = 100;

/** One stream's unread count, as summaries show it. */
export interface UnreadCount {
  readonly unread: number;
  /** The count stopped at {@link COUNT_LIMIT}: there are more. */
  readonly more: boolean;
  /** The newest unread message's id, when there is one. */
  readonly newestId: number | undefined;
  /** Why the stream could not be read, when it could not. */
  readonly error: string | undefined;
}

/**
 * Counts one stream's unread messages (up to {@link COUNT_LIMIT}); a stream this session can no
 * longer read is reported, not thrown.
 * @throws the request codes of core's `readNarrow` (network, deadline).
 */
export async function countUnread(
  services: ToolServices,
  stream: ResolvedMonitored,
  lookup: StreamInfoLookup,
  call: CallOptions,
): Promise<UnreadCount> {
  try {
    const read = await readStreamUnread(services, stream, stream.cursor ?? 0, COUNT_LIMIT, lookup, call);
    let newestId = read.visible.at(-1)?.id;
    if (read.hasMore) {
      // The count stopped early; one more read finds the newest message.
      const newest = await readNarrow(services.client, services.policy, {
        narrow: [{ operator: 'channel', operand: stream.streamId ?? stream.name }],
        range: { kind: 'newest', limit: 1 },
        streams: lookup,
        call,
      });
      newestId = newest.messages.at(-1)?.id ?? newestId;
    }
    return { unread: read.visible.length, more: read.hasMore, newestId, error: undefined };
  } catch (err) {
    if (!isStreamFailure(err)) throw err;
    return { unread: 0, more: false, newestId: undefined, error: describeFailure(err) };
  }
}

/** `3 unread`, `100+ unread`. */
export function countText(count: UnreadCount): string {
  return `${count.unread}${count.more ? '+' : ''} unread`;
}

/** Reads in flight at once when a call reads several streams. */
const PARALLEL_READS = 6;

/** Maps `items` through `fn` with at most a few calls in flight, keeping the order. */
export async function mapInBatches<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += PARALLEL_READS) {
    out.push(...(await Promise.all(items.slice(i, i + PARALLEL_READS).map(fn))));
  }
  return out;
}
