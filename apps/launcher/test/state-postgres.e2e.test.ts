// ZULIP_STATE_URL: the triggers in PostgreSQL (workers on several machines: fleet.e2e.test.ts), no state file under the launcher's state
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

    const rows = await sql<{ launcher: string; message_id: string; status: string }>(
      'SELECT launcher, message_id, status FROM zmcp.launcher_triggers',
      [],
      url,
    );
    // The trigger is a claim row the launcher's workers share, finished when the launcher stopped.
    expect(rows.rows.map((r) => [r.launcher, Number(r.message_id), r.status])).toEqual([
      ['fleet-a', first, 'failed'],
    ]);
    // And the send-once memory of what the launcher posted (the run's status message); no record.
    const state = await sql<{ session: string; kind: string }>(
      'SELECT session, kind FROM zmcp.state',
      [],
      url,
    );
    expect(state.rows.map((r) => [r.session, r.kind])).toEqual([['outbox', 'sends']]);
    // Only the machine's own working files: the agents' logs and run folders.
    expect((await readdir(w.stateDir)).sort()).toEqual(['logs', 'runs']);
  });
});
