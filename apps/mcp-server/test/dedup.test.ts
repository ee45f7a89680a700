// Request de-duplication, driven with hand-written JSON-RPC: the SDK Client never reuses
// an id, and a retry is exactly a reused id.
import { PassThrough } from 'node:stream';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { BoundTool } from '@zmcp/tools';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpServer } from '../src/index.js';
import { LineStdioTransport } from '../src/stdio.js';
import { echoTool, makePostTool } from './fake-tools.js';
import { StreamClientTransport } from './stdio-client.js';

type Id = string | number;
type Via = 'in memory' | 'on stdio';

const open: (() => Promise<void>)[] = [];

/** One raw MCP session: send messages, await the response to an id. */
class RawSession {
  private readonly responses: JSONRPCMessage[] = [];
  private readonly waiters: { id: Id; count: number; resolve: (m: JSONRPCMessage[]) => void }[] = [];

  private constructor(private readonly transport: Transport) {
    transport.onmessage = (message) => {
      this.responses.push(message);
      for (const waiter of [...this.waiters]) this.check(waiter);
    };
  }

  /** A session in memory (the SDK's path for every request) or on the server's stdio transport. */
  static async open(tools: readonly BoundTool[], via: Via): Promise<RawSession> {
    const server = createMcpServer({ name: 'raw', version: '0', tools, deadlineMs: 10_000 });
    let clientTransport: Transport;
    let serverTransport: Transport;
    if (via === 'in memory') [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    else {
      const toServer = new PassThrough();
      const toClient = new PassThrough();
      serverTransport = new LineStdioTransport(toServer, toClient, { maxMessageBytes: 1 << 20 });
      clientTransport = new StreamClientTransport(toClient, toServer);
    }
    await server.connect(serverTransport);
    const session = new RawSession(clientTransport);
    await clientTransport.start();
    session.send({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'raw', version: '0' },
      },
    });
    await session.responsesTo('init', 1);
    session.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    open.push(() => server.close());
    return session;
  }

  send(message: JSONRPCMessage): void {
    void this.transport.send(message);
  }

  call(id: Id, name: string, args: Record<string, unknown>): void {
    this.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  }

  /** Resolves once `count` responses carry this id (number 1 and string "1" differ). */
  responsesTo(id: Id, count: number): Promise<JSONRPCMessage[]> {
    return new Promise((resolve) => {
      const waiter = { id, count, resolve };
      this.waiters.push(waiter);
      this.check(waiter);
    });
  }

  private check(waiter: { id: Id; count: number; resolve: (m: JSONRPCMessage[]) => void }): void {
    const matching = this.responses.filter((m) => 'id' in m && m.id === waiter.id && !('method' in m));
    if (matching.length >= waiter.count) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve(matching);
    }
  }
}

afterEach(async () => {
  for (const close of open.splice(0)) await close();
});

describe.each<Via>(['in memory', 'on stdio'])('request de-duplication %s', (via) => {
  it('answers a retried write with the first result and posts once', async () => {
    const { tool, posts } = makePostTool();
    const session = await RawSession.open([tool], via);
    const args = { stream: 'general', content: 'deploy done' };

    // The same request twice, the second while the first is still in flight.
    session.call(7, 'post_message', args);
    session.call(7, 'post_message', args);
    const [first, second] = await session.responsesTo(7, 2);
    expect(posts).toHaveLength(1);
    expect(second).toEqual(first);
    expect(first).toMatchObject({ result: { structuredContent: { id: 1001 } } });

    // And once more after it was answered.
    session.call(7, 'post_message', args);
    const all = await session.responsesTo(7, 3);
    expect(all[2]).toEqual(first);
    expect(posts).toHaveLength(1);
  });

  it('runs a write again under a different id, and keeps number 1 apart from string "1"', async () => {
    const { tool, posts } = makePostTool();
    const session = await RawSession.open([tool], via);
    const args = { stream: 'general', content: 'hello' };
    session.call(1, 'post_message', args);
    await session.responsesTo(1, 1);
    session.call('1', 'post_message', args);
    await session.responsesTo('1', 1);
    session.call(2, 'post_message', args);
    const [third] = await session.responsesTo(2, 1);
    expect(posts).toHaveLength(3);
    expect(third).toMatchObject({ result: { structuredContent: { id: 1003 } } });
  });

  it('gives a new session a fresh scope', async () => {
    const { tool, posts } = makePostTool();
    const args = { stream: 'general', content: 'hello' };
    const first = await RawSession.open([tool], via);
    first.call(1, 'post_message', args);
    await first.responsesTo(1, 1);
    const second = await RawSession.open([tool], via);
    second.call(1, 'post_message', args);
    const [answer] = await second.responsesTo(1, 1);
    expect(posts).toHaveLength(2);
    expect(answer).toMatchObject({ result: { structuredContent: { id: 1002 } } });
  });

  it('refuses an id reused for a different call as a protocol error', async () => {
    const { tool, posts } = makePostTool();
    const session = await RawSession.open([tool], via);
    session.call(5, 'post_message', { stream: 'general', content: 'one' });
    await session.responsesTo(5, 1);
    session.call(5, 'post_message', { stream: 'general', content: 'two' });
    const [, reused] = await session.responsesTo(5, 2);
    expect(reused).toMatchObject({ error: { code: ErrorCode.InvalidRequest } });
    expect(posts.map((p) => p.content)).toEqual(['one']);
  });

  it('does not remember reads: a reused id runs a read tool again', async () => {
    let runs = 0;
    const counting: BoundTool = {
      definition: echoTool.definition,
      async run(input, context) {
        runs++;
        return echoTool.run(input, context);
      },
    };
    const session = await RawSession.open([counting], via);
    session.call(3, 'echo', { text: 'x' });
    await session.responsesTo(3, 1);
    session.call(3, 'echo', { text: 'x' });
    await session.responsesTo(3, 2);
    expect(runs).toBe(2);
  });
});
