import type { MockAgent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { mockClient, mockRealm, ok, paramsOf, streamMessage } from '../../test/helpers/mock-realm.js';
import type { ZulipClient } from '../client/zulip-client.js';
import { HistoryPager } from './pager.js';

// A GET /messages over an in-memory history with Zulip's anchor semantics, to check what the
// pager asks for. Behaviour against a realm is covered in test/history.test.ts on the simulator.
function history(
  count: number,
  opts: { featureLevel?: number; dateAnchor?: 'at-or-after' | 'before' | 'after' } = {},
) {
  const { agent, pool } = mockRealm();
  // Ids with gaps, timestamps one minute apart.
  const messages = Array.from({ length: count }, (_, i) =>
    streamMessage({ id: 100 + i * 3, timestamp: 1_700_000_000 + i * 60 }),
  );
  const requests: URLSearchParams[] = [];
  pool
    .intercept({ path: '/api/v1/server_settings' })
    .reply(200, ok({ zulip_version: '12.0', zulip_feature_level: opts.featureLevel ?? 421 }))
    .persist();
  pool
    .intercept({ path: (p) => p.startsWith('/api/v1/messages?') })
    .reply((req) => {
      const q = paramsOf(req);
      requests.push(q);
      const before = Number(q.get('num_before') ?? 0);
      const after = Number(q.get('num_after') ?? 0);
      if (before + after > 5000)
        return { statusCode: 400, data: { result: 'error', code: 'BAD_REQUEST', msg: 'Too many' } };
      const includeAnchor = q.get('include_anchor') !== 'false';
      const rawAnchor = q.get('anchor') as string;
      let anchor: number;
      if (rawAnchor === 'newest') anchor = 1e16;
      else if (rawAnchor === 'oldest') anchor = 0;
      else if (rawAnchor === 'date') {
        const t = Date.parse(q.get('anchor_date') as string) / 1000;
        const idx = messages.findIndex((m) => (m.timestamp as number) >= t);
        const shift = opts.dateAnchor === 'before' ? -1 : opts.dateAnchor === 'after' ? 1 : 0;
        const at = idx === -1 ? messages.length - 1 : Math.min(messages.length - 1, Math.max(0, idx + shift));
        anchor = messages[at]?.id as number;
      } else anchor = Number(rawAnchor);
      const older = messages.filter((m) => (m.id as number) < anchor);
      const newer = messages.filter((m) => (m.id as number) > anchor);
      const at = messages.filter((m) => m.id === anchor && includeAnchor);
      const out = [...older.slice(Math.max(0, older.length - before)), ...at, ...newer.slice(0, after)];
      return {
        statusCode: 200,
        data: ok({
          messages: out,
          anchor,
          found_anchor: at.length > 0,
          found_oldest: anchor === 0 || older.length <= before,
          found_newest: anchor === 1e16 || newer.length <= after,
        }),
      };
    })
    .persist();
  return { agent, messages, requests };
}

const clients: ZulipClient[] = [];
const agents: MockAgent[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(agents.splice(0).map((a) => a.close()));
});

function pagerOver(h: ReturnType<typeof history>, pageSize: number) {
  const client = mockClient(h.agent);
  clients.push(client);
  agents.push(h.agent);
  return new HistoryPager(client, { narrow: [{ operator: 'channel', operand: 'general' }], pageSize });
}

const ids = (ms: { id: number }[]) => ms.map((m) => m.id);

describe('HistoryPager paging', () => {
  it('reads the newest N across several pages, oldest first, without duplicates', async () => {
    const h = history(250);
    const res = await pagerOver(h, 40).newest(130);
    expect(ids(res.messages)).toEqual(ids(h.messages.slice(-130) as { id: number }[]));
    expect(res.hasMore).toBe(true);
    expect(h.requests).toHaveLength(4);
    expect(h.requests.every((q) => Number(q.get('num_before')) + Number(q.get('num_after')) <= 40)).toBe(
      true,
    );
  });

  it('crosses the 5000 cap with the largest page size', async () => {
    const h = history(12_000);
    const res = await pagerOver(h, 5000).newest(11_000);
    expect(res.messages).toHaveLength(11_000);
    expect(new Set(ids(res.messages)).size).toBe(11_000);
    expect(h.requests).toHaveLength(3);
  });

  it('reports hasMore false when history runs out', async () => {
    const h = history(30);
    const res = await pagerOver(h, 20).newest(100);
    expect(res.messages).toHaveLength(30);
    expect(res.hasMore).toBe(false);
  });

  it('reads since an id and before an id, exclusive', async () => {
    const h = history(100);
    const pivot = h.messages[50]?.id as number;
    const since = await pagerOver(h, 15).since(pivot, 30);
    expect(ids(since.messages)).toEqual(ids(h.messages.slice(51, 81) as { id: number }[]));
    expect(since.hasMore).toBe(true);
    const before = await pagerOver(h, 15).before(pivot, 30);
    expect(ids(before.messages)).toEqual(ids(h.messages.slice(20, 50) as { id: number }[]));
    const tail = await pagerOver(h, 15).since(pivot, 1000);
    expect(tail.messages).toHaveLength(49);
    expect(tail.hasMore).toBe(false);
  });

  it('reads around an id, extending past the first page on both sides', async () => {
    const h = history(100);
    const pivot = h.messages[50]?.id as number;
    const res = await pagerOver(h, 10).around(pivot, 20, 25);
    expect(ids(res.messages)).toEqual(ids(h.messages.slice(30, 76) as { id: number }[]));
    expect(res).toMatchObject({ foundAnchor: true, hasOlder: true, hasNewer: true });
  });

  it('pages lazily with pagesOlder and pagesNewer', async () => {
    const h = history(50);
    const seen: number[] = [];
    for await (const page of pagerOver(h, 20).pagesNewer(0)) seen.push(...ids(page));
    expect(seen).toEqual(ids(h.messages as { id: number }[]));
    const older: number[][] = [];
    for await (const page of pagerOver(h, 20).pagesOlder()) older.push(ids(page));
    expect(older.map((p) => p.length)).toEqual([20, 20, 10]);
  });
});

