// zulip-mcp's operator console: --status-port serves the page and /metrics beside the MCP
// endpoint; every tool call of both eras is observed once (createToolServer's observe hook) and
// shows per tool, era and client. The status token guards both, and no secret is on either.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMetrics } from '../../../test/support/console.js';
import { main } from '../src/index.js';
import { barrier } from './fake-tools.js';
import { type SmallRealm, startSmallRealm } from './small-realm.js';

const HTTP_TOKEN = 'http-token-0123456789abcdef';
const STATUS_TOKEN = 'status-token-0123456789abcdef';
let realm: SmallRealm;
let stateDir: string;
let mcpUrl: string;
let statusUrl: string;
let log = '';
let stop: () => Promise<number>;

beforeAll(async () => {
  realm = await startSmallRealm();
  stateDir = await mkdtemp(join(tmpdir(), 'zulip-mcp-console-'));
  const shutdown = new AbortController();
  const ready = barrier<string>();
  const stderr = new PassThrough();
  stderr.setEncoding('utf8');
  stderr.on('data', (c: string) => {
    log += c;
  });
  const run = main(
    ['--http', '--port', '0', '--status-port', '0'],
    realm.env(stateDir, {
      ZMCP_HTTP_TOKEN: HTTP_TOKEN,
      ZMCP_STATUS_TOKEN: STATUS_TOKEN,
      ZMCP_LOG_LEVEL: 'info',
    }),
    {
      stdout: new PassThrough(),
      stderr,
      shutdown: shutdown.signal,
      onReady: (info) => ready.resolve(info.transport === 'http' ? info.url : ''),
    },
  );
  mcpUrl = await ready.promise;
  statusUrl = /status page url=(\S+)/.exec(log)?.[1] as string;
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

async function callOnce(mode: 'legacy' | { pin: '2026-07-28' }, name: string): Promise<void> {
  const client = new Client({ name, version: '1' }, { versionNegotiation: { mode } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(mcpUrl), {
      requestInit: { headers: { authorization: `Bearer ${HTTP_TOKEN}` } },
    }),
  );
  await client.callTool({ name: 'list_streams', arguments: {} });
  await client.callTool({ name: 'fetch_history', arguments: { stream: 'no-such-stream' } });
  await client.close();
}

describe('zulip-mcp --status-port', () => {
  it('logs the page URL at start, never the token', () => {
    expect(statusUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(log).not.toContain(STATUS_TOKEN);
    expect(log).toContain('/?token=<ZMCP_STATUS_TOKEN>');
  });

  it('observes the calls of both eras once: per tool, era and client, errors by code', async () => {
    await callOnce({ pin: '2026-07-28' }, 'modern-client');
    await callOnce('legacy', 'legacy-client');
    const auth = { authorization: `Bearer ${STATUS_TOKEN}` };
    expect((await fetch(`${statusUrl}metrics`)).status).toBe(401);
    const body = await (await fetch(`${statusUrl}metrics`, { headers: auth })).text();
    const families = parseMetrics(body);
    const calls = families.get('zmcp_tool_calls_total')?.samples ?? [];
    const count = (labels: Record<string, string>) =>
      calls
        .filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        .reduce((n, s) => n + s.value, 0);
    expect(count({ tool: 'list_streams', era: 'modern', client: 'modern-client', outcome: 'ok' })).toBe(1);
    expect(count({ tool: 'list_streams', era: 'legacy', client: 'legacy-client', outcome: 'ok' })).toBe(1);
    expect(count({ tool: 'fetch_history', outcome: 'error' })).toBe(2);
    const errors = families.get('zmcp_tool_errors_total')?.samples ?? [];
    expect(errors.reduce((n, s) => n + s.value, 0)).toBe(2);
    expect(families.get('zmcp_tool_call_duration_seconds')?.type).toBe('HISTOGRAM');
    for (const secret of [HTTP_TOKEN, STATUS_TOKEN, realm.env(stateDir).ZULIP_API_KEY as string]) {
      expect(body).not.toContain(secret);
    }

    const page = await (await fetch(statusUrl, { headers: auth })).text();
    expect(page).toContain('<section id="tool-calls">');
    expect(page).toContain('modern-client');
    expect(page).toContain('2026-07-28');
    for (const secret of [HTTP_TOKEN, STATUS_TOKEN, realm.env(stateDir).ZULIP_API_KEY as string]) {
      expect(page).not.toContain(secret);
    }
  });
});
