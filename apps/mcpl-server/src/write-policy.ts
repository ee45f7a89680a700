import { type CallOptions, isZmcpError, type WriteTarget } from '@zmcp/core';
import { McplError, McplRpcCode, rpcError } from '@zmcp/mcpl';
import type { Runtime } from './runtime-types.js';

/** A conversation as a channel or a reply target knows it: a stream by id, or the people of a DM. */
export interface Conversation {
  readonly kind: 'stream' | 'dm';
  readonly streamId?: number | undefined;
  readonly userIds?: readonly number[] | undefined;
}

/**
 * The access policy's name for a conversation: the stream by id (never by name: names are chosen
 * by anyone), or the DM's people.
 *
 * @throws McplError `MCPL_INVALID_ARGUMENT` for a stream conversation without a stream id.
 */
export function writeTargetOf(conversation: Conversation): WriteTarget {
  if (conversation.kind === 'dm') return { dm: [...(conversation.userIds ?? [])] };
  if (conversation.streamId === undefined) {
    throw new McplError('MCPL_INVALID_ARGUMENT', 'a stream conversation without a stream id');
  }
  return { stream: conversation.streamId };
}

/**
 * Core's write check, the one every tool makes (`AccessPolicy.checkWrite`: read-only, the write
 * allowlist by stream id, private streams, DMs), for a host method that writes on a channel:
 * `channels/publish`, `channels/typing`, `channels/acknowledge`, the subscription of
 * `channels/open`. A refusal is the channel method's `-32017`, with core's message (which names
 * a stream only as the target named it: by id here).
 *
 * @throws McpError `-32017` (Channel not permitted) with `data: { channelId }`; the request
 *   codes of the stream lookup.
 */
export async function checkChannelWrite(
  runtime: Runtime,
  target: WriteTarget,
  channelId: string,
  call: CallOptions,
): Promise<void> {
  const streams = await runtime.services.directory.streamLookup(call);
  try {
    runtime.policy.checkWrite(target, streams);
  } catch (err) {
    if (isZmcpError(err)) throw rpcError(McplRpcCode.ChannelNotPermitted, err.message, { channelId });
    throw err;
  }
}
