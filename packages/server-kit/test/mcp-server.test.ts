// The ToolHost → SDK adapter, in both eras, through the SDK's own serving entry (serveStdio over an
// in-memory pair, era chosen by the opening exchange) and the v2 client pinned, in auto, in legacy.
import { Client } from '@modelcontextprotocol/client';
import {
  InMemoryTransport,
  LOG_LEVEL_META_KEY,
  ProtocolError,
  type Server,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { MemoryStateStore } from '@zmcp/delivery';
import {
  type BoundTool,
  bindTool,
  defineTool,
  type ResourceChanges,
  type ResourceDefinition,
  ToolHost,
} from '@zmcp/tools';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createMcpTasks,
  createToolServer,
  listMcpTools,
  type McpEra,
  openMcpHandles,
  type ToolCallObservation,
  type ToolServerOptions,
} from '../src/index.js';

const echo = bindTool(
  defineTool({
    name: 'echo',
    title: 'Echo',
    description: 'Returns its text.',
    inputSchema: z.object({ text: z.string() }),
    outputSchema: z.object({ echoed: z.string() }),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    toolset: 'read',
    write: false,
    async handler(_: null, input, context) {
      context.progress({ progress: 1, total: 1, message: 'echoing' });
      return { text: input.text, data: { echoed: input.text } };
    },
  }),
  null,
);

function makePost(): { tool: BoundTool; posts: string[] } {
  const posts: string[] = [];
  const tool = bindTool(
    defineTool({
      name: 'post',
      title: 'Post',
      description: 'Posts.',
      inputSchema: z.object({ content: z.string() }),
      outputSchema: z.object({ id: z.number() }),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
      toolset: 'write',
      write: true,
      async handler(_: null, input) {
        posts.push(input.content);
        return { text: `posted ${posts.length}`, data: { id: posts.length } };
      },
    }),
    null,
  );
  return { tool, posts };
}

/** A wait the test releases: the long call a task stands for. */
function makeWait(): { tool: BoundTool; release: () => void } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tool = bindTool(
    defineTool({
      name: 'wait',
      title: 'Wait',
      description: 'Waits.',
      inputSchema: z.object({}),
      outputSchema: z.object({ waited: z.boolean() }),
      annotations: {
        readOnlyHint: true,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: false,
      },
      toolset: 'read',
      write: false,
      async handler(_: null, _input, context) {
        await Promise.race([
          gate,
          new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true })),
        ]);
        return {
          text: context.signal.aborted ? 'stopped' : 'done',
          data: { waited: !context.signal.aborted },
        };
      },
    }),
    null,
  );
  return { tool, release };
}

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

type Mode = 'legacy' | 'auto' | { pin: string };

/** Serves `factory` the way a stdio connection is served, and connects a v2 client in `mode`. */
async function connect(
  factory: (era: McpEra) => Server,
  mode: Mode,
  capabilities: Record<string, unknown> = {},
): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const handle = serveStdio((ctx) => factory(ctx.era), { transport: serverSide });
  const client = new Client(
    { name: 'kit-test', version: '1' },
    { versionNegotiation: { mode }, capabilities: capabilities as never },
  );
  await client.connect(clientSide);
  cleanup.push(async () => {
    await client.close();
    await handle.close();
  });
  return client;
}

function serverOf(host: ToolHost, extra: Partial<ToolServerOptions> = {}) {
  return (era: McpEra) =>
    createToolServer({ name: 'kit', version: '1', era, host, deadlineMs: 5000, ...extra });
}

const modes: [string, Mode][] = [
  ['pinned to 2026-07-28', { pin: '2026-07-28' }],
  ['in auto', 'auto'],
  ['in legacy', 'legacy'],
];

