import { fileURLToPath } from 'node:url';
import { describeFiltersPlaneContract } from '../../../test/support/filters-plane-contract.js';
import { dropAfterAll, openTestBackend, postgresUrl, sql } from '../../../test/support/postgres.js';
import { describeStateLockContract } from '../../../test/support/state-lock-contract.js';
import { describeStateStoreContract } from '../../../test/support/state-store-contract.js';

// The contracts the file store keeps (test/support/*-contract.ts), against PostgreSQL: each test
// on a schema of its own.

dropAfterAll();

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const holderScript = fileURLToPath(new URL('./fixtures/lock-holder.ts', import.meta.url));

describeStateStoreContract(
  'PostgresStateStore',
  async () => {
    const backend = await openTestBackend();
    const others: { close(): Promise<void> }[] = [];
    return {
      store: backend.store,
      another: async () => {
        const other = await openTestBackend({ schema: backend.schema });
        others.push(other);
        return other.store;
      },
      done: async () => {
        for (const other of others) await other.close();
        await backend.close();
      },
    };
  },
  { shared: true },
);

describeStateLockContract('PostgresStateStore', async () => {
  const backend = await openTestBackend();
  return {
    store: backend.store,
    holder: (session) => ({
      command: process.execPath,
      args: [
        '--import',
        'tsx',
        '--conditions',
        '@zmcp/source',
        holderScript,
        postgresUrl(),
        backend.schema,
        session,
      ],
      cwd: packageDir,
    }),
    done: () => backend.close(),
  };
});

describeFiltersPlaneContract('PostgresFiltersPlane', async () => {
  const backend = await openTestBackend();
  const key = { account: 'chat.example.com@42', session: 'my-agent', kind: 'filters' } as const;
  const where = { account: key.account, session: key.session };
  return {
    // `quiet` has nothing to slow down here: a notification arrives when it arrives, and the
    // update re-reads the row under its row lock all the same.
    open: ({ seed, baseline } = {}) =>
      backend.openFilters({ ...where, seed, baseline, pollIntervalMs: 600_000 }),
    // What the README tells an operator to run.
    write: async (document) => {
      await sql(
        `INSERT INTO "${backend.schema}".state (account, session, kind, value) VALUES ($1, $2, 'filters', $3)
         ON CONFLICT (account, session, kind) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
        [key.account, key.session, JSON.stringify(document)],
      );
    },
    remove: async () => {
      await sql(
        `DELETE FROM "${backend.schema}".state WHERE account = $1 AND session = $2 AND kind = 'filters'`,
        [key.account, key.session],
      );
    },
    read: async () => {
      const result = await sql<{ value: unknown }>(
        `SELECT value FROM "${backend.schema}".state WHERE account = $1 AND session = $2 AND kind = 'filters'`,
        [key.account, key.session],
      );
      return result.rows[0]?.value;
    },
    location: backend.locationOf(key),
    done: () => backend.close(),
  };
});
