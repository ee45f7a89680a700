// A malformed or hostile peer never crashes or wedges the connection: each message gets a
// defined error or is dropped with a log line, and the next request is answered as usual.
import { once } from 'node:events';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { connectTcp, listenTcp, McplHost } from '../src/index.js';
import { createToyServer, general } from './fixtures/toy.js';
import { recordingLogger } from './helpers.js';
import { hostOfRawServer, rawChannel, readyPeer, result } from './raw-peer.js';

describe('a hostile peer', () => {
  it('drops lines that are not JSON, with a log line', async () => {
    const { peer, lines, stillAnswers } = await readyPeer();
    peer.writeLine('this is not json');
    peer.writeLine('{"jsonrpc":"2.0","id":3,"method":');
    peer.writeLine('\u0000\u0001\u00ff garbage');
    await stillAnswers();
    expect(lines.filter((line) => line.message === 'dropped a line that is not JSON')).toHaveLength(3);
  });

  it('drops JSON that is not JSON-RPC, and answers a malformed request that has an id with -32600', async () => {
    const { peer, lines, stillAnswers } = await readyPeer();
    peer.writeLine('[1,2,3]');
    peer.writeLine('{"hello":"world"}');
    peer.writeLine('{"jsonrpc":"1.0","method":"ping"}');
    const invalid = peer.next((m) => m.id === 'bad');
    peer.writeLine('{"jsonrpc":"2.0","id":"bad","method":"ping","params":[1]}');
    expect((await invalid).error?.code).toBe(-32600);
    await stillAnswers();
    expect(lines.filter((line) => line.message === 'dropped a line that is not JSON-RPC')).toHaveLength(3);
  });

  it('answers a request carrying extra members instead of ignoring it', async () => {
    const { peer } = await readyPeer();
    const answer = peer.next((m) => m.id === 'extra');
    peer.writeLine('{"jsonrpc":"2.0","id":"extra","method":"ping","junk":true}');
    expect((await answer).result).toEqual({});
  });

  it('answers unknown methods with -32601', async () => {
    const { peer, stillAnswers } = await readyPeer();
    expect((await peer.request('u1', 'bogus/method', {})).error?.code).toBe(-32601);
    expect((await peer.request('u2', 'scope/elevate', {})).error?.code).toBe(-32601);
    await stillAnswers();
  });

  it('logs and drops responses to ids it never sent', async () => {
    const { peer, lines, stillAnswers } = await readyPeer();
    peer.respond(424242, { accepted: true });
    peer.respond('nope', {});
    peer.respondError(77, -32000, 'whatever');
    await stillAnswers();
    expect(lines.filter((line) => line.message === 'protocol error').length).toBeGreaterThanOrEqual(3);
  });

  it('drops a 10 MB line without buffering it, and carries on', async () => {
    const { peer, lines, stillAnswers } = await readyPeer();
    const pad = 'x'.repeat(10 * 1024 * 1024);
    const line = `{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"${pad}"}}\n`;
    for (let at = 0; at < line.length; at += 65_536) peer.toServer.write(line.slice(at, at + 65_536));
    await stillAnswers();
    const dropped = lines.find((entry) => entry.message === 'dropped a line longer than the limit');
    expect(dropped?.fields?.bytes).toBe(line.length - 1);
    expect(peer.received.some((m) => m.id === 'big')).toBe(false);
  });

  it('answers a 10 MB request when the limit allows it', async () => {
    const { peer, stillAnswers } = await readyPeer({ maxLineBytes: 16 * 1024 * 1024 });
    const pad = 'y'.repeat(10 * 1024 * 1024);
    const answer = peer.next((m) => m.id === 'big');
    const line = `{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"${pad}"}}\n`;
    for (let at = 0; at < line.length; at += 65_536) peer.toServer.write(line.slice(at, at + 65_536));
    expect((await answer).result).toEqual({});
    await stillAnswers();
  });

  it('survives a peer that never answers: the send times out, the connection goes on', async () => {
    const { peer, session, stillAnswers } = await readyPeer({ requestMs: 50 });
    await session.registerChannels([general]).then((outcome) => {
      expect(outcome.pending).toEqual(['toy:general']);
      expect(outcome.error?.code).toBe('MCPL_TIMEOUT');
    });
    const push = await session.pushEvent({ featureSet: 'toy.messaging', content: [] });
    expect(push).toMatchObject({ status: 'unanswered', reason: 'MCPL_TIMEOUT' });
    await stillAnswers();
    expect(peer.received.filter((m) => m.method === 'notifications/cancelled')).toHaveLength(2);
  });

  it('reports a connection closed mid-request as unanswered, not a crash', async () => {
    const { peer, session } = await readyPeer();
    const pushing = session.pushEvent({ featureSet: 'toy.messaging', content: [] });
    await peer.nextCall('push/event');
    peer.end();
    expect(await pushing).toMatchObject({ status: 'unanswered', reason: 'MCPL_CLOSED' });
    expect(session.isClosed).toBe(true);
    await expect(session.pushEvent({ featureSet: 'toy.messaging', content: [] })).rejects.toMatchObject({
      code: 'MCPL_CLOSED',
    });
  });
});

