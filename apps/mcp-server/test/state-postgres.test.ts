// ZULIP_STATE_URL: every piece of state in PostgreSQL, nothing under ZULIP_STATE_DIR, and the
// URL's password nowhere in what the server writes.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropAfterAll, freshDatabase, sql, withPassword } from '../../../test/support/postgres.js';
import { main } from '../src/index.js';
import { type SmallRealm, startSmallRealm } from './small-realm.js';
import { startStdio } from './stdio-client.js';

dropAfterAll();

const PASSWORD = 'pw-never-shown-71c3';
let realm: SmallRealm;
let base = '';

beforeAll(async () => {
  realm = await startSmallRealm('pg');
  base = await mkdtemp(join(tmpdir(), 'zmcp-pg-state-'));
});

afterAll(async () => {
  await realm.sim.close();
  await rm(base, { recursive: true, force: true });
});

describe('zulip-mcp with ZULIP_STATE_URL', () => {
  it('keeps cursors, sends, watermarks and filters in PostgreSQL and writes no state file', async () => {
    const url = withPassword(await freshDatabase(), PASSWORD);
    const stateDir = join(base, 'state');
    const env = realm.env(stateDir, {
      HOME: join(base, 'home'),
      ZULIP_STATE_URL: url,
      ZMCP_LOG_LEVEL: 'debug',
      ZULIP_CLAUDE_CHANNELS: 'true',
      ZULIP_ALLOWED_USERS: String(realm.annId),
    });
    const first = realm.post('before monitoring');
    // Claude Code channels on: the delivery engine's watermarks, lock and filters are in the database too.
    const run = await startStdio([], env);
    const started = await run.client.callTool({
      name: 'start_monitoring',
      arguments: { streams: ['general'], since_message_id: first },
    });
    expect(started.isError).toBeFalsy();
    const sent = await run.client.callTool({
      name: 'send_message',
      arguments: { stream: 'general', topic: 't', content: 'hello from PostgreSQL' },
    });
    expect(sent.isError).toBeFalsy();
    expect(await run.finish()).toBe(0);

    const rows = await stateRows(url);
    expect(new Set(rows.map((r) => r.kind))).toEqual(new Set(['monitor', 'sends', 'delivery', 'filters']));
    expect(rows.every((r) => r.account.endsWith(`@${realm.botId}`))).toBe(true);
    // The next process reads the same cursors.
    const again = await startStdio([], env);
    const listed = await again.client.callTool({ name: 'get_monitored_channels', arguments: {} });
    expect((listed.structuredContent as { streams: unknown[] }).streams).toEqual([
      expect.objectContaining({ stream_id: realm.sim.realm.stream('general')?.streamId }),
    ]);
    expect(await again.finish()).toBe(0);

    await expect(readdir(stateDir)).rejects.toMatchObject({ code: 'ENOENT' });
    for (const out of [run.stderr(), run.stdout(), again.stderr()]) expect(out).not.toContain(PASSWORD);
    expect(run.stderr()).toMatch(/state="postgres:\/\/zmcp@127\.0\.0\.1:\d+\/db_\w+#zmcp"/);
  });

  it('stops with a clear error and no password when the database cannot be reached', async () => {
    const url = `postgres://zmcp:${PASSWORD}@127.0.0.1:1/nowhere?sslmode=disable`;
    const errors: Buffer[] = [];
    const stderr = new PassThrough();
    stderr.on('data', (c: Buffer) => errors.push(c));
    const code = await main([], realm.env(join(base, 'unreachable'), { ZULIP_STATE_URL: url }), {
      stdin: new PassThrough(),
      stdout: new PassThrough(),
      stderr,
    });
    const text = Buffer.concat(errors).toString('utf8');
    expect(code).toBe(1);
    expect(text).toMatch(/FLEET_CONNECT_FAILED/);
    expect(text).toContain('postgres://zmcp@127.0.0.1:1/nowhere');
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain('sslmode');
  });

  it('refuses a state URL that is not postgres://, without echoing it', async () => {
    const errors: Buffer[] = [];
    const stderr = new PassThrough();
    stderr.on('data', (c: Buffer) => errors.push(c));
    const code = await main(
      [],
      realm.env(join(base, 'bad-url'), { ZULIP_STATE_URL: `mysql://root:${PASSWORD}@db/x` }),
      {
        stdin: new PassThrough(),
        stdout: new PassThrough(),
        stderr,
      },
    );
    const text = Buffer.concat(errors).toString('utf8');
    expect(code).toBe(2);
    expect(text).toMatch(/ZULIP_STATE_URL.*postgres:\/\//);
    expect(text).not.toContain(PASSWORD);
  });
});

async function stateRows(url: string): Promise<{ account: string; session: string; kind: string }[]> {
  return (
    await sql<{ account: string; session: string; kind: string }>(
      'SELECT account, session, kind FROM zmcp.state ORDER BY kind',
      [],
      url,
    )
  ).rows;
}
