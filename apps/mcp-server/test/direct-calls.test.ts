// tools/call on the server's stdio transport is served beside the SDK's Protocol. What the SDK
// does around a handler must hold there too: a cancelled call is aborted and never answered, a
// closing transport aborts what is in flight, and a call the fast path does not take is still
// answered by the SDK as before. The rest of tools/call runs on both paths in server.test.ts.
import { PassThrough } from 'node:stream';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { type JSONRPCMessage, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { BoundTool } from '@zmcp/tools';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpServer, type McpSession } from '../src/index.js';
import { LineStdioTransport } from '../src/stdio.js';
import { aborted, echoTool, makeSlowTool } from './fake-tools.js';

type Line = { id?: string | number; method?: string; result?: unknown; error?: unknown; params?: unknown };

const open: McpSession[] = [];

afterEach(async () => {
  for (const session of open.splice(0)) await session.close();
});

/**
 * A server driven with raw JSON-RPC: on its stdio transport (as lines), or in memory, where every
 * request takes the SDK's own path.
 */
async function rawSession(tools: readonly BoundTool[], via: 'on stdio' | 'in memory' = 'on stdio') {
  const session = createMcpServer({ name: 'direct', version: '0', tools, deadlineMs: 10_000 });
  open.push(session);
  const errors: Error[] = [];
  session.onerror = (err) => errors.push(err);
  const lines: Line[] = [];
  const waiters: { match: (line: Line) => boolean; resolve: (line: Line) => void }[] = [];
  const receive = (line: Line) => {
    lines.push(line);
    for (const waiter of [...waiters]) {
      if (!waiter.match(line)) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(line);
    }
  };
  let send: (message: object) => void;
  if (via === 'on stdio') {
    const toServer = new PassThrough();
    const toClient = new PassThrough();
    await session.connect(new LineStdioTransport(toServer, toClient, { maxMessageBytes: 1 << 20 }));
    let partial = '';
    toClient.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString('utf8')).split('\n');
      partial = parts.pop() ?? '';
      for (const part of parts) receive(JSON.parse(part) as Line);
    });
    send = (message) => toServer.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  } else {
    const [client, server] = InMemoryTransport.createLinkedPair();
    await session.connect(server);
    client.onmessage = (message) => receive(message as Line);
    await client.start();
    send = (message) => void client.send({ jsonrpc: '2.0', ...message } as JSONRPCMessage);
  }
  /** Resolves with the first line, seen or to come, that matches. */
  const line = (match: (line: Line) => boolean) =>
    new Promise<Line>((resolve) => {
      const seen = lines.find(match);
      if (seen !== undefined) resolve(seen);
      else waiters.push({ match, resolve });
    });
  const answerTo = (id: string | number) => line((l) => l.id === id && l.method === undefined);
  send({
    id: 'init',
    method: 'initialize',
    params: {
      protocolVersion: LATEST_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'raw', version: '0' },
    },
  });
  await answerTo('init');
  send({ method: 'notifications/initialized' });
  return { session, send, line, answerTo, lines, errors };
}

describe('tools/call served beside the SDK on stdio', () => {
  it('aborts a cancelled call with the client’s reason and never answers it', async () => {
    const slow = makeSlowTool();
    const raw = await rawSession([slow.tool]);
    raw.send({
      id: 5,
      method: 'tools/call',
      params: { name: 'slow', arguments: {}, _meta: { progressToken: 'p5' } },
    });
    const signal = await slow.started;
    await raw.line((line) => line.method === 'notifications/progress');
    raw.send({
      method: 'notifications/cancelled',
      params: { requestId: 5, reason: 'the user pressed stop' },
    });
    await aborted(signal);
    expect(signal.reason).toBe('the user pressed stop');
    // Anything the call would still send comes before the answer to a later request.
    raw.send({ id: 6, method: 'ping' });
    expect(await raw.answerTo(6)).toMatchObject({ result: {} });
    expect(raw.lines.filter((line) => line.id === 5)).toEqual([]);
    // The progress it reported before the cancel went out; nothing after it did.
    const progress = raw.lines.filter((line) => line.method === 'notifications/progress');
    expect(progress.map((line) => line.params)).toEqual([
      { progressToken: 'p5', progress: 1, total: 2, message: 'halfway' },
    ]);
  });

  it('cancels only the call the notification names', async () => {
    const slow = makeSlowTool();
    const raw = await rawSession([slow.tool, echoTool]);
    raw.send({ id: 'slow', method: 'tools/call', params: { name: 'slow', arguments: {} } });
    const signal = await slow.started;
    raw.send({ method: 'notifications/cancelled', params: { requestId: 'other' } });
    raw.send({ id: 'echo', method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } });
    expect(await raw.answerTo('echo')).toMatchObject({ result: { structuredContent: { echoed: 'hi' } } });
    expect(signal.aborted).toBe(false);
    slow.gate.resolve();
    expect(await raw.answerTo('slow')).toMatchObject({ result: { structuredContent: { done: true } } });
  });

  it('aborts the calls in flight when the transport closes', async () => {
    const slow = makeSlowTool();
    const raw = await rawSession([slow.tool]);
    raw.send({ id: 1, method: 'tools/call', params: { name: 'slow', arguments: {} } });
    const signal = await slow.started;
    await raw.session.close();
    await aborted(signal);
    expect(raw.lines.filter((line) => line.id === 1)).toEqual([]);
  });

  it('leaves a call the SDK must judge to the SDK, which answers it as it does in memory', async () => {
    // Arguments that are not an object: the SDK's schema refuses the request.
    const params = { name: 'echo', arguments: ['hi'] };
    const stdio = await rawSession([echoTool]);
    const memory = await rawSession([echoTool], 'in memory');
    stdio.send({ id: 1, method: 'tools/call', params });
    memory.send({ id: 1, method: 'tools/call', params });
    const answer = await stdio.answerTo(1);
    expect(answer).toMatchObject({
      error: { code: -32603, message: expect.stringContaining('expected record') },
    });
    expect(answer).toEqual(await memory.answerTo(1));
    // The session carries on.
    stdio.send({ id: 'ok', method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } });
    expect(await stdio.answerTo('ok')).toMatchObject({ result: { structuredContent: { echoed: 'hi' } } });
  });

  it('answers an unknown tool with the same JSON-RPC error as the SDK path', async () => {
    const stdio = await rawSession([echoTool]);
    const memory = await rawSession([echoTool], 'in memory');
    stdio.send({ id: 9, method: 'tools/call', params: { name: 'no_such_tool' } });
    memory.send({ id: 9, method: 'tools/call', params: { name: 'no_such_tool' } });
    const answer = await stdio.answerTo(9);
    expect(answer).toEqual({
      jsonrpc: '2.0',
      id: 9,
      error: { code: -32602, message: 'MCP error -32602: Unknown tool: no_such_tool' },
    });
    expect(answer).toEqual(await memory.answerTo(9));
    expect(stdio.errors).toEqual([]);
  });
});
