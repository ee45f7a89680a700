import { FleetError } from './errors.js';

/** The default PostgreSQL schema of the state. */
export const DEFAULT_SCHEMA = 'zmcp';

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Returns `schema` when it can name the state's PostgreSQL schema: 1-63 of `[a-z0-9_]`, not
 * starting with a digit (so it needs no quoting anywhere an operator types it).
 *
 * @throws FleetError `FLEET_INVALID_ARGUMENT`.
 */
export function parseSchemaName(schema: unknown): string {
  if (typeof schema === 'string' && SCHEMA_NAME.test(schema)) return schema;
  throw new FleetError(
    'FLEET_INVALID_ARGUMENT',
    'the state schema name must be 1-63 of lower-case letters, digits and "_", not starting with a digit',
    { details: { option: 'schema' } },
  );
}

/**
 * What a connection URL can be shown as: scheme, user, host, port and database, never the
 * password or the query (which may carry one, or a key file).
 *
 * @throws FleetError `FLEET_INVALID_ARGUMENT` for a URL that is not `postgres://` or `postgresql://`.
 */
export function describeStateUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new FleetError('FLEET_INVALID_ARGUMENT', 'the state URL is not a URL; expected postgres://…', {
      details: { option: 'url' },
    });
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new FleetError(
      'FLEET_INVALID_ARGUMENT',
      `the state URL must start with postgres:// or postgresql://, not ${JSON.stringify(parsed.protocol.slice(0, 20))}`,
      { details: { option: 'url' } },
    );
  }
  const user = parsed.username === '' ? '' : `${parsed.username}@`;
  return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}`;
}
