import type { Stream, Subscription, ZulipClient } from '@zmcp/core';
import { describe, expect, it } from 'vitest';
import { RealmDirectory } from './directory.js';

const stream = (stream_id: number, name: string) => ({ stream_id, name, invite_only: false }) as Stream;

/** A client whose stream lists are fixed (a fresh array per fetch, as Zulip's answers are), counting the fetches. */
function fakeClient(streams: Stream[], subscriptions: Subscription[]) {
  const fetched = { streams: 0, subscriptions: 0 };
  const client = {
    getStreams: async () => {
      fetched.streams++;
      return [...streams];
    },
    getSubscriptions: async () => {
      fetched.subscriptions++;
      return [...subscriptions];
    },
  } as unknown as ZulipClient;
  return { client, fetched };
}

describe('RealmDirectory streams', () => {
  it('finds a subscribed stream up to case, as Zulip resolves names, though both lists hold it', async () => {
    const { client } = fakeClient(
      [stream(10, 'bench'), stream(11, 'ops')],
      [{ ...stream(10, 'bench'), color: '#c2c2c2' } as unknown as Subscription],
    );
    const directory = new RealmDirectory(client);
    const lookup = await directory.streamLookup();
    expect(lookup('BENCH')?.stream_id).toBe(10);
    expect(lookup('bench')?.stream_id).toBe(10);
    expect(lookup(11)?.name).toBe('ops');
    expect((await directory.stream('Bench')).stream_id).toBe(10);
  });

  it('builds the lookup once per fetched pair of lists, and again after they are refetched', async () => {
    const { client, fetched } = fakeClient([stream(10, 'bench')], []);
    const directory = new RealmDirectory(client);
    const first = await directory.streamLookup();
    expect(await directory.streamLookup()).toBe(first);
    await directory.stream('bench');
    expect(fetched).toEqual({ streams: 1, subscriptions: 1 });
    // A stream the lists do not hold makes the directory refetch them once.
    await expect(directory.stream('new')).rejects.toMatchObject({ code: 'TOOLS_NOT_FOUND' });
    expect(fetched).toEqual({ streams: 2, subscriptions: 2 });
    const second = await directory.streamLookup();
    expect(second).not.toBe(first);
    expect(second('bench')?.stream_id).toBe(10);
  });
});
