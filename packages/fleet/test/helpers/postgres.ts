// The test run's PostgreSQL (started once by test/setup/postgres.ts) and a schema of its own for
// each user, so test files run in parallel without seeing each other's state.
import { openStateBackend, type StateBackend } from '@zmcp/fleet';
import pg from 'pg';
import { afterAll, inject } from 'vitest';

/** The URL of the test run's database. */
export function postgresUrl(): string {
  return inject('zmcpPostgresUrl');
}

let counter = 0;

/** A schema name no other test (of this run or an earlier one on the same server) uses. */
export function uniqueSchema(prefix = 't'): string {
  counter += 1;
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${counter}`;
}

const made = new Set<string>();

/** Runs `sql` as the test database's superuser. */
export async function sql<R extends pg.QueryResultRow = pg.QueryResultRow>(
  text: string,
  values: unknown[] = [],
): Promise<pg.QueryResult<R>> {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    return await client.query<R>(text, values);
  } finally {
    await client.end();
  }
}

/**
 * Opens a PostgreSQL backend on a fresh schema (dropped after the file's tests), with short lock
 * heartbeats so a lost lock shows quickly.
 */
export async function openTestBackend(
  options: { schema?: string; dir?: string } = {},
): Promise<StateBackend & { schema: string }> {
  const schema = options.schema ?? uniqueSchema();
  made.add(schema);
  const backend = await openStateBackend({
    url: postgresUrl(),
    schema,
    dir: options.dir,
    lockHeartbeatMs: 200,
    lockHeartbeatTimeoutMs: 2_000,
  });
  return Object.assign(backend, { schema });
}

afterAll(async () => {
  for (const schema of made) await sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  made.clear();
});
