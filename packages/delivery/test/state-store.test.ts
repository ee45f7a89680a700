import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileStateStore, MemoryStateStore } from '@zmcp/delivery';
import { describeStateStoreContract } from '../../../test/support/state-store-contract.js';

// The contract every StateStore keeps (test/support/state-store-contract.ts), run against both
// implementations of this package; @zmcp/fleet runs it against PostgreSQL.

describeStateStoreContract(
  'MemoryStateStore',
  async () => ({ store: new MemoryStateStore(), done: async () => undefined }),
  {
    shared: false,
  },
);

describeStateStoreContract(
  'FileStateStore',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'zmcp-delivery-store-'));
    const state = join(dir, 'state');
    return {
      store: new FileStateStore({ dir: state }),
      another: () => new FileStateStore({ dir: state }),
      done: () => rm(dir, { recursive: true }),
    };
  },
  { shared: true },
);
