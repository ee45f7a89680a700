import { type Message, validateNarrow } from '@zmcp/core';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { readVisibleMessage } from '../read/message-access.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  assertWritable,
  callOf,
  checkTopic,
  MessageIdSchema,
  StreamRefSchema,
  streamTopic,
  TopicArgSchema,
} from './common.js';

/** Most message ids one call marks; each is read through the access gate first. */
const MAX_IDS = 100;
/** Messages per POST /messages/flags/narrow, as Zulip's web app asks. */
const BATCH = 1000;
/** Batches per call: a stream with more unread messages needs another call. */
const MAX_BATCHES = 10;
/** Gate reads in flight at once. */
const PARALLEL_READS = 8;

const inputSchema = z.object({
  message_ids: z.array(MessageIdSchema).min(1).max(MAX_IDS).optional().describe('Messages to mark read'),
  stream: StreamRefSchema.optional().describe('Or every unread message of this stream'),
  topic: TopicArgSchema.optional().describe('With stream: only this topic'),
});

const outputSchema = z.object({
  updated: z.number().int().describe('Messages that became read'),
  processed: z.number().int(),
  complete: z.boolean().describe('false: unread messages remain, call again'),
});

async function gateAll(
  services: ToolServices,
  ids: readonly number[],
  signal: AbortSignal,
): Promise<Message[]> {
  const _lookup = await services.directory.streamLookup(callOf(signal));
  const out: Message[] = [];
  for (let i = 0; i < ids.length; i += PARALLEL_READS) {
    const chunk = ids.slice(i, i + PARALLEL_READS);
    out.push(...(await Promise.all(chunk.map((id) => readVisibleMessage(services, id, callOf(signal))))));
  }
  return out;
}

/** `mark_read`: marks messages, a stream or a topic read for this bot. */
export const markReadTool = defineTool({
  name: 'mark_read',
  title: 'Mark messages read',
  description: 'Mark messages read for this bot: by id, or all of a stream or topic you may read.',
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  write: true,
  toolset: 'manage',
  async handler(services: ToolServices, input, context) {
    const { signal } = context;
    const call = callOf(signal);
    assertWritable(services);
    if ((input.message_ids === undefined) === (input.stream === undefined)) {
      throw new ToolError(
        'TOOLS_INVALID_INPUT',
        'Give either message_ids, or stream (with an optional topic).',
        { field: input.message_ids === undefined ? 'stream' : 'message_ids' },
      );
    }
    if (input.topic !== undefined && input.stream === undefined) {
      throw new ToolError('TOOLS_INVALID_INPUT', 'topic needs stream.', { field: 'topic' });
    }

    if (input.message_ids !== undefined) {
      const ids = [...new Set(input.message_ids)];
      const messages = await gateAll(services, ids, signal);
      const unread = messages.filter((m) => !(m.flags ?? []).includes('read')).length;
      await services.client.updateMessageFlags({ messages: ids, op: 'add', flag: 'read' }, call);
      return {
        text: `Marked ${ids.length} message${ids.length === 1 ? '' : 's'} read (${unread} were unread).`,
        data: { updated: unread, processed: ids.length, complete: true },
      };
    }

    const stream = await services.directory.stream(input.stream as string | number, call);
    const topic = input.topic === undefined ? undefined : checkTopic(input.topic);
    const lookup = await services.directory.streamLookup(call);
    const decision = services.policy.checkNarrowScope(
      [
        { operator: 'channel', operand: stream.stream_id },
        ...(topic === undefined ? [] : [{ operator: 'topic' as const, operand: topic }]),
        { operator: 'is', operand: 'unread' },
      ],
      lookup,
    );
    const narrow = validateNarrow(decision.narrow);
    let anchor: number | 'oldest' = 'oldest';
    let updated = 0;
    let processed = 0;
    let complete = false;
    // Pages through the unread messages; each request is a flag change, which is idempotent.
    for (let batch = 0; batch < MAX_BATCHES; batch++) {
      const res = await services.client.updateMessageFlagsForNarrow(
        {
          anchor,
          numBefore: 0,
          numAfter: BATCH,
          includeAnchor: anchor === 'oldest',
          narrow,
          op: 'add',
          flag: 'read',
        },
        call,
      );
      updated += res.updated_count;
      processed += res.processed_count;
      if (res.found_newest || res.last_processed_id === null) {
        complete = true;
        break;
      }
      anchor = res.last_processed_id;
    }
    const where = streamTopic(stream.name, topic);
    return {
      text: complete
        ? `Marked ${updated} message${updated === 1 ? '' : 's'} read in ${where}.`
        : `Marked ${updated} messages read in ${where}; more unread messages remain: call mark_read again.`,
      data: { updated, processed, complete },
    };
  },
});
