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
    const { dev, general, secret } = h.realm.streams;
    expect(structured).toEqual({
      results: [
        { stream_id: dev, status: 'subscribed' },
        { stream_id: general, status: 'already_subscribed' },
        { stream_id: null, status: 'not_found' },
        { stream_id: null, status: 'not_found' },
        { stream_id: secret, status: 'unauthorized' },
      ],
      changed: 1,
    });
    // One line per stream asked for, in order, with the reason where nothing changed.
    expect(text.split('\n')).toEqual([
      'Subscribed to 1 of 5 streams.',
      '#dev: subscribed',
      '#general: already subscribed',
      '#nowhere: not found (no such stream is visible to this bot)',
      '#hidden: not found (no such stream is visible to this bot)',
      '#secret: unauthorized (private stream this session may not read)',
    ]);
    // Never created, and the directory sees the new subscription at once.
    expect(h.sim.realm.stream('nowhere')).toBeUndefined();
    expect((await h.services.directory.subscriptions()).map((s) => s.name)).toContain('dev');
  });

  it('unsubscribes, and says so when the bot was not subscribed', async () => {
    const { text, structured } = expectOk(
      h,
      'unsubscribe',
      await h.call('unsubscribe', { streams: ['dev', 'dev'] }),
    );
    expect(structured).toEqual({
      results: [{ stream_id: h.realm.streams.dev, status: 'removed' }],
      changed: 1,
    });
    expect(text).toBe('Unsubscribed from 1 of 1 stream.\n#dev: removed');
    expect(subscribed(h, 'dev')).toBe(false);
    expect((await h.services.directory.subscriptions()).map((s) => s.name)).not.toContain('dev');
    const again = expectOk(h, 'unsubscribe', await h.call('unsubscribe', { streams: ['dev', 'nowhere'] }));
    expect(again.structured.results).toEqual([
      { stream_id: h.realm.streams.dev, status: 'not_subscribed' },
      { stream_id: null, status: 'not_found' },
    ]);
    expect(again.structured.changed).toBe(0);
    expect(again.text.split('\n')).toEqual([
      'Unsubscribed from 0 of 2 streams.',
      '#dev: not subscribed',
      '#nowhere: not found (no such stream is visible to this bot)',
    ]);
  });

  it('refuses to leave a private stream the policy cannot read', async () => {
    const { text, structured } = expectOk(
      h,
      'unsubscribe',
      await h.call('unsubscribe', { streams: ['secret'] }),
    );
    expect(structured.results).toEqual([{ stream_id: h.realm.streams.secret, status: 'unauthorized' }]);
    expect(text).toContain('#secret: unauthorized (private stream this session may not read)');
    expect(subscribed(h, 'secret')).toBe(true);
  });

  it('refuses bad input by field', async () => {
    expect(expectFail(await h.call('subscribe', { streams: [] }), 'TOOLS_INVALID_INPUT').text).toContain(
      'streams',
    );
    expectFail(await h.call('unsubscribe', { streams: 'dev' }), 'TOOLS_INVALID_INPUT');
  });

  it('says in its description what it does and what each stream can come back as', () => {
    const subscribe = h.tools.get('subscribe')?.description ?? '';
    expect(subscribe).toMatch(/never creates/);
    for (const status of ['subscribed', 'already_subscribed', 'unauthorized', 'not_found'])
      expect(subscribe).toContain(status);
    const unsubscribe = h.tools.get('unsubscribe')?.description ?? '';
    for (const status of ['removed', 'not_subscribed', 'unauthorized', 'not_found'])
      expect(unsubscribe).toContain(status);
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
      { stream_id: open.realm.streams.secret, status: 'already_subscribed' },
    ]);
    const left = expectOk(open, 'unsubscribe', await open.call('unsubscribe', { streams: ['secret'] }));
    expect(left.structured.changed).toBe(1);
    expect(subscribed(open, 'secret')).toBe(false);
  });
});
