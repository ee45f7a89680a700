// Per-caller limits of the HTTP router: a rate limit per token and a cap on the long waits one
// token holds, each a 429 with a typed message, and neither touching another token's budget; and
// the authorization challenge behind a proxy (the public URL, not the listening address).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { AuthInfo } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpServer, type RunningHttpServer, startHttpServer } from '../src/index.js';
import { echoTool, makeSlowTool } from './fake-tools.js';

const people: Record<string, string> = { 'token-of-ann-0123456789': 'ann', 'token-of-bo-01234567890': 'bo' };
let server: RunningHttpServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(limits: { perMinute: number; maxWaits: number }, slow = makeSlowTool()) {
  server = await startHttpServer({
    host: '127.0.0.1',
    port: 0,
    maxSessions: 8,
    sessionIdleMs: 60_000,
    verifyToken: async (token): Promise<AuthInfo | { refused: string }> => {
      const who = people[token];
      return who === undefined ? { refused: 'the token is not valid' } : { token, clientId: who, scopes: [] };
    },
    limits: { ...limits, waitTools: ['slow'] },
    createServer: ({ era }) =>
      createMcpServer({
        name: 'limits',
        version: '0',
        era,
        tools: [echoTool, slow.tool],
        deadlineMs: 10_000,
      }),
  });
  return { url: server.url, slow };
}

function post(url: string, token: string, body: unknown) {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify(body),
  });
}

const init = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
};

describe('per-token limits', () => {
  it('refuses a token past its requests per minute with 429 and Retry-After; another token is unaffected', async () => {
    const { url } = await start({ perMinute: 3, maxWaits: 5 });
    const ann = 'token-of-ann-0123456789';
    for (let i = 0; i < 3; i++) {
      const ok = await post(url, ann, init);
      expect(ok.status).toBe(200);
      await ok.body?.cancel();
    }
    const limited = await post(url, ann, init);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = (await limited.json()) as { error: { message: string; data: unknown } };
    expect(body.error.message).toMatch(/^MCP_RATE_LIMITED: this token made more than 3 requests in a minute/);
    expect(body.error.data).toEqual({
      code: 'MCP_RATE_LIMITED',
      retryAfter: Number(limited.headers.get('retry-after')),
    });
    const bo = await post(url, 'token-of-bo-01234567890', init);
    expect(bo.status).toBe(200);
    await bo.body?.cancel();
  });

  it('caps the long waits one token holds at once, and frees a slot when one ends', async () => {
    const { url, slow } = await start({ perMinute: 1000, maxWaits: 1 });
    const connect = async (token: string) => {
      const client = new Client({ name: 'w', version: '1' }, { versionNegotiation: { mode: 'legacy' } });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      return client;
    };
    const first = await connect('token-of-ann-0123456789');
    const second = await connect('token-of-ann-0123456789');
    const waiting = first.callTool({ name: 'slow', arguments: {} });
    await slow.started;
    await expect(second.callTool({ name: 'slow', arguments: {} })).rejects.toThrow(/MCP_TOO_MANY_WAITS/);
    // Short calls are not waits; another token has its own slots.
    expect((await second.callTool({ name: 'echo', arguments: { text: 'hi' } })).isError).toBeFalsy();
    const bo = await connect('token-of-bo-01234567890');
    const boWaits = bo.callTool({ name: 'slow', arguments: {} });
    slow.gate.resolve();
    await waiting;
    await boWaits;
    expect((await second.callTool({ name: 'slow', arguments: {} })).isError).toBeFalsy();
    await Promise.all([first.close(), second.close(), bo.close()]);
  });
});

describe('authorization behind a proxy', () => {
  it('names the public URL in the challenge and the metadata, and checks the token before the session', async () => {
    server = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      maxSessions: 8,
      sessionIdleMs: 60_000,
      token: 'the-one-shared-token-0123',
      authorization: { resourceUrl: 'https://mcp.acme.example/zulip/mcp', tokenHelp: 'ask #it-help' },
      createServer: ({ era }) =>
        createMcpServer({ name: 'p', version: '0', era, tools: [echoTool], deadlineMs: 1000 }),
    });
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-session-id': 'made-up' },
      body: '{}',
    });
    // 401 before the made-up session id is looked at (that would be 404).
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(
      'Bearer realm="zulip-mcp", resource_metadata="https://mcp.acme.example/.well-known/oauth-protected-resource/zulip/mcp"',
    );
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      'Unauthorized: a bearer token is required. Get a token: ask #it-help',
    );
    // Served at the path the challenge names (the proxy forwards it) and at the plain one.
    const atPublicPath = await fetch(new URL('/.well-known/oauth-protected-resource/zulip/mcp', server.url));
    expect(atPublicPath.status).toBe(200);
    const metadata = await fetch(new URL('/.well-known/oauth-protected-resource', server.url));
    expect(await atPublicPath.json()).toEqual(await metadata.clone().json());
    expect(await metadata.json()).toEqual({
      resource: 'https://mcp.acme.example/zulip/mcp',
      resource_name: 'zulip-mcp',
      bearer_methods_supported: ['header'],
      token_help: 'ask #it-help',
    });
  });
});
