// ZULIP_STATE_URL: the trigger record in PostgreSQL, no state file under the launcher's state
// directory (its run files and agent logs stay on the machine).
import { readdir } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dropAfterAll, freshDatabase, sql } from '../../../test/support/postgres.js';
import { startWorld, type World } from './world.js';

dropAfterAll();

let w: World;

beforeEach(async () => {
  w = await startWorld();
});

afterEach(async () => {
  await w.close();
});

describe('zulip-agent with ZULIP_STATE_URL', () => {
  it('keeps the trigger record in PostgreSQL and no record file', async () => {
    const url = await freshDatabase();
    const launcher = await w.launch({ stateUrl: url, launcherId: 'fleet-a' });
    const first = w.mention(w.ann, 'deploy');
    await w.event('started', (e) => e.trigger.messageId === first);
    await launcher.close();

    const rows = await sql<{ session: string; kind: string; value: { [k: string]: unknown } }>(
      'SELECT session, kind, value FROM zmcp.state',
      [],
      url,
    );
    // The trigger record, and the send-once memory of what the launcher posted (the run's status
    // message): both in PostgreSQL.
    expect(rows.rows.map((r) => [r.session, r.kind]).sort()).toEqual([
      ['fleet-a', 'monitor'],
      ['outbox', 'sends'],
    ]);
    const record = rows.rows.find((r) => r.session === 'fleet-a');
    expect(JSON.stringify(record?.value)).toContain(String(first));
    // Only the machine's own working files: the agents' logs and run folders.
    expect((await readdir(w.stateDir)).sort()).toEqual(['logs', 'runs']);
  });

  it('runs one launcher per record: a second with the same id waits, and takes over when the first stops', async () => {
    const url = await freshDatabase();
    const first = await w.launch({ stateUrl: url, launcherId: 'fleet-b' });
    let secondStarted = false;
    const second = w.launch({ stateUrl: url, launcherId: 'fleet-b' }).then((l) => {
      secondStarted = true;
      return l;
    });
    const one = w.mention(w.ann, 'first');
    await w.event('started', (e) => e.trigger.messageId === one);
    // The second one waits for the record: it saw nothing, started nothing.
    expect(secondStarted).toBe(false);
    await first.close();
    const taken = await second;
    const two = w.mention(w.ann, 'second');
    await w.event('started', (e) => e.trigger.messageId === two);
    await taken.close();
    // Each trigger started once, the first one's by the first launcher only.
    expect(w.events.filter((e) => e.type === 'started').map((e) => e.trigger.messageId)).toEqual([one, two]);
  });
});
