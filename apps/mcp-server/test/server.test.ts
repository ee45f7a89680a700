import { Client, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { type BoundTool, selectTools } from '@zmcp/tools';
import { afterEach, describe, expect, it } from 'vitest';
import { type CreateMcpServerOptions, createLogger, createMcpServer } from '../src/index.js';
import {
  deniedTool,
  echoTool,
  makePostTool,
  makeSlowTool,
  malformedTool,
  refusingTool,
  stubbornTool,
} from './fake-tools.js';

const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

type Connect = (tools: readonly BoundTool[], overrides?: Partial<CreateMcpServerOptions>) => Promise<Client>;

/** A 2025-era session: the instance connected to the SDK's in-memory transport, a v2 client in legacy mode. */
const connect: Connect = (tools, overrides = {}) => connectVia('2025', tools, overrides);

/** A 2026-era connection: `serveStdio` over the in-memory pair, a v2 client pinned to 2026-07-28. */
const connectModern: Connect = (tools, overrides = {}) => connectVia('2026', tools, overrides);

async function connectVia(
  era: '2025' | '2026',
  tools: readonly BoundTool[],
  overrides: Partial<CreateMcpServerOptions>,
): Promise<Client> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const build = (ctx: { era: 'legacy' | 'modern' }) =>
    createMcpServer({
      name: 'zulip-mcp-test',
      version: '0.0.0',
      era: ctx.era,
      tools,
      deadlineMs: 10_000,
      ...overrides,
    });
  let close: () => Promise<void>;
  if (era === '2025') {
    const server = build({ era: 'legacy' });
    await server.connect(serverTransport);
    close = () => server.close();
  } else {
    const handle = serveStdio(build, { transport: serverTransport });
    close = () => handle.close();
  }
  const client = new Client(
    { name: 'test-client', version: '0.0.0' },
    { versionNegotiation: { mode: era === '2025' ? 'legacy' : { pin: '2026-07-28' } } },
  );
  await client.connect(clientTransport);
  closers.push(async () => {
    await client.close();
    await close();
  });
  return client;
}

function textOf(result: unknown): string {
  const content = (result as { content: { type: string; text?: string }[] }).content;
  return content.map((c) => c.text ?? '').join('');
}

describe('tools/list', () => {
  it('advertises title, description, annotations, input and output schemas', async () => {
    const { tool: post } = makePostTool();
    const client = await connect([echoTool, post]);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['echo', 'post_message']);
    const echo = tools.find((t) => t.name === 'echo');
    expect(echo).toMatchObject({
      title: 'Echo',
      description: 'Returns its text, repeated.',
      annotations: {
        readOnlyHint: true,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
      inputSchema: {
        type: 'object',
        properties: { text: { type: 'string', description: 'What to echo.' } },
        required: ['text'],
      },
      outputSchema: {
        $id: 'urn:zmcp:tool-result:1',
        type: 'object',
        properties: { text: { type: 'string' } },
      },
    });
    const posting = tools.find((t) => t.name === 'post_message');
    expect(posting?.annotations).toMatchObject({ readOnlyHint: false, openWorldHint: true });
  });

  it('serves what the selection serves: in read-only mode a write tool is an unknown tool', async () => {
    const { tool: post, posts } = makePostTool();
    const client = await connect(selectTools([echoTool, post], { toolsets: ['read'], readOnly: true }));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['echo']);
    const call = client.callTool({ name: 'post_message', arguments: { stream: 'general', content: 'hi' } });
    await expect(call).rejects.toMatchObject({ code: ProtocolErrorCode.InvalidParams });
    expect(posts).toEqual([]);
  });

  it('serves an empty catalog', async () => {
    const client = await connect([]);
    expect((await client.listTools()).tools).toEqual([]);
  });

  it('refuses a catalog with two tools of one name', () => {
    let error: unknown;
    try {
      createMcpServer({
        name: 'x',
        version: '0',
        tools: [echoTool, echoTool],
        deadlineMs: 1000,
      });
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({ code: 'TOOLS_INVALID_CATALOG' });
  });
});

