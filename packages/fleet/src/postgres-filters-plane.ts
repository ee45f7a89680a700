import { errorCode } from '@zmcp/core';
import {
  DeliveryError,
  type FiltersDocument,
  type FiltersEvent,
  type FiltersPatch,
  type FiltersPlane,
  type FiltersView,
  MemoryFiltersPlane,
  parseFiltersDocument,
  parseSessionId,
  parseStateAccount,
  type StateKey,
} from '@zmcp/delivery';
import type pg from 'pg';
import { type Database, storeFailure } from './database.js';
import type { PostgresFiltersPlane, PostgresFiltersPlaneOptions } from './postgres-types.js';

type Loaded =
  | { ok: true; document: FiltersDocument; text: string }
  | { ok: false; missing: boolean; reason: string; cause?: unknown };

function judge(text: string | null | undefined): Loaded {
  if (text === undefined) return { ok: false, missing: true, reason: 'the filters row is missing' };
  if (text === null) return { ok: false, missing: false, reason: 'the filters row has no value' };
  try {
    return { ok: true, document: parseFiltersDocument(JSON.parse(text), 'the filters row'), text };
  } catch (err) {
    const reason = (err as DeliveryError).details?.reason;
    return { ok: false, missing: false, reason: typeof reason === 'string' ? reason : 'invalid', cause: err };
  }
}

/** The filters plane of a PostgreSQL backend (see {@link PostgresFiltersPlane}). */
export class PgFiltersPlane implements PostgresFiltersPlane {
  /** Where the filters are kept: `postgres://…/db#<schema>/<account>/<session>.filters.json`. */
  readonly location: string;
  readonly #db: Database;
  readonly #key: StateKey;
  readonly #memory: MemoryFiltersPlane;
  #text: string;
  #tail: Promise<unknown> = Promise.resolve();
  #poll: NodeJS.Timeout | undefined;
  #unlisten: (() => void) | undefined;
  #closed = false;

  private constructor(db: Database, key: StateKey, memory: MemoryFiltersPlane, text: string) {
    this.#db = db;
    this.#key = key;
    this.location = db.locationOf(key);
    this.#memory = memory;
    this.#text = text;
  }

