// The 0.4 hosts INTEROP.md records, played by a raw host (the library's host role enforces the
// 0.5 grant, which these hosts never send): mcpl-harness and agent-framework 0.1.0.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { createZulipMcpl, type ZulipMcpl } from '../src/runtime.js';
import { RawHost, type Wire } from './raw-host.js';
import { type Realm, startRealm } from './world.js';

let realm: Realm;
let app: ZulipMcpl | undefined;
let host: RawHost | undefined;

beforeEach(async () => {
  realm = await startRealm();
});

afterEach(async () => {
  await host?.close();
  await app?.close();
  app = undefined;
  host = undefined;
  await realm.close();
});

async function connect(): Promise<RawHost> {
  app = await createZulipMcpl({ config: parseConfig(realm.env, []) });
  host = new RawHost();
  await app.serve(host.server);
  await host.start();
  return host;
}

function initialize(name: string, version: string, mcpl: Record<string, unknown>) {
  return {
    protocolVersion: '2025-06-18',
    capabilities: { experimental: { mcpl } },
    clientInfo: { name, version },
  };
}

const result = (m: Wire): Record<string, unknown> => m.result ?? {};
const params = (m: Wire): Record<string, unknown> => m.params ?? {};

const isIncoming = (text: string) => (m: Wire) =>
  m.method === 'channels/incoming' && JSON.stringify(m.params).includes(text);

describe('mcpl-harness 0.1.1 (0.4, never sends a policy)', () => {
  it('gets array-form feature sets, the assumed grant at initialized, pending channels after {}, and delivery', async () => {
    const h = await connect();
    h.answer('channels/register', () => ({}));
    h.answer('channels/incoming', (params) => ({
      results: (params.messages as { messageId: string }[]).map((m) => ({
        messageId: m.messageId,
        accepted: true,
      })),
    }));
    h.answer('push/event', () => ({ accepted: true }));
    const init = await h.request(
      1,
      'initialize',
      initialize('mcpl-harness', '0.1.1', { version: '0.4', pushEvents: true, channels: true }),
    );
    const mcpl = (result(init).capabilities as { experimental: { mcpl: { featureSets: unknown } } })
      .experimental.mcpl;
    expect(Array.isArray(mcpl.featureSets)).toBe(true);
    expect((mcpl.featureSets as { name: string }[]).map((f) => f.name).sort()).toEqual([
      'zulip.context',
      'zulip.history',
      'zulip.messaging',
    ]);
    await h.notify('notifications/initialized');
    const register = await h.waitFor((m) => m.method === 'channels/register');
    expect((params(register).channels as { id: string }[]).map((c) => c.id).sort()).toEqual([
      'zulip:general',
      'zulip:random',
    ]);
    // {} itemizes nothing: the channels stay usable, listed and openable.
    const list = await h.request(2, 'channels/list');
    expect((result(list).channels as { id: string }[]).map((c) => c.id).sort()).toEqual([
      'zulip:general',
      'zulip:random',
    ]);
    const opened = await h.request(3, 'channels/open', {
      type: 'zulip',
      address: { streamId: realm.streams.general },
    });
    expect((result(opened).channel as { id: string }).id).toBe('zulip:general');
    realm.say('general', 'harness hears this');
    const incoming = await h.waitFor(isIncoming('harness hears this'));
    expect((params(incoming).messages as { channelId: string }[])[0]?.channelId).toBe('zulip:general');
    const mention = realm.say('random', 'hi @**Helper Bot**');
    const push = await h.waitFor((m) => m.method === 'push/event');
    expect(push.params).toMatchObject({ featureSet: 'zulip.messaging', eventId: `msg:${mention}` });
    // Tools work without a policy; a removed 0.4 method is answered.
    const tool = await h.request(4, 'tools/call', { name: 'list_streams', arguments: {} });
    expect(tool.error).toBeUndefined();
    const after = await h.request(5, 'context/afterInference', { inferenceId: 'x' });
    expect(after.result).toEqual({});
  });
});

describe('agent-framework 0.1.0 (0.4)', () => {
  it('reads {registered}, takes a Notification policy, opens by address and counts a duplicate as delivered', async () => {
    const h = await connect();
    h.answer('channels/register', (params) => ({
      registered: (params.channels as { id: string }[]).map((c) => c.id),
    }));
    const incomingCalls: Wire[] = [];
    h.answer('channels/incoming', (params) => {
      incomingCalls.push({ jsonrpc: '2.0', params });
      return {
        results: (params.messages as { messageId: string }[]).map((m) => ({
          messageId: m.messageId,
          accepted: true,
        })),
      };
    });
    let pushes = 0;
    h.answer('push/event', () => {
      pushes += 1;
      return { accepted: false, reason: 'duplicate' };
    });
    const init = await h.request(
      0,
      'initialize',
      initialize('agent-framework', '0.1.0', { version: '0.4', pushEvents: true, channels: true }),
    );
    expect(init.error).toBeUndefined();
    const mcpl = (result(init).capabilities as { experimental: { mcpl: { featureSets: unknown } } })
      .experimental.mcpl;
    expect(Array.isArray(mcpl.featureSets)).toBe(false);
    await h.notify('notifications/initialized');
    await h.notify('featureSets/update', { disabled: ['zulip.context'] });
    await h.waitFor((m) => m.method === 'channels/register');
    // It auto-opens every registered channel by {type, address}.
    for (const [n, streamId] of [realm.streams.general, realm.streams.random].entries()) {
      const opened = await h.request(10 + n, 'channels/open', { type: 'zulip', address: { streamId } });
      expect(opened.error).toBeUndefined();
    }
    const dm = realm.dm('are you there?');
    await h.waitFor((m) => m.method === 'push/event');
    // A DM on a closed channel was pushed once and read as delivered: never offered again.
    const next = realm.say('general', 'and now the stream');
    await h.waitFor(isIncoming('and now the stream'));
    expect(pushes).toBe(1);
    expect(JSON.stringify(incomingCalls)).not.toContain(`"messageId":"${dm}"`);
    expect(JSON.stringify(incomingCalls)).toContain(`"messageId":"${next}"`);
    // The Notification narrowed the assumed grant: no context is injected.
    const context = await h.request(20, 'context/beforeInference', { inferenceId: 'i', userMessage: null });
    expect(result(context).contextInjections).toEqual([]);
  });
});
