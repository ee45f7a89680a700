import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { errorCode } from '@zmcp/core';
import {
  checkNewState,
  DeliveryError,
  decodeState,
  encodeState,
  KeyedMutex,
  type StateKey,
  stateFileName,
} from '@zmcp/delivery';
import type pg from 'pg';
import type { ZodType } from 'zod';
import { type Database, storeFailure } from './database.js';
import type { PostgresLockOptions, PostgresStateLock, PostgresStateStore } from './postgres-types.js';

/** Who holds a lock, as far as the lock table can tell (nothing when its row does not name the holder's connection). */
interface Holder {
  pid?: number;
  host?: string;
  since?: string;
}

/** How long `lock` waits for the server to free the lock of a holder on this host that is gone. */
const DEAD_HOLDER_WAIT_MS = 3_000;

/** False only when no process `pid` runs on this host. */
function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errorCode(err) === 'EPERM';
  }
}

interface Held {
  readonly client: pg.Client;
  readonly controller: AbortController;
  readonly where: string;
}

// The server closes a lock connection whose peer is gone after idle + interval x count seconds.
const SERVER_KEEPALIVE = [
  'SET tcp_keepalives_idle = 5',
  'SET tcp_keepalives_interval = 5',
  'SET tcp_keepalives_count = 3',
];

/** The `StateStore` of a PostgreSQL backend (see {@link PostgresStateStore}). */
export class PgStateStore implements PostgresStateStore {
  readonly #db: Database;
  readonly #queue = new KeyedMutex();
  readonly #held = new Map<string, Held>();
  readonly #lockOptions: Required<{ [K in keyof PostgresLockOptions]-?: number }>;

