// The console's "owner" of the bot's event queue: read from the fleet's database.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ZulipClient } from '@zmcp/core';
import { stateAccount } from '@zmcp/delivery';
import { openStateBackend } from '@zmcp/fleet';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropAfterAll, openTestBackend, sql, uniqueSchema } from '../../../test/support/postgres.js';
import { watchQueueOwner } from '../src/index.js';

dropAfterAll();

let sim: ZulipSim;
let bot = 0;

beforeAll(async () => {
  sim = await startZulipSim({ rateLimit: false });
  bot = sim.realm.addUser({ fullName: 'Helper Bot', email: 'helper@example.test', isBot: true }).userId;
});

afterAll(async () => {
  await sim.close();
});

describe('watchQueueOwner', () => {
  it('names this process, another one, or nobody, as the database says', async () => {
    const schema = uniqueSchema();
    const backend = await openTestBackend({ schema });
    const client = new ZulipClient({ ...sim.credentials(bot), timeoutMs: 5_000 });
    const account = stateAccount({ site: sim.url, userId: bot });
    const watch = watchQueueOwner({ backend, account });
    try {
      expect(await watch.refresh()).toMatch(/^nobody/);
      const reader = await backend.events?.source(client, account)({ eventTypes: ['message'] });
      expect(await watch.refresh()).toBe('this process');
      expect(watch.label()).toBe('this process');
      // As another machine's process would have recorded itself.
      await sql(`UPDATE "${schema}".event_queues SET owner_pid = 1, owner_host = 'web-2'`);
      expect(await watch.refresh()).toBe('pid 1 on web-2');
      await reader?.close();
    } finally {
      watch.close();
      await client.close();
      await backend.close();
    }
  });

  it('says this process on files, where each engine polls its own queue', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'zmcp-owner-'));
    const backend = await openStateBackend({ dir });
    const watch = watchQueueOwner({ backend, account: 'x@1' });
    expect(await watch.refresh()).toBe('this process');
    watch.close();
    await backend.close();
    await rm(dir, { recursive: true, force: true });
  });
});
