// tools/call on the server's stdio transport is served beside the SDK's Protocol. What the SDK
// does around a handler must hold there too: a cancelled call is aborted and never answered, a
// closing transport aborts what is in flight, and a call the fast path does not take is still
// answered by the SDK as before. The rest of tools/call runs on both paths in server.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { aborted, echoTool, makeSlowTool } from './fake-tools.js';
import { RawSession } from './raw-session.js';

afterEach(() => RawSession.closeAll());

describe('tools/call served beside the SDK on stdio', () => {
  it('aborts a cancelled call with the client’s reason and never answers it', async () => {
    const slow = makeSlowTool();
    const raw = await RawSession.open([slow.tool], 'on stdio');
    raw.request(5, 'tools/call', { name: 'slow', arguments: {}, _meta: { progressToken: 'p5' } });
    const signal = await slow.started;
    await raw.next((message) => message.method === 'notifications/progress');
    raw.notify('notifications/cancelled', { requestId: 5, reason: 'the user pressed stop' });
    await aborted(signal);
    expect(signal.reason).toBe('the user pressed stop');
    // Anything the call would still send comes before the answer to a later request.
    raw.request(6, 'ping');
    expect(await raw.responsesTo(6, 1)).toMatchObject([{ result: {} }]);
    expect(raw.received.filter((message) => message.id === 5)).toEqual([]);
    // The progress it reported before the cancel went out; nothing after it did.
    const progress = raw.received.filter((message) => message.method === 'notifications/progress');
    expect(progress.map((message) => message.params)).toEqual([
      { progressToken: 'p5', progress: 1, total: 2, message: 'halfway' },
    ]);
  });

  it('cancels only the call the notification names', async () => {
    const slow = makeSlowTool();
    const raw = await RawSession.open([slow.tool, echoTool], 'on stdio');
    raw.call('slow', 'slow', {});
    const signal = await slow.started;
    raw.notify('notifications/cancelled', { requestId: 'other' });
    raw.call('echo', 'echo', { text: 'hi' });
    expect(await raw.responsesTo('echo', 1)).toMatchObject([
      { result: { structuredContent: { echoed: 'hi' } } },
    ]);
    expect(signal.aborted).toBe(false);
    slow.gate.resolve();
    expect(await raw.responsesTo('slow', 1)).toMatchObject([
      { result: { structuredContent: { done: true } } },
    ]);
  });

  it('aborts the calls in flight when the transport closes', async () => {
    const slow = makeSlowTool();
    const raw = await RawSession.open([slow.tool], 'on stdio');
    raw.call(1, 'slow', {});
    const signal = await slow.started;
    await raw.close();
    await aborted(signal);
    expect(raw.received.filter((message) => message.id === 1)).toEqual([]);
  });

  it('leaves a call the SDK must judge to the SDK, which answers it as it does in memory', async () => {
    // Arguments that are not an object: the SDK's schema refuses the request.
    const params = { name: 'echo', arguments: ['hi'] };
    const stdio = await RawSession.open([echoTool], 'on stdio');
    const memory = await RawSession.open([echoTool], 'in memory');
    stdio.request(1, 'tools/call', params);
    memory.request(1, 'tools/call', params);
    const answer = await stdio.responsesTo(1, 1);
    expect(answer).toMatchObject([
      { error: { code: -32603, message: expect.stringContaining('expected record') } },
    ]);
    expect(answer).toEqual(await memory.responsesTo(1, 1));
    // The session carries on.
    stdio.call('ok', 'echo', { text: 'hi' });
    expect(await stdio.responsesTo('ok', 1)).toMatchObject([
      { result: { structuredContent: { echoed: 'hi' } } },
    ]);
  });

  it('answers an unknown tool with the same JSON-RPC error as the SDK path', async () => {
    const stdio = await RawSession.open([echoTool], 'on stdio');
    const memory = await RawSession.open([echoTool], 'in memory');
    stdio.request(9, 'tools/call', { name: 'no_such_tool' });
    memory.request(9, 'tools/call', { name: 'no_such_tool' });
    const answer = await stdio.responsesTo(9, 1);
    expect(answer).toEqual([
      {
        jsonrpc: '2.0',
        id: 9,
        error: { code: -32602, message: 'MCP error -32602: Unknown tool: no_such_tool' },
      },
    ]);
    expect(answer).toEqual(await memory.responsesTo(9, 1));
    expect(stdio.errors).toEqual([]);
  });
});
