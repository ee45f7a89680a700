// `channels/incoming`, the one MCPL method sent per live message, travels through the SDK's
// Protocol like every other request. These tests hold it to that contract as seen on the wire:
// timeouts that cancel, error objects read as refusals, a closed connection reported, cancelled
// requests left unanswered, the grant enforced, and messages handled in the order they arrive.
import { describe, expect, it } from 'vitest';
import { type ChannelMessage, type IncomingVerdict, McplHost, NdjsonTransport } from '../src/index.js';
import { general, message } from './fixtures/toy.js';
import { CAPABILITY_DENIED_ON_THE_WIRE, recordingLogger } from './helpers.js';
import { hostOfRawServer, RawPeer, rawChannel, readyPeer, result, type Wire } from './raw-peer.js';

/** Registers the toy channel with a raw host that accepts it. */
async function registered(peer: Awaited<ReturnType<typeof readyPeer>>) {
  const registering = peer.session.registerChannels([general]);
  peer.peer.respond((await peer.peer.nextCall('channels/register')).id, {
    results: [{ id: general.id, accepted: true }],
  });
  await registering;
}

function inbound(messageId: string): ChannelMessage {
  return {
    channelId: rawChannel.id,
    messageId,
    author: { id: 'u1', name: 'Ann' },
    timestamp: '2026-09-14T11:42:52Z',
    content: [{ type: 'text', text: messageId }],
  };
}

describe('channels/incoming sent by a server', () => {
  it('goes out numbered with the other requests, and takes answers out of order', async () => {
    const ready = await readyPeer();
    await registered(ready);
    const { peer, session } = ready;
    const delivering = session.incoming([message('toy:general', 'a', 'hello')]);
    const pushing = session.pushEvent({ featureSet: 'toy.messaging', content: [] });
    const incoming = await peer.nextCall('channels/incoming');
    const push = await peer.nextCall('push/event');
    expect(typeof incoming.id).toBe('number');
    expect(push.id).toBe((incoming.id as number) + 1);
    peer.respond(push.id, { accepted: true });
    expect((await pushing).status).toBe('accepted');
    peer.respond(incoming.id, { results: [{ messageId: 'a', accepted: true }] });
    expect(await delivering).toEqual([{ messageId: 'a', channelId: 'toy:general', status: 'accepted' }]);
  });

  it('times out, tells the host it gave up, drops the late answer, and carries on', async () => {
    const ready = await readyPeer({ requestMs: 50 });
    await registered(ready);
    const { peer, session, lines, stillAnswers } = ready;
    const outcome = await session.incoming([message('toy:general', 'slow', 'x')]);
    expect(outcome).toMatchObject([{ messageId: 'slow', status: 'unanswered', reason: 'MCPL_TIMEOUT' }]);
    const request = await peer.nextCall('channels/incoming');
    const cancelled = await peer.nextCall('notifications/cancelled');
    expect(cancelled.params).toEqual({ requestId: request.id, reason: expect.any(String) });
    const before = lines.filter((line) => line.message === 'protocol error').length;
    peer.respond(request.id, { results: [{ messageId: 'slow', accepted: true }] });
    await stillAnswers();
    expect(lines.filter((line) => line.message === 'protocol error').length).toBe(before + 1);

    const next = session.incoming([message('toy:general', 'fast', 'y')]);
    peer.respond((await peer.nextCall('channels/incoming')).id, {
      results: [{ messageId: 'fast', accepted: true }],
    });
    expect((await next)[0]?.status).toBe('accepted');
  });

  it('reads an error object as a refusal of every item sent, naming its code', async () => {
    const ready = await readyPeer();
    await registered(ready);
    const delivering = ready.session.incoming([
      message('toy:general', 'a', 'x'),
      message('toy:general', 'b', 'y'),
    ]);
    ready.peer.respondError((await ready.peer.nextCall('channels/incoming')).id, -32602, 'no');
    expect(await delivering).toMatchObject([
      { messageId: 'a', status: 'refused', reason: 'rpc -32602' },
      { messageId: 'b', status: 'refused', reason: 'rpc -32602' },
    ]);
  });

  it('reports a stream that can no longer be written as closed, not as a transport fault', async () => {
    const ready = await readyPeer();
    await registered(ready);
    ready.peer.fromServer.destroy();
    expect(await ready.session.incoming([message('toy:general', 'a', 'x')])).toMatchObject([
      { status: 'unanswered', reason: 'MCPL_CLOSED' },
    ]);
  });

  it('reports a connection closed mid-request as unanswered', async () => {
    const ready = await readyPeer();
    await registered(ready);
    const delivering = ready.session.incoming([message('toy:general', 'a', 'x')]);
    await ready.peer.nextCall('channels/incoming');
    ready.peer.end();
    expect(await delivering).toMatchObject([{ status: 'unanswered', reason: 'MCPL_CLOSED' }]);
    await expect(ready.session.incoming([message('toy:general', 'b', 'y')])).rejects.toMatchObject({
      code: 'MCPL_CLOSED',
    });
  });
});

