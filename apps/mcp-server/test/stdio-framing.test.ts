// What the SDK's stdio transport (the one zulip-mcp serves stdio with) does with lines that are not
// clean JSON-RPC: a line that is not JSON is skipped; a message its JSON-RPC schema refuses (a
// member JSON-RPC does not define, params that are not an object, another jsonrpc version) is
// dropped unanswered, with one short log line; the session carries on in both eras.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SmallRealm, startSmallRealm } from './small-realm.js';
import { type ClientMode, startStdio } from './stdio-client.js';

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

describe.each<[string, ClientMode]>([
  ['2025', 'legacy'],
  ['2026', { pin: '2026-07-28' }],
])('stdio framing, %s era', (_era, mode) => {
  it('drops what its schema refuses with one log line each, answers nothing for it, and carries on', async () => {
    const run = await startStdio([], realm.env(stateDir), mode);
    run.transport.writeRaw('not json at all\n');
    run.transport.writeRaw('{"jsonrpc":"2.0","id":"extra","method":"ping","trace":{"span":1}}\n');
    run.transport.writeRaw('{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[1,2]}\n');
    run.transport.writeRaw('{"jsonrpc":"1.0","id":"v1","method":"ping"}\n');
    run.transport.writeRaw('[1,2,3]\n');
    // A request after them is answered: the session carries on.
    expect((await run.client.listTools()).tools.length).toBeGreaterThan(0);
    const errors = run
      .stderr()
      .split('\n')
      .filter((line) => line.includes('MCP protocol error'));
    expect(errors).toHaveLength(4);
    expect(errors.join('\n')).toMatch(
      /err="dropped a message that is not valid JSON-RPC: \(message\): Unrecognized key: \\"trace\\""/,
    );
    expect(errors.join('\n')).toContain(
      'err="dropped a message that is not valid JSON-RPC: params: Invalid input: expected object, received array"',
    );
    expect(errors.join('\n')).toContain(
      'err="dropped a message that is not valid JSON-RPC: jsonrpc: Invalid input: expected \\"2.0\\""',
    );
    // The dropped requests were never answered: the client waits out its own timeout for such a one.
    expect(run.stdout()).not.toMatch(/"id":("extra"|7|"v1")[,}]/);
    expect(await run.finish()).toBe(0);
  });
});
