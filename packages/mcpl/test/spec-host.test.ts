// A host written from SPEC 0.5 and INTEROP.md, speaking raw JSON-RPC lines, replays whole
// sessions against the toy server: first a 0.5 host, then each dialect INTEROP.md records.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { manifestRevision } from '../src/index.js';
import { agentFrameworkFeatureSets, createToyServer, general, message, random } from './fixtures/toy.js';
import { CAPABILITY_DENIED_ON_THE_WIRE, FULL_GRANT, nextTurn, recordingLogger } from './helpers.js';
import { params, RawPeer, result } from './raw-peer.js';

const SPEC_HOST = {
  version: '0.5',
  pushEvents: true,
  contextHooks: { beforeInference: true },
  inferenceLifecycle: true,
  channels: { register: true, publish: true, incoming: true, lifecycle: true },
  featureSets: true,
};

/** The handshake agent-framework 0.1.0 writes, recorded (fixtures/peers/NOTICE.md). */
const AGENT_FRAMEWORK_HANDSHAKE = readFileSync(
  new URL('./fixtures/peers/agent-framework-0.1.0.handshake.jsonl', import.meta.url),
  'utf8',
)
  .split('\n')
  .filter((line) => line !== '');

function initialize(clientName: string, mcpl: Record<string, unknown>) {
  return {
    protocolVersion: '2024-11-05',
    capabilities: { experimental: { mcpl } },
    clientInfo: { name: clientName, version: '0.1.0' },
  };
}

