// What the stdio transport does with lines that are not clean JSON-RPC: a request it can name is
// always answered (never left to time out in the client), what it cannot name is dropped with a
// log line, and the session carries on either way.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SmallRealm, startSmallRealm } from './small-realm.js';
import { startStdio } from './stdio-client.js';

let realm: SmallRealm;
let stateDir = '';

beforeAll(async () => {
  realm = await startSmallRealm();
  stateDir = await mkdtemp(join(tmpdir(), 'zmcp-framing-'));
});

afterAll(async () => {
  await realm.sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

describe('stdio framing', () => {
  it('answers a request that carries members JSON-RPC does not define', async () => {
    const run = await startStdio([], realm.env(stateDir));
    const answer = run.nextOutputLine(/"id":"extra"/);
    run.transport.writeRaw('{"jsonrpc":"2.0","id":"extra","method":"ping","trace":{"span":1}}\n');
    expect(JSON.parse(await answer)).toEqual({ jsonrpc: '2.0', id: 'extra', result: {} });
    expect(await run.finish()).toBe(0);
  });

  it('answers a malformed request it can name with -32600, and serves the next one', async () => {
    const run = await startStdio([], realm.env(stateDir));
    const arrayParams = run.nextOutputLine(/"id":7\b/);
    run.transport.writeRaw('{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[1,2]}\n');
    expect(JSON.parse(await arrayParams)).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32600, message: 'Invalid request: params must be an object' },
    });
    const oldVersion = run.nextOutputLine(/"id":"v1"/);
    run.transport.writeRaw('{"jsonrpc":"1.0","id":"v1","method":"ping"}\n');
    expect(JSON.parse(await oldVersion).error).toEqual({
      code: -32600,
      message: 'Invalid request: jsonrpc must be "2.0"',
    });
    expect((await run.client.listTools()).tools.length).toBeGreaterThan(0);
    expect(await run.finish()).toBe(0);
  });

  it('drops what it cannot name with a log line and carries on', async () => {
    const run = await startStdio([], realm.env(stateDir));
    run.transport.writeRaw('not json at all\n');
    run.transport.writeRaw('[1,2,3]\n');
    run.transport.writeRaw('{"jsonrpc":"2.0","id":{"nested":true},"method":"ping"}\n');
    run.transport.writeRaw('{"jsonrpc":"2.0","id":9,"result":"not an object"}\n');
    expect((await run.client.listTools()).tools.length).toBeGreaterThan(0);
    const errors = run
      .stderr()
      .split('\n')
      .filter((line) => line.includes('MCP protocol error'));
    expect(errors.map((line) => line.replace(/^.*err="?/, '').replace(/"$/, ''))).toEqual([
      'dropped a line that is not JSON',
      'dropped a line that is not JSON-RPC: not a JSON object',
      'dropped a line that is not JSON-RPC: a request whose id is neither a string nor a number',
      'dropped a line that is not JSON-RPC: a result that is not an object',
    ]);
    expect(await run.finish()).toBe(0);
  });
});
