import { foldStreamName } from '@zmcp/core';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { assertWritable, callOf } from './common.js';
import {
  planSubscriptions,
  subscriptionInputSchema,
  subscriptionOutputSchema,
  subscriptionReport,
  subscriptionState,
} from './subscriptions-common.js';

const outputSchema = subscriptionOutputSchema([
  'removed',
  'not_subscribed',
  'unauthorized',
  'not_found',
] as const);

/** `unsubscribe`: unsubscribes the bot from streams. */
export const unsubscribeTool = defineTool({
  name: 'unsubscribe',
  title: 'Unsubscribe the bot from streams',
  description:
    'Unsubscribe this bot from streams (a private one is left for good). Reports each: removed, not_subscribed, unauthorized or not_found.',
  inputSchema: subscriptionInputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  write: true,
  toolset: 'manage',
  async handler(services: ToolServices, input, context) {
    const { signal } = context;
    assertWritable(services);
    const state = await subscriptionState(services, signal);
    const { results, targets: toLeave } = planSubscriptions(services, state, input.streams, {
      subscribed: false,
      changing: 'removed',
      unchanged: 'not_subscribed',
    });
    if (toLeave.length > 0) {
      try {
        const res = await services.client.unsubscribe({ subscriptions: toLeave }, callOf(signal));
        const notRemoved = new Set(res.not_removed.map(foldStreamName));
        for (const r of results) {
          if (r.status === 'removed' && notRemoved.has(foldStreamName(r.stream))) r.status = 'not_subscribed';
        }
      } finally {
        services.directory.invalidate('streams');
        services.directory.invalidate('subscriptions');
      }
    }
    return subscriptionReport('Unsubscribed from', results, 'removed');
  },
});
