// McplHost speaking as the 0.4 hosts INTEROP.md records, against this library's own server
// role: the handshake, the grant both ends assume, and channels as each of them does them.
import { readFileSync } from 'node:fs';
import {
  InMemoryTransport,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type Transport,
  type TransportSendOptions,
} from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import {
  CAPABILITY_PATHS,
  type ChannelDescriptor,
  McplHost,
  type McplHostOptions,
  type McplServer,
  type McplSession,
  NdjsonTransport,
} from '../src/index.js';
import { agentFrameworkFeatureSets, createToyServer, general, message, random } from './fixtures/toy.js';
import { CAPABILITY_DENIED_ON_THE_WIRE } from './helpers.js';
import { RawPeer } from './raw-peer.js';

type Wire = {
  id?: string | number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number };
};

/** A host-side transport that keeps every message it carries, both ways. */
class Recorder implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  readonly sent: Wire[] = [];
  readonly received: Wire[] = [];
  readonly #inner: Transport;

  constructor(inner: Transport) {
    this.#inner = inner;
    inner.onmessage = (message, extra) => {
      this.received.push(message as Wire);
      this.onmessage?.(message, extra);
    };
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
  }

  start(): Promise<void> {
    return this.#inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    this.sent.push(message as Wire);
    return this.#inner.send(message, options);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  /** What the host sent of `method`. */
  calls(method: string): Wire[] {
    return this.sent.filter((m) => m.method === method);
  }

  /** The host's answer to the server's request of `method` (the latest one). */
  answerTo(method: string): Wire | undefined {
    const asked = this.received.filter((m) => m.method === method && m.id !== undefined).at(-1);
    return this.sent.find((m) => m.method === undefined && asked !== undefined && m.id === asked.id);
  }
}

/** mcpl-harness 0.1.1 names itself so in `clientInfo` (its source hard-codes the name and version). */
const HARNESS = { name: 'mcpl-harness-web', version: '0.1.0', dialect: 'mcpl-harness' } as const;
/** agent-framework 0.1.0 names itself so in `clientInfo` (its version there is hard-coded). */
const AGENT_FRAMEWORK = { name: 'agent-framework', version: '1.0.0', dialect: 'agent-framework' } as const;

/** The handshake agent-framework 0.1.0 writes, recorded (fixtures/peers/NOTICE.md). */
const AGENT_FRAMEWORK_HANDSHAKE = readFileSync(
  new URL('./fixtures/peers/agent-framework-0.1.0.handshake.jsonl', import.meta.url),
  'utf8',
)
  .split('\n')
  .filter((line) => line !== '');

async function connect(server: McplServer, options: McplHostOptions) {
  const [hostSide, serverSide] = InMemoryTransport.createLinkedPair();
  const wire = new Recorder(hostSide);
  const sessionPromise = server.connect(serverSide);
  const host = await McplHost.connect(wire, options);
  const session = await sessionPromise;
  return { host, session, wire };
}

function next<K extends 'opened' | 'channels' | 'incoming' | 'push' | 'openFailed'>(
  host: McplHost,
  event: K,
) {
  return new Promise<unknown[]>((resolve) => {
    const off = host.on(event, (...args: unknown[]) => {
      off();
      resolve(args);
    });
  });
}

/** Both ends hold the same grant: every capability path answers alike. */
function sameGrant(host: McplHost, session: McplSession): void {
  for (const path of CAPABILITY_PATHS)
    expect([path, host.isGranted(path)]).toEqual([path, session.isGranted(path)]);
}