  /** @internal Built by `openStateBackend`. */
  constructor(db: Database, lockOptions: PostgresLockOptions = {}) {
    this.#db = db;
    this.#lockOptions = {
      heartbeatMs: lockOptions.heartbeatMs ?? 2_000,
      heartbeatTimeoutMs: lockOptions.heartbeatTimeoutMs ?? 5_000,
    };
  }

  /**
   * Where `key` is kept, for messages: `postgres://user@host:port/db#<schema>/<file name>`.
   *
   * @throws DeliveryError `DELIVERY_INVALID_SESSION_ID`; `DELIVERY_INVALID_ARGUMENT`.
   */
  locationOf(key: StateKey): string {
    return this.#db.locationOf(key);
  }

  /**
   * The stored value validated by `schema`, or `undefined` when none.
   *
   * @throws DeliveryError `DELIVERY_STATE_CORRUPT`; `DELIVERY_IO_FAILED`; `DELIVERY_INVALID_SESSION_ID`.
   */
  async read<T>(key: StateKey, schema: ZodType<T>): Promise<T | undefined> {
    const name = stateFileName(key);
    const where = this.#db.locationOf(key);
    return this.#queue.run(name, async () => {
      let text: string | null | undefined;
      try {
        const result = await this.#db.pool.query<{ value: string | null }>(
          `SELECT value::text AS value FROM ${this.#db.q}.state WHERE account = $1 AND session = $2 AND kind = $3`,
          params(key),
        );
        text = result.rows[0]?.value;
      } catch (err) {
        throw storeFailure('read', where, err);
      }
      return text === undefined || text === null ? undefined : decodeState(text, schema, where);
    });
  }

  /**
   * Replaces the stored value in one statement.
   *
   * @throws DeliveryError `DELIVERY_INVALID_ARGUMENT` for a value JSON (or PostgreSQL's jsonb,
   *   which cannot hold U+0000) cannot carry; `DELIVERY_STATE_LOCKED` when this store's lock on
   *   the key was lost; `DELIVERY_IO_FAILED`; `DELIVERY_INVALID_SESSION_ID`.
   */
  async write<T>(key: StateKey, value: T): Promise<void> {
    const name = stateFileName(key);
    const where = this.#db.locationOf(key);
    const text = encodeState(key, value);
    await this.#queue.run(name, async () => {
      const held = this.#heldFor(name);
      try {
        await (held?.client ?? this.#db.pool).query(
          `INSERT INTO ${this.#db.q}.state (account, session, kind, value) VALUES ($1, $2, $3, $4::jsonb)
           ON CONFLICT (account, session, kind) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
          [...params(key), text],
        );
      } catch (err) {
        throw valueFailure('write', key, where, err);
      }
    });
  }

  /**
   * Reads, transforms with `fn`, validates and writes, in one transaction that holds the key's
   * row lock: updates of one key are serialized across processes. Returning `prev` itself
   * writes nothing; a throwing `fn` or a result failing `schema` rolls back.
   *
   * @throws DeliveryError `DELIVERY_STATE_CORRUPT`; `DELIVERY_INVALID_ARGUMENT`;
   *   `DELIVERY_STATE_LOCKED` when this store's lock on the key was lost; `DELIVERY_IO_FAILED`;
   *   `DELIVERY_INVALID_SESSION_ID`.
   */
  async update<T>(
    key: StateKey,
    schema: ZodType<T>,
    fn: (prev: T | undefined) => T | Promise<T>,
  ): Promise<T> {
    const name = stateFileName(key);
    const where = this.#db.locationOf(key);
    return this.#queue.run(name, async () => {
      const held = this.#heldFor(name);
      let client: pg.ClientBase;
      try {
        client = held?.client ?? (await this.#db.pool.connect());
      } catch (err) {
        throw storeFailure('update', where, err);
      }
      const q = this.#db.q;
      let open = false;
      let broken: unknown;
      // What `fn` throws is the caller's own: it passes through as it is.
      let thrown: { error: unknown } | undefined;
      try {
        await client.query('BEGIN');
        open = true;
        const select = `SELECT value::text AS value FROM ${q}.state WHERE account = $1 AND session = $2 AND kind = $3 FOR UPDATE`;
        let rows = (await client.query<{ value: string | null }>(select, params(key))).rows;
        if (rows.length === 0) {
          // No row to lock yet: insert a placeholder, which holds the key until commit. A
          // concurrent first update waits on it here, then finds the row it committed.
          const made = await client.query(
            `INSERT INTO ${q}.state (account, session, kind, value) VALUES ($1, $2, $3, NULL) ON CONFLICT DO NOTHING`,
            params(key),
          );
          if (made.rowCount === 0)
            rows = (await client.query<{ value: string | null }>(select, params(key))).rows;
        }
        const text = rows[0]?.value;
        const prev = text === undefined || text === null ? undefined : decodeState(text, schema, where);
        let next: T;
        try {
          next = await fn(prev);
        } catch (err) {
          thrown = { error: err };
          throw err;
        }
        if (prev !== undefined && next === prev) {
          await client.query('ROLLBACK');
          open = false;
          return prev;
        }
        const encoded = encodeState(key, checkNewState(key, next, schema));
        try {
          await client.query(
            `UPDATE ${q}.state SET value = $4::jsonb, updated_at = now() WHERE account = $1 AND session = $2 AND kind = $3`,
            [...params(key), encoded],
          );
        } catch (err) {
          throw valueFailure('update', key, where, err);
        }
        await client.query('COMMIT');
        open = false;
        return next;
      } catch (err) {
        if (open) await client.query('ROLLBACK').catch((e: unknown) => (broken = e));
        if (thrown !== undefined && thrown.error === err) throw err;
        throw storeFailure('update', where, err);
      } finally {
        // A connection whose rollback failed is broken: the pool must not hand it out again.
        if (held === undefined)
          (client as pg.PoolClient).release(broken instanceof Error ? broken : undefined);
      }
    });
  }

  /**
   * Removes the stored value; a key that holds nothing is not an error.
   *
   * @throws DeliveryError `DELIVERY_STATE_LOCKED` when this store's lock on the key was lost;
   *   `DELIVERY_IO_FAILED`; `DELIVERY_INVALID_SESSION_ID`.
   */
  async delete(key: StateKey): Promise<void> {
    const name = stateFileName(key);
    const where = this.#db.locationOf(key);
    await this.#queue.run(name, async () => {
      const held = this.#heldFor(name);
      try {
        await (held?.client ?? this.#db.pool).query(
          `DELETE FROM ${this.#db.q}.state WHERE account = $1 AND session = $2 AND kind = $3`,
          params(key),
        );
      } catch (err) {
        throw storeFailure('delete', where, err);
      }
    });
  }

  /**
   * Takes exclusive use of `key` across every process sharing the database: a session-level
   * advisory lock on a connection of its own (see {@link PostgresStateLock}).
   *
   * @throws DeliveryError `DELIVERY_STATE_LOCKED` while another holder has it (`details`: `file`,
   *   and the holder's `pid`, `host` and `since` when known); `DELIVERY_IO_FAILED`;
   *   `DELIVERY_INVALID_SESSION_ID`.
   */
  async lock(key: StateKey): Promise<PostgresStateLock> {
    const name = stateFileName(key);
    const file = `${this.#db.location}/${name.replace(/\.json$/, '.lock')}`;
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      let holder: Holder | undefined;
      try {
        const id = await this.#db.lockId(key);
        // A waiter asks the pool first: no connection is opened while the lock is plainly taken.
        holder = await this.#holder(id);
        if (holder === undefined) {
          const taken = await this.#take(name, file, id);
          if (!('holder' in taken)) return taken;
          holder = taken.holder;
        }
      } catch (err) {
        throw storeFailure('lock', file, err);
      }
      if (holder === undefined) {
        // Freed between the try and the look at who holds it: try again.
        if (attempt < 5) continue;
        throw lockedError(file, {});
      }
      // Held by a process of this host that is gone (killed): the server frees its lock as soon
      // as it sees the connection closed, a moment from now. Anything else is a live holder.
      const gone = holder.host === hostname() && holder.pid !== undefined && !processIsAlive(holder.pid);
      if (!gone || Date.now() - started >= DEAD_HOLDER_WAIT_MS) throw lockedError(file, holder);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** Takes lock `id` on a connection of its own, or says who holds it. */
  async #take(
    name: string,
    file: string,
    id: number,
  ): Promise<PostgresStateLock | { holder: Holder | undefined }> {
    const db = this.#db;
    if (this.#held.has(name)) return { holder: { pid: process.pid, host: hostname() } };
    let client: pg.Client | undefined;
    try {
      client = await db.connectDedicated();
      for (const statement of SERVER_KEEPALIVE) await client.query(statement);
      // A server that ends idle sessions would end the lock with it.
      await client.query('SET idle_session_timeout = 0').catch(() => undefined);
      const nonce = randomUUID();
      // The lock and its holder row in one transaction that holds the row: a loser reading the
      // row (FOR SHARE) waits for it, so it never reports the holder before the holder wrote it.
      await client.query('BEGIN');
      let ok: boolean;
      try {
        await client.query(`SELECT 1 FROM ${db.q}.locks WHERE id = $1 FOR UPDATE`, [id]);
        const taken = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [
          db.lockClass,
          id,
        ]);
        ok = taken.rows[0]?.ok === true;
        if (ok) {
          await client.query(
            `UPDATE ${db.q}.locks SET holder_backend = pg_backend_pid(), holder_pid = $2, holder_host = $3,
               holder_nonce = $4, holder_since = now() WHERE id = $1`,
            [id, process.pid, hostname(), nonce],
          );
        }
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
      if (!ok) {
        await client.end().catch(() => undefined);
        return { holder: await this.#holder(id) };
      }
      return this.#hold(name, file, id, nonce, client);
    } catch (err) {
      await client?.end().catch(() => undefined);
      throw err;
    }
  }

  /** Releases every lock this store holds (their connections end). */
  async releaseAll(): Promise<void> {
    await Promise.all(
      [...this.#held.values()].map(async (held) => {
        held.controller.abort(
          new DeliveryError('DELIVERY_STATE_LOCKED', `the lock ${held.where} was released`),
        );
        await held.client.end().catch(() => undefined);
      }),
    );
    this.#held.clear();
  }

  /** The live holder of lock `id`, from the lock table and the server's own lock list. */
  async #holder(id: number): Promise<Holder | undefined> {
    const db = this.#db;
    const granted = await db.pool.query<{ pid: number }>(
      `SELECT pid FROM pg_locks
        WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND classid = $1::integer::oid AND objid = $2::integer::oid AND objsubid = 2 AND granted`,
      [db.lockClass, id],
    );
    const backend = granted.rows[0]?.pid;
    if (backend === undefined) return undefined;
    // Waits for a holder still writing its row (it holds the row until then).
    const row = await db.pool.query<{
      backend: number | null;
      pid: number | null;
      host: string | null;
      since: Date | null;
    }>(
      `SELECT holder_backend AS backend, holder_pid AS pid, holder_host AS host, holder_since AS since
         FROM ${db.q}.locks WHERE id = $1 FOR SHARE`,
      [id],
    );
    const holder = row.rows[0];
    // The holder columns describe the lock's holder only when they name its connection.
    if (
      holder === undefined ||
      holder.backend !== backend ||
      holder.pid === null ||
      holder.host === null ||
      holder.since === null
    )
      return {};
    return { pid: holder.pid, host: holder.host, since: holder.since.toISOString() };
  }

  #hold(name: string, file: string, id: number, nonce: string, client: pg.Client): PostgresStateLock {
    const controller = new AbortController();
    const held: Held = { client, controller, where: file };
    this.#held.set(name, held);
    let released = false;
    const lost = (why: string) => {
      if (released || controller.signal.aborted) return;
      clearInterval(beat);
      controller.abort(
        new DeliveryError(
          'DELIVERY_STATE_LOCKED',
          `the lock ${file} was lost (${why}); this process no longer holds the session's state`,
          { details: { file } },
        ),
      );
      this.#db.logger.error('a delivery lock was lost', { file, reason: why });
      // The connection is dropped, so the server frees the lock too (it may not know yet).
      client.end().catch(() => undefined);
    };
    client.on('error', (err) => lost(err.message));
    client.on('end', () => lost('its connection ended'));
    let checking = false;
    const beat = setInterval(() => {
      if (checking) return;
      checking = true;
      const timer = setTimeout(
        () => lost('the database did not answer in time'),
        this.#lockOptions.heartbeatTimeoutMs,
      );
      timer.unref();
      client
        .query('SELECT 1')
        .then(
          () => undefined,
          (err: unknown) => lost(err instanceof Error ? err.message : String(err)),
        )
        .finally(() => {
          clearTimeout(timer);
          checking = false;
        });
    }, this.#lockOptions.heartbeatMs);
    beat.unref();
    return {
      file,
      signal: controller.signal,
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(beat);
        if (this.#held.get(name) === held) this.#held.delete(name);
        if (controller.signal.aborted) return;
        controller.abort(
          new DeliveryError('DELIVERY_STATE_LOCKED', `the lock ${file} was released`, { details: { file } }),
        );
        try {
          await client.query(
            `UPDATE ${this.#db.q}.locks SET holder_backend = NULL, holder_pid = NULL, holder_host = NULL,
               holder_nonce = NULL, holder_since = NULL WHERE id = $1 AND holder_nonce = $2`,
            [id, nonce],
          );
          await client.query('SELECT pg_advisory_unlock($1, $2)', [this.#db.lockClass, id]);
        } catch {
          // Ending the connection below frees the lock all the same.
        } finally {
          await client.end().catch(() => undefined);
        }
      },
    };
  }

  /** The lock this store holds on the key, if any; refused when it was lost. */
  #heldFor(name: string): Held | undefined {
    const held = this.#held.get(name);
    if (held?.controller.signal.aborted) throw held.controller.signal.reason as Error;
    return held;
  }
}

