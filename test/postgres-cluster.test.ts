// The tests' PostgreSQL set-up fails, never skips, when the server binaries are missing, and says
// how to install them; the cluster it starts runs as an unprivileged user and is gone once stopped.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findPostgresBin, INSTALL_HINT } from './support/postgres-cluster.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe('findPostgresBin', () => {
  it('fails with the way to install PostgreSQL when no binaries are found', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'zmcp-no-pg-'));
    dirs.push(empty);
    expect(() => findPostgresBin({ PATH: empty }, join(empty, 'none'))).toThrow(
      /PostgreSQL server binaries \(initdb, postgres\) were not found; install them with `apt-get install -y postgresql`/,
    );
    expect(() => findPostgresBin({ PATH: '', ZMCP_PG_BIN: empty }, join(empty, 'none'))).toThrow(
      `ZMCP_PG_BIN=${empty} holds no executable initdb and postgres; ${INSTALL_HINT}`,
    );
  });

  it('finds the binaries of this machine (Debian’s versioned directory, as CI installs them)', () => {
    const bin = findPostgresBin({ PATH: '' });
    expect(existsSync(join(bin, 'initdb'))).toBe(true);
    expect(existsSync(join(bin, 'postgres'))).toBe(true);
  });
});
