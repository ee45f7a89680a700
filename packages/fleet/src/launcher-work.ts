import { hostname } from 'node:os';
import type pg from 'pg';
import type { Database } from './database.js';
import { storeFailure } from './database.js';

/** Where a launcher's trigger stands (as `@zmcp/launcher`'s record says it). */
export type LauncherTriggerStatus = 'queued' | 'running' | 'followup' | 'merged' | 'done' | 'failed';

/** One trigger's claim row. */
export interface LauncherTriggerRow {
  readonly messageId: number;
  /** The conversation key: one agent per conversation across the fleet. */
  readonly conversation: string;
  /** The trigger as the launcher stored it (JSON). */
  readonly trigger: unknown;
  readonly status: LauncherTriggerStatus;
  /** The worker whose agent runs it (`running`), or whose agent got it (`followup`). */
  readonly worker: string | undefined;
  readonly runId: string | undefined;
  readonly pid: number | undefined;
  /** For `followup` and `merged`: the trigger whose agent got it. */
  readonly into: number | undefined;
  readonly reason: string | undefined;
}

/** What {@link LauncherWork.intake} decided about a trigger (the first worker to see it decides). */
export type LauncherIntakeAction = 'start' | 'queue' | 'followup' | 'merge' | 'refuse';

/** Options of {@link StateBackend.launcherWork}. */
export interface LauncherWorkOptions {
  /** The realm and bot (`stateAccount`). */
  account: string;
  /** The launcher id (`ZULIP_AGENT_ID`): workers with the same id share the triggers. */
  launcher: string;
  /** This worker's id, unique in the fleet (a random one per process). */
  worker: string;
  /** How long a worker counts as alive after its last heartbeat, in ms. */
  leaseMs: number;
}

/**
 * The shared work of a launcher's workers, in PostgreSQL: a claim row per trigger (inserted once,
 * `ON CONFLICT DO NOTHING`), a lease per worker, and every decision taken holding the fleet's row
 * (`SELECT … FOR UPDATE`), so a conversation has one agent fleet-wide, at most `maxRunning` run,
 * and the queue is served oldest first.
 */
export interface LauncherWork {
  readonly worker: string;
  /** Registers this worker's lease; `fresh` when the fleet had no row yet, else where it had read up to. */
  join(): Promise<{ fresh: boolean; lastMessageId: number }>;
  /** Renews the lease; false when it was already gone (the others took this worker's triggers over). */
  heartbeat(): Promise<boolean>;
  /**
   * Records a trigger once and decides what becomes of it: `start` (this worker runs it now),
   * `followup` (to the worker running its conversation), `merge` (into a waiting trigger of the
   * conversation), `queue`, or `refuse` (the queue is full). `inserted` is false when another
   * worker (or an earlier call) recorded it first: `row` then says what was decided.
   */
  intake(
    trigger: { messageId: number; conversation: string; trigger: unknown },
    limits: { maxRunning: number; maxQueued: number },
  ): Promise<{ inserted: boolean; action: LauncherIntakeAction | undefined; row: LauncherTriggerRow }>;
  /** Claims the oldest waiting trigger whose conversation has no running agent, if a slot is free fleet-wide. */
  claimNext(maxRunning: number): Promise<LauncherTriggerRow | undefined>;
  /** Changes a trigger's row (`runId`, `pid`, `reason`, `status`). */
  update(
    messageId: number,
    change: { status?: LauncherTriggerStatus; runId?: string; pid?: number; reason?: string },
  ): Promise<void>;
  /**
   * Ends a run: its trigger becomes `status`; of its follow-ups, those in `delivered` are done,
   * and the newest of the rest (never handed over, or left untaken) waits again as a trigger of
   * its own, the others merged into it. Returns that one's id.
   */
  finish(
    messageId: number,
    end: { status: 'done' | 'failed'; reason?: string | undefined },
    delivered: readonly number[],
  ): Promise<number | undefined>;
  /**
   * Takes over from dead workers (lease run out): deletes their leases, marks their running
   * triggers failed and their follow-ups merged. Returns the running ones, to report.
   */
  reap(): Promise<LauncherTriggerRow[]>;
  /**
   * A conversation renamed or moved (a whole topic): its triggers not yet over take the new key,
   * and `patch` is merged into their stored trigger (the new stream and topic).
   */
  move(from: string, to: string, patch: Readonly<Record<string, unknown>>): Promise<void>;
  /** Triggers not yet over (queued, running, followup), oldest first. */
  active(): Promise<LauncherTriggerRow[]>;
  /** Moves the fleet's catch-up point forward (never back). */
  advance(messageId: number): Promise<void>;
  /** Gives the lease up (a clean shutdown). */
  leave(): Promise<void>;
}

