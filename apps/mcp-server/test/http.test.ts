import { request as httpRequest } from 'node:http';
import { Client, LATEST_PROTOCOL_VERSION, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { bindTool, defineTool } from '@zmcp/tools';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createLogger,
  createMcpServer,
  type HttpServerOptions,
  type RunningHttpServer,
  type SessionCloseReason,
  startHttpServer,
} from '../src/index.js';
import { barrier, echoTool, makeSlowTool } from './fake-tools.js';

const token = 'test-token-0123456789abcdef';
const cleanup: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

interface Started {
  server: RunningHttpServer;
  closed: { id: string; reason: SessionCloseReason }[];
  /** Resolves with the next session that closes. */
  nextClose(): Promise<{ id: string; reason: SessionCloseReason }>;
  logs: string[];
}

async function start(overrides: Partial<HttpServerOptions> = {}): Promise<Started> {
  const closed: { id: string; reason: SessionCloseReason }[] = [];
  let consumed = 0;
  let waiting = barrier();
  const logs: string[] = [];
  const server = await startHttpServer({
    host: '127.0.0.1',
    port: 0,
    maxSessions: 8,
    sessionIdleMs: 60_000,
    logger: createLogger({ level: 'debug', write: (line) => logs.push(line), secrets: [token] }),
    createServer: ({ era }) =>
      createMcpServer({
        name: 'http-test',
        version: '0',
        era,
        tools: [echoTool],
        deadlineMs: 10_000,
      }),
    onSessionClosed: (id, reason) => {
      closed.push({ id, reason });
      waiting.resolve();
      waiting = barrier();
    },
    ...overrides,
  });
  cleanup.push(() => server.close());
  const nextClose = async (): Promise<{ id: string; reason: SessionCloseReason }> => {
    while (consumed >= closed.length) await waiting.promise;
    return closed[consumed++] as { id: string; reason: SessionCloseReason };
  };
  return { server, closed, logs, nextClose };
}

async function connectClient(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: 'http-client', version: '0' });
  client.onerror = () => {};
  await client.connect(transport);
  cleanup.push(() => client.close());
  return { client, transport };
}

