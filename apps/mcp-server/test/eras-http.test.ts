// zulip-mcp over Streamable HTTP in both protocol eras (the whole server, main in-process): 2026-07-28
// requests are served per request with no server-side session, behind the same guards as the 2025
// sessions; the session tools carry their state in a handle; listen becomes a task for a client
// that supports tasks; the monitor's resources reach a subscriptions/listen stream.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/index.js';
import { barrier } from './fake-tools.js';
import { type SmallRealm, startSmallRealm } from './small-realm.js';

const token = 'eras-token-0123456789abcdef';
let realm: SmallRealm;
let stateDir = '';
let url = '';
let stop: () => Promise<number>;
const logs: Buffer[] = [];
const stderrText = () => Buffer.concat(logs).toString('utf8');

beforeAll(async () => {
  realm = await startSmallRealm();
  stateDir = await mkdtemp(join(tmpdir(), 'zmcp-eras-http-'));
  const shutdown = new AbortController();
  const ready = barrier<string>();
  const stderr = new PassThrough();
  stderr.on('data', (c: Buffer) => logs.push(c));
  const run = main(
    ['--http', '--port', '0'],
    realm.env(stateDir, { ZMCP_HTTP_TOKEN: token, ZMCP_LOG_LEVEL: 'debug' }),
    {
      stdout: new PassThrough(),
      stderr,
      shutdown: shutdown.signal,
      onReady: (info) => ready.resolve(info.transport === 'http' ? info.url : ''),
    },
  );
  url = await ready.promise;
  stop = () => {
    shutdown.abort();
    return run;
  };
});

afterAll(async () => {
  expect(await stop()).toBe(0);
  await realm.sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

const auth = { authorization: `Bearer ${token}` };
type Mode = 'legacy' | 'auto' | { pin: '2026-07-28' };

async function connect(mode: Mode, capabilities: Record<string, unknown> = {}): Promise<Client> {
  const client = new Client(
    { name: 'eras-http', version: '1' },
    { versionNegotiation: { mode }, capabilities: capabilities as never },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth } }));
  return client;
}

const envelope = (version = '2026-07-28', capabilities: Record<string, unknown> = {}) => ({
  'io.modelcontextprotocol/protocolVersion': version,
  'io.modelcontextprotocol/clientCapabilities': capabilities,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
});

/** One hand-written 2026-era request; the answer whether it came as JSON or as an SSE stream. */
async function raw(
  method: string,
  params: Record<string, unknown>,
  options: {
    version?: string;
    capabilities?: Record<string, unknown>;
    headers?: Record<string, string>;
  } = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const name = (params.name ?? params.taskId) as string | undefined;
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': options.version ?? '2026-07-28',
      'mcp-method': method,
      ...(name === undefined ? {} : { 'mcp-name': name }),
      ...auth,
      ...options.headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: { ...params, _meta: envelope(options.version, options.capabilities) },
    }),
  });
  const text = await res.text();
  const json = text.startsWith('{')
    ? text
    : (text
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .find((l) => l.includes('"id":1')) ?? '{}');
  return { status: res.status, headers: res.headers, body: JSON.parse(json) as Record<string, unknown> };
}

describe('HTTP, both eras', () => {
  it.each<[string, Mode, string]>([
    ['pinned to 2026-07-28', { pin: '2026-07-28' }, '2026-07-28'],
    ['in auto', 'auto', '2026-07-28'],
    ['in legacy', 'legacy', '2025-11-25'],
  ])('serves the v2 client %s: lists and calls the tools', async (_label, mode, version) => {
    const client = await connect(mode);
    expect(client.getNegotiatedProtocolVersion()).toBe(version);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('fetch_history');
    const result = await client.callTool({ name: 'list_streams', arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(JSON.stringify(result.structuredContent)).toContain('general');
    await client.close();
  });

  it('serves the v1 SDK client (2025 era, a session of its own)', async () => {
    const client = new V1Client({ name: 'eras-v1', version: '1' });
    const transport = new V1Transport(new URL(url), { requestInit: { headers: auth } });
    await client.connect(transport);
    expect(transport.sessionId).toBeTruthy();
    expect((await client.callTool({ name: 'list_streams', arguments: {} })).isError).toBeFalsy();
    await client.close();
  });

  it('opens no session for 2026-era requests', async () => {
    const before = (stderrText().match(/session opened/g) ?? []).length;
    const client = await connect({ pin: '2026-07-28' });
    await client.callTool({ name: 'list_streams', arguments: {} });
    await client.close();
    expect((stderrText().match(/session opened/g) ?? []).length).toBe(before);
  });

  it('checks the bearer token and the Origin of a 2026-era request before anything else', async () => {
    const noToken = await raw('server/discover', {}, { headers: { authorization: '' } });
    expect(noToken.status).toBe(401);
    expect(noToken.headers.get('www-authenticate')).toMatch(/^Bearer /);
    const wrong = await raw('server/discover', {}, { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const origin = await raw('server/discover', {}, { headers: { origin: 'https://evil.example' } });
    expect(origin.status).toBe(403);
    const ok = await raw('server/discover', {});
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ result: { supportedVersions: ['2026-07-28'], resultType: 'complete' } });
  });

  it('answers a revision it does not speak with -32022', async () => {
    const answer = await raw('server/discover', {}, { version: '2027-01-01' });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      error: { code: -32022, data: { supported: ['2026-07-28'], requested: '2027-01-01' } },
    });
  });

  it('lists the tools in the same order for every request, with cache hints', async () => {
    const a = await raw('tools/list', {});
    const b = await raw('tools/list', {});
    const names = (r: typeof a) => (r.body.result as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names(a)).toEqual(names(b));
    expect(a.body.result).toMatchObject({ ttlMs: 300_000, cacheScope: 'public', resultType: 'complete' });
  });
});

