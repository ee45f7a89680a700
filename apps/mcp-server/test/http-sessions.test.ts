// Each HTTP session has read cursors of its own: no client can see, consume or stop another's.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/index.js';
import { barrier } from './fake-tools.js';
import { type SmallRealm, startSmallRealm } from './small-realm.js';

let realm: SmallRealm;
let stateDir = '';

beforeAll(async () => {
  realm = await startSmallRealm();
  stateDir = await mkdtemp(join(tmpdir(), 'zmcp-http-sessions-'));
});

afterAll(async () => {
  await realm.sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

type Structured = { streams?: { stream_id: number | null }[]; ids?: number[] };

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Structured> {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError).toBeFalsy();
  return result.structuredContent as Structured;
}

describe('HTTP sessions', () => {
  it('have read cursors of their own', async () => {
    const shutdown = new AbortController();
    const ready = barrier<string>();
    const stderr = new PassThrough();
    const logs: Buffer[] = [];
    stderr.on('data', (chunk: Buffer) => logs.push(chunk));
    const run = main(['--http', '--port', '0'], realm.env(stateDir), {
      stdout: new PassThrough(),
      stderr,
      shutdown: shutdown.signal,
      onReady: (info) => ready.resolve(info.transport === 'http' ? info.url : ''),
    });
    const url = new URL(await ready.promise);
    const a = new Client({ name: 'a', version: '0' });
    const b = new Client({ name: 'b', version: '0' });
    const aTransport = new StreamableHTTPClientTransport(url);
    await a.connect(aTransport);
    await b.connect(new StreamableHTTPClientTransport(url));

    const first = realm.post('before');
    await call(a, 'start_monitoring', { streams: ['general'], since_message_id: first - 1 });
    // b sees nothing of a's monitor, and its own does not touch a's.
    expect((await call(b, 'get_monitored_channels')).streams).toEqual([]);
    await call(b, 'start_monitoring', { streams: ['general'], since_message_id: first - 1 });
    expect((await call(b, 'get_unread_messages')).ids).toEqual([first]);
    await call(b, 'stop_monitoring', { streams: ['general'] });
    // a's cursor neither moved nor stopped.
    expect((await call(a, 'get_monitored_channels')).streams?.map((s) => s.stream_id)).toEqual([
      realm.sim.realm.stream('general')?.streamId,
    ]);
    expect((await call(a, 'get_unread_messages')).ids).toEqual([first]);

    const id = aTransport.sessionId as string;
    await a.close();
    await b.close();
    shutdown.abort();
    expect(await run).toBe(0);
    expect(Buffer.concat(logs).toString('utf8')).not.toContain(id);
  });
});