describe.each(modes)('a v2 client %s', (_label, mode) => {
  it('lists the tools in catalog order and calls one, with its progress', async () => {
    const { tool: post } = makePost();
    const host = new ToolHost([post, echo], { deadlineMs: 5000 });
    const client = await connect(serverOf(host), mode);
    expect(client.getProtocolEra()).toBe(mode === 'legacy' ? 'legacy' : 'modern');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['post', 'echo']);
    expect(tools[1]).toMatchObject({ title: 'Echo', inputSchema: { type: 'object' } });
    const progress: unknown[] = [];
    const result = await client.callTool(
      { name: 'echo', arguments: { text: 'hi' } },
      { onprogress: (p) => progress.push(p) },
    );
    expect(result.content).toEqual([{ type: 'text', text: 'hi' }]);
    expect(result.structuredContent).toEqual({ text: 'hi', echoed: 'hi' });
    expect(progress).toEqual([{ progress: 1, total: 1, message: 'echoing' }]);
  });

  it('answers an unknown tool with -32602 and bad arguments with a tool error', async () => {
    const client = await connect(serverOf(new ToolHost([echo], { deadlineMs: 5000 })), mode);
    await expect(client.callTool({ name: 'nope', arguments: {} })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('Unknown tool: nope'),
    });
    const bad = await client.callTool({ name: 'echo', arguments: { text: 5 } });
    expect(bad.isError).toBe(true);
    expect(bad._meta).toMatchObject({ 'zmcp/error': { code: 'TOOLS_INVALID_INPUT' } });
  });
});

describe('observe', () => {
  it.each(modes)(
    'is told of every call %s: tool, era, client, outcome, code, latency',
    async (_label, mode) => {
      const seen: ToolCallObservation[] = [];
      const host = new ToolHost([echo], { deadlineMs: 5000 });
      const client = await connect(serverOf(host, { observe: (call) => seen.push(call) }), mode);
      await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      await client.callTool({ name: 'echo', arguments: { text: 5 } });
      await client.callTool({ name: '<nope>', arguments: {} }).catch(() => undefined);
      const era = mode === 'legacy' ? 'legacy' : 'modern';
      expect(seen.map(({ durationMs, ...rest }) => rest)).toEqual([
        { tool: 'echo', era, client: 'kit-test', outcome: 'ok', code: undefined },
        { tool: 'echo', era, client: 'kit-test', outcome: 'error', code: 'TOOLS_INVALID_INPUT' },
        { tool: '<nope>', era, client: 'kit-test', outcome: 'protocol-error', code: 'TOOLS_UNKNOWN_TOOL' },
      ]);
      expect(seen.every((c) => c.durationMs >= 0)).toBe(true);
      // Never the arguments.
      expect(JSON.stringify(seen)).not.toContain('hi');
    },
  );
});

describe('the listing', () => {
  it('is built once per host and shared by every instance', () => {
    const host = new ToolHost([echo], { deadlineMs: 5000 });
    const a = createToolServer({ name: 'a', version: '1', host, deadlineMs: 1 });
    const b = createToolServer({ name: 'b', version: '1', host, deadlineMs: 1, era: 'modern' });
    expect(a).not.toBe(b);
    expect(listMcpTools(host)).toBe(listMcpTools(host));
    // Another host over the same definitions lists the same tool objects: converted once.
    expect(listMcpTools(new ToolHost([echo], { deadlineMs: 1 }))[0]).toBe(listMcpTools(host)[0]);
  });
});

