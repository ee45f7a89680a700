// The 2026 era across processes: two built zulip-mcp --http processes share one state directory,
// and a 2026-07-28 client alternates between them. The session a handle names lives in the state
// store, so set_context on one, reply on the other, listen on the first carry on one conversation;
// a listen task started on one is answered by the other's tasks/get.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SmallRealm, startSmallRealm } from './small-realm.js';

const appDir = join(import.meta.dirname, '..');
const bin = join(appDir, 'dist', 'cli.js');
const token = 'processes-token-0123456789';
const auth = { authorization: `Bearer ${token}` };

let realm: SmallRealm;
let stateDir = '';
const children: ChildProcessWithoutNullStreams[] = [];

/** Starts one `zulip-mcp --http` on a free port; resolves with its endpoint. */
function startProcess(): Promise<string> {
  const child = spawn(bin, ['--http', '--port', '0'], {
    cwd: appDir,
    env: {
      PATH: process.env.PATH ?? '',
      ...realm.env(stateDir, { ZMCP_HTTP_TOKEN: token, ZMCP_LOG_LEVEL: 'info' }),
    },
  });
  children.push(child);
  child.stdin.end();
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      const match = /listening url=(\S+)/.exec(stderr);
      if (match) resolve(match[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`zulip-mcp exited ${code}: ${stderr}`)));
  });
}

async function client(url: string): Promise<Client> {
  const c = new Client(
    { name: 'processes', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth } }));
  return c;
}

/** One hand-written 2026-era request (for task traffic, which the plain client does not take). */
async function raw(
  url: string,
  method: string,
  params: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const name = (params.name ?? params.taskId) as string;
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      'mcp-name': name,
      ...auth,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {
            extensions: { 'io.modelcontextprotocol/tasks': {} },
          },
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
        },
      },
    }),
  });
  const text = await res.text();
  const line = text.startsWith('{')
    ? text
    : (text.split('\n').find((l) => l.startsWith('data: ')) ?? '').slice(6);
  return (JSON.parse(line) as { result: Record<string, unknown> }).result;
}

let a = '';
let b = '';

beforeAll(async () => {
  realm = await startSmallRealm();
  stateDir = await mkdtemp(join(tmpdir(), 'zmcp-processes-'));
  [a, b] = await Promise.all([startProcess(), startProcess()]);
});

afterAll(async () => {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
  await realm.sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

describe('two zulip-mcp --http processes sharing a state directory', () => {
  it('carry one session: set_context on one, reply on the other, listen on the first', async () => {
    const [onA, onB] = await Promise.all([client(a), client(b)]);
    const trigger = realm.post('@**Helper Bot** is staging down?', 'two processes');
    const bound = await onA.callTool({
      name: 'set_context',
      arguments: { stream: 'general', topic: 'two processes', trigger_message_id: trigger },
    });
    expect(bound.isError).toBeFalsy();
    const session = (bound.structuredContent as { session: string }).session;

    const early = realm.post('it went down at noon', 'two processes');
    const replied = await onB.callTool({ name: 'reply', arguments: { content: 'Checking.', session } });
    expect(replied.isError).toBeFalsy();
    // B read what arrived since A's set_context: the read position travelled with the handle.
    expect(replied.structuredContent).toMatchObject({ arrived_ids: [early], session });

    const late = realm.post('back up now', 'two processes');
    const heard = await onA.callTool({ name: 'listen', arguments: { timeout_seconds: 30, session } });
    // A hands over only what came after B's reply: nothing twice.
    expect(heard.structuredContent).toMatchObject({ status: 'messages', ids: [late], session });

    // A listen task started on one process is answered by the other's tasks/get.
    const created = await raw(a, 'tools/call', {
      name: 'listen',
      arguments: { timeout_seconds: 30, session },
    });
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created.taskId as string;
    expect(await raw(b, 'tasks/get', { taskId })).toMatchObject({ status: 'working' });
    const last = realm.post('thanks!', 'two processes');
    await expect
      .poll(async () => (await raw(b, 'tasks/get', { taskId })).status, { timeout: 20_000 })
      .toBe('completed');
    expect((await raw(b, 'tasks/get', { taskId })).result).toMatchObject({
      structuredContent: { status: 'messages', ids: [last] },
    });

    const ended = await onB.callTool({ name: 'end_session', arguments: { session } });
    expect(ended.structuredContent).toMatchObject({ ended: true });
    const after = await onA.callTool({ name: 'reply', arguments: { content: 'one more', session } });
    expect(after).toMatchObject({ isError: true, _meta: { 'zmcp/error': { code: 'TOOLS_NO_SESSION' } } });
    await Promise.all([onA.close(), onB.close()]);
  });
});
