import { errorCode, type Logger, noopLogger } from '@zmcp/core';
import { DeliveryError, isDeliveryError, type StateKey, stateFileName } from '@zmcp/delivery';
import pg from 'pg';
import { FleetError, isFleetError } from './errors.js';
import { MIGRATIONS, type Migration } from './migrations.js';
import { DEFAULT_SCHEMA, describeStateUrl, parseSchemaName } from './settings.js';

/**
 * A database failure during a store operation, as the store contract reports it:
 * `DELIVERY_IO_FAILED` naming the operation and where the state is kept (never a value). A
 * `DeliveryError` (the caller's own, or a contract error) passes through unchanged.
 */
export function storeFailure(operation: string, where: string, err: unknown): Error {
  if (isDeliveryError(err) || isFleetError(err)) return err;
  const code = errorCode(err);
  const reason = err instanceof Error ? err.message : String(err);
  return new DeliveryError(
    'DELIVERY_IO_FAILED',
    `could not ${operation} ${where}: ${code === undefined ? reason : `${code} ${reason}`}`,
    {
      cause: err,
      details: { operation, file: where, ...(code === undefined ? {} : { errno: code }) },
    },
  );
}

/** A notification handler of {@link Database.onFiltersChange}: `'reconnected'` when some may have been missed. */
export type FiltersChangeHandler = (cause: 'notified' | 'reconnected') => void;

/** Options of {@link Database.open}. */
export interface DatabaseOptions {
  url: string;
  schema?: string | undefined;
  logger?: Logger | undefined;
  /** Most pooled connections. Default 10. Each held delivery lock and the change listener have one more of their own. */
  maxConnections?: number | undefined;
}

/**
 * One PostgreSQL database holding the state: a connection pool, the schema (migrated at open),
 * dedicated connections for locks, and one listener for filters changes.
 */
export class Database {
  readonly pool: pg.Pool;
  readonly schema: string;
  /** The schema quoted, for statements. */
  readonly q: string;
  /** `postgres://user@host:port/db` (no password), for messages and logs. */
  readonly target: string;
  readonly logger: Logger;
  /**
   * The first key of every advisory lock of this schema: its oid (31 bits), so two schemas in
   * one database never share a lock, and each lock's second key is a row id, so no two keys do.
   */
  readonly lockClass: number;
  readonly #config: pg.ClientConfig;
  readonly #lockIds = new Map<string, number>();
  readonly #filters = new Map<string, Set<FiltersChangeHandler>>();
  readonly #events = new Map<string, Set<() => void>>();
  readonly #broadcasts = new Map<string, Set<(message: unknown, origin: string) => void>>();
  #listener: pg.Client | undefined;
  #listening: Promise<void> | undefined;
  #reconnect: NodeJS.Timeout | undefined;
  #listenFailures = 0;
  #closed = false;

  private constructor(
    pool: pg.Pool,
    config: pg.ClientConfig,
    schema: string,
    target: string,
    logger: Logger,
    lockClass: number,
  ) {
    this.pool = pool;
    this.#config = config;
    this.schema = schema;
    this.q = quoteIdentifier(schema);
    this.target = target;
    this.logger = logger;
    this.lockClass = lockClass;
  }

  /**
   * Connects, migrates the schema and returns the database.
   *
   * @throws FleetError `FLEET_INVALID_ARGUMENT` (URL, schema), `FLEET_CONNECT_FAILED`, `FLEET_SCHEMA_TOO_NEW`.
   */
  static async open(options: DatabaseOptions): Promise<Database> {
    const target = describeStateUrl(options.url);
    const schema = parseSchemaName(options.schema ?? DEFAULT_SCHEMA);
    const logger = options.logger ?? noopLogger;
    const config: pg.ClientConfig = {
      connectionString: options.url,
      application_name: 'zmcp',
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: 15_000,
    };
    const pool = new pg.Pool({ ...config, max: options.maxConnections ?? 10, idleTimeoutMillis: 30_000 });
    // An idle pooled connection that breaks is dropped by the pool; without a listener it would crash the process.
    pool.on('error', (err) =>
      logger.warn('a pooled state connection failed; it is replaced', { code: errorCode(err) }),
    );
    try {
      const client = await pool.connect();
      let lockClass: number;
      try {
        await migrate(client, schema, logger);
        const oid = await client.query<{ oid: string }>(
          'SELECT oid::text AS oid FROM pg_namespace WHERE nspname = $1',
          [schema],
        );
        lockClass = Number(oid.rows[0]?.oid) & 0x7fffffff;
      } finally {
        client.release();
      }
      return new Database(pool, config, schema, target, logger, lockClass);
    } catch (err) {
      await pool.end().catch(() => undefined);
      if (isFleetError(err)) throw err;
      const code = errorCode(err);
      throw new FleetError(
        'FLEET_CONNECT_FAILED',
        `could not open the state database ${target} (schema ${schema}): ${code === undefined ? '' : `${code} `}${err instanceof Error ? err.message : String(err)}`,
        { cause: err, details: { target, schema, ...(code === undefined ? {} : { errno: code }) } },
      );
    }
  }