describe('the 2026 era', () => {
  it('is offered by server/discover, stamps resultType and gives cache hints on lists', async () => {
    const client = await connect(serverOf(new ToolHost([echo], { deadlineMs: 5000 })), {
      pin: '2026-07-28',
    });
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const discovered = client.getDiscoverResult();
    expect(discovered?.supportedVersions).toEqual(['2026-07-28']);
    expect(discovered?.capabilities.tools).toBeDefined();
    const listed = await client.listTools();
    expect(listed).toMatchObject({ ttlMs: 300_000, cacheScope: 'public' });
  });

  it('sends a tool call’s log line only at the level the request asked for', async () => {
    const client = await connect(serverOf(new ToolHost([echo], { deadlineMs: 5000 })), {
      pin: '2026-07-28',
    });
    const logs: unknown[] = [];
    client.setNotificationHandler('notifications/message', (n) => void logs.push(n.params));
    await client.callTool({ name: 'echo', arguments: { text: 'quiet' } });
    expect(logs).toEqual([]);
    await client.callTool({
      name: 'echo',
      arguments: { text: 'loud' },
      _meta: { [LOG_LEVEL_META_KEY]: 'info' },
    });
    await client.callTool({
      name: 'echo',
      arguments: { text: 'errors only' },
      _meta: { [LOG_LEVEL_META_KEY]: 'error' },
    });
    expect(logs).toEqual([
      expect.objectContaining({
        level: 'info',
        logger: 'kit',
        data: { tool: 'echo', outcome: 'ok', ms: expect.any(Number) },
      }),
    ]);
  });
});

describe('de-duplication of a retried write', () => {
  it('answers a write retried with its request id once, and refuses the id reused for other arguments', async () => {
    const { tool: post, posts } = makePost();
    const host = new ToolHost([post], { deadlineMs: 5000 });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const server = createToolServer({ name: 'kit', version: '1', host, deadlineMs: 5000 });
    await server.connect(serverSide);
    const received: { id?: unknown; result?: unknown; error?: { code: number } }[] = [];
    clientSide.onmessage = (m) => void received.push(m as never);
    await clientSide.start();
    const send = (message: object) => clientSide.send({ jsonrpc: '2.0', ...message } as never);
    await send({
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    const answered = (n: number) =>
      new Promise<void>((resolve) => {
        const check = () => (received.length >= n ? resolve() : setImmediate(check));
        check();
      });
    await answered(1);
    const call = { method: 'tools/call', params: { name: 'post', arguments: { content: 'x' } } };
    await send({ id: 7, ...call });
    await send({ id: 7, ...call });
    await send({ id: 7, method: 'tools/call', params: { name: 'post', arguments: { content: 'y' } } });
    await answered(4);
    expect(posts).toEqual(['x']);
    const answers = received.filter((m) => m.id === 7);
    expect(answers.filter((m) => m.result !== undefined).map((m) => m.result)).toEqual([
      expect.objectContaining({ content: [{ type: 'text', text: 'posted 1' }] }),
      expect.objectContaining({ content: [{ type: 'text', text: 'posted 1' }] }),
    ]);
    expect(answers.filter((m) => m.error !== undefined).map((m) => m.error?.code)).toEqual([-32600]);
    await server.close();
  });
});

describe('resources', () => {
  const summary: ResourceDefinition = {
    uri: 'zulip://unread/summary',
    name: 'unread',
    title: 'Unread',
    description: 'Unread summary.',
    mimeType: 'text/plain',
    read: async () => ({ mimeType: 'text/plain', text: 'nothing unread' }),
  };
  function changes(): ResourceChanges & { fire(uri: string): void; listeners: number } {
    const listeners = new Set<(uri: string) => void>();
    return {
      subscribe(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      fire: (uri) => {
        for (const l of listeners) l(uri);
      },
      get listeners() {
        return listeners.size;
      },
    };
  }

  it('reads a resource in both eras; an unknown one is -32602', async () => {
    for (const mode of ['legacy', { pin: '2026-07-28' }] as Mode[]) {
      const client = await connect(
        serverOf(new ToolHost([], { deadlineMs: 5000 }), { resources: [summary] }),
        mode,
      );
      const read = await client.readResource({ uri: 'zulip://unread/summary' });
      expect(read.contents).toEqual([
        { uri: 'zulip://unread/summary', mimeType: 'text/plain', text: 'nothing unread' },
      ]);
      await expect(client.readResource({ uri: 'zulip://nope' })).rejects.toSatisfy(
        (err) => err instanceof ProtocolError && err.code === -32602,
      );
    }
  });

  it('sends a 2026 client’s changes on its subscriptions/listen stream, and a 2025 client’s after resources/subscribe', async () => {
    const source = changes();
    const factory = serverOf(new ToolHost([], { deadlineMs: 5000 }), {
      resources: [summary],
      resourceChanges: source,
      liveResourceUpdates: true,
    });
    const modern = await connect(factory, { pin: '2026-07-28' });
    const updates: string[] = [];
    modern.setNotificationHandler('notifications/resources/updated', (n) => void updates.push(n.params.uri));
    const subscription = await modern.listen({ resourceSubscriptions: ['zulip://unread/summary'] });
    source.fire('zulip://unread/summary');
    await expect.poll(() => updates).toEqual(['zulip://unread/summary']);
    await subscription.close();

    const legacy = await connect(factory, 'legacy');
    const legacyUpdates: string[] = [];
    legacy.setNotificationHandler(
      'notifications/resources/updated',
      (n) => void legacyUpdates.push(n.params.uri),
    );
    await legacy.subscribeResource({ uri: 'zulip://unread/summary' });
    source.fire('zulip://unread/summary');
    await expect.poll(() => legacyUpdates).toEqual(['zulip://unread/summary']);
  });
});

/** A raw 2026-era connection: hand-written requests carrying the per-request envelope. */
async function rawModern(factory: (era: McpEra) => Server, capabilities: Record<string, unknown>) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const handle = serveStdio((ctx) => factory(ctx.era), { transport: serverSide });
  const waiting = new Map<number, (message: Record<string, unknown>) => void>();
  clientSide.onmessage = (m) => {
    const message = m as Record<string, unknown>;
    waiting.get(message.id as number)?.(message);
  };
  await clientSide.start();
  let id = 0;
  cleanup.push(() => handle.close());
  return async (method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const mine = ++id;
    const answer = new Promise<Record<string, unknown>>((resolve) => waiting.set(mine, resolve));
    await clientSide.send({
      jsonrpc: '2.0',
      id: mine,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': capabilities,
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
        },
      },
    } as never);
    return answer;
  };
}

