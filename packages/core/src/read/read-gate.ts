import type { Message } from '../api/schemas.js';
import type { CallOptions } from '../client/transport.js';
import type { ZulipClient } from '../client/zulip-client.js';
import { ZmcpError } from '../errors.js';
import { HistoryPager, MAX_MESSAGES_PER_REQUEST } from '../history/pager.js';
import type { AccessPolicy, NarrowInput, NarrowScopeKind } from '../policy/policy.js';
import { createStreamLookup, type StreamInfoLookup } from '../policy/streams.js';

/** Which part of a narrow's history {@link readNarrow} reads. */
export type ReadRange =
  | { kind: 'newest'; limit: number }
  | { kind: 'before'; beforeId: number; limit: number }
  | { kind: 'since'; afterId: number; limit: number }
  | { kind: 'around'; id: number; before: number; after: number }
  | { kind: 'between'; from: Date | number; to: Date | number; limit: number };

/** A narrow read for {@link readNarrow}. */
export interface ReadNarrowQuery {
  /** The narrow as asked for (object terms or legacy pairs); validated and scope-checked by the policy. */
  narrow: NarrowInput;
  range: ReadRange;
  /** Stream facts for the policy; when absent, fetched once with GET /streams. Unknown streams count as private. */
  streams?: StreamInfoLookup | undefined;
  /** What to do with a narrow that names no stream or DM; see `AccessPolicy.checkNarrowScope`. */
  unscoped?: 'refuse' | 'public-streams' | undefined;
  /** HTML (true) or raw Markdown (false, default). */
  applyMarkdown?: boolean | undefined;
  pageSize?: number | undefined;
  /** Per-request deadline and a signal shared by every request of the read. */
  call?: CallOptions | undefined;
}

/** What {@link readNarrow} returns: only messages the policy lets through, oldest first. */
export interface ReadNarrowResult {
  messages: Message[];
  /** More messages match beyond the range in its direction (for `around`: on either side). */
  hasMore: boolean;
  /** `around` only: whether the anchor came back, and whether there is more on each side. */
  foundAnchor?: boolean;
  hasOlder?: boolean;
  hasNewer?: boolean;
  /** Messages Zulip returned that the policy dropped as strays. */
  dropped: number;
  /** What the narrow reaches, as the policy judged it. */
  scope: NarrowScopeKind;
}

async function lookupFor(
  client: ZulipClient,
  given: StreamInfoLookup | undefined,
  call: CallOptions | undefined,
): Promise<StreamInfoLookup> {
  if (given !== undefined) return given;
  return createStreamLookup(await client.getStreams({}, call));
}

/**
 * The one gate for narrow reads: the policy's scope check runs before anything is fetched,
 * and every message that comes back passes `isReadable`; strays are dropped and counted.
 * @throws {ZmcpError} `CORE_ACCESS_DENIED` (scope refused before any fetch), `CORE_INVALID_ARGUMENT`
 *   (malformed narrow or range), and the request codes of {@link ZulipClient.getMessages}.
 */
export async function readNarrow(
  client: ZulipClient,
  policy: AccessPolicy,
  query: ReadNarrowQuery,
): Promise<ReadNarrowResult> {
  const streams = await lookupFor(client, query.streams, query.call);
  const decision = policy.checkNarrowScope(query.narrow, streams, { unscoped: query.unscoped });
  const pager = new HistoryPager(client, {
    narrow: decision.narrow,
    applyMarkdown: query.applyMarkdown,
    pageSize: query.pageSize,
    call: query.call,
  });
  const range = query.range;
  const keep = (messages: Message[]) => {
    const kept = policy.filterReadable(messages, streams);
    return { kept, dropped: messages.length - kept.length };
  };
  switch (range.kind) {
    case 'newest':
    case 'before':
    case 'since':
    case 'between': {
      const res =
        range.kind === 'newest'
          ? await pager.newest(range.limit)
          : range.kind === 'before'
            ? await pager.before(range.beforeId, range.limit)
            : range.kind === 'since'
              ? await pager.since(range.afterId, range.limit)
              : await pager.between(range.from, range.to, range.limit);
      const { kept, dropped } = keep(res.messages);
      return { messages: kept, hasMore: res.hasMore, dropped, scope: decision.scope };
    }
    case 'around': {
      const res = await pager.around(range.id, range.before, range.after);
      const { kept, dropped } = keep(res.messages);
      const anchorKept = kept.some((m) => m.id === range.id);
      return {
        messages: kept,
        hasMore: res.hasOlder || res.hasNewer,
        foundAnchor: res.foundAnchor && anchorKept,
        hasOlder: res.hasOlder,
        hasNewer: res.hasNewer,
        dropped,
        scope: decision.scope,
      };
    }
    default:
      throw new ZmcpError('CORE_INVALID_ARGUMENT', 'Unknown read range kind', {
        details: { kind: (range as { kind?: unknown }).kind },
      });
  }
}