describe('a 0.5 host written from the spec', () => {
  it('replays a full session', async () => {
    const { server, record } = createToyServer();
    const peer = new RawPeer();
    const session = await peer.attach(server);

    // Handshake: the manifest, object form, with a revision the host can recompute.
    const init = await peer.request(1, 'initialize', initialize('spec-host', SPEC_HOST));
    const manifest = (result(init).capabilities as Record<string, Record<string, Record<string, unknown>>>)
      .experimental?.mcpl as Record<string, unknown>;
    expect(manifest.version).toBe('0.5');
    expect(manifest.revision).toBe(manifestRevision(manifest));
    expect(Array.isArray(manifest.featureSets)).toBe(false);
    peer.notify('notifications/initialized');

    // Before the policy: tools are refused as Capability denied (-32002, which the SDK writes as
    // -32602: see CAPABILITY_DENIED_ON_THE_WIRE), naming the capability.
    const early = await peer.request(2, 'tools/call', { name: 'ping', arguments: {} });
    expect(early.error).toEqual({
      code: CAPABILITY_DENIED_ON_THE_WIRE,
      message: 'Capability denied',
      data: { capability: 'tools' },
    });

    // The initial policy, as a Request: the receipt, then readiness.
    const policy = await peer.request(3, 'featureSets/update', {
      effectiveCapabilities: FULL_GRANT,
      deniedCapabilities: [],
      disabled: [],
    });
    expect(policy.result).toEqual({ accepted: true });
    expect(await session.whenReady()).toBe(true);

    // A Notification narrows.
    peer.notify('featureSets/update', { disabled: ['toy.lifecycle'] });
    const ping = await peer.request(4, 'ping');
    expect(ping.result).toEqual({});
    expect(session.isFeatureSetEnabled('toy.lifecycle')).toBe(false);

    // Register: itemized, one refused.
    const registering = session.registerChannels([general, random]);
    const register = await peer.nextCall('channels/register');
    expect((params(register).channels as { id: string }[]).map((c) => c.id)).toEqual([
      'toy:general',
      'toy:random',
    ]);
    peer.respond(register.id, {
      results: [
        { id: 'toy:general', accepted: true },
        { id: 'toy:random', accepted: false, reason: 'capability_denied' },
      ],
    });
    expect(await registering).toEqual({
      accepted: ['toy:general'],
      refused: [{ id: 'toy:random', reason: 'capability_denied' }],
      pending: [],
    });

    // Open with history: the answer carries it.
    const opened = await peer.request(5, 'channels/open', {
      channelId: 'toy:general',
      history: { limit: 2 },
    });
    expect((result(opened).channel as { id: string }).id).toBe('toy:general');
    expect((result(opened).history as { messageId: string }[]).map((m) => m.messageId)).toEqual(['h1', 'h2']);

    // Incoming with partial acceptance.
    const delivering = session.incoming([
      message('toy:general', 'a', 'one', ['chat:mention']),
      message('toy:general', 'b', 'two'),
    ]);
    const incoming = await peer.nextCall('channels/incoming');
    const sent = incoming.params?.messages as { messageId: string; tags?: string[] }[];
    expect(sent.map((m) => m.messageId)).toEqual(['a', 'b']);
    expect(sent[0]?.tags).toEqual(['chat:mention', 'chat:addressed']);
    peer.respond(incoming.id, {
      results: [
        { messageId: 'a', accepted: true, conversationId: 'conv_1' },
        { messageId: 'b', accepted: false, reason: 'ambient' },
      ],
    });
    expect((await delivering).map((o) => o.status)).toEqual(['accepted', 'refused']);

    // Push: featureSet, stable eventId, timestamp, payload, umbrella tags.
    const pushing = session.pushEvent({
      featureSet: 'toy.messaging',
      content: [{ type: 'text', text: 'a DM' }],
      tags: ['chat:dm'],
    });
    const push = await peer.nextCall('push/event');
    expect(push.params).toMatchObject({
      featureSet: 'toy.messaging',
      eventId: expect.stringMatching(/^evt_/),
      timestamp: expect.any(String),
      payload: { content: [{ type: 'text', text: 'a DM' }] },
      tags: ['chat:dm', 'chat:addressed', 'chat:private'],
    });
    peer.respond(push.id, { accepted: true, inferenceId: 'inf_1' });
    expect(await pushing).toMatchObject({ status: 'accepted', inferenceId: 'inf_1' });

    // Publish, as a Request.
    const published = await peer.request(6, 'channels/publish', {
      conversationId: 'conv_1',
      channelId: 'toy:general',
      content: [{ type: 'text', text: 'Hello team' }],
    });
    expect(published.result).toEqual({ delivered: true, messageId: expect.any(String) });
    expect(record.published).toContainEqual({ channelId: 'toy:general', text: 'Hello team' });

    // A tool result carries a checkpoint; rollback to it, and to an unknown one.
    const call = await peer.request(7, 'tools/call', { name: 'send', arguments: { text: 'hi' } });
    const state = call.result?.state as { checkpoint: string; parent: string | null };
    expect(state.checkpoint).toMatch(/^chk_/);
    const rolled = await peer.request(8, 'state/rollback', {
      featureSet: 'toy.messaging',
      checkpoint: state.checkpoint,
    });
    expect(rolled.result).toEqual({ checkpoint: state.checkpoint, success: true });
    const missing = await peer.request(9, 'state/rollback', {
      featureSet: 'toy.messaging',
      checkpoint: 'chk_gone',
    });
    expect(missing.error).toMatchObject({ code: -32005, data: { checkpoint: 'chk_gone' } });

    // A manifest change: one notification without payload, then the fetch matches it.
    server.setManifest({
      featureSets: { ...server.featureSets, 'toy.more': { description: 'More', uses: ['tools'] } },
    });
    const changed = await peer.nextCall('mcpl/manifestChanged');
    expect(changed.id).toBeUndefined();
    expect(Object.keys(changed.params ?? {}).sort()).toEqual(['domains', 'revision']);
    expect(changed.params?.domains).toEqual(['featureSets']);
    const fetched = await peer.request(10, 'mcpl/manifest', {});
    expect(fetched.result?.revision).toBe(changed.params?.revision);
    expect(fetched.result?.revision).toBe(manifestRevision(fetched.result));

    // Unknown methods are -32601; a response to an id never sent changes nothing.
    const unknown = await peer.request(11, 'no/such/method', {});
    expect(unknown.error?.code).toBe(-32601);
    peer.respond(999, { accepted: true });
    expect((await peer.request(12, 'ping')).result).toEqual({});
    peer.end();
  });
});

