// The built bin, dist/cli.js (built by test/global-setup.ts when stale), spawned as a
// client would spawn it. It is run through its shebang; it bundles the workspace libraries
// from their sources, so the test does not depend on other packages' dist/ being current.
import { spawn } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, LATEST_PROTOCOL_VERSION, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configVariableNames } from '../src/index.js';

const appDir = join(import.meta.dirname, '..');
const bin = join(appDir, 'dist', 'cli.js');
// What a user runs: the bin of the package, which loads the build output above.
const userBin = join(appDir, 'bin', 'zulip-mcp.js');
let stateDir = '';

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'zmcp-cli-'));
});

afterAll(async () => {
  await rm(stateDir, { recursive: true, force: true });
});

/** A minimal environment: no credentials from the developer's shell leak into the run. */
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    ZULIP_STATE_DIR: stateDir,
    ...extra,
  };
}

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], env: Record<string, string>, input?: string): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: appDir, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe('the zulip-mcp bin', () => {
  it('is an executable with a shebang', () => {
    expect(readFileSync(bin, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    expect(statSync(bin).mode & 0o111).not.toBe(0);
  });

  it('prints every setting for --help and exits 0', async () => {
    const { code, stdout, stderr } = await run(['--help'], childEnv());
    expect(code).toBe(0);
    expect(stderr).toBe('');
    for (const name of configVariableNames()) expect(stdout).toContain(name);
    expect(stdout).toContain('--http');
  });

  it('exits 2 on a bad value, naming the variable and never echoing a secret', async () => {
    const apiKey = 'super secret key 0123456789';
    const { code, stdout, stderr } = await run(
      [],
      childEnv({ ZULIP_READ_ONLY: 'perhaps', ZULIP_API_KEY: apiKey, ZMCP_HTTP_TOKEN: 'short secret' }),
    );
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain(
      'ZULIP_READ_ONLY: expected one of 1/0, true/false, yes/no, on/off (got "perhaps")',
    );
    expect(stderr).toContain('ZULIP_API_KEY:');
    expect(stderr).toContain('ZMCP_HTTP_TOKEN:');
    expect(stderr).not.toContain('super secret');
    expect(stderr).not.toContain('short secret');
  });

  it('never echoes a key pasted into the wrong variable, from the environment or beside a zuliprc', async () => {
    const key = 'Zk3yZk3yZk3yZk3yZk3yZk3yZk3yZk3y';
    const rc = join(stateDir, 'wrong-variable.zuliprc');
    writeFileSync(rc, `[api]\nemail=bot@example.com\nkey=${key}\nsite=https://chat.example.com\n`);
    // The key as the email, its own variable unset; then beside the zuliprc it came from; then an
    // HTTP bearer token (16+ printable characters) in a variable that is no secret.
    for (const env of [
      { ZULIP_EMAIL: key, ZULIP_REALM: 'https://chat.example.com' },
      { ZULIP_EMAIL: key, ZULIP_RC_PATH: rc },
      { AGENT_TIMEZONE: 'tok_9f8e7d6c5b4a3210' },
    ]) {
      const { code, stdout, stderr } = await run([], childEnv(env));
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toMatch(/^ {2}(ZULIP_EMAIL|AGENT_TIMEZONE): .*\(got "\[REDACTED\]"\)$/m);
      expect(stderr).not.toContain(key);
      expect(stderr).not.toContain('tok_9f8e7d6c5b4a3210');
    }
    // The key as the zuliprc's path: the library's start-up problem names the path.
    const asPath = await run([], childEnv({ ZULIP_RC_PATH: key }));
    expect(asPath.code).toBe(2);
    expect(asPath.stderr).toContain('zuliprc [REDACTED] (from ZULIP_RC_PATH) does not exist');
    expect(asPath.stderr).not.toContain(key);
  });

  it.each([
    ['pinned to 2026-07-28', { pin: '2026-07-28' }, '2026-07-28'],
    ['in legacy', 'legacy', '2025-11-25'],
  ] as const)(
    'serves the v2 client %s over stdio: lists and calls the tools',
    async (_label, mode, version) => {
      const transport = new StdioClientTransport({
        command: userBin,
        args: ['--demo'],
        cwd: appDir,
        env: childEnv({ ZMCP_LOG_LEVEL: 'debug' }),
        stderr: 'pipe',
      });
      const client = new Client({ name: 'cli-test', version: '0' }, { versionNegotiation: { mode } });
      await client.connect(transport);
      expect(client.getNegotiatedProtocolVersion()).toBe(version);
      expect(client.getServerVersion()).toMatchObject({ name: 'zulip-mcp' });
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('fetch_history');
      const result = await client.callTool({ name: 'list_streams', arguments: {} });
      expect(result.isError).toBeFalsy();
      expect(JSON.stringify(result.structuredContent)).toContain('general');
      await client.close();
    },
  );

  it('serves the v1 SDK client (2025 era only) over stdio', async () => {
    const client = new V1Client({ name: 'cli-test-v1', version: '0' });
    await client.connect(
      new V1StdioClientTransport({
        command: userBin,
        args: ['--demo'],
        cwd: appDir,
        env: childEnv(),
        stderr: 'pipe',
      }),
    );
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('fetch_history');
    const result = await client.callTool({ name: 'list_streams', arguments: {} });
    expect(result.isError).toBeFalsy();
    await client.close();
  });

  it('writes nothing but JSON-RPC to stdout, even at debug level', async () => {
    const requests = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: LATEST_PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: 'c', version: '0' },
        },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } },
    ];
    const input = requests.map((r) => `${JSON.stringify(r)}\n`).join('');
    // stdin closes after the last request; the server answers what it read, then exits.
    const { code, stdout, stderr } = await run(['--demo'], childEnv({ ZMCP_LOG_LEVEL: 'debug' }), input);
    expect(code).toBe(0);
    const lines = stdout.split('\n').filter((line) => line !== '');
    const messages = lines.map(
      (line) => JSON.parse(line) as { jsonrpc: string; id?: unknown; error?: unknown },
    );
    for (const message of messages) expect(message.jsonrpc).toBe('2.0');
    // Every request read before stdin closed is answered (JSON-RPC answers need not keep the
    // order of their requests), the unknown tool as a JSON-RPC error.
    expect(messages.map((m) => m.id).sort()).toEqual([1, 2, 3]);
    expect(messages.find((m) => m.id === 3)?.error).toMatchObject({ code: -32602 });
    expect(stderr).toContain('debug');
  });

  it('shuts down cleanly on SIGTERM in HTTP mode, after logging the bound address', async () => {
    const child = spawn(userBin, ['--demo', '--http', '--port', '0'], {
      cwd: appDir,
      env: childEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const url = await new Promise<string>((resolve) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        const match = /listening url=(\S+)/.exec(stderr);
        if (match) resolve(match[1] as string);
      });
    });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    // A 2026-era client and a 2025-era one (which holds a session open until shutdown).
    const modern = new Client(
      { name: 'cli-test', version: '0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await modern.connect(new StreamableHTTPClientTransport(new URL(url)));
    expect((await modern.callTool({ name: 'list_streams', arguments: {} })).isError).toBeFalsy();
    await modern.close();
    const client = new Client({ name: 'cli-test', version: '0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toContain('session closed');
    expect(stderr).toContain('HTTP server stopped');
    expect(stdout).toBe('');
    await client.close();
  });
});