describe('HTTP, 2026-07-28: state in a handle', () => {
  it('set_context returns a session handle; reply and listen take it; end_session ends it', async () => {
    const client = await connect({ pin: '2026-07-28' });
    const trigger = realm.post('@**Helper Bot** help with the deploy?', 'handles');
    const bound = await client.callTool({
      name: 'set_context',
      arguments: { stream: 'general', topic: 'handles', trigger_message_id: trigger },
    });
    expect(bound.isError).toBeFalsy();
    const session = (bound.structuredContent as { session: string }).session;
    expect(session).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    const text = (bound.content as { text: string }[])[0]?.text ?? '';
    expect(text).toContain(
      `Session handle (pass it as session to reply, listen and end_session): ${session}`,
    );

    // Without the handle, reply says what it needs.
    const missing = await client.callTool({ name: 'reply', arguments: { content: 'hi' } });
    expect(missing.isError).toBe(true);
    expect((missing.content as { text: string }[])[0]?.text).toMatch(/^Invalid arguments: session/);
    // A forged handle is refused, never served.
    const forged = await client.callTool({
      name: 'reply',
      arguments: { content: 'hi', session: `${session.slice(0, -4)}AAAA` },
    });
    expect(forged).toMatchObject({ isError: true, _meta: { 'zmcp/error': { code: 'TOOLS_NO_SESSION' } } });

    const replied = await client.callTool({ name: 'reply', arguments: { content: 'Looking.', session } });
    expect(replied.isError).toBeFalsy();
    expect(replied.structuredContent).toMatchObject({ session });
    const follow = realm.post('it is the staging one', 'handles');
    const heard = await client.callTool({ name: 'listen', arguments: { timeout_seconds: 30, session } });
    expect(heard.structuredContent).toMatchObject({ status: 'messages', ids: [follow], session });

    const ended = await client.callTool({ name: 'end_session', arguments: { session } });
    expect(ended.structuredContent).toMatchObject({ ended: true });
    const after = await client.callTool({ name: 'reply', arguments: { content: 'again?', session } });
    expect(after).toMatchObject({ isError: true, _meta: { 'zmcp/error': { code: 'TOOLS_NO_SESSION' } } });
    await client.close();
  });

  it('runs listen as a task for a client that supports tasks', async () => {
    const client = await connect({ pin: '2026-07-28' });
    const trigger = realm.post('@**Helper Bot** ping', 'tasks');
    const bound = await client.callTool({
      name: 'set_context',
      arguments: { stream: 'general', topic: 'tasks', trigger_message_id: trigger },
    });
    const session = (bound.structuredContent as { session: string }).session;
    await client.close();
    const tasks = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
    const created = await raw(
      'tools/call',
      { name: 'listen', arguments: { timeout_seconds: 30, session } },
      { capabilities: tasks },
    );
    expect(created.body.result).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = (created.body.result as { taskId: string }).taskId;
    const poll = async () =>
      (await raw('tasks/get', { taskId }, { capabilities: tasks })).body.result as Record<string, unknown>;
    expect(await poll()).toMatchObject({ status: 'working' });
    const follow = realm.post('pong', 'tasks');
    await expect.poll(async () => (await poll()).status, { timeout: 20_000 }).toBe('completed');
    expect((await poll()).result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'messages', ids: [follow], session },
    });
  });

  it('sends the monitor’s resource updates to a subscriptions/listen stream, resources named with ?session=', async () => {
    const client = await connect({ pin: '2026-07-28' });
    const started = await client.callTool({ name: 'start_monitoring', arguments: { streams: ['general'] } });
    expect(started.isError).toBeFalsy();
    const session = (started.structuredContent as { session: string }).session;
    const uri = `zulip://unread/summary?session=${session}`;
    const read = await client.readResource({ uri });
    expect((read.contents[0] as { text: string }).text).toContain('#general');
    await expect(client.readResource({ uri: 'zulip://unread/summary' })).rejects.toMatchObject({
      code: -32602,
    });

    const status = `zulip://monitoring/status?session=${session}`;
    const waiting: { uri: string; resolve: () => void }[] = [];
    client.setNotificationHandler('notifications/resources/updated', (n) => {
      for (const w of waiting.filter((x) => x.uri === n.params.uri)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve();
      }
    });
    const next = (target: string) => new Promise<void>((resolve) => waiting.push({ uri: target, resolve }));
    const subscription = await client.listen({ resourceSubscriptions: [uri, status] });
    // Live updates run once the session's event queue is registered; its status says so.
    for (;;) {
      const changed = next(status);
      const text = (await client.readResource({ uri: status })).contents[0] as { text: string };
      if ((JSON.parse(text.text) as { live_updates: { running: boolean } }).live_updates.running) break;
      await changed;
    }
    const summaryChanged = next(uri);
    realm.post('something new', 'monitored');
    await summaryChanged;
    await subscription.close();
    await client.close();
  });
});
