// Vitest global set-up of the projects whose tests need PostgreSQL (`packageProject(dir, {
// postgres: true })`): one throwaway cluster per test run, however many projects use it (they
// share it through globalThis), provided to the tests as `inject('zmcpPostgresUrl')`. Each test
// file works in a schema of its own (test/support/postgres.ts), so files run in parallel.
//
// ZMCP_TEST_PG_URL=postgres://… uses that server instead of starting one. Without it, missing
// PostgreSQL binaries fail the run with the way to install them: the tests are never skipped.
import type { TestProject } from 'vitest/node';
import { type PostgresCluster, startPostgresCluster } from '../support/postgres-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The URL of the test run's PostgreSQL database (a superuser on it). */
    zmcpPostgresUrl: string;
  }
}

interface Shared {
  users: number;
  cluster: Promise<PostgresCluster>;
}

const KEY = Symbol.for('zmcp.test.postgres');
const registry = globalThis as { [KEY]?: Shared };

export async function setup(project: TestProject): Promise<void> {
  const external = process.env.ZMCP_TEST_PG_URL;
  if (external !== undefined && external !== '') {
    project.provide('zmcpPostgresUrl', external);
    return;
  }
  let shared = registry[KEY];
  if (shared === undefined) {
    shared = { users: 0, cluster: startPostgresCluster() };
    registry[KEY] = shared;
  }
  shared.users += 1;
  try {
    project.provide('zmcpPostgresUrl', (await shared.cluster).url);
  } catch (err) {
    throw new Error(`the tests of ${project.name} need PostgreSQL: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

export async function teardown(): Promise<void> {
  const shared = registry[KEY];
  if (shared === undefined) return;
  shared.users -= 1;
  if (shared.users > 0) return;
  delete registry[KEY];
  await (await shared.cluster.catch(() => undefined))?.stop();
}