describe('tasks', () => {
  it('runs a long call as a task for a client that declared the extension; any instance answers the poll', async () => {
    const store = new MemoryStateStore();
    const handles = await openMcpHandles({ store, account: 'acct', ttlSeconds: 60 });
    const tasks = createMcpTasks({ store, account: 'acct', tools: ['wait'], principal: handles.principal });
    cleanup.push(() => tasks.close());
    const wait = makeWait();
    const host = new ToolHost([wait.tool, echo], { deadlineMs: 5000 });
    const factory = serverOf(host, { tasks });
    const withTasks = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
    const rpc = await rawModern(factory, withTasks);
    const discovered = await rpc('server/discover', {});
    expect(discovered.result).toMatchObject({ capabilities: withTasks });
    const created = await rpc('tools/call', { name: 'wait', arguments: {} });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: 1000 });
    const taskId = (created.result as { taskId: string }).taskId;
    // A second connection (another process, as far as the store is concerned) answers the poll.
    const other = await rawModern(factory, withTasks);
    const poll = async () => (await other('tasks/get', { taskId })).result as Record<string, unknown>;
    expect(await poll()).toMatchObject({ taskId, status: 'working' });
    wait.release();
    await expect.poll(async () => (await poll()).status).toBe('completed');
    expect((await poll()).result).toMatchObject({
      resultType: 'complete',
      content: [{ type: 'text', text: 'done' }],
      structuredContent: { text: 'done', waited: true },
    });
    // Unknown ids, and a task asked for by other credentials, are the same unknown task.
    expect((await other('tasks/get', { taskId: 'nope' })).error).toMatchObject({ code: -32602 });
    // A client that did not declare the extension waits for the answer, as before.
    const plain = await connect(factory, { pin: '2026-07-28' });
    expect((await plain.callTool({ name: 'wait', arguments: {} })).structuredContent).toEqual({
      text: 'done',
      waited: true,
    });
  });

  it('cancels a task: its call is aborted and its record says cancelled', async () => {
    const store = new MemoryStateStore();
    const handles = await openMcpHandles({ store, account: 'acct', ttlSeconds: 60 });
    const tasks = createMcpTasks({ store, account: 'acct', tools: ['wait'], principal: handles.principal });
    cleanup.push(() => tasks.close());
    const wait = makeWait();
    const rpc = await rawModern(serverOf(new ToolHost([wait.tool], { deadlineMs: 5000 }), { tasks }), {
      extensions: { 'io.modelcontextprotocol/tasks': {} },
    });
    const created = await rpc('tools/call', { name: 'wait', arguments: {} });
    const taskId = (created.result as { taskId: string }).taskId;
    expect((await rpc('tasks/cancel', { taskId })).error).toBeUndefined();
    expect((await rpc('tasks/get', { taskId })).result).toMatchObject({ status: 'cancelled' });
    expect((await rpc('tasks/update', { taskId, inputResponses: {} })).error).toMatchObject({ code: -32602 });
  });
});

