import { AttachmentsSchema } from '@zmcp/uploads';
import { z } from 'zod';
import { toolFailure } from '../failure.js';
import { idSpan, plural } from '../read/shared.js';
import { defineTool } from '../tool.js';
import {
  ATTACHMENTS_HELP,
  assertWritable,
  attachmentsNote,
  ContentArgSchema,
  callOf,
  RepeatArgSchema,
  sendAndShow,
} from '../write/common.js';
import { preparePost } from '../write/post.js';
import type { SessionCore } from './agent-session.js';

const encoder = new TextEncoder();

const inputSchema = z.object({
  content: ContentArgSchema.optional().describe('Zulip Markdown; mention with @**Full Name|id**'),
  attachments: AttachmentsSchema.optional().describe(ATTACHMENTS_HELP),
  repeat: RepeatArgSchema,
});

const outputSchema = z.object({
  message_id: z.number().int(),
  permalink: z.string().nullable(),
  attachments: z.number().int(),
  arrived_ids: z.array(z.number().int()).describe('Messages that arrived since you last read, shown'),
  hidden: z.number().int(),
  more_waiting: z.boolean().describe('More arrived: listen returns them at once'),
  last_seen_id: z.number().int(),
});

/** `reply`: posts to the bound conversation and hands over what arrived meanwhile. */
export const replyTool = defineTool({
  name: 'reply',
  title: 'Reply in the conversation',
  description:
    'Post in the conversation your session is bound to. Refused if you were dismissed. Returns your message and what arrived since you last read. After a failure, read the conversation first.',
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  write: true,
  toolset: 'session',
  async handler(session: SessionCore, input, context) {
    const services = session.services;
    const { signal } = context;
    const call = callOf(signal);
    assertWritable(services);
    await session.settled();
    const b = await session.requireBinding(call);
    const prepared = await preparePost(
      services,
      { kind: 'stream', streamId: b.streamId, topic: b.topic },
      input.content,
      { overLength: 'refuse', attachments: input.attachments, signal, repeat: input.repeat },
    );

    // Dismissed while not listening: only the reactions themselves can tell.
    const dismissal = await session.findDismissal(b, call);
    if (dismissal !== undefined) {
      const ended = session.end({
        reason: 'dismissed',
        byUserId: dismissal.userId,
        byName: dismissal.name,
        messageId: dismissal.messageId,
      });
      return toolFailure('TOOLS_SESSION_ENDED', `Nothing was sent. ${session.endedMessage(ended)}`);
    }

    const sent = await sendAndShow(services, prepared, signal);
    if ('isError' in sent) return sent;
    // A stop in place of a start: the indicator from before the reply must not linger under it.
    session.typing(b, 'stop');
    const sentLine = sent.line;
    const permalink = sent.permalink;
    // Read after the send, so that nothing said before the reply went out is skipped.
    const arrived = await session.catchUp(b, call);
    const shown = session.present(arrived, arrived.hasMore, encoder.encode(sentLine).length + 200);
    // Past the reply too, unless arrivals were cut off: those come first on the next read.
    if (!shown.moreWaiting) session.advance(sent.id);
    session.sawVisible(sent.id);

    const lines = [
      `Sent message ${sent.id} to ${session.label(b)}${attachmentsNote(sent.uploaded.length)}${permalink === null ? '' : ` (${permalink})`}.`,
      sentLine,
    ];
    if (shown.shown.length > 0) {
      let head = `${plural(shown.shown.length, 'message')} arrived since you last read the conversation${idSpan(shown.shown)}, oldest first; read them, your reply may need a follow-up`;
      if (arrived.hidden > 0)
        head += ` (${plural(arrived.hidden, 'message')} hidden: opted out of bots with /nobots)`;
      if (shown.moreWaiting) head += '. More arrived than fit here: listen returns them at once';
      lines.push(`${head}:`, shown.text);
    } else if (shown.moreWaiting) {
      lines.push('More messages arrived: listen returns them at once.');
    }
    return {
      text: lines.join('\n'),
      data: {
        message_id: sent.id,
        permalink,
        attachments: sent.uploaded.length,
        arrived_ids: shown.shown.map((m) => m.id),
        hidden: arrived.hidden,
        more_waiting: shown.moreWaiting,
        last_seen_id: session.lastSeenId,
      },
    };
  },
});