  /** Where `key` is kept, for messages: `postgres://…/db#zmcp/<account>/<session>.delivery.json`. */
  locationOf(key: StateKey): string {
    return `${this.target}#${this.schema}/${stateFileName(key)}`;
  }

  /** Where the state of this database is kept, for messages. */
  get location(): string {
    return `${this.target}#${this.schema}`;
  }

  /** A connection of its own (not pooled), for a session-level lock or LISTEN. The caller ends it. */
  async connectDedicated(): Promise<pg.Client> {
    const client = new pg.Client(this.#config);
    // A failure while no query runs is an 'error' event; unheard, it would end the process. The
    // holder adds its own handler; queries in flight reject on their own.
    client.on('error', () => undefined);
    await client.connect();
    return client;
  }

  /** The row id naming `key`'s lock, created on first use. */
  async lockId(key: StateKey): Promise<number> {
    const name = stateFileName(key);
    const known = this.#lockIds.get(name);
    if (known !== undefined) return known;
    const params = [key.account ?? '', key.session, key.kind];
    // A key inserted by a transaction that commits after this statement's snapshot is seen on the next try.
    for (let attempt = 0; attempt < 5; attempt++) {
      const result = await this.pool.query<{ id: number }>(
        `WITH made AS (
           INSERT INTO ${this.q}.locks (account, session, kind) VALUES ($1, $2, $3)
           ON CONFLICT (account, session, kind) DO NOTHING RETURNING id)
         SELECT id FROM made UNION ALL
         SELECT id FROM ${this.q}.locks WHERE account = $1 AND session = $2 AND kind = $3`,
        params,
      );
      const id = result.rows[0]?.id;
      if (id !== undefined) {
        this.#lockIds.set(name, id);
        return id;
      }
    }
    throw new Error(`no lock row for ${name}`);
  }

  /**
   * Calls `handler` whenever the filters row of `(account, session)` may have changed: on its
   * notification, and after the listening connection was lost and regained. Returns the
   * unsubscribe function. The listener connects on first use.
   */
  onFiltersChange(account: string, session: string, handler: FiltersChangeHandler): () => void {
    return this.#addHandler(this.#filters, `${account}\n${session}`, handler);
  }

  /**
   * Calls `handler` whenever events of `account` may have been logged (`zmcp_events`), and
   * after the listening connection was lost and regained. Returns the unsubscribe function.
   */
  onEventsLogged(account: string, handler: () => void): () => void {
    return this.#addHandler(this.#events, account, handler);
  }

  /**
   * Calls `handler` with every message broadcast on `topic` (`zmcp_broadcast`) by any process,
   * with the publisher's origin. Returns the unsubscribe function.
   */
  onBroadcast(topic: string, handler: (message: unknown, origin: string) => void): () => void {
    return this.#addHandler(this.#broadcasts, topic, handler);
  }

  /** Adds `handler` to the set of `key` in `handlers` and starts the listener; returns the removal. */
  #addHandler<H>(handlers: Map<string, Set<H>>, key: string, handler: H): () => void {
    let set = handlers.get(key);
    if (set === undefined) {
      set = new Set();
      handlers.set(key, set);
    }
    set.add(handler);
    this.#startListening();
    return () => {
      const current = handlers.get(key);
      current?.delete(handler);
      if (current?.size === 0) handlers.delete(key);
    };
  }

