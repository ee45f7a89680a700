import { fileURLToPath } from 'node:url';
import { describeStateLockContract } from '../../../test/support/state-lock-contract.js';
import { describeStateStoreContract } from '../../../test/support/state-store-contract.js';
import { openTestBackend, postgresUrl } from './helpers/postgres.js';

// The contracts the file store keeps (test/support/*-contract.ts), against PostgreSQL: each test
// on a schema of its own.

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
