// The test run's PostgreSQL (started once by test/setup/postgres.ts) and a schema of its own for
// each user, so test files run in parallel without seeing each other's state.
import { type EventHubOptions, openStateBackend, type StateBackend } from '@zmcp/fleet';
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

/** Runs `sql` as the test database's superuser (on the database of `url`, default the test database). */
export async function sql<R extends pg.QueryResultRow = pg.QueryResultRow>(
  text: string,
  values: unknown[] = [],
  url: string = postgresUrl(),
): Promise<pg.QueryResult<R>> {
  const client = new pg.Client({ connectionString: url });
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
  options: { schema?: string; dir?: string; events?: EventHubOptions } = {},
): Promise<StateBackend & { schema: string }> {
  const schema = options.schema ?? uniqueSchema();
  made.add(schema);
  const backend = await openStateBackend({
    url: postgresUrl(),
    schema,
    dir: options.dir,
    lockHeartbeatMs: 200,
    lockHeartbeatTimeoutMs: 2_000,
    events: options.events,
  });
  return Object.assign(backend, { schema });
}

const databases = new Set<string>();

/** A database of its own on the test server (dropped after the file's tests), as a URL. */
export async function freshDatabase(): Promise<string> {
  const database = uniqueSchema('db');
  await sql(`CREATE DATABASE ${database}`);
  databases.add(database);
  const url = new URL(postgresUrl());
  url.pathname = `/${database}`;
  return url.href;
}

/**
 * Drops, after the calling file's tests, the schemas and databases they made (the server is
 * thrown away at the end of the run, but ZMCP_TEST_PG_URL may name one that is not). Call it at
 * the top of every test file that uses this helper: files share the module (isolate: false).
 */
export function dropAfterAll(): void {
  afterAll(async () => {
    for (const schema of made) await sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    made.clear();
    for (const database of databases) await sql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    databases.clear();
  });
}

/**
 * `url` with a password in it. The test server trusts every local connection, so the password is
 * never checked: a test gives one only to see that no log, error or output shows it.
 */
export function withPassword(url: string, password: string): string {
  const parsed = new URL(url);
  parsed.password = password;
  return parsed.href;
}
