import { ProtocolError } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { McplError, manifestRevision } from '../src/index.js';
import { createToyServer, general, message, random } from './fixtures/toy.js';
import { CAPABILITY_DENIED_ON_THE_WIRE, connectPair, FULL_GRANT, nextTurn } from './helpers.js';
import { RawPeer, readyPeer, result } from './raw-peer.js';

async function ready(grant: string[] = FULL_GRANT, extra: { enabled?: string[]; disabled?: string[] } = {}) {
  const toy = createToyServer();
  const pair = await connectPair(toy.server);
  const receipt = await pair.host.setPolicy({ effectiveCapabilities: grant, ...extra });
  expect(await pair.session.whenReady()).toBe(true);
  return { ...toy, ...pair, receipt };
}

/** Any result object, for requests the test sends through the host's SDK client by hand. */
const ResultSchema = z.looseObject({});

async function peerCode(work: Promise<unknown>): Promise<unknown> {
  try {
    await work;
  } catch (err) {
    if (err instanceof McplError && err.code === 'MCPL_PEER_ERROR') return err.details?.rpcCode;
    if (err instanceof ProtocolError) return err.code;
    throw err;
  }
  throw new Error('expected the peer to answer with an error');
}

describe('negotiation', () => {
  it('gives a plain MCP client a plain MCP server: no manifest, tools ungated, MCPL methods -32601', async () => {
    const { server, record } = createToyServer();
    const { host, session } = await connectPair(server, { capabilities: null });
    expect(host.manifest).toBeUndefined();
    expect(host.client.getServerCapabilities()?.experimental).toBeUndefined();
    expect(session.isMcpl).toBe(false);
    expect(await session.whenReady()).toBe(false);
    expect((await host.listTools()).map((tool) => tool.name)).toEqual(['send', 'ping']);
    const result = await host.callTool('send', { text: 'hi' });
    expect(result.content).toEqual([{ type: 'text', text: 'sent m100' }]);
    expect(record.toolCalls).toHaveLength(1);
    expect(await peerCode(host.client.request({ method: 'mcpl/manifest' }, ResultSchema))).toBe(-32601);
    await expect(session.pushEvent({ featureSet: 'toy.messaging', content: [] })).rejects.toMatchObject({
      code: 'MCPL_NOT_NEGOTIATED',
    });
  });

  it('gives an MCPL host the manifest with its §17.2 revision, and nothing before the policy', async () => {
    const { server } = createToyServer();
    const { host, session } = await connectPair(server);
    const manifest = host.manifest;
    expect(manifest?.version).toBe('0.5');
    expect(manifest?.revision).toBe(manifestRevision(manifest));
    expect(Object.keys(manifest?.featureSets as object)).toEqual([
      'toy.messaging',
      'toy.context',
      'toy.lifecycle',
    ]);
    expect(session.isMcpl).toBe(true);
    expect(session.isReady).toBe(false);
    expect(session.isFeatureSetEnabled('toy.messaging')).toBe(false);
    expect(await peerCode(host.callTool('ping'))).toBe(CAPABILITY_DENIED_ON_THE_WIRE);
    await expect(session.registerChannels([general])).rejects.toMatchObject({ code: 'MCPL_NOT_READY' });
  });
});