/** Polls `probe` on each turn of the event loop until it returns something. */
async function waitFor<T>(probe: () => T | undefined): Promise<T> {
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP exchange with full control of the headers (fetch cannot set Host). */
function raw(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const initializeBody = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: 'raw', version: '0' },
  },
};
const postHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describe('Streamable HTTP transport', () => {
  it('gives each client its own session and serves tools', async () => {
    const { server, logs } = await start();
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(server.port).toBeGreaterThan(0);
    expect(logs.join('')).toContain(`listening url=${server.url}`);

    const a = await connectClient(server.url);
    const b = await connectClient(server.url);
    expect(a.transport.sessionId).toBeTruthy();
    expect(b.transport.sessionId).toBeTruthy();
    expect(a.transport.sessionId).not.toBe(b.transport.sessionId);
    expect(server.sessionCount()).toBe(2);

    const result = await a.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(result.structuredContent).toEqual({ text: 'hi', echoed: 'hi' });
    expect((await b.client.listTools()).tools.map((t) => t.name)).toEqual(['echo']);
  });

  it('never logs a session id: it is a bearer handle', async () => {
    const { server, logs, nextClose } = await start();
    const { client, transport } = await connectClient(server.url);
    const id = transport.sessionId as string;
    expect(id).toBeTruthy();
    await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    await transport.terminateSession();
    await nextClose();
    const text = logs.join('');
    expect(text).toContain('session opened session=1 ');
    expect(text).toContain('session closed session=1 ');
    expect(text).not.toContain(id);
  });

  it('refuses a browser origin that is not allowed, and accepts loopback origins', async () => {
    const { server, logs } = await start();
    const refused = await raw(
      server.url,
      'POST',
      { ...postHeaders, origin: 'https://evil.example' },
      initializeBody,
    );
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    expect(logs.join('')).toContain('origin=https://evil.example');

    const local = await raw(
      server.url,
      'POST',
      { ...postHeaders, origin: 'http://localhost:6274' },
      initializeBody,
    );
    expect(local.status).toBe(200);
    expect(local.headers['mcp-session-id']).toBeTruthy();
  });

  it('checks origins against a configured allow-list', async () => {
    const { server } = await start({ allowedOrigins: ['https://app.example'] });
    const allowed = await raw(
      server.url,
      'POST',
      { ...postHeaders, origin: 'https://app.example' },
      initializeBody,
    );
    expect(allowed.status).toBe(200);
    const loopback = await raw(
      server.url,
      'POST',
      { ...postHeaders, origin: 'http://localhost:1' },
      initializeBody,
    );
    expect(loopback.status).toBe(403);
  });

  it('refuses a Host header that is not loopback (DNS rebinding)', async () => {
    const { server } = await start();
    const rebound = await raw(
      server.url,
      'POST',
      { ...postHeaders, host: `evil.example:${server.port}` },
      initializeBody,
    );
    expect(rebound.status).toBe(403);
    const named = await raw(
      server.url,
      'POST',
      { ...postHeaders, host: `localhost:${server.port}` },
      initializeBody,
    );
    expect(named.status).toBe(200);
  });

  it('judges Host and Origin by core’s one loopback rule', async () => {
    const { server } = await start();
    const accepted = [`app.localhost:${server.port}`, `[::1]:${server.port}`, `127.0.0.2:${server.port}`];
    for (const host of accepted) {
      const res = await raw(server.url, 'POST', { ...postHeaders, host }, initializeBody);
      expect([host, res.status]).toEqual([host, 200]);
    }
    for (const host of [`evil.example@localhost:${server.port}`, `localhost.evil.example:${server.port}`]) {
      const res = await raw(server.url, 'POST', { ...postHeaders, host }, initializeBody);
      expect([host, res.status]).toEqual([host, 403]);
    }
    const origin = await raw(
      server.url,
      'POST',
      { ...postHeaders, origin: 'http://app.localhost:6274' },
      initializeBody,
    );
    expect(origin.status).toBe(200);
  });

  it('requires the bearer token when one is configured', async () => {
    const { server, logs } = await start({ token });
    const missing = await raw(server.url, 'POST', postHeaders, initializeBody);
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toMatch(/^Bearer /);
    const wrong = await raw(
      server.url,
      'POST',
      { ...postHeaders, authorization: 'Bearer nope' },
      initializeBody,
    );
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toContain('invalid_token');
    await expect(connectClient(server.url)).rejects.toThrow();

    const { client } = await connectClient(server.url, { authorization: `Bearer ${token}` });
    expect((await client.listTools()).tools).toHaveLength(1);
    expect(logs.join('')).not.toContain(token);
  });

  it('refuses to listen beyond loopback without a token', async () => {
    const attempt = startHttpServer({
      host: '0.0.0.0',
      port: 0,
      maxSessions: 1,
      sessionIdleMs: 60_000,
      createServer: ({ era }) =>
        createMcpServer({ name: 'x', version: '0', era, tools: [], deadlineMs: 1000 }),
    });
    await expect(attempt).rejects.toMatchObject({ code: 'MCP_HTTP_TOKEN_REQUIRED' });
  });

  it('makes room for a new session by reclaiming the least recently used idle one', async () => {
    const started = await start({ maxSessions: 2 });
    const { server } = started;
    const first = await connectClient(server.url);
    const second = await connectClient(server.url);
    const secondId = second.transport.sessionId;
    // The first is used again, so the second is now the least recently used.
    await first.client.callTool({ name: 'echo', arguments: { text: 'still here' } });

    const closed = started.nextClose();
    const third = await connectClient(server.url);
    expect(third.transport.sessionId).toBeTruthy();
    expect(await closed).toEqual({ id: secondId, reason: 'reclaimed' });
    expect(server.sessionCount()).toBe(2);
    expect(started.logs.join('')).toMatch(/session closed session=2 reason=reclaimed/);
    // The reclaimed client hears 404, which tells an MCP client to start a new session.
    await expect(second.client.callTool({ name: 'echo', arguments: { text: 'x' } })).rejects.toThrow(
      /404|not found/i,
    );
    const again = await first.client.callTool({ name: 'echo', arguments: { text: 'ok' } });
    expect(again.structuredContent).toEqual({ text: 'ok', echoed: 'ok' });
  });

  it('refuses a new session only when every session has a request in flight, with a true Retry-After', async () => {
    let running = 0;
    const enough = barrier();
    const gate = barrier();
    const hold = defineTool({
      name: 'hold',
      title: 'Hold',
      description: 'Waits at a gate.',
      inputSchema: z.object({}),
      outputSchema: z.object({}),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      toolset: 'read',
      write: false,
      async handler(_services: null) {
        if (++running === 2) enough.resolve();
        await gate.promise;
        return { text: 'released', data: {} };
      },
    });
    const started = await start({
      maxSessions: 2,
      requestTimeoutMs: 30_000,
      createServer: ({ era }) =>
        createMcpServer({
          name: 'http-test',
          version: '0',
          era,
          tools: [bindTool(hold, null)],
          deadlineMs: 30_000,
        }),
    });
    const { server } = started;
    const a = await connectClient(server.url);
    const b = await connectClient(server.url);
    const calls = [a, b].map((c) => c.client.callTool({ name: 'hold', arguments: {} }));
    await enough.promise;

    const refused = await raw(server.url, 'POST', postHeaders, initializeBody);
    expect(refused.status).toBe(503);
    const retryAfter = Number(refused.headers['retry-after']);
    // The held calls reach their 30 s deadline within 30 s: that is when a session is reclaimable.
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(30);
    expect(JSON.parse(refused.body)).toMatchObject({
      jsonrpc: '2.0',
      error: { code: -32000, message: expect.stringContaining(`retry in ${retryAfter} s`) },
      id: null,
    });
    expect(server.sessionCount()).toBe(2);

    gate.resolve();
    await Promise.all(calls);
    // Both idle now: the next client takes the place of the least recently used.
    const closed = started.nextClose();
    const c = await connectClient(server.url);
    expect(c.transport.sessionId).toBeTruthy();
    expect((await closed).reason).toBe('reclaimed');
  });

  it('never evicts a session whose request body is still arriving', async () => {
    const started = await start({ maxSessions: 2 });
    const { server } = started;
    const busy = await connectClient(server.url);
    await connectClient(server.url);
    const busyId = busy.transport.sessionId as string;
    // The other session is used last, so the busy one is the least recently used.
    await busy.client.listTools();
    await connectClient(server.url).then(({ client }) => client.listTools());

    // A request for the busy session: headers sent, body still on its way. `Expect: 100-continue`
    // is the barrier: the server answers it as it hands the request to its handler.
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'slow upload' } },
    });
    const continued = barrier();
    let answered!: (res: RawResponse) => void;
    const answer = new Promise<RawResponse>((resolve) => {
      answered = resolve;
    });
    const req = httpRequest(
      server.url,
      {
        method: 'POST',
        headers: {
          ...postHeaders,
          'mcp-session-id': busyId,
          'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
          'content-length': String(Buffer.byteLength(body)),
          expect: '100-continue',
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          answered({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', (err) => answered({ status: 0, headers: {}, body: String(err) }));
    req.on('continue', () => continued.resolve());
    req.flushHeaders();
    cleanup.push(async () => req.destroy());
    await continued.promise;
    req.write(body.slice(0, 10));

    // A storm of new sessions, one after another: each takes the place of an idle one, never the busy one.
    for (let i = 0; i < 4; i++) {
      const opened = await raw(server.url, 'POST', postHeaders, initializeBody);
      expect(opened.status).toBe(200);
    }
    expect(started.closed.length).toBeGreaterThanOrEqual(4);
    expect(started.closed.map((c) => c.id)).not.toContain(busyId);

    req.end(body.slice(10));
    const done = await answer;
    expect(done.status).toBe(200);
    expect(done.body).toContain('slow upload');
  });

  it('ends a session on DELETE; its id is then unknown', async () => {
    const started = await start();
    const { server } = started;
    const { transport } = await connectClient(server.url);
    const id = transport.sessionId as string;
    const ended = started.nextClose();
    await transport.terminateSession();
    expect(await ended).toEqual({ id, reason: 'deleted' });
    expect(server.sessionCount()).toBe(0);

    const after = await raw(
      server.url,
      'POST',
      { ...postHeaders, 'mcp-session-id': id },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    );
    expect(after.status).toBe(404);
    expect(JSON.parse(after.body)).toMatchObject({ error: { code: -32001 } });
  });

  it('closes a session left idle, and never one with a request in progress', async () => {
    // Idle timers under the test's control: armed ones wait here until fired or cancelled.
    const armed = new Set<{ fire: () => void; ms: number }>();
    const setIdleTimer = (onIdle: () => void, ms: number) => {
      const timer = { fire: onIdle, ms };
      armed.add(timer);
      return () => armed.delete(timer);
    };
    const slow = makeSlowTool();
    const started = await start({
      sessionIdleMs: 1234,
      setIdleTimer,
      createServer: ({ era }) =>
        createMcpServer({ name: 't', version: '0', era, tools: [slow.tool], deadlineMs: 10_000 }),
    });
    const { client, transport } = await connectClient(started.server.url);

    // A call in progress: no idle timer is armed while it runs.
    const call = client.callTool({ name: 'slow', arguments: {} });
    await slow.started;
    expect(armed.size).toBe(0);
    slow.gate.resolve();
    await call;

    const idle = await waitFor(() => [...armed][0]);
    expect(idle.ms).toBe(1234);
    idle.fire();
    expect(await started.nextClose()).toEqual({ id: transport.sessionId, reason: 'idle' });
    expect(started.server.sessionCount()).toBe(0);
  });

  it('expires an idle session on a real timer', async () => {
    const started = await start({ sessionIdleMs: 20 });
    // One initialize and nothing else: the session then sits idle.
    const opened = await raw(started.server.url, 'POST', postHeaders, initializeBody);
    expect(opened.status).toBe(200);
    expect(await started.nextClose()).toEqual({ id: opened.headers['mcp-session-id'], reason: 'idle' });
  });

  it('answers requests without a session, or to a missing path, with JSON-RPC errors', async () => {
    const { server } = await start();
    const noSession = await raw(server.url, 'POST', postHeaders, {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/list',
    });
    expect(noSession.status).toBe(400);
    const badJson = await raw(server.url, 'POST', postHeaders, undefined);
    expect(badJson.status).toBe(400);
    expect(JSON.parse(badJson.body)).toMatchObject({ error: { code: -32700 } });
    const elsewhere = await raw(server.url.replace('/mcp', '/other'), 'GET', {});
    expect(elsewhere.status).toBe(404);
    const put = await raw(server.url, 'PUT', {});
    expect(put.status).toBe(405);
  });

  it('refuses an oversized body with 413', async () => {
    const { server } = await start({ maxBodyBytes: 256 });
    const big = { ...initializeBody, params: { ...initializeBody.params, padding: 'x'.repeat(1024) } };
    const refused = await raw(server.url, 'POST', postHeaders, big);
    expect(refused.status).toBe(413);
    expect(JSON.parse(refused.body)).toMatchObject({
      error: { code: -32600, message: expect.stringMatching(/^Request too large: over the 256-byte/) },
    });
    expect(server.sessionCount()).toBe(0);
  });

  it('serves the 2025 era only with eras: legacy: a pinned 2026 client fails, auto falls back', async () => {
    const { server } = await start({ eras: 'legacy' });
    const pinned = new Client(
      { name: 'pinned', version: '0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await expect(pinned.connect(new StreamableHTTPClientTransport(new URL(server.url)))).rejects.toThrow(
      /did not offer pinned protocol version 2026-07-28/,
    );
    const auto = new Client({ name: 'auto', version: '0' }, { versionNegotiation: { mode: 'auto' } });
    await auto.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    cleanup.push(() => auto.close());
    expect(auto.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    expect((await auto.callTool({ name: 'echo', arguments: { text: 'hi' } })).structuredContent).toEqual({
      text: 'hi',
      echoed: 'hi',
    });
  });

  it('closes every session on shutdown', async () => {
    const started = await start();
    await connectClient(started.server.url);
    await connectClient(started.server.url);
    await started.server.close();
    expect(started.closed.map((c) => c.reason)).toEqual(['shutdown', 'shutdown']);
    expect(started.server.sessionCount()).toBe(0);
  });
});
