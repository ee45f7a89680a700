// zulip-mcp on stdio in both protocol eras (the whole server, main in-process): what the 2026-07-28
// revision adds comes from the SDK (server/discover, resultType, cache hints, per-request log
// level, -32022), the era is chosen by the opening exchange, the session lives with the connection
// in both eras, and the monitor's resources change under a 2026 client's subscriptions/listen.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { LOG_LEVEL_META_KEY } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/index.js';
import { barrier } from './fake-tools.js';
import { type SmallRealm, startSmallRealm } from './small-realm.js';
import { startStdio } from './stdio-client.js';

let realm: SmallRealm;
let stateDir = '';

beforeAll(async () => {
  realm = await startSmallRealm();
  stateDir = await mkdtemp(join(tmpdir(), 'zmcp-eras-stdio-'));
});

afterAll(async () => {
  await realm.sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

const envelope = (version: string) => ({
  'io.modelcontextprotocol/protocolVersion': version,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
});

/** main() on stdio with no client: raw lines in, answers out by id. */
async function rawStdio() {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const err: Buffer[] = [];
  stderr.on('data', (c: Buffer) => err.push(c));
  const answers = new Map<unknown, Record<string, unknown>>();
  const waiting = new Map<unknown, (m: Record<string, unknown>) => void>();
  let pending = '';
  stdout.on('data', (c: Buffer) => {
    pending += c.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const message = JSON.parse(line) as Record<string, unknown>;
      answers.set(message.id, message);
      waiting.get(message.id)?.(message);
    }
  });
  const ready = barrier();
  const exited = main([], realm.env(stateDir), { stdin, stdout, stderr, onReady: () => ready.resolve() });
  await ready.promise;
  return {
    write: (message: unknown) => stdin.write(`${JSON.stringify(message)}\n`),
    answer: (id: string) =>
      answers.get(id) !== undefined
        ? Promise.resolve(answers.get(id) as Record<string, unknown>)
        : new Promise<Record<string, unknown>>((resolve) => waiting.set(id, resolve)),
    stderr: () => Buffer.concat(err).toString('utf8'),
    end: () => {
      stdin.end();
      return exited;
    },
  };
}

describe('stdio, 2026-07-28', () => {
  it('is offered by server/discover, with the tasks extension and logging', async () => {
    const run = await startStdio([], realm.env(stateDir), { pin: '2026-07-28' });
    const discovered = run.client.getDiscoverResult();
    expect(discovered?.supportedVersions).toEqual(['2026-07-28']);
    expect(discovered?.capabilities).toMatchObject({
      tools: { listChanged: false },
      logging: {},
      extensions: { 'io.modelcontextprotocol/tasks': {} },
    });
    expect(discovered?.instructions).toContain('You are connected to a Zulip organization as Helper Bot.');
    expect(await run.finish()).toBe(0);
  });

  it('lists the tools in one order with cache hints, and stamps resultType on every result', async () => {
    const run = await startStdio([], realm.env(stateDir), { pin: '2026-07-28' });
    const first = await run.client.listTools();
    expect(first).toMatchObject({ ttlMs: 300_000, cacheScope: 'public' });
    const again = await run.client.listTools(undefined, { cacheMode: 'bypass' } as never);
    expect(again.tools.map((t) => t.name)).toEqual(first.tools.map((t) => t.name));
    const legacy = await startStdio([], realm.env(stateDir), 'legacy');
    expect((await legacy.client.listTools()).tools.map((t) => t.name)).toEqual(
      first.tools.map((t) => t.name),
    );
    expect(await legacy.finish()).toBe(0);

    const line = run.nextOutputLine(/"id":"raw-1"/);
    run.transport.writeRaw(
      `${JSON.stringify({
        jsonrpc: '2.0',
        id: 'raw-1',
        method: 'tools/call',
        params: { name: 'list_streams', arguments: {}, _meta: envelope('2026-07-28') },
      })}\n`,
    );
    expect(JSON.parse(await line)).toMatchObject({
      result: {
        resultType: 'complete',
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'zulip-mcp' } },
      },
    });
    expect(await run.finish()).toBe(0);
  });

  it('sends a tool call’s log line only when the request asks for its level', async () => {
    const run = await startStdio([], realm.env(stateDir), { pin: '2026-07-28' });
    const logs: unknown[] = [];
    run.client.setNotificationHandler('notifications/message', (n) => void logs.push(n.params));
    await run.client.callTool({ name: 'list_streams', arguments: {} });
    expect(logs).toEqual([]);
    await run.client.callTool({
      name: 'list_streams',
      arguments: {},
      _meta: { [LOG_LEVEL_META_KEY]: 'warning' },
    });
    expect(logs).toEqual([]);
    await run.client.callTool({
      name: 'list_streams',
      arguments: {},
      _meta: { [LOG_LEVEL_META_KEY]: 'info' },
    });
    expect(logs).toEqual([
      expect.objectContaining({
        level: 'info',
        logger: 'zulip-mcp',
        data: { tool: 'list_streams', outcome: 'ok', ms: expect.any(Number) },
      }),
    ]);
    expect(await run.finish()).toBe(0);
  });

  it('answers an opening that names a revision it does not speak with -32022, then opens on the next', async () => {
    const raw = await rawStdio();
    raw.write({
      jsonrpc: '2.0',
      id: 'future',
      method: 'server/discover',
      params: { _meta: envelope('2027-01-01') },
    });
    expect(await raw.answer('future')).toMatchObject({
      error: { code: -32022, data: { supported: ['2026-07-28'], requested: '2027-01-01' } },
    });
    raw.write({
      jsonrpc: '2.0',
      id: 'now',
      method: 'server/discover',
      params: { _meta: envelope('2026-07-28') },
    });
    expect(await raw.answer('now')).toMatchObject({ result: { supportedVersions: ['2026-07-28'] } });
    expect(await raw.end()).toBe(0);
  });

  it('serves a client that probes server/discover and then sends initialize (the probe instance is let go)', async () => {
    const raw = await rawStdio();
    raw.write({
      jsonrpc: '2.0',
      id: 'probe',
      method: 'server/discover',
      params: { _meta: envelope('2026-07-28') },
    });
    expect(await raw.answer('probe')).toMatchObject({ result: { supportedVersions: ['2026-07-28'] } });
    raw.write({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
    });
    expect(await raw.answer('init')).toMatchObject({ result: { protocolVersion: '2025-11-25' } });
    raw.write({ jsonrpc: '2.0', method: 'notifications/initialized' });
    raw.write({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    expect(await raw.answer('list')).toMatchObject({ result: { tools: expect.any(Array) } });
    expect(raw.stderr()).not.toContain('why="transport closed"');
    expect(await raw.end()).toBe(0);
  });

  it('keeps the session with the connection: set_context, reply, listen, as in the 2025 era', async () => {
    const run = await startStdio([], realm.env(stateDir), { pin: '2026-07-28' });
    const trigger = realm.post('@**Helper Bot** can you help?', 'eras stdio');
    const bound = await run.client.callTool({
      name: 'set_context',
      arguments: { stream: 'general', topic: 'eras stdio', trigger_message_id: trigger },
    });
    expect(bound.isError).toBeFalsy();
    // No handle on stdio: the connection is the session.
    expect(bound.structuredContent).not.toHaveProperty('session');
    const replied = await run.client.callTool({ name: 'reply', arguments: { content: 'On it.' } });
    expect(replied.isError).toBeFalsy();
    const follow = realm.post('thanks!', 'eras stdio');
    const heard = await run.client.callTool({ name: 'listen', arguments: { timeout_seconds: 30 } });
    expect(heard.structuredContent).toMatchObject({ status: 'messages', ids: [follow] });
    expect(await run.finish()).toBe(0);
  });

  it('sends the monitor’s resource updates on a subscriptions/listen stream', async () => {
    const run = await startStdio([], realm.env(stateDir, { ZULIP_SESSION_ID: 'eras-listen' }), {
      pin: '2026-07-28',
    });
    const updates: string[] = [];
    let heard!: () => void;
    const summaryChanged = new Promise<void>((resolve) => {
      heard = resolve;
    });
    run.client.setNotificationHandler('notifications/resources/updated', (n) => {
      updates.push(n.params.uri);
      if (n.params.uri === 'zulip://unread/summary') heard();
    });
    const subscription = await run.client.listen({ resourceSubscriptions: ['zulip://unread/summary'] });
    expect(subscription.honoredFilter).toEqual({ resourceSubscriptions: ['zulip://unread/summary'] });
    const started = await run.client.callTool({
      name: 'start_monitoring',
      arguments: { streams: ['general'] },
    });
    expect(started.isError).toBeFalsy();
    await summaryChanged;
    expect(updates).toContain('zulip://unread/summary');
    await subscription.close();
    expect(await run.finish()).toBe(0);
  });
});