describe('the capability grant', () => {
  it('answers the policy Request with a degradation receipt and becomes ready once it is out', async () => {
    const { receipt, session } = await ready(['tools', 'pushEvents', 'channels.*']);
    expect(receipt).toEqual({
      accepted: true,
      mode: 'degraded',
      unavailableFeatures: [
        {
          featureSet: 'toy.context',
          missingCapabilities: [
            'contextHooks.beforeInference.observe',
            'contextHooks.beforeInference.inject.beforeUser',
            'contextHooks.beforeInference.inject.system',
          ],
          effect: 'disabled',
          reason: 'capability_denied',
        },
        {
          featureSet: 'toy.lifecycle',
          missingCapabilities: ['inferenceLifecycle'],
          effect: 'disabled',
          reason: 'capability_denied',
        },
      ],
    });
    expect(session.policySource).toBe('request');
    expect(session.isFeatureSetEnabled('toy.messaging')).toBe(true);
  });

  it('omits mode when nothing degraded', async () => {
    const { receipt } = await ready();
    expect(receipt).toEqual({ accepted: true });
  });

  it('reads an absent effectiveCapabilities as a grant of nothing, and a Request replaces', async () => {
    const { host, session } = await ready();
    expect(session.isGranted('pushEvents')).toBe(true);
    const receipt = await host.setPolicy({});
    expect(receipt.accepted).toBe(true);
    expect(session.isGranted('pushEvents')).toBe(false);
    expect(session.isGranted('tools')).toBe(false);
    expect(await peerCode(host.callTool('ping'))).toBe(CAPABILITY_DENIED_ON_THE_WIRE);
  });

  it('lets a Notification only narrow, never widen or establish readiness', async () => {
    const { server } = createToyServer();
    const { host, session } = await connectPair(server);
    await host.notifyPolicy({ effectiveCapabilities: FULL_GRANT, enabled: ['toy.messaging'] });
    await nextTurn();
    expect(session.isReady).toBe(false);
    await host.setPolicy({ effectiveCapabilities: FULL_GRANT });
    expect(session.isFeatureSetEnabled('toy.messaging')).toBe(true);
    await host.notifyPolicy({ disabled: ['toy.messaging'], effectiveCapabilities: ['*'] });
    await nextTurn();
    expect(session.isFeatureSetEnabled('toy.messaging')).toBe(false);
    expect(session.featureSets.find((s) => s.name === 'toy.messaging')?.reason).toBe('disabled');
    expect(session.isGranted('pushEvents')).toBe(true);
  });

  it('rejects a path in both lists as malformed (-32602) and keeps the policy in force', async () => {
    const { host, session } = await ready();
    await expect(
      host.client.request(
        {
          method: 'featureSets/update',
          params: { effectiveCapabilities: ['tools'], deniedCapabilities: ['tools'] },
        },
        ResultSchema,
      ),
    ).rejects.toMatchObject({ code: -32602 });
    expect(session.isGranted('pushEvents')).toBe(true);
  });

  it('treats enabled as an allowlist: unselected sets are not_selected', async () => {
    const { receipt, session } = await ready(FULL_GRANT, { enabled: ['toy.messaging'] });
    expect(receipt).toMatchObject({ accepted: true, mode: 'degraded' });
    expect(session.featureSets.map((s) => [s.name, s.enabled, s.reason])).toEqual([
      ['toy.messaging', true, undefined],
      ['toy.context', false, 'not_selected'],
      ['toy.lifecycle', false, 'not_selected'],
    ]);
  });

  it('gates tools by the grant and by the tool feature set, and hides what is disabled', async () => {
    const { host, session } = await ready(['tools', 'pushEvents'], { disabled: ['toy.messaging'] });
    expect((await host.listTools()).map((tool) => tool.name)).toEqual(['ping']);
    expect((await host.callTool('ping')).content).toEqual([{ type: 'text', text: 'pong' }]);
    expect(await peerCode(host.callTool('send', { text: 'x' }))).toBe(-32001);
    let listChanged = 0;
    host.client.setNotificationHandler('notifications/tools/list_changed', () => {
      listChanged += 1;
    });
    await host.setPolicy({ effectiveCapabilities: FULL_GRANT });
    await nextTurn();
    expect(listChanged).toBe(1);
    expect((await host.listTools()).map((tool) => tool.name)).toEqual(['send', 'ping']);
    expect(session.isFeatureSetEnabled('toy.messaging')).toBe(true);
  });

  it('re-checks the grant when it sends: a narrowed grant stops the next push at once', async () => {
    const { host, session } = await ready();
    expect(
      (await session.pushEvent({ featureSet: 'toy.messaging', content: [{ type: 'text', text: 'a' }] }))
        .status,
    ).toBe('accepted');
    await host.setPolicy({ effectiveCapabilities: FULL_GRANT.filter((path) => path !== 'pushEvents') });
    await expect(session.pushEvent({ featureSet: 'toy.messaging', content: [] })).rejects.toMatchObject({
      code: 'MCPL_CAPABILITY_DENIED',
      details: { capability: 'pushEvents' },
    });
  });

  it('applies a reduction as soon as the Request arrives, and an expansion only after its receipt', async () => {
    const { server } = createToyServer();
    const { host, session } = await connectPair(server);
    await host.setPolicy({ effectiveCapabilities: ['tools', 'pushEvents'] });
    const seen: boolean[] = [];
    const off = session.on('policy', () => seen.push(session.isGranted('channels.register')));
    const narrowing = host.setPolicy({ effectiveCapabilities: ['tools', 'channels.register'] });
    // While the receipt is being written: pushEvents is gone, channels.register not yet there.
    await narrowing;
    off();
    expect(seen[0]).toBe(false);
    expect(session.isGranted('pushEvents')).toBe(false);
    expect(session.isGranted('channels.register')).toBe(true);
  });

  it('refuses MCPL below a minimum grant, naming the fallback, and serves plain MCP after', async () => {
    const { server } = createToyServer({
      minimumGrant: { capabilities: ['pushEvents'], fallback: 'mcp-only' },
    });
    const { host, session } = await connectPair(server);
    const receipt = await host.setPolicy({ effectiveCapabilities: ['tools'] });
    expect(receipt).toEqual({
      accepted: false,
      fallback: 'mcp-only',
      missingCapabilities: ['pushEvents'],
      reason: 'the grant lacks capabilities this server cannot run without',
    });
    expect(session.isMcpl).toBe(false);
    expect(host.policyEstablished).toBe(false);
    expect((await host.callTool('send', { text: 'plain' })).content).toEqual([
      { type: 'text', text: 'sent m100' },
    ]);
  });

  it('refuses MCPL below a minimum grant with fallback close: the receipt first, then the close', async () => {
    const { server } = createToyServer({
      minimumGrant: { capabilities: ['pushEvents'], fallback: 'close', reason: 'push or nothing' },
    });
    const { host, session } = await connectPair(server);
    const closed = Promise.all([
      new Promise<void>((resolve) => host.on('close', () => resolve())),
      new Promise<void>((resolve) => session.on('close', () => resolve())),
    ]);
    const receipt = await host.setPolicy({ effectiveCapabilities: ['tools'] });
    expect(receipt).toEqual({
      accepted: false,
      fallback: 'close',
      missingCapabilities: ['pushEvents'],
      reason: 'push or nothing',
    });
    await closed;
    expect(session.isClosed).toBe(true);
  });
});

