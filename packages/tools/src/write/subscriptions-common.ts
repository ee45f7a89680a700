import type { Stream } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { callOf } from './common.js';

/** Most streams one call changes. */
const MAX_STREAMS = 20;

/** Input of both subscription tools. */
export const subscriptionInputSchema = z.object({
  streams: z
    .array(z.string().min(1).max(200).describe('Stream name'))
    .min(1)
    .max(MAX_STREAMS)
    .describe(`Stream names (case-insensitive), at most ${MAX_STREAMS}`),
});

/** One stream's outcome in a subscription tool's output. */
export function subscriptionOutputSchema<S extends readonly [string, ...string[]]>(statuses: S) {
  return z.object({
    results: z.array(
      z.object({
        stream: z.string().describe('The stream, as the realm spells it (as given when not found)'),
        status: z.enum(statuses),
        reason: z.string().nullable().describe('Why nothing changed, when it did not'),
      }),
    ),
    changed: z.number().int().describe('How many streams changed'),
  });
}

/** The streams the bot can see and the names it is subscribed to, fetched fresh. */
export async function subscriptionState(
  services: ToolServices,
  signal: AbortSignal,
): Promise<{ find(name: string): Stream | undefined; subscribed: Set<number> }> {
  services.directory.invalidate('streams');
  services.directory.invalidate('subscriptions');
  const call = callOf(signal);
  const [streams, subscriptions] = await Promise.all([
    services.directory.streams(call),
    services.directory.subscriptions(call),
  ]);
  const byName = new Map<string, Stream>();
  for (const s of [...streams, ...subscriptions]) byName.set(s.name.trim().toLowerCase(), s);
  return {
    find: (name) => byName.get(name.trim().toLowerCase()),
    subscribed: new Set(subscriptions.map((s) => s.stream_id)),
  };
}
