import type { Logger } from '@zmcp/core';
import type pg from 'pg';
import { FleetError } from './errors.js';

/** One step of the schema: plain SQL, run once, in order, inside the migration transaction. */
export interface Migration {
  readonly version: number;
  /**
   * The oldest schema version whose code still works once this step is applied: a process of an
   * older release refuses to start on a schema it cannot work with, and works on one it can.
   */
  readonly compatibleFrom: number;
  readonly description: string;
  /** Statements with unqualified names: they run with `search_path` set to the schema alone. */
  readonly sql: string;
}

/**
 * The schema, oldest first. A released step is never edited: a change is a new step. Names are
 * unqualified (the runner sets `search_path` to the configured schema).
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    compatibleFrom: 1,
    description: 'state by key, delivery locks, filters change notifications',
    sql: `
-- One row per StateKey: account ('' when the key has none), session, kind.
CREATE TABLE state (
  account    text        NOT NULL,
  session    text        NOT NULL,
  kind       text        NOT NULL CHECK (kind IN ('monitor', 'delivery', 'filters')),
  -- NULL only inside the transaction of an update that is creating the row.
  value      jsonb,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account, session, kind)
);

-- One row per key ever locked: its id names the key's advisory lock; the holder columns say
-- who holds it (written by the holder once it has the lock, for the DELIVERY_STATE_LOCKED report).
CREATE TABLE locks (
  id             integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account        text        NOT NULL,
  session        text        NOT NULL,
  kind           text        NOT NULL,
  holder_backend integer,
  holder_pid     integer,
  holder_host    text,
  holder_nonce   text,
  holder_since   timestamptz,
  UNIQUE (account, session, kind)
);

-- Every change of a filters row is announced on the channel zmcp_filters, so the processes
-- that serve the session reload it at once (an operator's UPDATE included).
CREATE FUNCTION notify_filters() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  changed record;
BEGIN
  IF TG_OP = 'DELETE' THEN changed := OLD; ELSE changed := NEW; END IF;
  PERFORM pg_notify('zmcp_filters', json_build_object(
    'schema', TG_TABLE_SCHEMA, 'account', changed.account, 'session', changed.session)::text);
  RETURN NULL;
END
$fn$;
CREATE TRIGGER filters_inserted AFTER INSERT ON state
  FOR EACH ROW WHEN (NEW.kind = 'filters') EXECUTE FUNCTION notify_filters();
CREATE TRIGGER filters_updated AFTER UPDATE ON state
  FOR EACH ROW WHEN (NEW.kind = 'filters' OR OLD.kind = 'filters') EXECUTE FUNCTION notify_filters();
CREATE TRIGGER filters_deleted AFTER DELETE ON state
  FOR EACH ROW WHEN (OLD.kind = 'filters') EXECUTE FUNCTION notify_filters();
`,
  },
];

/** The schema version this release writes. */
export const SCHEMA_VERSION = (MIGRATIONS.at(-1) as Migration).version;

/** `"name"`: a validated schema name as an SQL identifier. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * Brings `schema` up to date, creating it when missing: one transaction under an advisory lock
 * (so processes starting together migrate once), every missing step in order, each recorded in
 * `schema_version`. Returns the version the database is at.
 *
 * @throws FleetError `FLEET_SCHEMA_TOO_NEW` when a newer release wrote a schema this one cannot
 *   work with; the database's own error for anything else (the caller wraps it).
 */
export async function migrate(
  client: pg.ClientBase,
  schema: string,
  logger: Logger,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<number> {
  const latest = (migrations.at(-1) as Migration).version;
  await client.query('BEGIN');
  try {
    // The one-key form: it never meets the two-key locks the delivery lock takes.
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
      `zmcp migrations ${schema}`,
    ]);
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    // Created only when missing: an existing schema needs no CREATE right on the database.
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${quoteIdentifier(schema)}`);
    await client.query(`SET LOCAL search_path TO ${quoteIdentifier(schema)}`);
    await client.query(`
      CREATE TABLE IF NOT EXISTS schema_version (
        version         integer     PRIMARY KEY,
        compatible_from integer     NOT NULL,
        description     text        NOT NULL,
        applied_at      timestamptz NOT NULL DEFAULT now()
      )`);
    const top = await client.query<{ version: number; compatible_from: number }>(
      'SELECT version, compatible_from FROM schema_version ORDER BY version DESC LIMIT 1',
    );
    const current = top.rows[0]?.version ?? 0;
    if (current > latest) {
      const from = top.rows[0]?.compatible_from ?? current;
      if (from > latest) {
        throw new FleetError(
          'FLEET_SCHEMA_TOO_NEW',
          `the state schema ${JSON.stringify(schema)} is at version ${current}, written by a newer release; this one knows versions up to ${latest} and works only with schemas from version ${from} on: upgrade this process`,
          { details: { schema, version: current, compatibleFrom: from, known: latest } },
        );
      }
      logger.warn(
        'the state schema is newer than this release; it is compatible, so this process runs on it',
        {
          schema,
          version: current,
          known: latest,
        },
      );
    }
    for (const step of migrations) {
      if (step.version <= current) continue;
      await client.query(step.sql);
      await client.query(
        'INSERT INTO schema_version (version, compatible_from, description) VALUES ($1, $2, $3)',
        [step.version, step.compatibleFrom, step.description],
      );
      logger.info('state schema migrated', { schema, version: step.version, description: step.description });
    }
    await client.query('COMMIT');
    return Math.max(current, latest);
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