describe('channels', () => {
  it('registers, reads the itemized answer, and lists', async () => {
    const { host, session } = await ready();
    const outcome = await session.registerChannels([general, random]);
    expect(outcome).toEqual({ accepted: ['toy:general', 'toy:random'], refused: [], pending: [] });
    expect(host.channels.map((c) => c.id)).toEqual(['toy:general', 'toy:random']);
    expect((await host.listChannels()).map((c) => c.id)).toEqual(['toy:general', 'toy:random']);
  });

  it('authorizes per descriptor: a refused channel is unregistered and its messages refused locally', async () => {
    const toy = createToyServer();
    const { host, session } = await connectPair(toy.server, {
      handlers: {
        authorizeChannel: (descriptor) =>
          descriptor.id === 'toy:random' ? { accepted: false, reason: 'capability_denied' } : true,
      },
    });
    await host.setPolicy({ effectiveCapabilities: FULL_GRANT });
    const outcome = await session.registerChannels([general, random]);
    expect(outcome.refused).toEqual([{ id: 'toy:random', reason: 'capability_denied' }]);
    expect(session.channel('toy:random')?.registration).toBe('refused');
    const results = await session.incoming([
      message('toy:general', 'a', 'x'),
      message('toy:random', 'b', 'y'),
    ]);
    expect(results.map((r) => [r.messageId, r.status, r.reason])).toEqual([
      ['a', 'accepted', undefined],
      ['b', 'refused', 'unknown_channel'],
    ]);
  });

  it('opens by id and by type+address, history first, and only then counts the channel open', async () => {
    const { host, session, record } = await ready();
    await session.registerChannels([general, random]);
    const order: string[] = [];
    session.on('channelOpened', (channel) => order.push(`open ${channel.id}`));
    const opened = await host.openChannel({ channelId: 'toy:general' }, { history: { limit: 2 } });
    order.push('answer');
    expect(opened.channel.id).toBe('toy:general');
    expect(opened.history?.map((m) => m.messageId)).toEqual(['h1', 'h2']);
    expect(opened.history?.[1]?.tags).toEqual(['chat:mention', 'chat:addressed']);
    expect(opened.historyTruncated).toBe(true);
    expect(order).toEqual(['open toy:general', 'answer']);
    expect(session.isChannelOpen('toy:general')).toBe(true);
    const byAddress = await host.openChannel({ type: 'toy', address: { room: 'random' } });
    expect(byAddress.channel.id).toBe('toy:random');
    expect(byAddress.history).toBeUndefined();
    expect(record.opened).toEqual(['toy:general', 'toy:random']);
    expect(await peerCode(host.openChannel({ channelId: 'toy:nowhere' }))).toBe(-32023);
    const late = await host.openChannel({ channelId: 'toy:late' });
    expect(late.channel.id).toBe('toy:late');
    expect(session.channel('toy:late')?.registration).toBe('accepted');
    expect((await host.closeChannel('toy:general')).closed).toBe(true);
    expect(session.isChannelOpen('toy:general')).toBe(false);
    expect(record.closed).toEqual(['toy:general']);
  });

  it('never lets a live message overtake the open answer it follows', async () => {
    const { host, session } = await ready();
    await session.registerChannels([general]);
    const arrivals: string[] = [];
    host.on('incoming', (messages) => arrivals.push(...messages.map((m) => m.messageId)));
    session.on('channelOpened', () => {
      void session.incoming([message('toy:general', 'live', 'after the open')]);
    });
    const opened = host
      .openChannel({ channelId: 'toy:general' }, { history: { limit: 2 } })
      .then((answer) => {
        arrivals.push(`answer:${answer.history?.length}`);
      });
    await opened;
    await nextTurn();
    expect(arrivals).toEqual(['answer:2', 'live']);
  });

  it('writes the open answer before a live message the app sends as the channel opens', async () => {
    const { peer, session } = await readyPeer();
    const registering = session.registerChannels([general]);
    peer.respond((await peer.nextCall('channels/register')).id, {
      results: [{ id: general.id, accepted: true }],
    });
    await registering;
    session.on('channelOpened', () => {
      void session.incoming([message('toy:general', 'live', 'after the open')]);
    });
    const answered = peer.request('open-1', 'channels/open', {
      channelId: 'toy:general',
      history: { limit: 2 },
    });
    const live = await peer.nextCall('channels/incoming');
    const answer = await answered;
    expect(peer.received.indexOf(answer)).toBeLessThan(peer.received.indexOf(live));
    expect(result(answer).history).toHaveLength(2);
  });

  it('writes the first receipt before anything the app sends once ready', async () => {
    const { server } = createToyServer();
    const peer = new RawPeer();
    const session = await peer.attach(server);
    session.on('ready', () => {
      void session.registerChannels([general]);
    });
    await peer.request(1, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: { experimental: { mcpl: { version: '0.5' } } },
      clientInfo: { name: 'strict', version: '1' },
    });
    peer.notify('notifications/initialized');
    const receipt = await peer.request(2, 'featureSets/update', { effectiveCapabilities: FULL_GRANT });
    const register = await peer.nextCall('channels/register');
    expect(receipt.result).toEqual({ accepted: true });
    expect(peer.received.indexOf(receipt)).toBeLessThan(peer.received.indexOf(register));
  });

  it('delivers a batch and reads per-item acceptance', async () => {
    const toy = createToyServer();
    const { host, session } = await connectPair(toy.server, {
      handlers: {
        incoming: (messages) =>
          messages.map((m) =>
            m.messageId === 'b'
              ? { accepted: false, reason: 'muted' }
              : { accepted: true, conversationId: 'c1' },
          ),
      },
    });
    await host.setPolicy({ effectiveCapabilities: FULL_GRANT });
    await session.registerChannels([general]);
    const results = await session.incoming([
      message('toy:general', 'a', 'one', ['chat:dm', 'chat:ambient']),
      message('toy:general', 'b', 'two'),
      message('toy:general', 'c', 'three'),
    ]);
    expect(results).toEqual([
      { messageId: 'a', channelId: 'toy:general', status: 'accepted', conversationId: 'c1' },
      { messageId: 'b', channelId: 'toy:general', status: 'refused', reason: 'muted' },
      { messageId: 'c', channelId: 'toy:general', status: 'accepted', conversationId: 'c1' },
    ]);
  });

  it('publishes, acknowledges and types through the app hooks', async () => {
    const { host, session, record } = await ready();
    await session.registerChannels([general]);
    expect(
      await host.publish({ channelId: 'toy:general', content: 'hello team', conversationId: 'c1' }),
    ).toEqual({
      delivered: true,
      messageId: 'm100',
    });
    await host.publish({ channelId: 'toy:general', content: 'no ack' }, { ack: false });
    expect(
      await host.acknowledge({ channelId: 'toy:general', messageId: 'x', intent: 'seen-not-opening' }),
    ).toEqual({
      acknowledged: true,
      representation: 'reaction:eyes',
    });
    await host.typing({ channelId: 'toy:general' });
    await nextTurn();
    expect(record.published).toEqual([
      { channelId: 'toy:general', text: 'hello team' },
      { channelId: 'toy:general', text: 'no ack' },
    ]);
    expect(record.typing).toEqual(['toy:general']);
    expect(
      await peerCode(
        host.client.request(
          { method: 'channels/publish', params: { channelId: 'toy:none', content: [] } },
          ResultSchema,
        ),
      ),
    ).toBe(-32023);
  });

  it('finalizes an outgoing stream once, and never posts it', async () => {
    const { host, session, record } = await ready();
    await session.registerChannels([general]);
    const base = { inferenceId: 'inf1', conversationId: 'c1', channelId: 'toy:general' };
    await host.outgoingChunk({ ...base, index: 1, delta: 'world' });
    await host.outgoingChunk({ ...base, index: 0, delta: 'hello ' });
    await host.outgoingComplete({ ...base, content: [{ type: 'text', text: 'hello world' }] });
    await host.outgoingComplete({ ...base, content: [{ type: 'text', text: 'hello world' }] });
    await nextTurn();
    expect(record.completed).toHaveLength(1);
    expect(record.completed[0]?.chunks).toEqual(['hello ', 'world']);
    expect(record.published).toEqual([]);
  });

  it('announces changes as a Notification and keeps the new channels pending', async () => {
    const { host, session } = await ready();
    await session.registerChannels([general]);
    const changed = new Promise<void>((resolve) => host.on('channels', () => resolve()));
    const outcome = await session.announceChannels({ added: [random], removed: ['toy:general'] });
    await changed;
    expect(outcome).toEqual({ accepted: [], refused: [], pending: ['toy:random'] });
    expect(host.channels.map((c) => c.id)).toEqual(['toy:random']);
    expect(session.channels().map((c) => [c.descriptor.id, c.registration])).toEqual([
      ['toy:random', 'pending'],
    ]);
  });
});

