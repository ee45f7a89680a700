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
  'subscribed',
  'already_subscribed',
  'unauthorized',
  'not_found',
] as const);

/** `subscribe`: subscribes the bot to existing streams. */
export const subscribeTool = defineTool({
  name: 'subscribe',
  title: 'Subscribe the bot to streams',
  description:
    'Subscribe this bot to existing streams so their messages reach it live; never creates one. Reports each: subscribed, already_subscribed, unauthorized or not_found.',
  inputSchema: subscriptionInputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  write: true,
  toolset: 'manage',
  async handler(services: ToolServices, input, context) {
    const { signal } = context;
    assertWritable(services);
    const state = await subscriptionState(services, signal);
    const { results, targets: toJoin } = planSubscriptions(services, state, input.streams, {
      subscribed: true,
      changing: 'subscribed',
      unchanged: 'already_subscribed',
    });
    if (toJoin.length > 0) {
      try {
        const res = await services.client.subscribe(
          { subscriptions: toJoin.map((name) => ({ name })), authorizationErrorsFatal: false },
          callOf(signal),
        );
        const refused = new Set((res.unauthorized ?? []).map(foldStreamName));
        const already = new Set(Object.values(res.already_subscribed).flat().map(foldStreamName));
        for (const r of results) {
          if (r.status !== 'subscribed') continue;
          if (refused.has(foldStreamName(r.stream))) {
            r.status = 'unauthorized';
            r.reason = 'Zulip refused access';
          } else if (already.has(foldStreamName(r.stream))) {
            r.status = 'already_subscribed';
          }
        }
      } finally {
        services.directory.invalidate('streams');
        services.directory.invalidate('subscriptions');
      }
    }
    return subscriptionReport('Subscribed to', results, 'subscribed');
  },
});