describe('mcpl-harness 0.1.1 (0.4, never sends a policy)', () => {
  it('gets array-form feature sets, works without a policy, and is answered on its own terms', async () => {
    const { server } = createToyServer();
    const peer = new RawPeer();
    const session = await peer.attach(server);
    const init = await peer.request(
      1,
      'initialize',
      // Its greeting as its source writes it (anima-research/mcpl-harness 0.1.1, src/session.ts).
      initialize('mcpl-harness-web', {
        version: '0.4',
        pushEvents: true,
        channels: true,
        modelInfo: true,
        scopedAccess: true,
      }),
    );
    const manifest = (result(init).capabilities as Record<string, Record<string, Record<string, unknown>>>)
      .experimental?.mcpl as Record<string, unknown>;
    const featureSets = manifest.featureSets as { name: string; uses: string[]; rollback?: boolean }[];
    expect(Array.isArray(featureSets)).toBe(true);
    expect(featureSets.map((set) => set.name)).toEqual(['toy.messaging', 'toy.context', 'toy.lifecycle']);
    expect(featureSets[0]?.rollback).toBe(true);
    expect(manifest.revision).toBe(manifestRevision(manifest));
    peer.notify('notifications/initialized');

    // Right after the handshake it lists tools and channels; both are answered.
    const tools = await peer.request(2, 'tools/list', {});
    expect((result(tools).tools as { name: string }[]).map((t) => t.name)).toEqual(['send', 'ping']);
    const channels = await peer.request(3, 'channels/list', {});
    expect(channels.result).toEqual({ channels: [] });
    expect(session.policySource).toBe('legacy');
    expect(session.isGranted('pushEvents')).toBe(true);
    expect(session.isGranted('contextHooks.beforeInference.inject.system')).toBe(false);

    // It answers channels/register with {}: the channels stay pending, usable.
    const registering = session.registerChannels([general]);
    peer.respond((await peer.nextCall('channels/register')).id, {});
    expect(await registering).toEqual({ accepted: [], refused: [], pending: ['toy:general'] });

    // channels/changed goes out as a Notification (it answers the Request form with -32601).
    await session.announceChannels({ added: [random] });
    const changed = await peer.nextCall('channels/changed');
    expect(changed.id).toBeUndefined();

    // It opens by {type, address}, without a channelId.
    const opened = await peer.request(4, 'channels/open', { type: 'toy', address: { room: 'general' } });
    expect((result(opened).channel as { id: string }).id).toBe('toy:general');

    // It answers push/event and channels/incoming with {}: nothing is counted as accepted.
    const pushing = session.pushEvent({
      featureSet: 'toy.messaging',
      content: [{ type: 'text', text: 'p' }],
    });
    peer.respond((await peer.nextCall('push/event')).id, {});
    expect(await pushing).toMatchObject({ status: 'unanswered', reason: 'no verdict' });
    const delivering = session.incoming([message('toy:general', 'x', 'hi')]);
    peer.respond((await peer.nextCall('channels/incoming')).id, {});
    expect(await delivering).toEqual([
      { messageId: 'x', channelId: 'toy:general', status: 'unanswered', reason: 'no verdict' },
    ]);

    // It still sends methods 0.5 removed: tolerated.
    expect((await peer.request(5, 'context/afterInference', { inferenceId: 'i' })).result).toEqual({});
    peer.notify('featureSets/changed', { added: {} });
    expect((await peer.request(6, 'ping')).result).toEqual({});
    peer.end();
  });
});

describe('agent-framework 0.1.0 (0.4)', () => {
  it('initializes with id 0, narrows by Notification, and is read as it answers', async () => {
    const { server } = createToyServer({
      featureSets: agentFrameworkFeatureSets,
      timeouts: { requestMs: 100 },
    });
    const peer = new RawPeer();
    const session = await peer.attach(server);
    // Its recorded handshake, as it writes it: no `channels` member, though it speaks channels.
    const [initializeLine, initializedLine] = AGENT_FRAMEWORK_HANDSHAKE;
    const answered = peer.next((m) => m.method === undefined && m.id === 0);
    peer.writeLine(initializeLine as string);
    const init = await answered;
    expect(init.id).toBe(0);
    const manifest = (result(init).capabilities as Record<string, Record<string, Record<string, unknown>>>)
      .experimental?.mcpl as Record<string, unknown>;
    expect(Array.isArray(manifest.featureSets)).toBe(false);
    peer.writeLine(initializedLine as string);
    // It sends the policy only as a Notification, and only when there is something to disable.
    peer.notify('featureSets/update', { enabled: ['toy.messaging'], disabled: ['toy.context'] });
    expect((await peer.request(1, 'ping')).result).toEqual({});
    expect(session.policySource).toBe('legacy');
    expect(session.isFeatureSetEnabled('toy.messaging')).toBe(true);
    expect(session.isFeatureSetEnabled('toy.context')).toBe(false);

    // It answers channels/register with {registered: [ids]}, then opens every one by {type, address}.
    const registering = session.registerChannels([general, random]);
    peer.respond((await peer.nextCall('channels/register')).id, {
      registered: ['toy:general', 'toy:random'],
    });
    expect(await registering).toEqual({ accepted: ['toy:general', 'toy:random'], refused: [], pending: [] });
    for (const [id, room] of [
      [2, 'general'],
      [3, 'random'],
    ] as const) {
      const opened = await peer.request(id, 'channels/open', { type: 'toy', address: { room } });
      expect((result(opened).channel as { id: string }).id).toBe(`toy:${room}`);
    }

    // A duplicate push comes back as a result, accepted:false reason duplicate: it was delivered.
    const input = {
      featureSet: 'toy.messaging',
      eventId: 'evt_1',
      content: [{ type: 'text' as const, text: 'p' }],
    };
    const first = session.pushEvent(input);
    peer.respond((await peer.nextCall('push/event')).id, { accepted: true });
    expect((await first).status).toBe('accepted');
    const second = session.pushEvent(input);
    peer.respond((await peer.nextCall('push/event')).id, { accepted: false, reason: 'duplicate' });
    expect((await second).status).toBe('duplicate');

    // It does not advertise modelInfo, so it is never asked; it never answers an inbound
    // channels/list either: that request times out, and the SDK tells the host it gave up.
    await expect(session.modelInfo()).rejects.toMatchObject({ code: 'MCPL_CAPABILITY_DENIED' });
    await expect(session.listHostChannels()).rejects.toMatchObject({ code: 'MCPL_TIMEOUT' });
    const cancelled = await peer.nextCall('notifications/cancelled');
    expect(cancelled.params?.requestId).toBe((await peer.nextCall('channels/list')).id);
    expect(peer.received.some((m) => m.method === 'model/info')).toBe(false);
    peer.end();
  });
});