  /** Resolves once the listener is connected (or has failed its first attempt). */
  async listening(): Promise<void> {
    await this.#listening;
  }

  #startListening(): void {
    if (this.#listener !== undefined || this.#listening !== undefined || this.#closed) return;
    this.#listening = this.#listen().finally(() => {
      this.#listening = undefined;
    });
  }

  async #listen(): Promise<void> {
    let client: pg.Client | undefined;
    try {
      client = await this.connectDedicated();
      const c = client;
      c.on('error', (err) => this.#lostListener(c, err));
      c.on('end', () => this.#lostListener(c, undefined));
      c.on('notification', (message) => {
        if (message.channel === 'zmcp_events') this.#eventsLogged(message.payload);
        else if (message.channel === 'zmcp_broadcast') this.#broadcast(message.payload);
        else this.#notified(message.payload);
      });
      await c.query('LISTEN zmcp_filters; LISTEN zmcp_events; LISTEN zmcp_broadcast');
      if (this.#closed) {
        await c.end().catch(() => undefined);
        return;
      }
      const wasLost = this.#listenFailures > 0;
      this.#listener = c;
      this.#listenFailures = 0;
      // Changes made while nobody listened: every plane reads its row again.
      if (wasLost) this.#dispatchAll('reconnected');
    } catch (err) {
      await client?.end().catch(() => undefined);
      this.#lostListener(client, err);
    }
  }

  #lostListener(client: pg.Client | undefined, err: unknown): void {
    if (client !== undefined && this.#listener !== undefined && this.#listener !== client) return;
    this.#listener = undefined;
    if (this.#closed || this.#reconnect !== undefined) return;
    this.#listenFailures += 1;
    this.logger.warn('the change listener (filters, events) lost its connection; reconnecting', {
      code: errorCode(err),
      failures: this.#listenFailures,
    });
    const delay = Math.min(10_000, 250 * 2 ** Math.min(this.#listenFailures - 1, 6));
    this.#reconnect = setTimeout(() => {
      this.#reconnect = undefined;
      this.#startListening();
    }, delay);
    this.#reconnect.unref();
  }

  /**
   * A notification's payload when it is of this schema and each of `fields` is a string;
   * undefined for anything else (another schema's, or not JSON).
   */
  #payload<F extends string>(
    payload: string | undefined,
    ...fields: F[]
  ): (Record<F, string> & Record<string, unknown>) | undefined {
    let parsed: unknown;
    try {
      parsed = JSON.parse(payload ?? '');
    } catch {
      return undefined;
    }
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const record = parsed as Record<string, unknown>;
    if (record.schema !== this.schema || !fields.every((field) => typeof record[field] === 'string'))
      return undefined;
    return record as Record<F, string> & Record<string, unknown>;
  }

  #notified(payload: string | undefined): void {
    const parsed = this.#payload(payload, 'account', 'session');
    if (parsed === undefined) return;
    for (const handler of this.#filters.get(`${parsed.account}\n${parsed.session}`) ?? [])
      handler('notified');
  }

  #dispatchAll(cause: 'reconnected'): void {
    for (const set of this.#filters.values()) for (const handler of set) handler(cause);
    for (const set of this.#events.values()) for (const handler of set) handler();
  }

  #broadcast(payload: string | undefined): void {
    const parsed = this.#payload(payload, 'topic', 'origin');
    if (parsed === undefined) return;
    for (const handler of this.#broadcasts.get(parsed.topic) ?? []) handler(parsed.message, parsed.origin);
  }

  #eventsLogged(payload: string | undefined): void {
    const parsed = this.#payload(payload, 'account');
    if (parsed === undefined) return;
    for (const handler of this.#events.get(parsed.account) ?? []) handler();
  }

  /** Ends the listener and the pool. Dedicated lock connections are their holders' to end. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#reconnect !== undefined) clearTimeout(this.#reconnect);
    await this.#listening;
    const listener = this.#listener;
    this.#listener = undefined;
    await listener?.end().catch(() => undefined);
    await this.pool.end();
  }
}

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