  /**
   * Opens the plane: reads the row, or creates it from the seed when it does not exist, and
   * starts listening for its changes.
   *
   * @throws DeliveryError `DELIVERY_FILTERS_INVALID` when the row exists but is not a valid
   *   filters document (a start-up failure: there is no last-known-good yet), or the seed or
   *   baseline is invalid; `DELIVERY_IO_FAILED` when the database refuses;
   *   `DELIVERY_INVALID_SESSION_ID`; `DELIVERY_INVALID_ARGUMENT` for a bad account.
   */
  static async open(db: Database, options: PostgresFiltersPlaneOptions): Promise<PgFiltersPlane> {
    const key: StateKey =
      options.account === undefined
        ? { session: parseSessionId(options.session), kind: 'filters' }
        : {
            account: parseStateAccount(options.account),
            session: parseSessionId(options.session),
            kind: 'filters',
          };
    const where = db.locationOf(key);
    const baseline = parseFiltersDocument(
      { suppressedReactionEmojis: [...(options.baseline ?? [])] },
      'the suppressed-reactions baseline',
    ).suppressedReactionEmojis as string[];
    const seed = parseFiltersDocument(options.seed ?? {}, 'the filters seed');
    let loaded: Loaded;
    try {
      await db.pool.query(
        `INSERT INTO ${db.q}.state (account, session, kind, value) VALUES ($1, $2, 'filters', $3::jsonb) ON CONFLICT DO NOTHING`,
        [key.account ?? '', key.session, JSON.stringify(seed)],
      );
      loaded = judge(await readRow(db.pool, db, key, false));
    } catch (err) {
      throw storeFailure('open the filters', where, err);
    }
    if (!loaded.ok) {
      throw new DeliveryError(
        'DELIVERY_FILTERS_INVALID',
        `the filters ${where} are invalid: ${loaded.reason}. Repair the row, or delete it to create it again from the environment.`,
        { cause: loaded.cause, details: { file: where, reason: loaded.reason } },
      );
    }
    const plane = new PgFiltersPlane(db, key, new MemoryFiltersPlane(loaded.document, baseline), loaded.text);
    plane.#unlisten = db.onFiltersChange(key.account ?? '', key.session, () => {
      void plane.reload();
    });
    await db.listening();
    // A change between the read above and the listener starting has no notification of its own.
    await plane.reload();
    plane.#poll = setInterval(() => void plane.reload(), options.pollIntervalMs ?? 2_000);
    plane.#poll.unref();
    return plane;
  }

  get filters(): FiltersPlane['filters'] {
    return this.#memory.filters;
  }

  get stale(): boolean {
    return this.#memory.stale;
  }

  view(): FiltersView {
    return { ...this.#memory.view(), location: this.location };
  }

  subscribe(listener: (event: FiltersEvent) => void): () => void {
    return this.#memory.subscribe(listener);
  }

  /** Reads the row now (as a notification would) and applies what it holds. */
  async reload(): Promise<void> {
    await this.#serial(async () => {
      if (this.#closed) return;
      let text: string | null | undefined;
      try {
        text = await readRow(this.#db.pool, this.#db, this.#key, false);
      } catch (err) {
        this.#markStale(`the database cannot be read (${errorCode(err) ?? 'error'})`);
        return;
      }
      const loaded = judge(text);
      if (loaded.ok) this.#accept(loaded.document, loaded.text);
      else this.#markStale(loaded.reason);
    });
  }

  async update(patch: FiltersPatch): Promise<FiltersView> {
    return this.#serial(async () => {
      if (this.#closed) throw new DeliveryError('DELIVERY_NOT_RUNNING', 'the filters plane is closed');
      let client: pg.PoolClient;
      try {
        client = await this.#db.pool.connect();
      } catch (err) {
        throw storeFailure('update', this.location, err);
      }
      let open = false;
      let broken: unknown;
      try {
        await client.query('BEGIN');
        open = true;
        // Re-read under the row lock: an operator's edit not yet reloaded must not be overwritten.
        const fresh = judge(await readRow(client, this.#db, this.#key, true));
        if (!fresh.ok) {
          this.#markStale(fresh.reason);
          throw this.#staleError(fresh.reason);
        }
        this.#accept(fresh.document, fresh.text);
        // The document the tools' change makes, by delivery's own rules (operator-only key, validation).
        const scratch = new MemoryFiltersPlane(fresh.document);
        await scratch.update(patch);
        const written = await client.query<{ value: string }>(
          `UPDATE ${this.#db.q}.state SET value = $4::jsonb, updated_at = now()
            WHERE account = $1 AND session = $2 AND kind = $3 RETURNING value::text AS value`,
          [
            this.#key.account ?? '',
            this.#key.session,
            this.#key.kind,
            JSON.stringify(scratch.filters.document),
          ],
        );
        await client.query('COMMIT');
        open = false;
        this.#text = written.rows[0]?.value ?? this.#text;
        return { ...(await this.#memory.update(patch)), location: this.location };
      } catch (err) {
        if (open) await client.query('ROLLBACK').catch((e: unknown) => (broken = e));
        throw storeFailure('update', this.location, err);
      } finally {
        client.release(broken instanceof Error ? broken : undefined);
      }
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#unlisten?.();
    if (this.#poll !== undefined) clearInterval(this.#poll);
    await this.#serial(async () => undefined);
  }

  #accept(document: FiltersDocument, text: string): void {
    if (!this.#memory.stale && text === this.#text) return;
    this.#text = text;
    this.#memory.replace(document);
  }

  #markStale(reason: string): void {
    if (this.#memory.view().staleReason === reason) return;
    this.#memory.markStale(reason);
  }

  #staleError(reason: string): DeliveryError {
    return new DeliveryError(
      'DELIVERY_FILTERS_STALE',
      `the filters ${this.location} are stale (${reason}); the last-known-good filters are in force and updates are refused until the row is repaired`,
      { details: { file: this.location, reason } },
    );
  }

  /** Runs reloads and updates one at a time, in order. */
  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(task, task);
    this.#tail = run.catch(() => undefined);
    return run;
  }
}

async function readRow(
  client: pg.Pool | pg.ClientBase,
  db: Database,
  key: StateKey,
  forUpdate: boolean,
): Promise<string | null | undefined> {
  const result = await client.query<{ value: string | null }>(
    `SELECT value::text AS value FROM ${db.q}.state WHERE account = $1 AND session = $2 AND kind = $3${forUpdate ? ' FOR UPDATE' : ''}`,
    [key.account ?? '', key.session, key.kind],
  );
  return result.rows.length === 0 ? undefined : (result.rows[0] as { value: string | null }).value;
}
