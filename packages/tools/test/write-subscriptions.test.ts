import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';
import { expectFail, expectOk } from './write-fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const subscribed = (harness: Harness, stream: string) =>
  harness.sim.realm.stream(stream)?.subscribers.includes(harness.realm.bot.userId) ?? false;

describe('subscribe / unsubscribe', () => {
  it('subscribes to an existing stream and reports each stream', async () => {
    expect(subscribed(h, 'dev')).toBe(false);
    await h.services.directory.subscriptions(); // warm the cache
    const { text, structured } = expectOk(
      h,
      'subscribe',
      await h.call('subscribe', { streams: ['Dev', 'general', 'nowhere', 'hidden', 'secret'] }),
    );
    expect(subscribed(h, 'dev')).toBe(true);
    expect(structured).toEqual({
      results: [
        { stream: 'dev', status: 'subscribed', reason: null },
        { stream: 'general', status: 'already_subscribed', reason: null },
        { stream: 'nowhere', status: 'not_found', reason: 'no such stream is visible to this bot' },
        { stream: 'hidden', status: 'not_found', reason: 'no such stream is visible to this bot' },
        { stream: 'secret', status: 'unauthorized', reason: 'private stream this session may not read' },
      ],
      changed: 1,
    });
    expect(text.split('\n')[0]).toBe('Subscribed to 1 of 5 streams.');
    expect(text).toContain('#dev: subscribed');
    // Never created, and the directory sees the new subscription at once.
    expect(h.sim.realm.stream('nowhere')).toBeUndefined();
    expect((await h.services.directory.subscriptions()).map((s) => s.name)).toContain('dev');
  });

  it('unsubscribes, and says so when the bot was not subscribed', async () => {
    const { structured } = expectOk(
      h,
      'unsubscribe',
      await h.call('unsubscribe', { streams: ['dev', 'dev'] }),
    );
    expect(structured).toEqual({ results: [{ stream: 'dev', status: 'removed', reason: null }], changed: 1 });
    expect(subscribed(h, 'dev')).toBe(false);
    expect((await h.services.directory.subscriptions()).map((s) => s.name)).not.toContain('dev');
    const again = expectOk(h, 'unsubscribe', await h.call('unsubscribe', { streams: ['dev', 'nowhere'] }));
    expect(again.structured.results).toEqual([
      { stream: 'dev', status: 'not_subscribed', reason: null },
      { stream: 'nowhere', status: 'not_found', reason: 'no such stream is visible to this bot' },
    ]);
    expect(again.structured.changed).toBe(0);
  });

  it('refuses to leave a private stream the policy cannot read', async () => {
    const { structured } = expectOk(h, 'unsubscribe', await h.call('unsubscribe', { streams: ['secret'] }));
    expect(structured.results).toEqual([
      { stream: 'secret', status: 'unauthorized', reason: 'private stream this session may not read' },
    ]);
    expect(subscribed(h, 'secret')).toBe(true);
  });

  it('refuses bad input by field', async () => {
    expect(expectFail(await h.call('subscribe', { streams: [] }), 'TOOLS_INVALID_INPUT').text).toContain(
      'streams',
    );
    expectFail(await h.call('unsubscribe', { streams: 'dev' }), 'TOOLS_INVALID_INPUT');
  });

  it('describes itself as the old listen/unlisten', () => {
    expect(h.tools.get('subscribe')?.description).toContain('listen');
    expect(h.tools.get('unsubscribe')?.description).toContain('unlisten');
  });
});

describe('subscriptions with private streams open', () => {
  let open: Harness;
  beforeAll(async () => {
    open = await startHarness({ policy: { privateStreams: ['secret'] } });
  });
  afterAll(async () => {
    await open.close();
  });

  it('leaves an allowlisted private stream when asked', async () => {
    const res = expectOk(open, 'subscribe', await open.call('subscribe', { streams: ['secret'] }));
    expect(res.structured.results).toEqual([
      { stream: 'secret', status: 'already_subscribed', reason: null },
    ]);
    const left = expectOk(open, 'unsubscribe', await open.call('unsubscribe', { streams: ['secret'] }));
    expect(left.structured.changed).toBe(1);
    expect(subscribed(open, 'secret')).toBe(false);
  });
});