describe('the dialect option', () => {
  it('refuses bad values with MCPL_INVALID_ARGUMENT before anything is sent', async () => {
    const bad: Partial<McplHostOptions>[] = [
      { dialect: 'mcpl-harness-2' as never },
      { ...HARNESS, capabilities: null },
      { ...HARNESS, capabilities: { version: '0.5', channels: true } },
      { ...HARNESS, capabilities: { channels: true } },
      { ...HARNESS, name: 'my-harness' },
      { ...AGENT_FRAMEWORK, name: 'mcpl-harness' },
      { ...AGENT_FRAMEWORK, handlers: { modelInfo: { model: 'm' } } },
    ];
    for (const options of bad) {
      const [hostSide] = InMemoryTransport.createLinkedPair();
      const wire = new Recorder(hostSide);
      await expect(
        McplHost.connect(wire, { name: 'host', version: '1', ...options } as McplHostOptions),
      ).rejects.toMatchObject({ name: 'McplError', code: 'MCPL_INVALID_ARGUMENT' });
      expect(wire.sent).toEqual([]);
    }
  });

  it('defaults to the spec, which does not send the methods 0.5 removed', async () => {
    const { server } = createToyServer();
    const { host } = await connect(server, { name: 'spec-host', version: '1' });
    expect(host.dialect).toBe('spec');
    expect(host.handshakeChannels).toBeUndefined();
    await expect(host.afterInference({ inferenceId: 'i' })).rejects.toMatchObject({
      code: 'MCPL_DIALECT_UNSUPPORTED',
      details: { dialect: 'spec' },
    });
    await host.close();
  });
});