describe('HistoryPager date ranges', () => {
  const at = (h: ReturnType<typeof history>, i: number) => ((h.messages[i]?.timestamp as number) ?? 0) * 1000;

  it('finds the start by binary search without reading the whole history', async () => {
    const h = history(20_000);
    const res = await pagerOver(h, 1000).between(at(h, 5000), at(h, 5010), 100);
    expect(ids(res.messages)).toEqual(ids(h.messages.slice(5000, 5010) as { id: number }[]));
    expect(res.hasMore).toBe(false);
    const fetched = h.requests.reduce(
      (n, q) => n + Number(q.get('num_before')) + Number(q.get('num_after')),
      0,
    );
    expect(fetched).toBeLessThan(1000 + 200); // one recent probe of 100, a few one-message probes, one page
    expect(h.requests.length).toBeLessThan(30);
  });

  it('finds a recent start in the first probe', async () => {
    const h = history(20_000);
    const res = await pagerOver(h, 1000).between(at(h, 19_950), at(h, 19_999) + 1, 1000);
    expect(res.messages).toHaveLength(50);
    expect(h.requests.length).toBeLessThanOrEqual(4);
  });

  it('caps at the limit and says there is more', async () => {
    const h = history(1000);
    const res = await pagerOver(h, 100).between(at(h, 100), at(h, 900), 50);
    expect(ids(res.messages)).toEqual(ids(h.messages.slice(100, 150) as { id: number }[]));
    expect(res.hasMore).toBe(true);
  });

  it('returns nothing for a range after the last message or an empty range', async () => {
    const h = history(100);
    expect((await pagerOver(h, 50).between(at(h, 99) + 1000, at(h, 99) + 5000, 10)).messages).toEqual([]);
    expect((await pagerOver(h, 50).between(at(h, 10), at(h, 10), 10)).messages).toEqual([]);
    const all = await pagerOver(h, 50).between(0, at(h, 99) + 1, 1000);
    expect(all.messages).toHaveLength(100);
  });

  it.each(['at-or-after', 'before'] as const)(
    'reads a range from the server date anchor in one request at feature level 445 (anchor lands %s)',
    async (dateAnchor) => {
      const h = history(20_000, { featureLevel: 445, dateAnchor });
      const res = await pagerOver(h, 1000).between(at(h, 7000), at(h, 7005), 100);
      expect(ids(res.messages)).toEqual(ids(h.messages.slice(7000, 7005) as { id: number }[]));
      expect(res.hasMore).toBe(false);
      expect(h.requests.map((q) => q.get('anchor'))).toEqual(['date']);
    },
  );

  it('pages on from the date anchor when the range is longer than one request', async () => {
    const h = history(5000, { featureLevel: 445 });
    const res = await pagerOver(h, 100).between(at(h, 1000), at(h, 1250), 200);
    expect(ids(res.messages)).toEqual(ids(h.messages.slice(1000, 1200) as { id: number }[]));
    expect(res.hasMore).toBe(true);
    expect(h.requests[0]?.get('anchor')).toBe('date');
    expect(h.requests.length).toBeLessThanOrEqual(4);
  });

  it('searches from the bounds the date anchor gave when it landed past the boundary', async () => {
    const h = history(20_000, { featureLevel: 445, dateAnchor: 'after' });
    const res = await pagerOver(h, 1000).between(at(h, 7000), at(h, 7005), 100);
    expect(ids(res.messages)).toEqual(ids(h.messages.slice(7000, 7005) as { id: number }[]));
    expect(h.requests.filter((q) => q.get('anchor') === 'date')).toHaveLength(1);
    expect(h.requests.length).toBeLessThan(30);
  });

  it('answers the same below feature level 445, without the date anchor', async () => {
    const h = history(20_000, { featureLevel: 444 });
    const res = await pagerOver(h, 1000).between(at(h, 7000), at(h, 7005), 100);
    expect(ids(res.messages)).toEqual(ids(h.messages.slice(7000, 7005) as { id: number }[]));
    expect(h.requests.filter((q) => q.get('anchor') === 'date')).toHaveLength(0);
    expect(h.requests.length).toBeGreaterThan(3);
  });
});
