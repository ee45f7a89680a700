import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { narrow, validateNarrow } from '../src/history/narrow.js';
import { HistoryPager } from '../src/history/pager.js';
import { type SimRealmFixture, startSimRealm } from './helpers/sim.js';

const T0 = 1_767_225_600; // 2026-01-01T00:00:00Z
const COUNT = 6_000;
let f: SimRealmFixture;
let ids: number[];

beforeAll(async () => {
  f = await startSimRealm();
  ids = [];
  for (let i = 0; i < COUNT; i++) {
    ids.push(
      f.sim.realm.sendMessage({
        senderId: i % 3 === 0 ? f.bob.userId : f.alice.userId,
        type: 'stream',
        stream: 'general',
        topic: i % 2 === 0 ? 'even' : 'odd',
        content: i % 500 === 0 ? `milestone ${i}` : `message ${i}`,
        timestamp: T0 + i * 60,
      }),
    );
  }
  // Noise elsewhere, interleaved ids the general narrow must skip.
  for (let i = 0; i < 50; i++) {
    f.sim.realm.sendMessage({
      senderId: f.alice.userId,
      type: 'stream',
      stream: 'secret',
      topic: 'x',
      content: 'n',
    });
  }
}, 60_000);
afterAll(async () => f.close());

function messageRequests(since: number) {
  return f.sim.requests.slice(since).filter((r) => r.path === '/api/v1/messages');
}

describe('HistoryPager against the simulator', () => {
  const general = () => narrow().channel('general').build();

  it('reads the newest messages across the 5000 cap', async () => {
    const mark = f.sim.requests.length;
    const res = await new HistoryPager(f.client, { narrow: general(), pageSize: 5000 }).newest(5_500);
    expect(res.messages.map((m) => m.id)).toEqual(ids.slice(-5_500));
    expect(res.hasMore).toBe(true);
    expect(messageRequests(mark)).toHaveLength(2);
  });

  it('reads since, before and around an id', async () => {
    const pager = new HistoryPager(f.client, { narrow: general(), pageSize: 700 });
    const pivot = ids[3000] as number;
    expect((await pager.since(pivot, 1500)).messages.map((m) => m.id)).toEqual(ids.slice(3001, 4501));
    expect((await pager.before(pivot, 1500)).messages.map((m) => m.id)).toEqual(ids.slice(1500, 3000));
    const around = await pager.around(pivot, 1000, 1000);
    expect(around.messages.map((m) => m.id)).toEqual(ids.slice(2000, 4001));
    expect(around.foundAnchor).toBe(true);
    const all = await pager.since(0, 10_000);
    expect(all.messages).toHaveLength(COUNT);
    expect(all.hasMore).toBe(false);
  });

  it('turns a date range into ids without paging the whole stream', async () => {
    const pager = new HistoryPager(f.client, { narrow: general(), pageSize: 1000 });
    const mark = f.sim.requests.length;
    // Messages 1000..1099 were sent in this 100-minute window.
    const res = await pager.between(
      new Date((T0 + 1000 * 60) * 1000),
      new Date((T0 + 1100 * 60) * 1000),
      500,
    );
    expect(res.messages.map((m) => m.id)).toEqual(ids.slice(1000, 1100));
    expect(res.hasMore).toBe(false);
    const fetched = messageRequests(mark).reduce(
      (n, r) => n + Number(r.params.num_before ?? 0) + Number(r.params.num_after ?? 0),
      0,
    );
    expect(fetched).toBeLessThan(1_300);
    // A start between two messages lands on the next one.
    const mid = await pager.firstIdAtOrAfter((T0 + 2000 * 60 + 30) * 1000);
    expect(mid).toBe(ids[2001]);
    expect(await pager.firstIdAtOrAfter((T0 + COUNT * 60) * 1000)).toBeUndefined();
  });

  it('applies topic, sender, negation and search narrows on the server', async () => {
    const even = await new HistoryPager(f.client, {
      narrow: narrow().channel('general').topic('even').build(),
    }).newest(10);
    expect(even.messages.every((m) => m.subject === 'even')).toBe(true);
    const notBob = await new HistoryPager(f.client, {
      narrow: narrow().channel('general').not().sender(f.bob.userId).build(),
    }).newest(30);
    expect(notBob.messages).toHaveLength(30);
    expect(notBob.messages.every((m) => m.sender_id !== f.bob.userId)).toBe(true);
    const found = await new HistoryPager(f.client, {
      narrow: narrow().channel('general').search('milestone').build(),
    }).newest(100);
    expect(found.messages.map((m) => m.content)).toContain('milestone 5500');
  });

  it('refuses adversarial narrows before sending, and maps what Zulip refuses', async () => {
    const mark = f.sim.requests.length;
    expect(
      () => new HistoryPager(f.client, { narrow: [{ operator: 'channel', operand: 'x\u0000' }] as never }),
    ).toThrow(expect.objectContaining({ code: 'CORE_INVALID_ARGUMENT' }));
    expect(() =>
      validateNarrow(
        Array.from({ length: 500 }, (_, i) => ({ operator: 'channel', operand: `s${i}`, negated: true })),
      ),
    ).toThrow(expect.objectContaining({ code: 'CORE_INVALID_ARGUMENT' }));
    expect(messageRequests(mark)).toHaveLength(0);
    const err = await new HistoryPager(f.client, { narrow: narrow().channel('no-such-stream').build() })
      .newest(5)
      .catch((e) => e);
    expect(err).toMatchObject({ code: 'CORE_BAD_REQUEST', zulipCode: 'BAD_NARROW' });
  });
});