describe('as mcpl-harness 0.1.1', () => {
  it('is recognised, reads the array form, holds the grant the server assumes, and lists channels after the handshake', async () => {
    const { server } = createToyServer();
    const { host, session, wire } = await connect(server, HARNESS);
    expect(host.dialect).toBe('mcpl-harness');
    expect(session.dialect).toMatchObject({ name: 'mcpl-harness', version: '0.4', legacy: true });
    // Its greeting, as its source (anima-research/mcpl-harness 0.1.1, src/session.ts) writes it.
    expect(wire.sent[0]).toEqual({
      jsonrpc: '2.0',
      method: 'initialize',
      id: 0,
      params: {
        protocolVersion: '2024-11-05',
        capabilities: {
          experimental: {
            mcpl: { version: '0.4', pushEvents: true, channels: true, modelInfo: true, scopedAccess: true },
          },
        },
        clientInfo: { name: 'mcpl-harness-web', version: '0.1.0' },
      },
    });
    // It advertises no context hooks, so the toy's context set is not granted.
    expect(session.isFeatureSetEnabled('toy.context')).toBe(false);
    // It answers model/info, with the model it stands for (a human at the harness).
    expect(await session.modelInfo()).toMatchObject({ id: 'harness/human', vendor: 'mcpl-harness' });
    expect(Array.isArray(host.manifest?.featureSets)).toBe(true);
    // No policy: the grant is assumed at initialized, the same on both ends.
    expect(session.policySource).toBe('legacy');
    expect(host.policyEstablished).toBe(true);
    sameGrant(host, session);
    expect(host.isGranted('contextHooks.beforeInference.inject.system')).toBe(false);
    expect(host.featureSets).toEqual(session.featureSets);
    // initialize, initialized, then channels/list, and never a featureSets/update.
    expect(wire.sent.slice(0, 3).map((m) => m.method)).toEqual([
      'initialize',
      'notifications/initialized',
      'channels/list',
    ]);
    expect(host.handshakeChannels).toEqual([]);
    await expect(host.setPolicy({ effectiveCapabilities: ['tools'] })).rejects.toMatchObject({
      code: 'MCPL_DIALECT_UNSUPPORTED',
      details: { dialect: 'mcpl-harness' },
    });
    await expect(host.notifyPolicy({ disabled: ['toy.context'] })).rejects.toMatchObject({
      code: 'MCPL_DIALECT_UNSUPPORTED',
    });
    expect(wire.calls('featureSets/update')).toEqual([]);
    // Tools work without a policy; a removed method is sent and answered.
    expect((await host.callTool('ping')).content).toEqual([{ type: 'text', text: 'pong' }]);
    expect(await host.afterInference({ inferenceId: 'inf_1' })).toEqual({});
    await host.close();
  });

  it('answers channels/register with {}, refuses the Request form of channels/changed, opens by {type, address}', async () => {
    const { server, record } = createToyServer({ channelsChanged: 'request' });
    const { host, session, wire } = await connect(server, HARNESS);
    const registered = next(host, 'channels');
    expect(await session.registerChannels([general])).toEqual({
      accepted: [],
      refused: [],
      pending: ['toy:general'],
    });
    await registered;
    expect(wire.answerTo('channels/register')?.result).toEqual({});
    expect(host.channels.map((c) => c.id)).toEqual(['toy:general']);

    const announced = await session.announceChannels({ added: [random] });
    expect(announced).toMatchObject({ pending: ['toy:random'], error: { details: { rpcCode: -32601 } } });
    expect(host.channels.map((c) => c.id)).toEqual(['toy:general']);

    const opened = await host.openChannel({ channelId: 'toy:general' }, { history: { limit: 2 } });
    expect(opened.channel.id).toBe('toy:general');
    expect(opened.history?.map((m) => m.messageId)).toEqual(['h1', 'h2']);
    expect(wire.calls('channels/open').map((m) => m.params)).toEqual([
      { type: 'toy', address: { room: 'general' }, history: { limit: 2 } },
    ]);
    expect(record.opened).toEqual(['toy:general']);
    await expect(host.openChannel({ channelId: 'toy:nowhere' })).rejects.toMatchObject({
      code: 'MCPL_UNKNOWN_CHANNEL',
    });

    // Delivery, push and publish run under the assumed grant.
    const heard = next(host, 'incoming');
    expect(await session.incoming([message('toy:general', 'a', 'hello', ['chat:mention'])])).toMatchObject([
      { messageId: 'a', status: 'accepted' },
    ]);
    expect(((await heard)[0] as { tags: string[] }[])[0]?.tags).toEqual(['chat:mention', 'chat:addressed']);
    const pushed = next(host, 'push');
    const input = {
      featureSet: 'toy.messaging',
      eventId: 'evt_1',
      content: [{ type: 'text' as const, text: 'p' }],
    };
    expect((await session.pushEvent(input)).status).toBe('accepted');
    await pushed;
    expect((await session.pushEvent(input)).status).toBe('accepted');
    expect(await host.publish({ channelId: 'toy:general', content: 'hi' })).toMatchObject({
      delivered: true,
    });
    expect(record.published).toContainEqual({ channelId: 'toy:general', text: 'hi' });
    await host.close();
  });

  it('takes channels/changed as a Notification', async () => {
    const { server } = createToyServer();
    const { host, session } = await connect(server, HARNESS);
    const changed = next(host, 'channels');
    await session.announceChannels({ added: [random] });
    await changed;
    expect(host.channels.map((c) => c.id)).toEqual(['toy:random']);
    await host.close();
  });

  it('stops its handshake before initialized on the object form, as the harness does', async () => {
    const { server } = createToyServer({ featureSetsForm: 'object' });
    const [hostSide, serverSide] = InMemoryTransport.createLinkedPair();
    const wire = new Recorder(hostSide);
    const sessionPromise = server.connect(serverSide);
    await expect(McplHost.connect(wire, HARNESS)).rejects.toMatchObject({
      code: 'MCPL_BAD_RESPONSE',
      details: { dialect: 'mcpl-harness', featureSets: 'object' },
    });
    const session = await sessionPromise;
    expect(wire.sent.map((m) => m.method)).toEqual(['initialize']);
    expect(session.policySource).toBe('none');
  });

  it('gets nothing from a server that waits for a policy it will never send', async () => {
    const { server } = createToyServer({ legacyHosts: 'inert' });
    const { host, session } = await connect(server, HARNESS);
    expect(session.policySource).toBe('none');
    expect(host.handshakeChannels).toBeUndefined();
    await expect(host.callTool('ping')).rejects.toMatchObject({
      details: { rpcCode: CAPABILITY_DENIED_ON_THE_WIRE, data: { capability: 'tools' } },
    });
    await host.close();
  });
});

