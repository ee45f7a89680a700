// The size of one request: every inline attachment the upload limits allow gets through each
// transport, and a request beyond the limit gets a clear error while the session carries on.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/index.js';
import { barrier } from './fake-tools.js';
import { type SmallRealm, startSmallRealm } from './small-realm.js';
import { startStdio } from './stdio-client.js';

let realm: SmallRealm;
let stateDir = '';

beforeAll(async () => {
  realm = await startSmallRealm();
  stateDir = await mkdtemp(join(tmpdir(), 'zmcp-limits-'));
});

afterAll(async () => {
  await realm.sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

function env(extra: Record<string, string> = {}): Record<string, string> {
  return realm.env(stateDir, extra);
}

// 8 MB of bytes is 10.7 MB of base64: more than the 10 MiB the SDK's stdio transport takes.
const eightMegabytes = Buffer.alloc(8_000_000, 7).toString('base64');

let sends = 0;
function sendWith(data: string) {
  sends += 1;
  return {
    name: 'send_message',
    arguments: {
      stream: 'general',
      topic: 'files',
      // Text of its own each time: the same file and text again would be refused (send once).
      content: `the file, take ${sends}`,
      attachments: [{ data, name: 'big.bin', mime_type: 'application/octet-stream' }],
    },
  };
}

describe('request size over stdio', () => {
  it('carries an 8 MB inline attachment, which the upload limits allow', async () => {
    const run = await startStdio([], env());
    const result = await run.client.callTool(sendWith(eightMegabytes), { timeout: 60_000 });
    expect(result.isError).toBeFalsy();
    expect(await run.finish()).toBe(0);
  });

  it('closes the connection on a request over the limit, naming the limit in the log, and exits cleanly', async () => {
    // 1 MiB per file: at most 4 MiB inline per message, 6.3 MiB of request. The SDK's stdio
    // transport reads no message past its limit: it drops the connection, and the server stops.
    const run = await startStdio([], env({ ZULIP_UPLOAD_MAX_BYTES: '1MiB' }));
    void run.client.callTool(sendWith(eightMegabytes)).catch(() => undefined);
    expect(await run.exited).toBe(0);
    expect(run.stderr()).toMatch(/warn MCP protocol error .*exceeded maximum size of 6\d{6} bytes/);
    expect(run.stderr()).toContain('shutting down why="transport closed"');
    await run.client.close();
  });
});

describe('request size over HTTP', () => {
  async function serve(extra: Record<string, string> = {}) {
    const shutdown = new AbortController();
    const ready = barrier<string>();
    const stderr = new PassThrough();
    stderr.resume();
    const run = main(['--http', '--port', '0'], env(extra), {
      stdout: new PassThrough(),
      stderr,
      shutdown: shutdown.signal,
      onReady: (info) => ready.resolve(info.transport === 'http' ? info.url : ''),
    });
    const url = await ready.promise;
    const client = new Client({ name: 'limits', version: '0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    return {
      client,
      async stop() {
        await client.close();
        shutdown.abort();
        expect(await run).toBe(0);
      },
    };
  }

  it('carries an 8 MB inline attachment', async () => {
    const server = await serve();
    const result = await server.client.callTool(sendWith(eightMegabytes), { timeout: 60_000 });
    expect(result.isError).toBeFalsy();
    await server.stop();
  });

  it('refuses a body over the limit with 413 and a clear error, keeping the session', async () => {
    const server = await serve({ ZULIP_UPLOAD_MAX_BYTES: '1MiB' });
    await expect(server.client.callTool(sendWith(eightMegabytes))).rejects.toThrow(
      /Request too large: over the \d+-byte/,
    );
    const next = await server.client.callTool({ name: 'list_streams', arguments: {} });
    expect(next.isError).toBeFalsy();
    await server.stop();
  });
});

describe('deeply nested arguments', () => {
  function nested(depth: number): string {
    return `${'['.repeat(depth)}1${']'.repeat(depth)}`;
  }

  async function call(run: Awaited<ReturnType<typeof startStdio>>, id: number, name: string, args: string) {
    const answer = run.nextOutputLine(new RegExp(`"id":${id}[,}]`));
    run.transport.writeRaw(
      `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":${args}}}\n`,
    );
    return JSON.parse(await answer) as {
      result?: { isError?: boolean; content: { text: string }[] };
      error?: unknown;
    };
  }

  it('give a read tool an invalid-arguments tool error', async () => {
    const run = await startStdio([], env());
    const answer = await call(run, 7, 'fetch_history', `{"stream":${nested(100_000)}}`);
    expect(answer.error).toBeUndefined();
    expect(answer.result?.isError).toBe(true);
    expect(answer.result?.content[0]?.text).toMatch(/^Invalid arguments: stream/);
    expect(await run.finish()).toBe(0);
  });

  // Request de-duplication fingerprints the validated arguments, never the raw ones.
  it('give a write tool an invalid-arguments tool error, not a JSON-RPC internal error', async () => {
    const run = await startStdio([], env());
    try {
      const answer = await call(
        run,
        8,
        'send_message',
        `{"stream":"general","topic":"t","content":${nested(100_000)}}`,
      );
      expect(answer.error).toBeUndefined();
      expect(answer.result?.isError).toBe(true);
      expect(answer.result?.content[0]?.text).toMatch(/^Invalid arguments: content/);
    } finally {
      expect(await run.finish()).toBe(0);
    }
  });
});
