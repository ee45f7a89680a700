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
  'subscribed',
  'already_subscribed',
  'unauthorized',
  'not_found',
] as const);

type Result = {
  stream: string;
  status: 'subscribed' | 'already_subscribed' | 'unauthorized' | 'not_found';
  reason: string | null;
};

/** `subscribe`: subscribes the bot to existing streams. */
export function subscribeTool(
  services: ToolServices,
): ToolDefinition<typeof subscriptionInputSchema, typeof outputSchema> {
  return defineTool({
    name: 'subscribe',
    title: 'Subscribe the bot to streams',
    description:
      'Subscribe this bot to existing streams, so their messages reach it live (Zulip delivers stream events to subscribers only). ' +
      'Never creates a stream: a name that does not exist is reported as not_found. Private streams this session may not read are refused (unauthorized); ' +
      'a private stream can only be joined by invitation. Reports per stream: subscribed, already_subscribed, unauthorized or not_found. ' +
      '(Earlier servers called this listen; here listen is the tool that waits for new messages.)',
    inputSchema: subscriptionInputSchema,
    outputSchema,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    write: true,
    async handler(input, context) {
      const { signal } = context;
      assertWritable(services);
      const state = await subscriptionState(services, signal);
      const results: Result[] = [];
      const toJoin: string[] = [];
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
        } else if (state.subscribed.has(stream.stream_id)) {
          results.push({ stream: stream.name, status: 'already_subscribed', reason: null });
        } else {
          results.push({ stream: stream.name, status: 'subscribed', reason: null });
          toJoin.push(stream.name);
        }
      }
      if (toJoin.length > 0) {
        try {
          const res = await services.client.subscribe(
            { subscriptions: toJoin.map((name) => ({ name })), authorizationErrorsFatal: false },
            callOf(signal),
          );
          const refused = new Set((res.unauthorized ?? []).map((n) => n.toLowerCase()));
          const already = new Set(
            Object.values(res.already_subscribed)
              .flat()
              .map((n) => n.toLowerCase()),
          );
          for (const r of results) {
            if (r.status !== 'subscribed') continue;
            if (refused.has(r.stream.toLowerCase())) {
              r.status = 'unauthorized';
              r.reason = 'Zulip refused access';
            } else if (already.has(r.stream.toLowerCase())) {
              r.status = 'already_subscribed';
            }
          }
        } finally {
          services.directory.invalidate('streams');
          services.directory.invalidate('subscriptions');
        }
      }
      const changed = results.filter((r) => r.status === 'subscribed').length;
      const lines = results.map(
        (r) =>
          `${streamTopic(r.stream)}: ${r.status.replace('_', ' ')}${r.reason === null ? '' : ` (${r.reason})`}`,
      );
      return {
        text: [
          `Subscribed to ${changed} of ${results.length} stream${results.length === 1 ? '' : 's'}.`,
          ...lines,
        ].join('\n'),
        structured: { results, changed },
      };
    },
  });
}
