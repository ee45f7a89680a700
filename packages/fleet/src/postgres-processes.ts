import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { errorCode } from '@zmcp/core';
import type { FleetProcess, ProcessRegistry, RegisteredProcess } from './backend.js';
import { type Database, storeFailure } from './database.js';

/** Rows of processes gone for longer than this are removed when the list is read. */
const FORGET_AFTER_MS = 3_600_000;

/**
 * The fleet's processes in `<schema>.processes`: a row per registered process, refreshed by a
 * heartbeat; "gone" is judged by the database's clock, so hosts' clocks need not agree. Counted
 * leases live in `<schema>.leases`, each tied to its process's row (removed with it) and counted
 * only while that process is seen.
 */
export class PgProcessRegistry implements ProcessRegistry {
  readonly #db: Database;
  readonly #heartbeatMs: number;

  constructor(db: Database, heartbeatMs = 5_000) {
    this.#db = db;
    this.#heartbeatMs = heartbeatMs;
  }

  /** The interval after which a row counts as gone, as SQL. */
  get #stale(): string {
    return `${3 * this.#heartbeatMs} milliseconds`;
  }

  async register(options: { bin: string }): Promise<RegisteredProcess> {
    const { q, pool, logger } = this.#db;
    const id = randomBytes(8).toString('hex');
    try {
      await pool.query(`INSERT INTO ${q}.processes (id, bin, pid, host) VALUES ($1, $2, $3, $4)`, [
        id,
        options.bin.slice(0, 100),
        process.pid,
        hostname().slice(0, 255),
      ]);
    } catch (err) {
      throw storeFailure('register the process', this.#db.target, err);
    }
    let closed = false;
    const beat = async () => {
      // Re-inserted if it was removed (the database was away longer than an hour).
      await pool
        .query(
          `INSERT INTO ${q}.processes (id, bin, pid, host) VALUES ($1, $2, $3, $4)
             ON CONFLICT (id) DO UPDATE SET last_seen = now()`,
          [id, options.bin.slice(0, 100), process.pid, hostname().slice(0, 255)],
        )
        .catch((err: unknown) =>
          logger.warn('the fleet heartbeat failed; retried', { code: errorCode(err) ?? 'UNKNOWN' }),
        );
    };
    const timer = setInterval(() => void beat(), this.#heartbeatMs);
    timer.unref();
    const stale = this.#stale;
    const target = this.#db.target;
    return {
      id,
      async lease(scope, max) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          // One taker of a scope at a time, across the fleet (the lock ends with the transaction).
          await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`zmcp-lease:${q}:${scope}`]);
          const held = await client.query<{ n: string }>(
            `SELECT count(*)::text AS n FROM ${q}.leases l JOIN ${q}.processes p ON p.id = l.process_id
              WHERE l.scope = $1 AND p.last_seen > now() - $2::interval`,
            [scope, stale],
          );
          if (Number(held.rows[0]?.n ?? 0) >= max) {
            await client.query('ROLLBACK');
            return undefined;
          }
          const lease = randomBytes(8).toString('hex');
          await client.query(`INSERT INTO ${q}.leases (id, scope, process_id) VALUES ($1, $2, $3)`, [
            lease,
            scope,
            id,
          ]);
          await client.query('COMMIT');
          let released = false;
          return async () => {
            if (released) return;
            released = true;
            await pool.query(`DELETE FROM ${q}.leases WHERE id = $1`, [lease]).catch((err: unknown) =>
              logger.warn('a lease could not be released; it ends with this process', {
                code: errorCode(err) ?? 'UNKNOWN',
              }),
            );
          };
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw storeFailure('take a lease in', target, err);
        } finally {
          client.release();
        }
      },
      async close() {
        if (closed) return;
        closed = true;
        clearInterval(timer);
        await pool.query(`DELETE FROM ${q}.processes WHERE id = $1`, [id]).catch(() => undefined);
      },
    };
  }

  async list(): Promise<FleetProcess[]> {
    const { q, pool } = this.#db;
    try {
      await pool.query(`DELETE FROM ${q}.processes WHERE last_seen < now() - $1::interval`, [
        `${FORGET_AFTER_MS} milliseconds`,
      ]);
      const rows = await pool.query<{
        id: string;
        bin: string;
        pid: number;
        host: string;
        started_at: Date;
        last_seen: Date;
        gone: boolean;
      }>(
        `SELECT id, bin, pid, host, started_at, last_seen, last_seen <= now() - $1::interval AS gone
           FROM ${q}.processes ORDER BY started_at, id`,
        [this.#stale],
      );
      return rows.rows.map((r) => ({
        id: r.id,
        bin: r.bin,
        pid: r.pid,
        host: r.host,
        startedAt: r.started_at.toISOString(),
        lastSeen: r.last_seen.toISOString(),
        gone: r.gone,
      }));
    } catch (err) {
      throw storeFailure('list the fleet’s processes', this.#db.target, err);
    }
  }
}
