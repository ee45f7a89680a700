import { createStreamLookup } from '@zmcp/core';
import { defineTool } from '../run.js';
import type { ToolServices } from '../services.js';
import type { ToolDefinition } from '../tool.js';
import { assertWritable, callOf, streamTopic } from './common.js';
import {
  subscriptionInputSchema,
  subscriptionOutputSchema,
  subscriptionState,
} from './subscriptions-common.js';

const outputSchema = subscriptionOutputSchema([
  'removed',
  'not_subscribed',
  'unauthorized',
  'not_found',
] as const);

type Result = {
  stream: string;
  status: 'removed' | 'not_subscribed' | 'unauthorized' | 'not_found';
  reason: string | null;
};

/** `unsubscribe`: unsubscribes the bot from streams. */
export function unsubscribeTool(
  services: ToolServices,
): ToolDefinition<typeof subscriptionInputSchema, typeof outputSchema> {
  return defineTool({
    name: 'unsubscribe',
    title: 'Unsubscribe the bot from streams',
    description:
      'Unsubscribe this bot from streams: their messages stop reaching it live (history stays readable for public streams). ' +
      'Leaving a private stream is final for a bot: only an invitation brings it back; private streams this session may not read are refused (unauthorized). ' +
      'Reports per stream: removed, not_subscribed, unauthorized or not_found. ' +
      '(Earlier servers called this unlisten; here listen is the tool that waits for new messages.)',
    inputSchema: subscriptionInputSchema,
    outputSchema,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    write: true,
    async handler(input, context) {
      const { signal } = context;
      assertWritable(services);
      const state = await subscriptionState(services, signal);
      const results: Result[] = [];
      const toLeave: string[] = [];
      const seen = new Set<string>();
      for (const name of input.streams) {
        const stream = state.find(name);
        if (stream === undefined) {
          results.push({
            stream: name,
            status: 'not_found',
            reason: 'no such stream is visible to this bot',
          });
          continue;
        }
        if (seen.has(stream.name)) continue;
        seen.add(stream.name);
        if (!services.policy.canReadStream(stream.stream_id, createStreamLookup([stream]))) {
          results.push({
            stream: stream.name,
            status: 'unauthorized',
            reason: 'private stream this session may not read',
          });
        } else if (!state.subscribed.has(stream.stream_id)) {
          results.push({ stream: stream.name, status: 'not_subscribed', reason: null });
        } else {
          results.push({ stream: stream.name, status: 'removed', reason: null });
          toLeave.push(stream.name);
        }
      }
      if (toLeave.length > 0) {
        try {
          const res = await services.client.unsubscribe({ subscriptions: toLeave }, callOf(signal));
          const notRemoved = new Set(res.not_removed.map((n) => n.toLowerCase()));
          for (const r of results) {
            if (r.status === 'removed' && notRemoved.has(r.stream.toLowerCase())) r.status = 'not_subscribed';
          }
        } finally {
          services.directory.invalidate('streams');
          services.directory.invalidate('subscriptions');
        }
      }
      const changed = results.filter((r) => r.status === 'removed').length;
      const lines = results.map(
        (r) =>
          `${streamTopic(r.stream)}: ${r.status.replace('_', ' ')}${r.reason === null ? '' : ` (${r.reason})`}`,
      );
      return {
        text: [
          `Unsubscribed from ${changed} of ${results.length} stream${results.length === 1 ? '' : 's'}.`,
          ...lines,
        ].join('\n'),
        structured: { results, changed },
      };
    },
  });
}
