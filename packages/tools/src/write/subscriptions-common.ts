import { createStreamLookup, foldStreamName, type Stream } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { callOf, streamTopic } from './common.js';

/** Most streams one call changes. */
const MAX_STREAMS = 20;

/** Input of both subscription tools. */
export const subscriptionInputSchema = z.object({
  streams: z.array(z.string().min(1).max(200)).min(1).max(MAX_STREAMS).describe('Stream names'),
});

/** One stream's outcome in a subscription tool's output. */
export function subscriptionOutputSchema<S extends readonly [string, ...string[]]>(statuses: S) {
  return z.object({
    results: z.array(z.object({ stream_id: z.number().int().nullable(), status: z.enum(statuses) })),
    changed: z.number().int(),
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
  for (const s of [...streams, ...subscriptions]) byName.set(foldStreamName(s.name), s);
  return {
    find: (name) => byName.get(foldStreamName(name.trim())),
    subscribed: new Set(subscriptions.map((s) => s.stream_id)),
  };
}

/** One stream's outcome. */
export interface SubscriptionResult<S extends string> {
  stream: string;
  stream_id: number | null;
  status: S | 'unauthorized' | 'not_found';
  reason: string | null;
}

/**
 * Sorts the requested names into what the call will change and what it will not: unknown
 * streams (`not_found`), private streams the policy keeps closed (`unauthorized`), streams
 * already in the wanted state (`unchanged`), and the rest (`changing`, to be sent to Zulip).
 */
export function planSubscriptions<S extends string>(
  services: ToolServices,
  state: { find(name: string): Stream | undefined; subscribed: Set<number> },
  names: readonly string[],
  want: { subscribed: boolean; changing: S; unchanged: S },
): { results: SubscriptionResult<S>[]; targets: string[] } {
  const results: SubscriptionResult<S>[] = [];
  const targets: string[] = [];
  const seen = new Set<string>();
  for (const name of names) {
    const stream = state.find(name);
    if (stream === undefined) {
      results.push({
        stream: name,
        stream_id: null,
        status: 'not_found',
        reason: 'no such stream is visible to this bot',
      });
      continue;
    }
    if (seen.has(stream.name)) continue;
    seen.add(stream.name);
    const lookup = createStreamLookup([stream]);
    if (!services.policy.canReadStream(stream.stream_id, lookup)) {
      results.push({
        stream: stream.name,
        stream_id: stream.stream_id,
        status: 'unauthorized',
        reason: 'private stream this session may not read',
      });
    } else if (!mayWrite(services, stream.stream_id, lookup)) {
      // Joining or leaving a stream is something the bot does in it: the write allowlist decides.
      results.push({
        stream: stream.name,
        stream_id: stream.stream_id,
        status: 'unauthorized',
        reason: 'not a stream this session may write to',
      });
    } else if (state.subscribed.has(stream.stream_id) === want.subscribed) {
      results.push({
        stream: stream.name,
        stream_id: stream.stream_id,
        status: want.unchanged,
        reason: null,
      });
    } else {
      results.push({ stream: stream.name, stream_id: stream.stream_id, status: want.changing, reason: null });
      targets.push(stream.name);
    }
  }
  return { results, targets };
}

function mayWrite(
  services: ToolServices,
  streamId: number,
  lookup: ReturnType<typeof createStreamLookup>,
): boolean {
  try {
    services.policy.checkWrite({ stream: streamId }, lookup);
    return true;
  } catch {
    return false;
  }
}

/** The tool result: a summary line, then one line per stream. */
export function subscriptionReport<S extends string>(
  verb: string,
  results: SubscriptionResult<S>[],
  changing: S,
): {
  text: string;
  data: { results: { stream_id: number | null; status: SubscriptionResult<S>['status'] }[]; changed: number };
} {
  const changed = results.filter((r) => r.status === changing).length;
  const lines = results.map(
    (r) =>
      `${streamTopic(r.stream)}: ${r.status.replace('_', ' ')}${r.reason === null ? '' : ` (${r.reason})`}`,
  );
  return {
    text: [
      `${verb} ${changed} of ${results.length} stream${results.length === 1 ? '' : 's'}.`,
      ...lines,
    ].join('\n'),
    data: { results: results.map((r) => ({ stream_id: r.stream_id, status: r.status })), changed },
  };
}