describe('a hostile server', () => {
  it('gets each malformed channels/incoming item refused on its own, with a log line', async () => {
    const { lines, logger } = recordingLogger();
    const { server, host } = await hostOfRawServer({ logger });
    const registered = await server.request(1, 'channels/register', { channels: [rawChannel] });
    expect(result(registered).results).toEqual([{ id: 'raw:a', accepted: true }]);
    const good = {
      channelId: 'raw:a',
      messageId: 'm1',
      author: { id: 'u1', name: 'Ann' },
      timestamp: '2026-09-14T11:42:52Z',
      content: [{ type: 'text', text: 'hi' }],
    };
    const delivered = new Promise<string[]>((resolve) =>
      host.on('incoming', (messages) => resolve(messages.map((m) => m.messageId))),
    );
    const answer = await server.request(2, 'channels/incoming', {
      messages: [
        good,
        { ...good, messageId: 'm2', author: 'Ann' },
        { ...good, messageId: 'm3', content: 'hi' },
        { ...good, messageId: 'm4', channelId: 'raw:elsewhere' },
        7,
      ],
    });
    expect(result(answer).results).toEqual([
      { messageId: 'm1', accepted: true },
      { messageId: 'm2', accepted: false, reason: 'malformed' },
      { messageId: 'm3', accepted: false, reason: 'malformed' },
      { messageId: 'm4', accepted: false, reason: 'unknown_channel' },
      { messageId: '', accepted: false, reason: 'unknown_channel' },
    ]);
    expect(await delivered).toEqual(['m1']);
    const refusals = lines.filter((line) => line.message === 'refused a malformed channels/incoming message');
    expect(refusals.map((line) => line.fields?.messageId)).toEqual(['m2', 'm3']);
    await host.close();
  });
});

describe('TCP on loopback', () => {
  it('serves one connection at a time and the next once it closes', async () => {
    const { lines, logger } = recordingLogger();
    const { server } = createToyServer({}, logger);
    const listener = await listenTcp({
      logger,
      onConnection: async (transport) => {
        await server.connect(transport);
      },
    });
    expect(listener.host).toBe('127.0.0.1');
    const first = await McplHost.connect(await connectTcp({ port: listener.port }), {
      name: 'h1',
      version: '1',
    });
    expect(first.manifest?.version).toBe('0.5');
    const second = connect({ port: listener.port, host: '127.0.0.1' });
    await once(second, 'close');
    expect(lines.some((line) => line.message === 'refused a connection: one is already open')).toBe(true);
    await first.close();
    await new Promise<void>((resolve) => {
      const check = () => (server.sessions.length === 0 ? resolve() : setImmediate(check));
      check();
    });
    const third = await McplHost.connect(await connectTcp({ port: listener.port }), {
      name: 'h3',
      version: '1',
    });
    expect((await third.listTools()).map((tool) => tool.name)).toEqual(['send', 'ping']);
    await third.close();
    await listener.close();
  });

  it('refuses to listen beyond loopback', async () => {
    await expect(listenTcp({ host: '0.0.0.0' as never, onConnection: () => {} })).rejects.toMatchObject({
      code: 'MCPL_INVALID_ARGUMENT',
    });
  });
});
