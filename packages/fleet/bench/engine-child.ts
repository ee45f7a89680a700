// One delivery engine in a process of its own, for the failover figure: it opens the state
// (PostgreSQL with the bot's shared event queue, or files), waits for the session's lock, and
// tells the parent every message it delivers. The parent kills it with SIGKILL.
import { AccessPolicy, ZulipClient } from '@zmcp/core';
import { DeliveryEngine, MemoryFiltersPlane, stateAccount } from '@zmcp/delivery';
import { openStateBackend } from '../src/index.js';

interface Config {
  credentials: { site: string; email: string; apiKey: string };
  url?: string;
  schema?: string;
  dir?: string;
  open: string[];
}

process.once('message', async (raw) => {
  const config = raw as Config;
  const client = new ZulipClient({ ...config.credentials, timeoutMs: 30_000 });
  const backend = await openStateBackend({
    url: config.url,
    schema: config.schema,
    dir: config.dir,
    events: { electionIntervalMs: 500, pollIntervalMs: 1_000 },
  });
  const me = await client.getOwnUser();
  const account = stateAccount({ site: client.site, userId: me.user_id });
  const engine = new DeliveryEngine({
    client,
    policy: new AccessPolicy({ readOnly: false }),
    store: backend.store,
    account,
    session: 'failover',
    filters: new MemoryFiltersPlane({}),
    events: backend.events?.source(client, account),
    lockRetryMaxMs: 1_000,
    recentDms: 0,
    sink: {
      incoming: async (batch) => {
        process.send?.({ t: 'delivered', ids: batch.items.map((i) => i.messageId) });
        return { kind: 'answered', accepted: batch.items.map((i) => i.id) };
      },
      // What a restart catches up comes as a block: its messages count as delivered too.
      push: async (event) => {
        process.send?.({ t: 'delivered', ids: event.items.map((i) => i.messageId) });
        return { kind: 'answered', accepted: true };
      },
    },
  });
  process.send?.({ t: 'opened' });
  await engine.start({ open: config.open, waitForLock: true });
  process.send?.({ t: 'started' });
});
process.on('disconnect', () => process.exit(0));