/** Options of {@link readMessage}. */
export interface ReadMessageOptions {
  streams?: StreamInfoLookup | undefined;
  applyMarkdown?: boolean | undefined;
  call?: CallOptions | undefined;
}

/**
 * The one gate for single-message reads: fetches the message and returns it only if the
 * policy lets it be read.
 * @throws {ZmcpError} `CORE_ACCESS_DENIED` (the message is in a stream or DM the policy keeps
 *   closed; nothing of it is returned), `CORE_INVALID_ARGUMENT`, and the request codes of
 *   {@link ZulipClient.getMessage} (`CORE_BAD_REQUEST` for an unknown id).
 */
export async function readMessage(
  client: ZulipClient,
  policy: AccessPolicy,
  messageId: number,
  options: ReadMessageOptions = {},
): Promise<Message> {
  const res = await client.getMessage(
    messageId,
    { applyMarkdown: options.applyMarkdown ?? false, allowEmptyTopicName: true },
    options.call,
  );
  const streams = await lookupFor(client, options.streams, options.call);
  if (!policy.isReadable(res.message, streams)) {
    throw new ZmcpError(
      'CORE_ACCESS_DENIED',
      `Message ${messageId} is in a ${res.message.type === 'private' ? 'direct message' : 'stream'} this session may not read`,
      { details: { messageId, reason: res.message.type === 'private' ? 'dm' : 'private-stream' } },
    );
  }
  return res.message;
}

/** What {@link readMessages} returns: the messages the policy lets through, by ascending id. */
export interface ReadMessagesResult {
  messages: Message[];
  /** Ids Zulip did not return (gone, or not visible to this account) or the policy kept closed. */
  withheld: number;
}

/**
 * The gate for reading messages by id (GET /messages with `message_ids`, 5000 a request): every
 * message that comes back passes `isReadable`; the others, and the ids Zulip did not return, are
 * counted, never shown.
 * @throws {ZmcpError} `CORE_INVALID_ARGUMENT` (a bad id), and the request codes of {@link ZulipClient.getMessages}.
 */
export async function readMessages(
  client: ZulipClient,
  policy: AccessPolicy,
  ids: readonly number[],
  options: ReadMessageOptions = {},
): Promise<ReadMessagesResult> {
  const wanted = [...new Set(ids)].sort((a, b) => a - b);
  if (wanted.length === 0) return { messages: [], withheld: 0 };
  const streams = await lookupFor(client, options.streams, options.call);
  const messages: Message[] = [];
  for (let i = 0; i < wanted.length; i += MAX_MESSAGES_PER_REQUEST) {
    const res = await client.getMessages(
      {
        messageIds: wanted.slice(i, i + MAX_MESSAGES_PER_REQUEST),
        applyMarkdown: options.applyMarkdown ?? false,
        allowEmptyTopicName: true,
      },
      options.call,
    );
    const asked = new Set(wanted.slice(i, i + MAX_MESSAGES_PER_REQUEST));
    for (const m of res.messages) if (asked.has(m.id) && policy.isReadable(m, streams)) messages.push(m);
  }
  messages.sort((a, b) => a.id - b.id);
  return { messages, withheld: wanted.length - messages.length };
}