describe('channels/incoming received by a host', () => {
  it('answers on the id it was sent, string or number, 0 included', async () => {
    const { server, host } = await hostOfRawServer();
    await server.request(1, 'channels/register', { channels: [rawChannel] });
    for (const id of ['s-1', 0, 42]) {
      const answer = await server.request(id, 'channels/incoming', { messages: [inbound(`m${id}`)] });
      expect(answer).toMatchObject({ id, result: { results: [{ messageId: `m${id}`, accepted: true }] } });
    }
    await host.close();
  });

  it('admits a message written right behind its channel registration, before that is answered', async () => {
    const { server, host } = await hostOfRawServer();
    const answers = Promise.all([
      server.next((m) => m.id === 1 && m.method === undefined),
      server.next((m) => m.id === 2 && m.method === undefined),
    ]);
    server.writeLine(
      [
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'channels/register',
          params: { channels: [rawChannel] },
        }),
        JSON.stringify({
          jsonrpc: '2.0',
          id: 2,
          method: 'channels/incoming',
          params: { messages: [inbound('m')] },
        }),
      ].join('\n'),
    );
    const [register, incoming] = await answers;
    expect(result(register).results).toEqual([{ id: rawChannel.id, accepted: true }]);
    expect(result(incoming).results).toEqual([{ messageId: 'm', accepted: true }]);
    await host.close();
  });

  it('judges a request written right behind the policy receipt under the grant that receipt accepts', async () => {
    const server = new RawPeer();
    const connecting = McplHost.connect(new NdjsonTransport(server.toServer, server.fromServer), {
      name: 'strict-host',
      version: '1',
    });
    const initialize = await server.nextCall('initialize');
    server.respond(initialize.id, {
      protocolVersion: initialize.params?.protocolVersion,
      capabilities: { experimental: { mcpl: { version: '0.5', channels: { register: true } } } },
      serverInfo: { name: 'raw-server', version: '0' },
    });
    const host = await connecting;
    const policy = host.setPolicy({ effectiveCapabilities: ['channels.register'] });
    const update = await server.nextCall('featureSets/update');
    const registered = server.next((m) => m.id === 'r1' && m.method === undefined);
    // The receipt and the first request it allows, read by the host in one chunk.
    server.writeLine(
      [
        JSON.stringify({ jsonrpc: '2.0', id: update.id, result: { accepted: true } }),
        JSON.stringify({
          jsonrpc: '2.0',
          id: 'r1',
          method: 'channels/register',
          params: { channels: [rawChannel] },
        }),
      ].join('\n'),
    );
    expect(await policy).toEqual({ accepted: true });
    expect(result(await registered).results).toEqual([{ id: rawChannel.id, accepted: true }]);
    await host.close();
  });

  it('hands a live message written right behind an open answer to incoming only once the open has settled', async () => {
    const { server, host } = await hostOfRawServer({}, [
      'channels.register',
      'channels.incoming',
      'channels.lifecycle',
    ]);
    await server.request(1, 'channels/register', { channels: [rawChannel] });
    const order: string[] = [];
    host.on('incoming', (messages) => order.push(...messages.map((m) => m.messageId)));
    const opening = host
      .openChannel({ channelId: rawChannel.id })
      .then((answer) => order.push(`answer:${answer.history?.length}`));
    const open = await server.nextCall('channels/open');
    const answered = server.next((m) => m.id === 'live-1' && m.method === undefined);
    // The open answer, with its history, and a live message, read by the host in one chunk.
    server.writeLine(
      [
        JSON.stringify({
          jsonrpc: '2.0',
          id: open.id,
          result: { channel: rawChannel, history: [inbound('h1')] },
        }),
        JSON.stringify({
          jsonrpc: '2.0',
          id: 'live-1',
          method: 'channels/incoming',
          params: { messages: [inbound('live')] },
        }),
      ].join('\n'),
    );
    await opening;
    expect(result(await answered).results).toEqual([{ messageId: 'live', accepted: true }]);
    expect(order).toEqual(['answer:1', 'live']);
    await host.close();
  });

  it('leaves a request the server cancelled unanswered', async () => {
    let release: (verdicts: IncomingVerdict[]) => void = () => {};
    const held = new Promise<IncomingVerdict[]>((resolve) => (release = resolve));
    const arrived: string[] = [];
    const { server, host } = await hostOfRawServer({
      handlers: {
        incoming: (messages) => {
          arrived.push(...messages.map((m) => m.messageId));
          return messages[0]?.messageId === 'held' ? held : messages.map(() => ({ accepted: true }));
        },
      },
    });
    await server.request(1, 'channels/register', { channels: [rawChannel] });
    server.send({ id: 'held-1', method: 'channels/incoming', params: { messages: [inbound('held')] } });
    // Once a ping sent after it is answered, the held request has reached its handler.
    await server.request('p1', 'ping');
    expect(arrived).toEqual(['held']);
    server.notify('notifications/cancelled', { requestId: 'held-1', reason: 'gave up' });
    await server.request('p2', 'ping');
    release([{ accepted: true }]);
    const after = await server.request('after', 'channels/incoming', { messages: [inbound('next')] });
    expect(result(after).results).toEqual([{ messageId: 'next', accepted: true }]);
    expect(server.received.filter((m: Wire) => m.id === 'held-1')).toEqual([]);
    await host.close();
  });

  it('answers a failing handler with -32603 and a log line, and goes on', async () => {
    const { lines, logger } = recordingLogger();
    let fail = true;
    const { server, host } = await hostOfRawServer({
      logger,
      handlers: {
        incoming: (messages) => {
          if (fail) throw new Error('the app broke');
          return messages.map(() => ({ accepted: true }));
        },
      },
    });
    await server.request(1, 'channels/register', { channels: [rawChannel] });
    const failed = await server.request(2, 'channels/incoming', { messages: [inbound('a')] });
    expect(failed.error).toEqual({ code: -32603, message: 'channels/incoming failed' });
    expect(lines.some((line) => line.message === 'a host handler failed')).toBe(true);
    fail = false;
    const next = await server.request(3, 'channels/incoming', { messages: [inbound('b')] });
    expect(result(next).results).toEqual([{ messageId: 'b', accepted: true }]);
    await host.close();
  });

  it('refuses it outside the grant as Capability denied, naming the capability', async () => {
    const { server, host } = await hostOfRawServer({}, ['channels.register']);
    await server.request(1, 'channels/register', { channels: [rawChannel] });
    const denied = await server.request(2, 'channels/incoming', { messages: [inbound('a')] });
    expect(denied.error).toEqual({
      code: CAPABILITY_DENIED_ON_THE_WIRE,
      message: 'Capability denied',
      data: { capability: 'channels.incoming' },
    });
    await host.close();
  });
});
