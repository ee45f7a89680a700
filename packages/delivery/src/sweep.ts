import {
  type AccessPolicy,
  HistoryPager,
  MAX_MESSAGES_PER_REQUEST,
  type Message,
  type NarrowTerm,
  type StreamInfoLookup,
  validateNarrow,
  type ZulipClient,
} from '@zmcp/core';

/** What {@link sweepHistory} reads. */
export interface SweepQuery {
  client: ZulipClient;
  policy: AccessPolicy;
  streams: StreamInfoLookup;
  /** Messages with ids above this one... */
  afterId: number;
  /** ...up to and including this one. */
  throughId: number;
  /**
   * Narrows of channels the unscoped read cannot reach when the policy does not read everything
   * (allowlisted private streams): each is read on its own.
   */
  extra: readonly (readonly NarrowTerm[])[];
  visit(message: Message): void;
  /** Called after each page: the newest id read so far and how many messages were read. */
  onPage?: ((reachedId: number, messages: number) => void) | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * Reads every message in `(afterId, throughId]` the account received, across all streams and
 * DMs at once, oldest first, 5000 to a request: one sweep for every channel instead of a query
 * per channel. It passes the access policy's scope check first (a policy that does not read
 * everything sweeps public streams only, plus one read per `extra` narrow) and drops strays.
 * Within one channel, messages are visited in id order.
 */
export async function sweepHistory(query: SweepQuery): Promise<void> {
  const { policy, streams } = query;
  if (query.throughId <= query.afterId) return;
  const base = policy.checkNarrowScope([], streams, { unscoped: 'public-streams' });
  const narrows: (readonly NarrowTerm[])[] = [base.narrow];
  if (base.scope !== 'all') {
    for (const extra of query.extra) narrows.push(policy.checkNarrowScope(extra, streams).narrow);
  }
  let read = 0;
  for (const narrow of narrows) {
    const pager = new HistoryPager(query.client, {
      narrow: validateNarrow(narrow),
      pageSize: MAX_MESSAGES_PER_REQUEST,
      call: { signal: query.signal },
    });
    pages: for await (const page of pager.pagesNewer(query.afterId)) {
      for (const m of policy.filterReadable(page, streams)) {
        if (m.id > query.throughId) break pages;
        query.visit(m);
      }
      const last = page[page.length - 1];
      read += page.length;
      query.onPage?.(Math.min(last?.id ?? query.throughId, query.throughId), read);
      if (last === undefined || last.id >= query.throughId) break;
    }
  }
}
