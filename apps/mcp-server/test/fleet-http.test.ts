// Two built zulip-mcp --http processes on one PostgreSQL (ZULIP_STATE_URL), behind a round-robin
// proxy, and one 2026-era client talking through it: every other request lands on the other
// process, and a conversation carries on across them, and across one of them killed (SIGKILL).
// Nothing is written under the state directory.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropAfterAll, freshDatabase } from '../../../test/support/postgres.js';
import { type RoundRobinProxy, startRoundRobinProxy } from './round-robin-proxy.js';
import { type SmallRealm, startSmallRealm } from './small-realm.js';

dropAfterAll();

const appDir = join(import.meta.dirname, '..');
const bin = join(appDir, 'dist', 'cli.js');
const token = 'fleet-token-0123456789abcdef';

let realm: SmallRealm;
let base = '';
let proxy: RoundRobinProxy;
const children: ChildProcessWithoutNullStreams[] = [];

/** Starts one `zulip-mcp --http` on a free port; resolves with the process and its base URL. */
function startProcess(
  env: Record<string, string>,
): Promise<{ child: ChildProcessWithoutNullStreams; url: string }> {
  const child = spawn(process.execPath, [bin, '--http', '--port', '0'], { cwd: appDir, env });
  children.push(child);
  child.stdin.end();
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      const match = /listening url=(\S+)/.exec(stderr);
      if (match) resolve({ child, url: new URL(match[1] as string).origin });
    });
    child.once('exit', (code) => reject(new Error(`zulip-mcp exited ${code}: ${stderr}`)));
  });
}

let processes: { child: ChildProcessWithoutNullStreams; url: string }[] = [];
let stateDir = '';

beforeAll(async () => {
  realm = await startSmallRealm('fleet');
  base = await mkdtemp(join(tmpdir(), 'zmcp-fleet-http-'));
  stateDir = join(base, 'state');
  const env = {
    PATH: process.env.PATH ?? '',
    ...realm.env(stateDir, {
      HOME: join(base, 'home'),
      ZULIP_STATE_URL: await freshDatabase(),
      ZMCP_HTTP_TOKEN: token,
      ZMCP_LOG_LEVEL: 'info',
    }),
  };
  processes = await Promise.all([startProcess(env), startProcess(env)]);
  proxy = await startRoundRobinProxy(processes.map((p) => p.url));
});

afterAll(async () => {
  await proxy?.close();
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
  await realm.sim.close();
  await rm(base, { recursive: true, force: true });
});

describe('two zulip-mcp --http processes on PostgreSQL behind a round-robin proxy', () => {
  it('serve one client’s conversation across both, and across one of them killed', async () => {
    const client = new Client(
      { name: 'through-the-proxy', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    const trigger = realm.post('@**Helper Bot** is staging down?', 'fleet');
    const bound = await client.callTool({
      name: 'set_context',
      arguments: { stream: 'general', topic: 'fleet', trigger_message_id: trigger },
    });
    expect(bound.isError).toBeFalsy();
    const session = (bound.structuredContent as { session: string }).session;
    const early = realm.post('it went down at noon', 'fleet');
    const replied = await client.callTool({ name: 'reply', arguments: { content: 'Checking.', session } });
    expect(replied.structuredContent).toMatchObject({ arrived_ids: [early], session });
    // Both processes have answered: the handle's key and the session's state are in the database.
    expect([...proxy.served.values()].every((n) => n > 0)).toBe(true);

    const [killed] = processes;
    const gone = new Promise((resolve) => killed?.child.once('exit', resolve));
    killed?.child.kill('SIGKILL');
    await gone;
    const late = realm.post('back up now', 'fleet');
    const heard = await client.callTool({ name: 'listen', arguments: { timeout_seconds: 30, session } });
    expect(heard.structuredContent).toMatchObject({ status: 'messages', ids: [late], session });
    const again = await client.callTool({ name: 'reply', arguments: { content: 'Fixed.', session } });
    expect(again.isError).toBeFalsy();
    // Each reply posted once.
    const posts: string[] = [];
    for (let id = 1; id <= realm.sim.realm.maxMessageId(); id++) {
      const m = realm.sim.realm.message(id);
      if (m?.senderId === realm.botId) posts.push(m.content);
    }
    expect(posts.filter((c) => c.includes('Checking.'))).toHaveLength(1);
    expect(posts.filter((c) => c.includes('Fixed.'))).toHaveLength(1);
    await client.close();
    await expect(readdir(stateDir)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