interface Row {
  message_id: string;
  conversation: string;
  trigger: unknown;
  status: LauncherTriggerStatus;
  worker: string | null;
  run_id: string | null;
  pid: number | null;
  into_id: string | null;
  reason: string | null;
}

function toRow(r: Row): LauncherTriggerRow {
  return {
    messageId: Number(r.message_id),
    conversation: r.conversation,
    trigger: r.trigger,
    status: r.status,
    worker: r.worker ?? undefined,
    runId: r.run_id ?? undefined,
    pid: r.pid ?? undefined,
    into: r.into_id === null ? undefined : Number(r.into_id),
    reason: r.reason ?? undefined,
  };
}

const COLUMNS = 'message_id, conversation, trigger, status, worker, run_id, pid, into_id, reason';

/** {@link LauncherWork} on a database. */
export class PgLauncherWork implements LauncherWork {
  readonly #db: Database;
  readonly #o: LauncherWorkOptions;
  readonly #t: string;

  constructor(db: Database, options: LauncherWorkOptions) {
    this.#db = db;
    this.#o = options;
    this.#t = db.q;
  }

  get worker(): string {
    return this.#o.worker;
  }

  /** Runs `work` in a transaction holding the fleet's row. */
  async #locked<T>(what: string, work: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#db.pool.connect().catch((err: unknown) => {
      throw storeFailure(what, this.#db.location, err);
    });
    try {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO ${this.#t}.launcher_fleets (account, launcher) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
        [this.#o.account, this.#o.launcher],
      );
      await client.query(
        `SELECT 1 FROM ${this.#t}.launcher_fleets WHERE account = $1 AND launcher = $2 FOR UPDATE`,
        [this.#o.account, this.#o.launcher],
      );
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw storeFailure(what, this.#db.location, err);
    } finally {
      client.release();
    }
  }

  get #key(): [string, string] {
    return [this.#o.account, this.#o.launcher];
  }

  async join(): Promise<{ fresh: boolean; lastMessageId: number }> {
    const client = await this.#db.pool.connect().catch((err: unknown) => {
      throw storeFailure('join the launcher fleet', this.#db.location, err);
    });
    try {
      await client.query('BEGIN');
      const made = await client.query(
        `INSERT INTO ${this.#t}.launcher_fleets (account, launcher) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
        this.#key,
      );
      const at = await client.query<{ last_message_id: string }>(
        `SELECT last_message_id FROM ${this.#t}.launcher_fleets WHERE account = $1 AND launcher = $2 FOR UPDATE`,
        this.#key,
      );
      await client.query(
        `INSERT INTO ${this.#t}.launcher_workers (account, launcher, worker, host, pid, expires_at)
         VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6 / 1000.0))
         ON CONFLICT (account, launcher, worker) DO UPDATE SET expires_at = EXCLUDED.expires_at`,
        [...this.#key, this.#o.worker, hostname(), process.pid, this.#o.leaseMs],
      );
      await client.query('COMMIT');
      return { fresh: made.rowCount === 1, lastMessageId: Number(at.rows[0]?.last_message_id ?? 0) };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw storeFailure('join the launcher fleet', this.#db.location, err);
    } finally {
      client.release();
    }
  }

  async heartbeat(): Promise<boolean> {
    try {
      const r = await this.#db.pool.query(
        `UPDATE ${this.#t}.launcher_workers SET expires_at = now() + make_interval(secs => $4 / 1000.0)
         WHERE account = $1 AND launcher = $2 AND worker = $3`,
        [...this.#key, this.#o.worker, this.#o.leaseMs],
      );
      return r.rowCount === 1;
    } catch (err) {
      throw storeFailure('renew the worker lease', this.#db.location, err);
    }
  }

  intake(
    trigger: { messageId: number; conversation: string; trigger: unknown },
    limits: { maxRunning: number; maxQueued: number },
  ): Promise<{ inserted: boolean; action: LauncherIntakeAction | undefined; row: LauncherTriggerRow }> {
    return this.#locked('record a trigger', async (c) => {
      const key = this.#key;
      await c.query(
        `UPDATE ${this.#t}.launcher_fleets SET last_message_id = GREATEST(last_message_id, $3)
         WHERE account = $1 AND launcher = $2`,
        [...key, trigger.messageId],
      );
      const existing = await c.query<Row>(
        `SELECT ${COLUMNS} FROM ${this.#t}.launcher_triggers WHERE account = $1 AND launcher = $2 AND message_id = $3`,
        [...key, trigger.messageId],
      );
      if (existing.rows[0] !== undefined)
        return { inserted: false, action: undefined, row: toRow(existing.rows[0]) };
      const active = await c.query<Row>(
        `SELECT ${COLUMNS} FROM ${this.#t}.launcher_triggers
         WHERE account = $1 AND launcher = $2 AND status IN ('queued', 'running') ORDER BY message_id`,
        key,
      );
      const rows = active.rows.map(toRow);
      const running = rows.filter((r) => r.status === 'running');
      const queued = rows.filter((r) => r.status === 'queued');
      const owner = running.find((r) => r.conversation === trigger.conversation);
      const waiting = queued.find((r) => r.conversation === trigger.conversation);
      let action: LauncherIntakeAction;
      let status: LauncherTriggerStatus;
      let worker: string | null = null;
      let into: number | null = null;
      let reason: string | null = null;
      if (owner !== undefined) {
        [action, status, worker, into] = ['followup', 'followup', owner.worker ?? null, owner.messageId];
      } else if (waiting !== undefined) {
        [action, status, into] = ['merge', 'merged', waiting.messageId];
      } else if (running.length < limits.maxRunning && queued.length === 0) {
        [action, status, worker] = ['start', 'running', this.#o.worker];
      } else if (queued.length < limits.maxQueued) {
        [action, status] = ['queue', 'queued'];
      } else {
        [action, status, reason] = ['refuse', 'failed', 'queue full'];
      }
      const made = await c.query<Row>(
        `INSERT INTO ${this.#t}.launcher_triggers
           (account, launcher, message_id, conversation, trigger, status, worker, into_id, reason)
         VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
        [
          ...key,
          trigger.messageId,
          trigger.conversation,
          JSON.stringify(trigger.trigger),
          status,
          worker,
          into,
          reason,
        ],
      );
      return { inserted: true, action, row: toRow(made.rows[0] as Row) };
    });
  }

  claimNext(maxRunning: number): Promise<LauncherTriggerRow | undefined> {
    return this.#locked('claim a waiting trigger', async (c) => {
      const key = this.#key;
      const running = await c.query<{ n: string }>(
        `SELECT count(*) AS n FROM ${this.#t}.launcher_triggers WHERE account = $1 AND launcher = $2 AND status = 'running'`,
        key,
      );
      if (Number(running.rows[0]?.n ?? 0) >= maxRunning) return undefined;
      const next = await c.query<Row>(
        `UPDATE ${this.#t}.launcher_triggers SET status = 'running', worker = $3, updated_at = now()
         WHERE account = $1 AND launcher = $2 AND message_id = (
           SELECT q.message_id FROM ${this.#t}.launcher_triggers q
           WHERE q.account = $1 AND q.launcher = $2 AND q.status = 'queued'
             AND NOT EXISTS (SELECT 1 FROM ${this.#t}.launcher_triggers r
               WHERE r.account = $1 AND r.launcher = $2 AND r.status = 'running' AND r.conversation = q.conversation)
           ORDER BY q.message_id LIMIT 1)
         RETURNING ${COLUMNS}`,
        [...key, this.#o.worker],
      );
      return next.rows[0] === undefined ? undefined : toRow(next.rows[0]);
    });
  }

  async update(
    messageId: number,
    change: { status?: LauncherTriggerStatus; runId?: string; pid?: number; reason?: string },
  ): Promise<void> {
    try {
      await this.#db.pool.query(
        `UPDATE ${this.#t}.launcher_triggers SET status = COALESCE($4, status), run_id = COALESCE($5, run_id),
           pid = COALESCE($6, pid), reason = COALESCE($7, reason), updated_at = now()
         WHERE account = $1 AND launcher = $2 AND message_id = $3`,
        [
          ...this.#key,
          messageId,
          change.status ?? null,
          change.runId ?? null,
          change.pid ?? null,
          change.reason ?? null,
        ],
      );
    } catch (err) {
      throw storeFailure('update a trigger', this.#db.location, err);
    }
  }

  finish(
    messageId: number,
    end: { status: 'done' | 'failed'; reason?: string | undefined },
    delivered: readonly number[],
  ): Promise<number | undefined> {
    return this.#locked('record the end of a run', async (c) => {
      const key = this.#key;
      await c.query(
        `UPDATE ${this.#t}.launcher_triggers SET status = $4, reason = $5, updated_at = now()
         WHERE account = $1 AND launcher = $2 AND message_id = $3`,
        [...key, messageId, end.status, end.reason ?? null],
      );
      const follow = await c.query<{ message_id: string }>(
        `SELECT message_id FROM ${this.#t}.launcher_triggers
         WHERE account = $1 AND launcher = $2 AND status = 'followup' AND into_id = $3 ORDER BY message_id`,
        [...key, messageId],
      );
      const ids = follow.rows.map((r) => Number(r.message_id));
      const done = ids.filter((id) => delivered.includes(id));
      const rest = ids.filter((id) => !delivered.includes(id));
      const newest = rest.at(-1);
      if (done.length > 0)
        await c.query(
          `UPDATE ${this.#t}.launcher_triggers SET status = 'done', updated_at = now()
           WHERE account = $1 AND launcher = $2 AND message_id = ANY($3::bigint[])`,
          [...key, done],
        );
      if (newest !== undefined) {
        await c.query(
          `UPDATE ${this.#t}.launcher_triggers SET status = 'merged', into_id = $3, updated_at = now()
           WHERE account = $1 AND launcher = $2 AND message_id = ANY($4::bigint[])`,
          [...key, newest, rest.slice(0, -1)],
        );
        await c.query(
          `UPDATE ${this.#t}.launcher_triggers SET status = 'queued', worker = NULL, into_id = NULL, updated_at = now()
           WHERE account = $1 AND launcher = $2 AND message_id = $3`,
          [...key, newest],
        );
      }
      return newest;
    });
  }

  reap(): Promise<LauncherTriggerRow[]> {
    return this.#locked('take over from dead workers', async (c) => {
      const key = this.#key;
      const dead = await c.query<{ worker: string }>(
        `DELETE FROM ${this.#t}.launcher_workers
         WHERE account = $1 AND launcher = $2 AND worker <> $3 AND expires_at < now() RETURNING worker`,
        [...key, this.#o.worker],
      );
      // A trigger of a worker that has no lease (dead, or gone without finishing it) is taken over.
      const orphans = await c.query<Row>(
        `SELECT ${COLUMNS} FROM ${this.#t}.launcher_triggers t
         WHERE t.account = $1 AND t.launcher = $2 AND t.status IN ('running', 'followup')
           AND NOT EXISTS (SELECT 1 FROM ${this.#t}.launcher_workers w
             WHERE w.account = $1 AND w.launcher = $2 AND w.worker = t.worker)
         ORDER BY t.message_id`,
        key,
      );
      if (dead.rowCount === 0 && orphans.rows.length === 0) return [];
      const rows = orphans.rows.map(toRow);
      const running = rows.filter((r) => r.status === 'running');
      await c.query(
        `UPDATE ${this.#t}.launcher_triggers SET status = 'failed',
           reason = 'its launcher worker died while the agent ran', updated_at = now()
         WHERE account = $1 AND launcher = $2 AND message_id = ANY($3::bigint[])`,
        [...key, running.map((r) => r.messageId)],
      );
      await c.query(
        `UPDATE ${this.#t}.launcher_triggers SET status = 'merged', updated_at = now()
         WHERE account = $1 AND launcher = $2 AND message_id = ANY($3::bigint[])`,
        [...key, rows.filter((r) => r.status === 'followup').map((r) => r.messageId)],
      );
      return running;
    });
  }

  async move(from: string, to: string, patch: Readonly<Record<string, unknown>>): Promise<void> {
    try {
      await this.#db.pool.query(
        `UPDATE ${this.#t}.launcher_triggers SET conversation = $4, trigger = trigger || $5::jsonb, updated_at = now()
         WHERE account = $1 AND launcher = $2 AND conversation = $3 AND status IN ('queued', 'running', 'followup')`,
        [...this.#key, from, to, JSON.stringify(patch)],
      );
    } catch (err) {
      throw storeFailure('move a conversation', this.#db.location, err);
    }
  }

  async active(): Promise<LauncherTriggerRow[]> {
    try {
      const r = await this.#db.pool.query<Row>(
        `SELECT ${COLUMNS} FROM ${this.#t}.launcher_triggers
         WHERE account = $1 AND launcher = $2 AND status IN ('queued', 'running', 'followup') ORDER BY message_id`,
        this.#key,
      );
      return r.rows.map(toRow);
    } catch (err) {
      throw storeFailure('read the triggers', this.#db.location, err);
    }
  }

  async advance(messageId: number): Promise<void> {
    try {
      await this.#db.pool.query(
        `UPDATE ${this.#t}.launcher_fleets SET last_message_id = GREATEST(last_message_id, $3)
         WHERE account = $1 AND launcher = $2`,
        [...this.#key, messageId],
      );
    } catch (err) {
      throw storeFailure('save the catch-up point', this.#db.location, err);
    }
  }

  async leave(): Promise<void> {
    try {
      await this.#db.pool.query(
        `DELETE FROM ${this.#t}.launcher_workers WHERE account = $1 AND launcher = $2 AND worker = $3`,
        [...this.#key, this.#o.worker],
      );
    } catch (err) {
      throw storeFailure('give the worker lease up', this.#db.location, err);
    }
  }
}
