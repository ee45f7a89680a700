// Each HTTP session has read cursors of its own: no client can see, consume or stop another's.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/index.js';
import { barrier } from './fake-tools.js';

let sim: ZulipSim;
let ann = 0;
let botId = 0;
let stateDir = '';

beforeAll(async () => {
  sim = await startZulipSim({
    rateLimit: false,
    seed(realm) {
      ann = realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' }).userId;
      botId = realm.addUser({ fullName: 'Helper Bot', email: 'helper@example.test', isBot: true }).userId;
      realm.addStream({ name: 'general', subscribers: [ann, botId] });
    },
  });
  stateDir = await mkdtemp(join(tmpdir(), 'zmcp-http-sessions-'));
});

afterAll(async () => {
  await sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

function post(content: string): number {
  return sim.realm.sendMessage({ senderId: ann, type: 'stream', stream: 'general', topic: 't', content });
}

type Structured = { streams?: { stream: string }[]; messages?: { id: number }[] };

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Structured> {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError).toBeFalsy();
  return result.structuredContent as Structured;
}

describe('HTTP sessions', () => {
  it('have read cursors of their own', async () => {
    const { site, email, apiKey } = sim.credentials(botId);
    const shutdown = new AbortController();
    const ready = barrier<string>();
    const stderr = new PassThrough();
    const logs: Buffer[] = [];
    stderr.on('data', (chunk: Buffer) => logs.push(chunk));
    const run = main(
      ['--http', '--port', '0'],
      {
        HOME: stateDir,
        ZULIP_STATE_DIR: stateDir,
        ZULIP_REALM: site,
        ZULIP_EMAIL: email,
        ZULIP_API_KEY: apiKey,
      },
      {
        stdout: new PassThrough(),
        stderr,
        shutdown: shutdown.signal,
        onReady: (info) => ready.resolve(info.transport === 'http' ? info.url : ''),
      },
    );
    const url = new URL(await ready.promise);
    const a = new Client({ name: 'a', version: '0' });
    const b = new Client({ name: 'b', version: '0' });
    const aTransport = new StreamableHTTPClientTransport(url);
    await a.connect(aTransport);
    await b.connect(new StreamableHTTPClientTransport(url));

    const first = post('before');
    await call(a, 'start_monitoring', { streams: ['general'], since_message_id: first - 1 });
    // b sees nothing of a's monitor, and its own does not touch a's.
    expect((await call(b, 'get_monitored_channels')).streams).toEqual([]);
    await call(b, 'start_monitoring', { streams: ['general'], since_message_id: first - 1 });
    expect((await call(b, 'get_unread_messages')).messages?.map((m) => m.id)).toEqual([first]);
    await call(b, 'stop_monitoring', { streams: ['general'] });
    // a's cursor neither moved nor stopped.
    expect((await call(a, 'get_monitored_channels')).streams?.map((s) => s.stream)).toEqual(['general']);
    expect((await call(a, 'get_unread_messages')).messages?.map((m) => m.id)).toEqual([first]);

    const id = aTransport.sessionId as string;
    await a.close();
    await b.close();
    shutdown.abort();
    expect(await run).toBe(0);
    expect(Buffer.concat(logs).toString('utf8')).not.toContain(id);
  });
});
