import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { narrow } from '../src/history/narrow.js';
import { ALL_STREAMS } from '../src/policy/allowlist.js';
import { AccessPolicy, type NarrowInput } from '../src/policy/policy.js';
import { createStreamLookup } from '../src/policy/streams.js';
import { readMessage, readMessages, readNarrow } from '../src/read/read-gate.js';
import { type SimRealmFixture, startSimRealm } from './helpers/sim.js';

let f: SimRealmFixture;
let publicId: number;
let secretId: number;
let dmId: number;

beforeAll(async () => {
  f = await startSimRealm();
  const say = (stream: string, content: string) =>
    f.sim.realm.sendMessage({ senderId: f.alice.userId, type: 'stream', stream, topic: 't', content });
  publicId = say('general', 'public news');
  secretId = say('secret', 'secret plans');
  say('general', 'more news');
  dmId = f.sim.realm.sendMessage({
    senderId: f.alice.userId,
    type: 'direct',
    to: [f.bot.userId],
    content: 'psst',
  });
});
afterAll(async () => f.close());

const closed = new AccessPolicy({ readOnly: false });
const everything = new AccessPolicy({ readOnly: false, privateStreams: ALL_STREAMS });

function messageFetches(since: number): number {
  return f.sim.requests.slice(since).filter((r) => r.path.startsWith('/api/v1/messages')).length;
}

describe('readNarrow', () => {
  it('reads a public stream', async () => {
    const res = await readNarrow(f.client, closed, {
      narrow: narrow().channel('general').build(),
      range: { kind: 'newest', limit: 10 },
    });
    expect(res.messages.map((m) => m.content)).toEqual(['public news', 'more news']);
    expect(res).toMatchObject({ dropped: 0, scope: 'stream', hasMore: false });
  });

  it('refuses a private stream, a DM and an unscoped narrow before fetching any message', async () => {
    const mark = f.sim.requests.length;
    const attempts = [
      { narrow: [{ operator: 'channel', operand: 'secret' }] },
      { narrow: [['stream', 'secret']] as const },
      { narrow: [{ operator: 'dm', operand: [f.alice.userId] }] },
      { narrow: [{ operator: 'is', operand: 'dm' }] },
      { narrow: [{ operator: 'search', operand: 'plans' }] },
      { narrow: [] },
    ];
    for (const a of attempts) {
      await expect(
        readNarrow(f.client, closed, {
          narrow: a.narrow as NarrowInput,
          range: { kind: 'newest', limit: 10 },
        }),
      ).rejects.toMatchObject({ code: 'CORE_ACCESS_DENIED' });
    }
    expect(messageFetches(mark)).toBe(0);
  });

  it('limits an unscoped narrow to public streams when asked', async () => {
    const res = await readNarrow(f.client, closed, {
      narrow: [{ operator: 'search', operand: 'plans' }],
      unscoped: 'public-streams',
      range: { kind: 'newest', limit: 10 },
    });
    expect(res.messages).toEqual([]);
    expect(res.scope).toBe('public-streams');
  });

  it('drops strays that a message-scoped narrow brings back', async () => {
    const res = await readNarrow(f.client, closed, {
      narrow: [{ operator: 'with', operand: secretId }],
      range: { kind: 'around', id: secretId, before: 5, after: 5 },
    });
    expect(res.messages).toEqual([]);
    expect(res.dropped).toBeGreaterThan(0);
    expect(res.foundAnchor).toBe(false);
  });

  it('reads private streams and DMs once the policy opens them', async () => {
    const listed = AccessPolicy.resolve(
      { readOnly: false, privateStreams: ['secret'] },
      await f.client.getStreams(),
    );
    const secret = await readNarrow(f.client, listed, {
      narrow: narrow().channel('secret').build(),
      range: { kind: 'newest', limit: 10 },
    });
    expect(secret.messages.map((m) => m.id)).toEqual([secretId]);
    const dms = await readNarrow(f.client, everything, {
      narrow: narrow().dm([f.alice.userId]).build(),
      range: { kind: 'since', afterId: 0, limit: 10 },
    });
    expect(dms.messages.map((m) => m.id)).toEqual([dmId]);
  });

  it('uses a stream lookup the caller supplies instead of asking for streams', async () => {
    const streams = createStreamLookup(await f.client.getStreams());
    const mark = f.sim.requests.length;
    await readNarrow(f.client, closed, {
      narrow: narrow().channel('general').build(),
      range: { kind: 'newest', limit: 1 },
      streams,
    });
    expect(f.sim.requests.slice(mark).map((r) => r.path)).toEqual(['/api/v1/messages']);
  });

  it('refuses a malformed narrow from the caller', async () => {
    await expect(
      readNarrow(f.client, everything, {
        narrow: [
          { operator: 'channel', operand: 'general' },
          { operator: 'bogus', operand: 'x' },
        ] as unknown as NarrowInput,
        range: { kind: 'newest', limit: 1 },
      }),
    ).rejects.toMatchObject({ code: 'CORE_INVALID_ARGUMENT' });
  });
});

describe('readMessage', () => {
  it('returns a readable message and refuses the rest without their content', async () => {
    expect((await readMessage(f.client, closed, publicId)).content).toBe('public news');
    for (const id of [secretId, dmId]) {
      const err = await readMessage(f.client, closed, id).catch((e) => e);
      expect(err).toMatchObject({ code: 'CORE_ACCESS_DENIED' });
      expect(JSON.stringify(err) + err.message).not.toMatch(/secret plans|psst/);
    }
    expect((await readMessage(f.client, everything, dmId)).content).toBe('psst');
  });
});

describe('readMessages', () => {
  it('returns by id only what the policy lets through, and counts the rest', async () => {
    const ids = [dmId, secretId, publicId, publicId, 999_999];
    const shut = await readMessages(f.client, closed, ids);
    expect(shut.messages.map((m) => m.id)).toEqual([publicId]);
    expect(shut.withheld).toBe(3);
    const open = await readMessages(f.client, everything, ids);
    expect(open.messages.map((m) => m.id)).toEqual([publicId, secretId, dmId]);
    expect(open.withheld).toBe(1);
  });

  it('reads nothing for no ids, and refuses a bad id before fetching', async () => {
    const mark = f.sim.requests.length;
    expect(await readMessages(f.client, closed, [])).toEqual({ messages: [], withheld: 0 });
    await expect(readMessages(f.client, closed, [-1])).rejects.toMatchObject({
      code: 'CORE_INVALID_ARGUMENT',
    });
    expect(messageFetches(mark)).toBe(0);
  });
});