describe('a call that needs a person’s yes (a tool’s confirm)', () => {
  function makeDrop(): { tool: BoundTool; dropped: number[] } {
    const dropped: number[] = [];
    const tool = bindTool(
      defineTool({
        name: 'drop',
        title: 'Drop',
        description: 'Drops one thing, for good.',
        inputSchema: z.object({ id: z.number().int() }),
        outputSchema: z.object({ id: z.number() }),
        annotations: {
          readOnlyHint: false,
          destructiveHint: true,
          idempotentHint: true,
          openWorldHint: true,
        },
        toolset: 'manage',
        write: true,
        confirm: (input) => `Drop ${input.id} for good?`,
        async handler(_: null, input) {
          dropped.push(input.id);
          return { text: `dropped ${input.id}`, data: { id: input.id } };
        },
      }),
      null,
    );
    return { tool, dropped };
  }

  /** A 2026-era client that can ask its user, answering every question with `answer`. */
  async function asking(host: ToolHost, answer: (message: string) => Record<string, unknown>) {
    const asked: string[] = [];
    const client = await connect(serverOf(host), { pin: '2026-07-28' }, { elicitation: { form: {} } });
    client.setRequestHandler('elicitation/create', (request) => {
      const message = (request.params as { message: string }).message;
      asked.push(message);
      return answer(message) as never;
    });
    return { client, asked };
  }

  it('asks a 2026-era client that can ask (input_required), and runs only on yes', async () => {
    const { tool, dropped } = makeDrop();
    const host = new ToolHost([tool], { deadlineMs: 5000 });
    const yes = await asking(host, () => ({ action: 'accept', content: { confirm: true } }));
    const done = await yes.client.callTool({ name: 'drop', arguments: { id: 7 } });
    expect(done.isError).not.toBe(true);
    expect(yes.asked).toEqual(['Drop 7 for good?']);
    expect(dropped).toEqual([7]);

    for (const answer of [
      { action: 'decline' },
      { action: 'cancel' },
      { action: 'accept', content: { confirm: false } },
    ]) {
      const no = await asking(host, () => answer);
      const refused = await no.client.callTool({ name: 'drop', arguments: { id: 8 } });
      expect(refused.isError).toBe(true);
      expect(refused._meta).toMatchObject({ 'zmcp/error': { code: 'TOOLS_DECLINED' } });
    }
    expect(dropped).toEqual([7]);
  });

  it('serves a client that cannot ask, and the 2025 era, as before', async () => {
    const { tool, dropped } = makeDrop();
    const host = new ToolHost([tool], { deadlineMs: 5000 });
    const modern = await connect(serverOf(host), { pin: '2026-07-28' });
    expect((await modern.callTool({ name: 'drop', arguments: { id: 1 } })).isError).not.toBe(true);
    const legacy = await connect(serverOf(host), 'legacy', { elicitation: { form: {} } });
    expect((await legacy.callTool({ name: 'drop', arguments: { id: 2 } })).isError).not.toBe(true);
    expect(dropped).toEqual([1, 2]);
  });
});