function params(key: StateKey): [string, string, string] {
  return [key.account ?? '', key.session, key.kind];
}

/** A value PostgreSQL refused (jsonb cannot hold U+0000 or a lone surrogate) is the caller's to fix. */
function valueFailure(operation: string, key: StateKey, where: string, err: unknown): Error {
  const code = errorCode(err);
  if (code?.startsWith('22')) {
    return new DeliveryError(
      'DELIVERY_INVALID_ARGUMENT',
      `state for session ${JSON.stringify(key.session)} (${key.kind}) cannot be stored in PostgreSQL's jsonb: ${err instanceof Error ? err.message : code}`,
      { cause: err, details: { session: key.session, kind: key.kind, errno: code } },
    );
  }
  return storeFailure(operation, where, err);
}

function lockedError(file: string, holder: Holder): DeliveryError {
  const who =
    holder.pid === undefined
      ? 'another server'
      : `another server (pid ${holder.pid}${holder.host === hostname() ? '' : ` on ${holder.host}`}${holder.since === undefined ? '' : `, since ${holder.since}`})`;
  return new DeliveryError(
    'DELIVERY_STATE_LOCKED',
    `${who} delivers for this session: give this one its own session id, or stop that one (lock ${file})`,
    { details: { file, ...holder } },
  );
}
