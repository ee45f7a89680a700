// ZULIP_STATE_URL: the watermarks, the delivery lock and the filters in PostgreSQL, nothing
// under ZULIP_STATE_DIR, the URL's password nowhere in what the server writes.
import { readdir } from 'node:fs/promises';
import { PassThrough } from 'node:stream';
import { connectTcp, McplHost } from '@zmcp/mcpl';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dropAfterAll, freshDatabase, sql, withPassword } from '../../../test/support/postgres.js';
import { main } from '../src/main.js';
import { FULL_GRANT, type Realm, startRealm } from './world.js';

dropAfterAll();

const PASSWORD = 'pw-never-shown-5e02';
let realm: Realm;

beforeEach(async () => {
  realm = await startRealm();
});

afterEach(async () => {
  await realm.close();
});

function collect(): { stream: PassThrough; text(): string } {
  const stream = new PassThrough();
  let text = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    text += chunk;
  });
  return { stream, text: () => text };
}

describe('zulip-mcpl with ZULIP_STATE_URL', () => {
  it('delivers through the shared event queue, what came while nobody listened included, writing no state file', async () => {
    const url = withPassword(await freshDatabase(), PASSWORD);
    const env = { ...realm.env, ZULIP_STATE_URL: url, ZMCP_LOG_LEVEL: 'debug' };
    const shutdown = new AbortController();
    const err = collect();
    let port!: number;
    let exited!: Promise<number>;
    await new Promise<void>((resolve) => {
      exited = main(['--tcp', '0'], env, {
        shutdown: shutdown.signal,
        stderr: err.stream,
        onReady: (info) => {
          if (info.transport === 'tcp') port = info.port;
          resolve();
        },
      });
    });
    const first = await McplHost.connect(await connectTcp({ port }), { name: 'pg-host', version: '1' });
    const firstPush = new Promise<string>((resolve) =>
      first.on('push', (e) => resolve(JSON.stringify(e.payload))),
    );
    const registered = new Promise<void>((resolve) => first.on('channels', () => resolve()));
    await first.setPolicy({ effectiveCapabilities: [...FULL_GRANT] });
    await registered;
    const live = realm.say('random', 'live @**Helper Bot**');
    expect(await firstPush).toContain(`id=${live}]`);
    await first.close();

    const missed = realm.say('random', 'while nobody listened @**Helper Bot**');
    const second = await McplHost.connect(await connectTcp({ port }), { name: 'pg-host', version: '1' });
    const pushes: string[] = [];
    const caughtUp = new Promise<void>((resolve) =>
      second.on('push', (e) => {
        pushes.push(JSON.stringify(e.payload));
        if (pushes.some((p) => p.includes(`id=${missed}]`))) resolve();
      }),
    );
    await second.setPolicy({ effectiveCapabilities: [...FULL_GRANT] });
    await caughtUp;
    // The engines of both connections read the one Zulip queue the database shares for the bot.
    expect(realm.sim.queues(realm.bot)).toHaveLength(1);
    await second.close();
    shutdown.abort();
    expect(await exited).toBe(0);

    const kinds = await sql<{ kind: string }>('SELECT DISTINCT kind FROM zmcp.state ORDER BY kind', [], url);
    expect(kinds.rows.map((r) => r.kind)).toEqual(['delivery', 'filters']);
    expect(await readdir(realm.stateDir)).toEqual([]);
    expect(err.text()).toContain('filters in force');
    expect(err.text()).not.toContain(PASSWORD);
  });

  it('refuses ZULIP_FILTERS_FILE beside ZULIP_STATE_URL', async () => {
    const err = collect();
    const url = withPassword(await freshDatabase(), PASSWORD);
    const code = await main(
      [],
      { ...realm.env, ZULIP_STATE_URL: url, ZULIP_FILTERS_FILE: '/tmp/filters.json' },
      { stderr: err.stream, stdin: new PassThrough(), stdout: new PassThrough() },
    );
    expect(code).toBe(2);
    expect(err.text()).toContain('ZULIP_FILTERS_FILE: must stay unset with ZULIP_STATE_URL');
    expect(err.text()).not.toContain(PASSWORD);
  });
});