describe('as agent-framework 0.1.0', () => {
  it('writes agent-framework 0.1.0’s recorded handshake, byte for byte', async () => {
    const server = new RawPeer();
    const connecting = McplHost.connect(
      new NdjsonTransport(server.toServer, server.fromServer),
      AGENT_FRAMEWORK,
    );
    const initialize = await server.nextCall('initialize');
    server.respond(initialize.id, {
      protocolVersion: '2024-11-05',
      capabilities: { experimental: { mcpl: { version: '0.5', featureSets: {} } } },
      serverInfo: { name: 'raw-server', version: '0' },
    });
    await server.nextCall('notifications/initialized');
    const host = await connecting;
    expect(server.lines.slice(0, 2)).toEqual(AGENT_FRAMEWORK_HANDSHAKE);
    await host.close();
  });

  it('initializes with id 0, reads the object form, and narrows only by a non-empty Notification', async () => {
    const { server } = createToyServer({ featureSets: agentFrameworkFeatureSets });
    const { host, session, wire } = await connect(server, AGENT_FRAMEWORK);
    expect(wire.sent[0]).toMatchObject({ id: 0, method: 'initialize' });
    expect(session.dialect).toMatchObject({ name: 'agent-framework', legacy: true });
    expect(Array.isArray(host.manifest?.featureSets)).toBe(false);
    expect(session.policySource).toBe('legacy');
    sameGrant(host, session);
    await expect(host.setPolicy({ effectiveCapabilities: ['tools'] })).rejects.toMatchObject({
      code: 'MCPL_DIALECT_UNSUPPORTED',
      details: { dialect: 'agent-framework' },
    });
    await expect(host.notifyPolicy({ effectiveCapabilities: ['tools'] })).rejects.toMatchObject({
      code: 'MCPL_INVALID_ARGUMENT',
    });
    // What its greeting leaves out but it speaks (channels) is granted with the rest.
    expect(session.featureSets.filter((f) => f.enabled).map((f) => f.name)).toEqual([
      'toy.messaging',
      'toy.context',
    ]);
    await host.notifyPolicy({ enabled: [], disabled: [] });
    expect(wire.calls('featureSets/update')).toEqual([]);
    await host.notifyPolicy({ disabled: ['toy.context'] });
    expect(wire.calls('featureSets/update').map((m) => [m.id, m.params])).toEqual([
      [undefined, { disabled: ['toy.context'] }],
    ]);
    await host.callTool('ping');
    expect(session.isFeatureSetEnabled('toy.context')).toBe(false);
    expect(host.featureSets.find((f) => f.name === 'toy.context')?.enabled).toBe(false);
    // The narrowed set injects nothing before inference.
    expect(await host.beforeInference({ inferenceId: 'i', userMessage: 'hi' })).toMatchObject({
      accepted: [],
      dropped: [],
      timedOut: false,
    });
    await host.close();
  });

  it('answers {registered}, auto-opens every registered channel by {type, address}, and reconciles a change before answering', async () => {
    const { server, record } = createToyServer({ channelsChanged: 'request' });
    const { host, session, wire } = await connect(server, AGENT_FRAMEWORK);
    const opened: string[] = [];
    const both = new Promise<void>((resolve) =>
      host.on('opened', (result) => {
        opened.push(result.channel.id);
        if (opened.length === 2) resolve();
      }),
    );
    expect(await session.registerChannels([general, random])).toEqual({
      accepted: ['toy:general', 'toy:random'],
      refused: [],
      pending: [],
    });
    expect(wire.answerTo('channels/register')?.result).toEqual({ registered: ['toy:general', 'toy:random'] });
    await both;
    expect(opened).toEqual(['toy:general', 'toy:random']);
    expect(wire.calls('channels/open').map((m) => m.params)).toEqual([
      { type: 'toy', address: { room: 'general' } },
      { type: 'toy', address: { room: 'random' } },
    ]);
    expect(session.isChannelOpen('toy:general') && session.isChannelOpen('toy:random')).toBe(true);

    // channels/changed as a Request: the host opens the new channel, then answers.
    const third: ChannelDescriptor = { ...random, id: 'toy:third', address: { room: 'third' } };
    const announced = await session.announceChannels({ added: [third] });
    expect(announced).toMatchObject({ accepted: ['toy:third'], pending: [] });
    expect(record.opened).toEqual(['toy:general', 'toy:random', 'toy:third']);
    const open = wire.calls('channels/open').at(-1);
    const answer = wire.answerTo('channels/changed');
    expect(open?.params).toEqual({ type: 'toy', address: { room: 'third' } });
    expect(wire.sent.indexOf(open as Wire)).toBeLessThan(wire.sent.indexOf(answer as Wire));
    await host.close();
  });

  it('reports an auto-open the server refused', async () => {
    const { server } = createToyServer({
      channels: {
        open: () => {
          throw new Error('this room is closed to agents');
        },
        close: () => undefined,
        publish: () => ({ delivered: false }),
        acknowledge: () => ({ acknowledged: false }),
        typing: () => undefined,
        outgoing: () => undefined,
      },
    });
    const { host, session } = await connect(server, AGENT_FRAMEWORK);
    const failed = next(host, 'openFailed');
    await session.registerChannels([general]);
    const [channelId, error] = await failed;
    expect(channelId).toBe('toy:general');
    expect(error).toMatchObject({ name: 'McplError', code: 'MCPL_PEER_ERROR' });
    expect(session.isChannelOpen('toy:general')).toBe(false);
    await host.close();
  });

  it('answers a duplicate push with {accepted: false, reason: "duplicate"}, is never asked model/info, and never answers channels/list', async () => {
    const { server } = createToyServer({
      featureSets: agentFrameworkFeatureSets,
      timeouts: { requestMs: 100 },
    });
    const { host, session, wire } = await connect(server, AGENT_FRAMEWORK);
    const input = {
      featureSet: 'toy.messaging',
      eventId: 'evt_1',
      content: [{ type: 'text' as const, text: 'p' }],
    };
    expect((await session.pushEvent(input)).status).toBe('accepted');
    expect((await session.pushEvent(input)).status).toBe('duplicate');
    expect(wire.answerTo('push/event')?.result).toEqual({ accepted: false, reason: 'duplicate' });

    // It does not advertise modelInfo: the server may not ask.
    await expect(session.modelInfo()).rejects.toMatchObject({ code: 'MCPL_CAPABILITY_DENIED' });
    expect(wire.received.filter((m) => m.method === 'model/info')).toEqual([]);
    await expect(session.listHostChannels()).rejects.toMatchObject({ code: 'MCPL_TIMEOUT' });
    expect(wire.answerTo('channels/list')).toBeUndefined();
    expect(await host.afterInference({ inferenceId: 'inf_1' })).toEqual({});
    await host.close();
  });

  it('refuses the array form at the handshake', async () => {
    const { server } = createToyServer({ featureSetsForm: 'array' });
    const [hostSide, serverSide] = InMemoryTransport.createLinkedPair();
    const sessionPromise = server.connect(serverSide);
    await expect(McplHost.connect(hostSide, AGENT_FRAMEWORK)).rejects.toMatchObject({
      code: 'MCPL_BAD_RESPONSE',
      details: { dialect: 'agent-framework', featureSets: 'array' },
    });
    expect((await sessionPromise).policySource).toBe('none');
  });
});
