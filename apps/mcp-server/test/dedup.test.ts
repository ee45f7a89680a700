// Request de-duplication, driven with hand-written JSON-RPC: the SDK Client never reuses
// an id, and a retry is exactly a reused id.
import { createHash } from 'node:crypto';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ErrorCode, type JSONRPCMessage, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { ToolDefinition } from '@zmcp/tools';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpServer } from '../src/index.js';
import { callFingerprint } from '../src/request-dedup.js';
import { echoTool, makePostTool } from './fake-tools.js';

type Id = string | number;

const open: (() => Promise<void>)[] = [];

/** One raw MCP session: send messages, await the response to an id. */
class RawSession {
  private readonly responses: JSONRPCMessage[] = [];
  private readonly waiters: { id: Id; count: number; resolve: (m: JSONRPCMessage[]) => void }[] = [];

  private constructor(private readonly transport: InMemoryTransport) {
    transport.onmessage = (message) => {
      this.responses.push(message);
      for (const waiter of [...this.waiters]) this.check(waiter);
    };
  }

  static async open(tools: readonly ToolDefinition[]): Promise<RawSession> {
    const server = createMcpServer({ name: 'raw', version: '0', tools, readOnly: false, deadlineMs: 10_000 });
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
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

describe('request de-duplication', () => {
  it('answers a retried write with the first result and posts once', async () => {
    const { tool, posts } = makePostTool();
    const session = await RawSession.open([tool]);
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
    const session = await RawSession.open([tool]);
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
    const first = await RawSession.open([tool]);
    first.call(1, 'post_message', args);
    await first.responsesTo(1, 1);
    const second = await RawSession.open([tool]);
    second.call(1, 'post_message', args);
    const [answer] = await second.responsesTo(1, 1);
    expect(posts).toHaveLength(2);
    expect(answer).toMatchObject({ result: { structuredContent: { id: 1002 } } });
  });

  it('refuses an id reused for a different call as a protocol error', async () => {
    const { tool, posts } = makePostTool();
    const session = await RawSession.open([tool]);
    session.call(5, 'post_message', { stream: 'general', content: 'one' });
    await session.responsesTo(5, 1);
    session.call(5, 'post_message', { stream: 'general', content: 'two' });
    const [, reused] = await session.responsesTo(5, 2);
    expect(reused).toMatchObject({ error: { code: ErrorCode.InvalidRequest } });
    expect(posts.map((p) => p.content)).toEqual(['one']);
  });

  it('does not remember reads: a reused id runs a read tool again', async () => {
    let runs = 0;
    const counting: ToolDefinition = {
      ...echoTool,
      async handler(input, context) {
        runs++;
        return echoTool.handler(input as { text: string }, context);
      },
    };
    const session = await RawSession.open([counting]);
    session.call(3, 'echo', { text: 'x' });
    await session.responsesTo(3, 1);
    session.call(3, 'echo', { text: 'x' });
    await session.responsesTo(3, 2);
    expect(runs).toBe(2);
  });
});

describe('callFingerprint', () => {
  const reference = (name: string, args: unknown) =>
    createHash('sha256')
      .update(JSON.stringify(name))
      .update('\u0000')
      .update(JSON.stringify(args))
      .digest('base64url');

  it('fingerprints a call as its JSON would, in 43 characters whatever its size', () => {
    const calls: [string, unknown][] = [
      ['send_message', { stream: 'general', topic: 't', content: 'x', n: 1.5, ok: true, none: null }],
      ['send_message', { attachments: [{ data: 'QUJD'.repeat(100_000), name: 'a.bin' }], skip: undefined }],
      ['edit_message', [1, 'two', [3, { four: [] }], {}]],
      ['x', 'plain'],
    ];
    for (const [name, args] of calls) {
      expect(callFingerprint(name, args)).toBe(reference(name, args));
      expect(callFingerprint(name, args)).toHaveLength(43);
    }
    expect(callFingerprint('a', { x: 1 })).not.toBe(callFingerprint('b', { x: 1 }));
    expect(callFingerprint('a', { x: 1 })).not.toBe(callFingerprint('a', { x: '1' }));
  });

  it('never overflows the stack, however deep the arguments', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = i % 2 === 0 ? [deep] : { k: deep };
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(callFingerprint('send_message', { content: deep })).toHaveLength(43);
  });
});