describe.each([
  ['in the 2025 era', connect],
  ['in the 2026 era', connectModern],
])('tools/call %s', (_era, connect) => {
  it('answers JSON text plus matching structuredContent', async () => {
    const client = await connect([echoTool]);
    const result = await client.callTool({ name: 'echo', arguments: { text: 'ab', times: 2 } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ text: 'abab', echoed: 'abab' });
    expect(result.content).toEqual([{ type: 'text', text: 'abab' }]);
  });

  it('reports invalid arguments as a tool error naming the field, not a protocol error', async () => {
    const client = await connect([echoTool]);
    const wrongType = await client.callTool({ name: 'echo', arguments: { text: 5 } });
    expect(wrongType.isError).toBe(true);
    expect(textOf(wrongType)).toMatch(/^Invalid arguments: text: /);
    expect(textOf(wrongType)).toContain('Hint:');

    const outOfRange = await client.callTool({ name: 'echo', arguments: { text: 'a', times: 9 } });
    expect(outOfRange.isError).toBe(true);
    expect(textOf(outOfRange)).toContain('times:');

    const missing = await client.callTool({ name: 'echo', arguments: {} });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toContain('text:');
  });

  it('passes on a failure’s hint', async () => {
    const client = await connect([deniedTool, refusingTool]);
    const denied = await client.callTool({ name: 'read_private', arguments: {} });
    expect(denied.isError).toBe(true);
    expect(denied.structuredContent).toBeUndefined();
    expect(textOf(denied)).toContain('Reading stream "secret" is not allowed.');
    expect(textOf(denied)).toMatch(/Hint: .*list_streams/);

    const refused = await client.callTool({ name: 'refuse', arguments: {} });
    expect(refused).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'Nothing to do.\nHint: Call again later.' }],
    });
  });

  it('makes an unknown tool a protocol error (-32602)', async () => {
    const client = await connect([echoTool]);
    const error = await client.callTool({ name: 'no_such_tool', arguments: {} }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({ code: ProtocolErrorCode.InvalidParams });
    expect((error as ProtocolError).message).toContain('no_such_tool');
  });

  it('turns a result that breaks its output schema into a tool error', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'error', write: (line) => lines.push(line) });
    const client = await connect([malformedTool], { logger });
    const result = await client.callTool({ name: 'malformed', arguments: {} });
    expect(result.isError).toBe(true);
    expect(lines.join('')).toContain('tool=malformed');
  });

  it('forwards progress as notifications/progress when the client asks for it', async () => {
    const slow = makeSlowTool();
    const client = await connect([slow.tool]);
    const seen: { progress: number; total?: number | undefined; message?: string | undefined }[] = [];
    const call = client.callTool(
      { name: 'slow', arguments: {} },
      {
        onprogress: (update) => {
          seen.push(update);
          // The tool waits here until the client has seen its first report.
          slow.gate.resolve();
        },
      },
    );
    const result = await call;
    expect(result.structuredContent).toEqual({ text: 'done', done: true });
    expect(seen).toEqual([
      { progress: 1, total: 2, message: 'halfway' },
      { progress: 2, total: 2, message: 'done' },
    ]);
  });

  it('sends no progress when the client did not ask', async () => {
    const slow = makeSlowTool();
    const client = await connect([slow.tool]);
    let notified = 0;
    client.fallbackNotificationHandler = async () => {
      notified++;
    };
    const call = client.callTool({ name: 'slow', arguments: {} });
    await slow.started;
    slow.gate.resolve();
    expect((await call).isError).toBeFalsy();
    expect(notified).toBe(0);
  });

  it('aborts a slow tool at the shared deadline and answers a tool error', async () => {
    const slow = makeSlowTool();
    const client = await connect([slow.tool], { deadlineMs: 20 });
    const result = await client.callTool({ name: 'slow', arguments: {} });
    const signal = await slow.started;
    expect(signal.aborted).toBe(true);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/deadline/);
  });

  it('answers at the deadline even when a tool ignores its signal', async () => {
    const client = await connect([stubbornTool], { deadlineMs: 20, deadlineGraceMs: 0 });
    const result = await client.callTool({ name: 'stubborn', arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/deadline/);
  });

  it('sends the instructions and the server’s name (initialize, server/discover)', async () => {
    const client = await connect([echoTool], { instructions: 'Read before you write.' });
    expect(client.getInstructions()).toBe('Read before you write.');
    expect(client.getServerVersion()).toMatchObject({ name: 'zulip-mcp-test', version: '0.0.0' });
  });

  it('logs each call without its arguments at info', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', write: (line) => lines.push(line) });
    const client = await connect([echoTool], { logger });
    await client.callTool({ name: 'echo', arguments: { text: 'confidential body' } });
    const log = lines.join('');
    expect(log).toMatch(/info tool call tool=echo outcome=ok ms=\d+/);
    expect(log).not.toContain('confidential');
  });
});