describe('connectome-host (agent-framework ≥ 0.8, 0.5 grants)', () => {
  it('sends the policy right after initialize; its -32002 before that is read as a refusal', async () => {
    const { server } = createToyServer();
    const peer = new RawPeer();
    const session = await peer.attach(server);
    await peer.request(0, 'initialize', initialize('agent-framework', { ...SPEC_HOST, version: '0.5' }));
    peer.notify('notifications/initialized');
    expect(session.policySource).toBe('none');
    await expect(session.registerChannels([general])).rejects.toMatchObject({ code: 'MCPL_NOT_READY' });
    const receipt = await peer.request(1, 'featureSets/update', { effectiveCapabilities: FULL_GRANT });
    expect(receipt.result?.accepted).toBe(true);
    expect(await session.whenReady()).toBe(true);
    const pushing = session.pushEvent({ featureSet: 'toy.messaging', content: [] });
    peer.respondError((await peer.nextCall('push/event')).id, -32002, 'Capability denied');
    expect(await pushing).toMatchObject({ status: 'refused', reason: 'rpc -32002' });
    const narrowed = await peer.request(2, 'featureSets/update', {
      effectiveCapabilities: FULL_GRANT.filter((path) => path !== 'channels.*'),
    });
    expect(narrowed.result).toMatchObject({ accepted: true, mode: 'degraded' });
    await expect(session.registerChannels([general])).rejects.toMatchObject({
      code: 'MCPL_CAPABILITY_DENIED',
    });
    peer.end();
  });
});

describe('legacy host policy', () => {
  it('mcp-only serves a 0.4 host as plain MCP', async () => {
    const { server } = createToyServer({ legacyHosts: 'mcp-only' });
    const peer = new RawPeer();
    const session = await peer.attach(server);
    await peer.request(1, 'initialize', initialize('old-host', { version: '0.4' }));
    peer.notify('notifications/initialized');
    const call = await peer.request(2, 'tools/call', { name: 'send', arguments: { text: 'x' } });
    expect(call.result?.content).toEqual([{ type: 'text', text: 'sent m100' }]);
    expect((await peer.request(3, 'channels/list', {})).error?.code).toBe(-32601);
    expect(session.isMcpl).toBe(false);
    peer.end();
  });

  it('inert waits for a Request like a 0.5 host', async () => {
    const { lines, logger } = recordingLogger();
    const { server } = createToyServer({ legacyHosts: 'inert' }, logger);
    const peer = new RawPeer();
    const session = await peer.attach(server, logger);
    await peer.request(1, 'initialize', initialize('old-host', { version: '0.4.1' }));
    peer.notify('notifications/initialized');
    expect((await peer.request(2, 'tools/call', { name: 'ping' })).error).toMatchObject({
      code: CAPABILITY_DENIED_ON_THE_WIRE,
      data: { capability: 'tools' },
    });
    await nextTurn();
    expect(session.isReady).toBe(false);
    expect(lines.some((line) => line.message === 'the host predates capability grants')).toBe(true);
    peer.end();
  });
});