describe('push, context, lifecycle, rollback', () => {
  it('pushes with stable ids and closed tags; a duplicate is not delivered twice', async () => {
    const { host, session } = await ready();
    const pushes: string[][] = [];
    host.on('push', (event) => pushes.push(event.tags));
    const input = {
      featureSet: 'toy.messaging',
      content: [{ type: 'text' as const, text: 'ping' }],
      origin: { messageId: '17' },
      timestamp: '2026-09-14T11:42:52Z',
      tags: ['chat:dm'],
    };
    const first = await session.pushEvent(input);
    const again = await session.pushEvent(input);
    expect(first.status).toBe('accepted');
    expect(again.eventId).toBe(first.eventId);
    expect(pushes).toEqual([['chat:dm', 'chat:addressed', 'chat:private']]);
    await expect(session.pushEvent({ ...input, featureSet: 'toy.context' })).rejects.toMatchObject({
      code: 'MCPL_DECLARATION_MISMATCH',
    });
    await expect(session.pushEvent({ ...input, featureSet: 'nope' })).rejects.toMatchObject({
      code: 'MCPL_UNKNOWN_FEATURE_SET',
    });
  });

  it('reads an error object and an accepted:false result as refusals', async () => {
    const toy = createToyServer();
    const { host, session } = await connectPair(toy.server, {
      handlers: { pushEvent: () => ({ accepted: false, reason: 'quiet hours' }) },
    });
    await host.setPolicy({ effectiveCapabilities: FULL_GRANT, disabled: ['toy.lifecycle'] });
    expect(await session.pushEvent({ featureSet: 'toy.messaging', content: [] })).toMatchObject({
      status: 'refused',
      reason: 'quiet hours',
    });
  });

  it('answers beforeInference with only granted, declared positions, and nulls an unobserved user message', async () => {
    const { host } = await ready(
      FULL_GRANT.filter(
        (path) =>
          path !== 'contextHooks.beforeInference.observe' &&
          path !== 'contextHooks.beforeInference.inject.system',
      ),
      {},
    );
    const outcome = await host.beforeInference({
      inferenceId: 'i1',
      conversationId: 'c',
      turnIndex: 0,
      userMessage: 'secret',
    });
    expect(outcome.featureSet).toBeUndefined();
    expect(outcome.accepted).toEqual([]);
    // toy.context needs observe and inject.system, so it is disabled and contributes nothing.
    const full = await ready();
    const answer = await full.host.beforeInference({
      inferenceId: 'i2',
      conversationId: 'c',
      turnIndex: 1,
      userMessage: 'hi',
    });
    expect(answer.accepted.map((i) => [i.position, i.content])).toEqual([
      ['beforeUser', '[status] saw hi'],
      ['system', 'be nice'],
    ]);
  });

  it('writes without reading (§15.2): injection granted, observe denied, userMessage never handed over', async () => {
    const seen: (string | null)[] = [];
    const toy = createToyServer({
      featureSets: {
        'toy.body': { description: 'Body status', uses: ['contextHooks.beforeInference.inject.beforeUser'] },
      },
      beforeInference: (params) => {
        seen.push(params.userMessage);
        return {
          featureSet: 'toy.body',
          contextInjections: [
            { namespace: 'body', position: 'beforeUser', content: '[body] battery 62%' },
            { namespace: 'body', position: 'system', content: 'not granted' },
          ],
        };
      },
    });
    const { host } = await connectPair(toy.server);
    await host.setPolicy({ effectiveCapabilities: ['contextHooks.beforeInference.inject.beforeUser'] });
    const outcome = await host.beforeInference({
      inferenceId: 'i',
      conversationId: 'c',
      turnIndex: 3,
      userMessage: 'private',
    });
    expect(seen).toEqual([null]);
    expect(outcome.featureSet).toBe('toy.body');
    expect(outcome.accepted).toEqual([
      { namespace: 'body', position: 'beforeUser', content: '[body] battery 62%' },
    ]);
  });

  it('keeps a hook failure out of the answer', async () => {
    const toy = createToyServer({
      tools: {
        list: () => [{ name: 'boom', inputSchema: { type: 'object' } }],
        call: () => {
          throw new Error('secret connection string');
        },
      },
    });
    const { host } = await connectPair(toy.server, { capabilities: null });
    const failure = await host.callTool('boom').catch((err: McplError) => err);
    expect(failure).toMatchObject({
      code: 'MCPL_PEER_ERROR',
      details: { rpcCode: -32603, rpcMessage: 'tools/call failed' },
    });
  });

  it('answers within the hook deadline, empty, when the app hook is slow', async () => {
    const toy = createToyServer({ timeouts: { beforeInferenceMs: 50 } });
    const { host } = await connectPair(toy.server);
    await host.setPolicy({ effectiveCapabilities: FULL_GRANT });
    const outcome = await host.beforeInference({ inferenceId: 'i3', conversationId: 'slow', turnIndex: 0 });
    expect(outcome).toEqual({ featureSet: undefined, accepted: [], dropped: [], timedOut: false });
  });

  it('tolerates lifecycle and deduplicates terminals', async () => {
    const { host, record } = await ready();
    await host.lifecycle({ inferenceId: 'i1', phase: 'started' });
    await host.lifecycle({ inferenceId: 'i1', phase: 'completed' });
    await host.lifecycle({ inferenceId: 'i1', phase: 'aborted' });
    await host.lifecycle({ inferenceId: 'i9', phase: 'failed' });
    await nextTurn();
    expect(record.lifecycle).toEqual([
      { inferenceId: 'i1', phase: 'started' },
      { inferenceId: 'i1', phase: 'completed' },
      { inferenceId: 'i9', phase: 'failed' },
    ]);
  });

  it('carries checkpoints in tool results and rolls back to them (-32005 for unknown)', async () => {
    const { host, record } = await ready();
    const first = await host.callTool('send', { text: 'one' });
    const second = await host.callTool(
      'send',
      { text: 'two' },
      { checkpoint: String(first.state?.checkpoint) },
    );
    expect(first.state?.parent).toBeNull();
    expect(second.state?.parent).toBe(first.state?.checkpoint);
    expect(record.toolCalls[1]?.checkpoint).toBe(first.state?.checkpoint);
    const back = await host.rollback({
      featureSet: 'toy.messaging',
      checkpoint: String(first.state?.checkpoint),
    });
    expect(back).toEqual({ checkpoint: first.state?.checkpoint, success: true });
    const branch = await host.callTool('send', { text: 'three' });
    expect(branch.state?.parent).toBe(first.state?.checkpoint);
    expect(await peerCode(host.rollback({ checkpoint: 'chk_unknown' }))).toBe(-32005);
    const stuck = await host.callTool('send', { text: 'irreversible' });
    expect(await host.rollback({ checkpoint: String(stuck.state?.checkpoint) })).toMatchObject({
      success: false,
      reason: 'that message cannot be unsent',
    });
  });
});

