import { type CallOptions, isZmcpError, readMessage } from '@zmcp/core';
import type { ChannelDescriptor as ZulipChannel } from '@zmcp/delivery';
import { type ContentBlock, McplRpcCode, rpcError } from '@zmcp/mcpl';
import { isToolError, postMessage } from '@zmcp/tools';
import type { DataAttachment } from '@zmcp/uploads';
import type { ReplyRouter, ReplyTarget } from './routing.js';
import type { Runtime } from './runtime-types.js';
import { checkChannelWrite, writeTargetOf } from './write-policy.js';

const EXTENSIONS: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'audio/mpeg': 'mp3',
  'audio/ogg': 'ogg',
  'audio/wav': 'wav',
};

/** The text and inline media of published content; uri and resource blocks cannot be sent and are dropped. */
function splitContent(content: readonly ContentBlock[]): { text: string; media: DataAttachment[] } {
  const texts: string[] = [];
  const media: DataAttachment[] = [];
  for (const block of content) {
    if (block.type === 'text') texts.push(block.text);
    else if ((block.type === 'image' || block.type === 'audio') && 'data' in block) {
      const ext = EXTENSIONS[block.mimeType] ?? 'bin';
      media.push({
        data: block.data,
        name: `${block.type}-${media.length + 1}.${ext}`,
        mime_type: block.mimeType,
      });
    }
  }
  return { text: texts.join('\n\n'), media };
}

/**
 * Follows a stream target to where its anchor message is now: a topic renamed or moved since
 * the agent read it is where the reply goes. An anchor that is gone (deleted) leaves the target
 * as it was known.
 */
async function follow(
  runtime: Runtime,
  router: ReplyRouter,
  target: ReplyTarget,
  call: CallOptions,
): Promise<void> {
  if (target.kind !== 'stream') return;
  try {
    const lookup = await runtime.services.directory.streamLookup(call);
    const message = await readMessage(runtime.client, runtime.policy, target.anchorId, {
      streams: lookup,
      call,
    });
    if (message.type === 'stream' && message.stream_id !== undefined) {
      router.moved(target, { streamId: message.stream_id, topic: message.subject });
    }
  } catch (err) {
    if (isZmcpError(err, 'CORE_NOT_FOUND', 'CORE_ACCESS_DENIED', 'CORE_BAD_REQUEST')) return;
    throw err;
  }
}

/**
 * Delivers published content to the exact topic the agent is answering (see `ReplyRouter`),
 * never to a fallback: a stream channel with no known topic is refused. Posted as every tool posts
 * (`postMessage` of `@zmcp/tools`), except that long text is split at the realm's limit rather
 * than refused: inline media is uploaded and linked, and every message sent is recorded for
 * rollback.
 *
 * @throws McpError `-32602` with nothing to send or no topic, or when the same text went to the
 *   topic within the send-once window (`data`: `code` `TOOLS_ALREADY_SENT`, the earlier `messageId`
 *   and `permalink`); `-32017` when the access policy refuses the stream; the client's request
 *   codes otherwise.
 */
export async function publishTo(
  runtime: Runtime,
  router: ReplyRouter,
  channel: ZulipChannel,
  request: { conversationId: string | undefined; content: readonly ContentBlock[] },
  signal: AbortSignal,
): Promise<{ delivered: true; messageId: string }> {
  const { text, media } = splitContent(request.content);
  if (text.trim() === '' && media.length === 0) {
    throw rpcError(McplRpcCode.InvalidParams, 'channels/publish: nothing to send (no text, no inline media)');
  }
  const target = router.target(channel, request.conversationId);
  if (target === undefined) {
    throw rpcError(
      McplRpcCode.InvalidParams,
      `channels/publish: no topic is known on ${channel.id} yet (no message has arrived there); post a new topic with send_message`,
      { channelId: channel.id },
    );
  }
  const call: CallOptions = { signal };
  await follow(runtime, router, target, call);
  await checkChannelWrite(runtime, writeTargetOf(target), channel.id, call);
  let posted: Awaited<ReturnType<typeof postMessage>>;
  try {
    posted = await postMessage(runtime.services, target, text, {
      overLength: 'split',
      attachments: media,
      signal,
      onSent: (id) => runtime.sent.record(id, writeTargetOf(target)),
    });
  } catch (err) {
    // Send once: the same text went to this topic a moment ago; the earlier message stands.
    if (isToolError(err, 'TOOLS_ALREADY_SENT')) {
      throw rpcError(McplRpcCode.InvalidParams, `channels/publish: ${err.message}`, {
        code: err.code,
        messageId: String(err.details?.message_id),
        permalink: err.details?.permalink ?? null,
      });
    }
    throw err;
  }
  if ('isError' in posted) {
    throw rpcError(McplRpcCode.InternalError, `channels/publish: ${posted.text}`, { code: posted.code });
  }
  return { delivered: true, messageId: String(posted.ids[0]) };
}
