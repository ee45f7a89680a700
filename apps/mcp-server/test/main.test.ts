// main() in-process, with its streams replaced: the shell around the services (which the
// placeholder services.ts keeps empty), not any tool's behaviour.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Client, LATEST_PROTOCOL_VERSION, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { ZulipSim } from '@zmcp/zulip-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/index.js';
import { barrier } from './fake-tools.js';
import { startSmallRealm } from './small-realm.js';
import { startStdio } from './stdio-client.js';

function collect(stream: PassThrough): () => string {
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  return () => Buffer.concat(chunks).toString('utf8');
}

function streams() {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  return { stdin, stdout, stderr, out: collect(stdout), err: collect(stderr) };
}

let env: Record<string, string> = {};

beforeAll(async () => {
  const stateDir = await mkdtemp(join(tmpdir(), 'zmcp-main-'));
  env = { HOME: stateDir, ZULIP_STATE_DIR: stateDir, ZMCP_LOG_LEVEL: 'debug' };
});

afterAll(async () => {
  if (env.ZULIP_STATE_DIR) await rm(env.ZULIP_STATE_DIR, { recursive: true, force: true });
});

describe('main', () => {
  it('prints help on stdout and exits 0, even with a bad environment', async () => {
    const io = streams();
    const code = await main(['--help'], { ZULIP_READ_ONLY: 'maybe' }, io);
    expect(code).toBe(0);
    expect(io.out()).toContain('Usage: zulip-mcp [options]');
    expect(io.err()).toBe('');
  });

  it('prints the version', async () => {
    const io = streams();
    expect(await main(['--version'], {}, io)).toBe(0);
    expect(io.out()).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it('exits 2 on a bad value, naming it on stderr, never echoing a secret', async () => {
    const io = streams();
    const apiKey = 'has a space in the secret';
    const code = await main([], { ZULIP_API_KEY: apiKey, ZMCP_HTTP_PORT: 'eighty' }, io);
    expect(code).toBe(2);
    expect(io.err()).toContain('ZULIP_API_KEY: expected a Zulip API key: 32 letters and digits');
    expect(io.err()).toContain('ZMCP_HTTP_PORT: expected a whole number');
    expect(io.err()).not.toContain(apiKey);
    expect(io.out()).toBe('');
  });

  it('exits 2 on a session id the state store would refuse, before building anything', async () => {
    for (const id of ['.x', 'a.filters']) {
      const io = streams();
      expect(await main(['--demo'], { ...env, ZULIP_SESSION_ID: id }, io)).toBe(2);
      expect(io.err()).toContain('ZULIP_SESSION_ID: expected 1 to 128 characters');
      expect(io.err()).not.toContain('fatal');
    }
  });

  it('serves stdio until stdin ends, keeping logs off stdout', async () => {
    const io = streams();
    const ready = barrier();
    const run = main(['--demo'], env, { ...io, onReady: () => ready.resolve() });
    await ready.promise;
    io.stdin.write(
      `${JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: LATEST_PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: 't', version: '0' },
        },
      })}\n`,
    );
    io.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    io.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`);
    await new Promise<void>((resolve) => {
      io.stdout.on('data', () => {
        if (io.out().includes('"id":2')) resolve();
      });
    });
    io.stdin.end();
    expect(await run).toBe(0);

    const lines = io.out().trim().split('\n');
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ jsonrpc: '2.0' });
    expect(JSON.parse(lines[1] as string)).toMatchObject({ id: 2, result: { tools: expect.any(Array) } });
    expect(io.err()).toContain('serving MCP on stdio');
    expect(io.err()).toContain('shutting down why="stdin ended"');
  });

  it('serves HTTP on port 0 until asked to shut down', async () => {
    const io = streams();
    const shutdown = new AbortController();
    const ready = barrier<string>();
    const run = main(['--demo', '--http', '--port', '0'], env, {
      ...io,
      shutdown: shutdown.signal,
      onReady: (info) => ready.resolve(info.transport === 'http' ? info.url : ''),
    });
    const url = await ready.promise;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(io.err()).toContain(`listening url=${url}`);

    const client = new Client({ name: 't', version: '0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    expect(Array.isArray((await client.listTools()).tools)).toBe(true);
    await client.close();

    shutdown.abort();
    expect(await run).toBe(0);
    expect(io.err()).toContain('HTTP server stopped');
    expect(io.out()).toBe('');
  });
});

describe('main: settings of earlier servers', () => {
  it('serves read-only under ZULIPMCP_READ_ONLY=1: no write tool, nothing can be sent', async () => {
    const run = await startStdio(['--demo'], { ...env, ZULIPMCP_READ_ONLY: '1' });
    const names = (await run.client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('fetch_history');
    expect(names).not.toContain('send_message');
    await expect(
      run.client.callTool({
        name: 'send_message',
        arguments: { stream: 'general', topic: 't', content: 'x' },
      }),
    ).rejects.toMatchObject({ code: -32602 });
    expect(run.client.getInstructions()).toContain('read-only');
    expect(await run.finish()).toBe(0);
  });

  it('refuses to start on a conflict between an earlier name and its replacement', async () => {
    const io = streams();
    const code = await main(['--demo'], { ...env, ZULIPMCP_READ_ONLY: '1', ZULIP_READ_ONLY: '0' }, io);
    expect(code).toBe(2);
    expect(io.err()).toContain('ZULIPMCP_READ_ONLY: conflicts with ZULIP_READ_ONLY');
  });
});

describe('main: credentials', () => {
  let sim: ZulipSim;
  let botId = 0;
  let dir = '';

  beforeAll(async () => {
    ({ sim, botId } = await startSmallRealm());
    dir = await mkdtemp(join(tmpdir(), 'zmcp-creds-'));
  });

  afterAll(async () => {
    await sim.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function zuliprc(name: string, text: string): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, text);
    return path;
  }

  it('exits 2 naming the file when the zuliprc is missing or malformed', async () => {
    for (const [path, expected] of [
      [join(dir, 'nope'), /zuliprc .*nope \(from ZULIP_RC_PATH\) does not exist/],
      [
        await zuliprc('bad', '[api]\nemail=x@y\nkey=short\nsite=https://a.example\n'),
        /key 'key' is not a Zulip API key/,
      ],
    ] as const) {
      const io = streams();
      expect(await main([], { ...env, ZULIP_RC_PATH: path }, io)).toBe(2);
      expect(io.err()).toMatch(/^zulip-mcp: Invalid configuration:\n {2}/);
      expect(io.err()).toMatch(expected);
      expect(io.err()).not.toContain('fatal');
    }
  });

  it('exits 2 when Zulip refuses the credentials', async () => {
    const { site, email } = sim.credentials(botId);
    const io = streams();
    const code = await main(
      [],
      { ...env, ZULIP_REALM: site, ZULIP_EMAIL: email, ZULIP_API_KEY: 'A'.repeat(32) },
      io,
    );
    expect(code).toBe(2);
    expect(io.err()).toContain(
      'Zulip refused the credentials (CORE_UNAUTHORIZED): check ZULIP_EMAIL and ZULIP_API_KEY',
    );
    expect(io.err()).not.toContain('A'.repeat(32));
  });

  it('takes the variables over the zuliprc, and the rest from the zuliprc', async () => {
    // The file names a realm that does not exist; ZULIP_REALM wins, the email and key come from the file.
    const rc = sim.zuliprc(botId).replace(/site=.*/, 'site=https://wrong.invalid');
    const path = await zuliprc('mixed', rc);
    const run = await startStdio([], { ...env, ZULIP_RC_PATH: path, ZULIP_REALM: sim.url });
    const result = await run.client.callTool({ name: 'list_streams', arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(JSON.stringify(result.content)).toContain('general');
    expect(await run.finish()).toBe(0);
  });

  it('redacts an API key read from a zuliprc from the logs', async () => {
    const { apiKey } = sim.credentials(botId);
    const path = await zuliprc('plain', sim.zuliprc(botId));
    const run = await startStdio([], { ...env, ZULIP_RC_PATH: path, ZMCP_LOG_LEVEL: 'debug' });
    // Tool arguments are logged at debug: the key goes in as a stream name.
    await run.client.callTool({ name: 'fetch_history', arguments: { stream: apiKey } });
    expect(await run.finish()).toBe(0);
    expect(run.stderr()).toContain('tool call started');
    expect(run.stderr()).toContain('[REDACTED]');
    expect(run.stderr()).not.toContain(apiKey);
  });
});