describe('manifest changes (§17)', () => {
  it('announces a coalesced change once, with domains, and never the revision already held', async () => {
    const { server } = createToyServer();
    const { host } = await connectPair(server);
    const announced: [string, string[]][] = [];
    host.on('manifestChanged', (revision, domains) => announced.push([revision, domains]));
    const before = host.manifest?.revision;
    server.setManifest({
      featureSets: { ...server.featureSets, 'toy.extra': { description: 'More', uses: ['tools'] } },
    });
    server.setManifest({
      featureSets: { ...server.featureSets, 'toy.extra': { description: 'More, again', uses: ['tools'] } },
    });
    await nextTurn();
    await nextTurn();
    expect(announced).toHaveLength(1);
    expect(announced[0]?.[1]).toEqual(['featureSets']);
    const fetched = await host.fetchManifest();
    expect(fetched.manifest.revision).toBe(announced[0]?.[0]);
    expect(fetched.manifest.revision).not.toBe(before);
    expect(fetched.revisionMatches).toBe(true);
    expect(fetched.domains).toEqual(['featureSets']);
    // Setting the same manifest again announces nothing.
    server.setManifest({ featureSets: server.featureSets });
    await nextTurn();
    await nextTurn();
    expect(announced).toHaveLength(1);
  });

  it('coalesces a batch of edits into one announcement', async () => {
    const { server } = createToyServer();
    const { host } = await connectPair(server);
    const announced: string[][] = [];
    host.on('manifestChanged', (_revision, domains) => announced.push(domains));
    const revision = host.manifest?.revision;
    expect(() =>
      server.setManifest({ featureSets: { 'a/b': { description: 'x', uses: ['tools'] } } }),
    ).toThrow(/identifier/);
    expect(server.featureSets['a/b']).toBeUndefined();
    await server.batch(async () => {
      const { featureSets } = server;
      server.setManifest({ featureSets: { ...featureSets, a: { description: 'a', uses: ['tools'] } } });
      await nextTurn();
      server.setManifest({
        featureSets: { ...server.featureSets, b: { description: 'b', uses: ['tools'] } },
      });
    });
    await nextTurn();
    await nextTurn();
    expect(announced).toEqual([['featureSets']]);
    expect((await host.fetchManifest()).manifest.revision).not.toBe(revision);
  });

  it('revokes on the host what a fetched manifest no longer advertises', async () => {
    const { server, host } = await ready();
    const { pushEvents: _dropped, ...rest } = server.options.capabilities as Record<string, never>;
    server.setManifest({
      capabilities: rest,
      featureSets: {
        'toy.lifecycle': { description: 'Turn boundaries', uses: ['inferenceLifecycle'] },
      },
    });
    const fetched = await host.fetchManifest();
    expect(fetched.revoked).toEqual(['pushEvents']);
    expect(fetched.domains).toEqual(['capabilities', 'featureSets', 'tagOntology']);
    expect(host.isGranted('pushEvents')).toBe(false);
  });
});
