import { isNoBotsMessage, type Message, readNarrow } from '@zmcp/core';
import { z } from 'zod';
import { callOptions, checkDeadline, fitFromEnd, idSpan, itemBudget, plural } from '../read/shared.js';
import { defineTool } from '../tool.js';
import { MessageIdSchema, StreamRefSchema, TopicArgSchema } from '../write/common.js';
import type { SessionCore } from './agent-session.js';

const ANCHOR_MARK = '→ ';

const inputSchema = z.object({
  stream: StreamRefSchema,
  topic: TopicArgSchema.describe('The topic you were called to'),
  trigger_message_id: MessageIdSchema.optional().describe('The message that mentioned you'),
  history: z.number().int().min(1).max(100).default(20).describe('Messages of history, 1-100'),
});

const outputSchema = z.object({
  stream_id: z.number().int(),
  trigger_message_id: z.number().int().nullable(),
  ids: z.array(z.number().int()).describe('The history shown, oldest first'),
  hidden: z.number().int(),
  truncated: z.boolean(),
  has_older: z.boolean(),
  has_newer: z.boolean(),
  last_seen_id: z.number().int(),
});

/** `set_context`: binds the session to the conversation the agent was called to. */
export const setContextTool = defineTool({
  name: 'set_context',
  title: 'Join a conversation',
  description:
    'Join the conversation you were called to (stream, topic, the message that mentioned you): returns its recent history and binds reply and listen to it. Call it first.',
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  write: false,
  toolset: 'session',
  async handler(session: SessionCore, input, context) {
    const services = session.services;
    checkDeadline(context);
    await session.settled();
    const call = callOptions(context);
    const target = await session.resolveTarget(input.stream, input.topic, input.trigger_message_id, call);
    const narrow = session.narrow(target);
    const triggerId = input.trigger_message_id;
    const res = await readNarrow(services.client, services.policy, {
      narrow,
      range:
        triggerId === undefined
          ? { kind: 'newest', limit: input.history }
          : { kind: 'around', id: triggerId, before: input.history, after: input.history },
      streams: await services.directory.streamLookup(call),
      call,
    });
    let read: Message[] = res.messages.filter((m) => m.type === 'stream' && m.stream_id === target.streamId);
    // The gate read the trigger a moment ago; keep it even if the window missed it.
    if (target.trigger !== undefined && !read.some((m) => m.id === triggerId))
      read = [...read, target.trigger].sort((a, b) => a.id - b.id);
    const visible = read.filter((m) => !isNoBotsMessage(m));
    const hidden = read.length - visible.length;
    const lines = (await services.lines(visible, call)).map(
      (line, i) => (visible[i]?.id === triggerId ? ANCHOR_MARK : '') + line,
    );
    const fit = fitFromEnd(lines, itemBudget(services));
    const shown = visible.slice(visible.length - fit.shown);
    const newestRead = read[read.length - 1]?.id ?? 0;
    const lastSeen = Math.max(newestRead, triggerId ?? 0);
    const hasOlder =
      (triggerId === undefined ? res.hasMore : res.hasOlder === true) || shown.length < visible.length;
    const hasNewer = triggerId !== undefined && res.hasNewer === true;
    session.bind(
      {
        stream: target.stream,
        streamId: target.streamId,
        topic: target.topic,
        triggerMessageId: triggerId,
        dismissAfterId: triggerId ?? lastSeen,
      },
      lastSeen,
      visible[visible.length - 1]?.id,
    );
    // What is shown here is handed over: an interrupt note passing it on later is dropped.
    session.shown(shown);

    const where = session.label(target);
    const notes: string[] = [];
    if (hidden > 0) notes.push(`${plural(hidden, 'message')} hidden (opted out of bots with /nobots)`);
    if (fit.truncated) notes.push('older history cut to fit the page');
    let head =
      shown.length === 0
        ? `Session bound to ${where} (stream id ${target.streamId}); no messages there yet`
        : `Session bound to ${where} (stream id ${target.streamId}). ${plural(shown.length, 'message')}${idSpan(shown)}, oldest first${triggerId === undefined ? '' : `, the trigger ${triggerId} marked →`}`;
    head += notes.length > 0 ? `; ${notes.join('; ')}.` : '.';
    if (hasNewer) head += ' Newer messages follow; reply and listen hand them over.';
    head += ` Next: reply to answer here, listen to wait for follow-ups, end_session when done. A :${session.dismissEmoji}: reaction on one of your messages here ends the session.`;
    return {
      text: shown.length === 0 ? head : `${head}\n${fit.text}`,
      data: {
        stream_id: target.streamId,
        trigger_message_id: triggerId ?? null,
        ids: shown.map((m) => m.id),
        hidden,
        truncated: fit.truncated,
        has_older: hasOlder,
        has_newer: hasNewer,
        last_seen_id: session.lastSeenId,
      },
    };
  },
});
