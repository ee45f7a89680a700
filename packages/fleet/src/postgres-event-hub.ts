import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import {
  EventQueue,
  type EventQueueOptions,
  errorCode,
  type Logger,
  type QueueGap,
  type QueueItem,
  type RegisterResponse,
  ZmcpError,
  type ZulipClient,
} from '@zmcp/core';
import { DeliveryError, type EventSource, type OpenEventSource, parseStateAccount } from '@zmcp/delivery';
import type pg from 'pg';
import type { Database } from './database.js';

/** Options of the shared event queues (`openStateBackend`'s `events`). */
export interface EventHubOptions {
  /** How often a process with readers tries to become the owner while another one is, in ms. Default 500. */
  electionIntervalMs?: number | undefined;
  /** How often a reader looks at the log without a notification, in ms. Default 1000. */
  pollIntervalMs?: number | undefined;
  /** How many log positions the owner keeps behind the newest. Default 10,000. */
  logLimit?: number | undefined;
  /** How often the owner checks its lock's connection, in ms. Default 1000. */
  heartbeatMs?: number | undefined;
}

/**
 * Who owns a shared event queue of a realm and bot, and where it stands: read-only, for status
 * pages. A bot has one queue per kind of reader (per registration); see {@link EventHub.owner}.
 */
export interface EventQueueOwner {
  /** The realm and bot (`stateAccount`). */
  readonly account: string;
  /** Whether a process holds the ownership now. */
  readonly owned: boolean;
  /** The owner, as it recorded itself when it took over (it may be gone when `owned` is false). */
  readonly pid: number | undefined;
  readonly host: string | undefined;
  readonly since: string | undefined;
  /** The Zulip queue and the last event id received on it. */
  readonly queueId: string | undefined;
  readonly lastEventId: number | undefined;
  /** The newest log position, and how many events the log holds for that queue. */
  readonly logSeq: number;
  readonly logSize: number;
}

/**
 * The shared event queues of one database: one Zulip queue per realm and bot and kind of reader
 * (what it registers: event types, state, capabilities, narrow...), read by every process.
 */
export interface EventHub {
  /**
   * What a `DeliveryEngine` takes as `events`: readers of the Zulip event queue of `account`
   * registered as each reader asks, whichever process owns it: readers asking for the same
   * registration (whatever the order of its lists) share one queue, a reader asking for another
   * gets a queue of its own. `client` is this process's client of that account, used when it
   * becomes the owner.
   */
  source(client: ZulipClient, account: string): OpenEventSource;
  /**
   * Who owns a queue of `account` and where it stands; `undefined` when it never had one. With
   * several kinds of reader (one queue each), the queue a process owns now, this process's first,
   * then the one taken most recently.
   */
  owner(account: string): Promise<EventQueueOwner | undefined>;
  /** Stops owning (the Zulip queue is kept for the next owner) and ends every reader. */
  close(): Promise<void>;
}

/** {@link EventHubOptions} with every default applied. */
interface Tuning {
  electionIntervalMs: number;
  pollIntervalMs: number;
  logLimit: number;
  heartbeatMs: number;
}

/** What a reader reads in one statement: the queue's row beside each log entry after its cursor. */
interface LogRow {
  trimmed_through: string;
  registration: RegisterResponse | null;
  queue_id: string | null;
  last_message_id: string | null;
  seq: string | null;
  item: LoggedItem | null;
}

interface QueueRow {
  id: number;
  queue_id: string | null;
  last_event_id: string | null;
  last_message_id: string | null;
  registration: RegisterResponse | null;
  registered_seq: string;
  trimmed_through: string;
}

/** How an item is kept in the log: JSON, a gap's error as its code and message. */
type LoggedItem =
  | Exclude<QueueItem, QueueGap | { kind: 'invalid' }>
  | (Omit<QueueGap, 'error'> & { error: { code: string; message: string } })
  | {
      kind: 'invalid';
      type: string | undefined;
      id: number | undefined;
      error: { code: string; message: string };
    };

function toLogged(item: QueueItem): LoggedItem {
  if (item.kind === 'gap' || item.kind === 'invalid')
    return { ...item, error: { code: item.error.code, message: item.error.message } } as LoggedItem;
  return item;
}

function fromLogged(item: LoggedItem): QueueItem {
  if (item.kind === 'gap' || item.kind === 'invalid') {
    return { ...item, error: new ZmcpError(item.error.code as never, item.error.message) } as QueueItem;
  }
  return item;
}

const num = (v: string | null): number | undefined => (v === null ? undefined : Number(v));

const sorted = (list: readonly string[] | undefined): string[] | null =>
  list === undefined ? null : [...new Set(list)].sort();

/**
 * The key of an account's queue for readers registering `params`: the account, `#`, and a digest
 * of every option that changes what Zulip sends or what the queue yields (lists sorted; the
 * options of the polling itself, such as timeouts and backoff, left out). Readers with the same
 * key share one queue; `#` never occurs in an account.
 */
function queueKey(account: string, params: EventQueueOptions): string {
  const capabilities = Object.entries(params.clientCapabilities ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  const shape = {
    eventTypes: sorted(params.eventTypes),
    fetchEventTypes: sorted(params.fetchEventTypes),
    narrow: params.narrow === undefined ? null : params.narrow.map((t) => JSON.stringify(t)).sort(),
    allPublicStreams: params.allPublicStreams ?? null,
    applyMarkdown: params.applyMarkdown ?? null,
    clientGravatar: params.clientGravatar ?? null,
    includeSubscribers: params.includeSubscribers ?? null,
    clientCapabilities: params.clientCapabilities === undefined ? null : capabilities,
    queueLifespanSecs: params.queueLifespanSecs ?? null,
    yieldHeartbeats: params.yieldHeartbeats ?? null,
  };
  const digest = createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 16);
  return `${account}#${digest}`;
}

/**
 * The PostgreSQL event hub. Per account, the process that holds the account's advisory lock (on a
 * connection of its own: freed by the server the moment its holder dies) is the owner: it alone
 * long-polls Zulip, resuming the queue the last owner recorded (or registering one), and writes
 * every batch into `event_log` and the queue's position into `event_queues` in one transaction,
 * through the lock's connection (so an owner that lost its lock cannot write), then `NOTIFY`s.
 * Every reader, the owner's own included, reads the log in order from the position its
 * registration answers to. Events Zulip handed out are acknowledged only by the next poll, which
 * starts after the write: an owner killed in between leaves them to its successor.
 */
export class PgEventHub implements EventHub {
  readonly #db: Database;
  readonly #logger: Logger;
  readonly #options: Tuning;
  readonly #feeds = new Map<string, AccountFeed>();
  #closed = false;

  constructor(db: Database, options: EventHubOptions = {}) {
    this.#db = db;
    this.#logger = db.logger;
    this.#options = {
      electionIntervalMs: options.electionIntervalMs ?? 500,
      pollIntervalMs: options.pollIntervalMs ?? 1_000,
      logLimit: options.logLimit ?? 10_000,
      heartbeatMs: options.heartbeatMs ?? 1_000,
    };
  }

  source(client: ZulipClient, account: string): OpenEventSource {
    const checked = parseStateAccount(account);
    return async (params) => {
      if (this.#closed) throw new DeliveryError('DELIVERY_NOT_RUNNING', 'the state backend is closed');
      const key = queueKey(checked, params);
      let feed = this.#feeds.get(key);
      if (feed === undefined) {
        const registration: EventQueueOptions = { ...params, signal: undefined };
        feed = new AccountFeed(this.#db, this.#logger, this.#options, key, registration, () =>
          this.#feeds.delete(key),
        );
        this.#feeds.set(key, feed);
      }
      return feed.reader(client);
    };
  }

  async owner(account: string): Promise<EventQueueOwner | undefined> {
    const q = this.#db.q;
    const result = await this.#db.pool.query<{
      id: number;
      owner_pid: number | null;
      owner_host: string | null;
      owner_since: Date | null;
      queue_id: string | null;
      last_event_id: string | null;
      owned: boolean;
      log_seq: string | null;
      log_size: string;
    }>(
      `SELECT e.id, e.owner_pid, e.owner_host, e.owner_since, e.queue_id, e.last_event_id,
              EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
                        AND classid = $2::bigint::oid AND objid = e.id::bigint::oid AND objsubid = 2) AS owned,
              (SELECT max(seq) FROM ${q}.event_log WHERE account = e.account)::text AS log_seq,
              (SELECT count(*) FROM ${q}.event_log WHERE account = e.account)::text AS log_size
         FROM ${q}.event_queues e WHERE starts_with(e.account, $1 || '#')
        ORDER BY owned DESC, (e.owner_pid = $3 AND e.owner_host = $4) IS TRUE DESC,
                 e.owner_since DESC NULLS LAST, e.id DESC
        LIMIT 1`,
      [parseStateAccount(account), ownerLockClass(this.#db), process.pid, hostname()],
    );
    const row = result.rows[0];
    if (row === undefined) return undefined;
    return {
      account,
      owned: row.owned,
      pid: row.owner_pid ?? undefined,
      host: row.owner_host ?? undefined,
      since: row.owner_since?.toISOString(),
      queueId: row.queue_id ?? undefined,
      lastEventId: num(row.last_event_id),
      logSeq: Number(row.log_seq ?? 0),
      logSize: Number(row.log_size),
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#feeds.values()].map((f) => f.close()));
    this.#feeds.clear();
  }
}

/** The first key of the owners' advisory locks: the schema's lock class, moved off the delivery locks' one. */
function ownerLockClass(db: Database): number {
  return (db.lockClass ^ 0x40000000) & 0x7fffffff;
}

/** One shared queue (an account's, for one kind of reader) in this process: its readers, and its ownership while it has any. */
class AccountFeed {
  readonly #db: Database;
  readonly #logger: Logger;
  readonly #options: Tuning;
  readonly #key: string;
  readonly #forget: () => void;
  readonly #readers = new Set<LogReader>();
  #rowId: number | undefined;
  #client: ZulipClient | undefined;
  readonly #params: EventQueueOptions;
  /** The lock's connection while this process owns the queue. */
  #owner: pg.Client | undefined;
  /** The connection that tries for the lock while another process owns the queue. */
  #candidate: pg.Client | undefined;
  #queue: EventQueue | undefined;
  #owning: Promise<void> | undefined;
  #electing: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #unlisten: (() => void) | undefined;
  #closed = false;

  /** `key` is the queue's ({@link queueKey}), `params` the registration of every reader of it. */
  constructor(
    db: Database,
    logger: Logger,
    options: Tuning,
    key: string,
    params: EventQueueOptions,
    forget: () => void,
  ) {
    this.#db = db;
    this.#logger = logger;
    this.#options = options;
    this.#key = key;
    this.#params = params;
    this.#forget = forget;
  }

  get #q(): string {
    return this.#db.q;
  }

  /** A reader of the queue; `params` are the feed's (the same key), bar the polling options. */
  async reader(client: ZulipClient): Promise<EventSource> {
    this.#client ??= client;
    const reader = new LogReader(this.#db, this.#options, () => this.#drop(reader));
    this.#readers.add(reader);
    this.#unlisten ??= this.#db.onEventsLogged(this.#key, () => {
      for (const r of this.#readers) r.wake();
    });
    try {
      this.#rowId ??= await this.#ensureRow();
      await this.#elect();
      this.#scheduleElection();
      await reader.start(this.#rowId, client, () => this.#elect());
      return reader;
    } catch (err) {
      this.#drop(reader);
      throw err;
    }
  }

  async #ensureRow(): Promise<number> {
    const q = this.#q;
    const result = await this.#db.pool.query<{ id: number }>(
      `WITH made AS (
         INSERT INTO ${q}.event_queues (account) VALUES ($1) ON CONFLICT (account) DO NOTHING RETURNING id)
       SELECT id FROM made UNION ALL SELECT id FROM ${q}.event_queues WHERE account = $1`,
      [this.#key],
    );
    const id = result.rows[0]?.id;
    if (id === undefined) throw new Error('no event queue row');
    return id;
  }

  #scheduleElection(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setInterval(() => void this.#elect(), this.#options.electionIntervalMs);
    this.#timer.unref();
  }

  /** Tries once to become the owner (no-op while owning or trying). */
  #elect(): Promise<void> {
    if (this.#owner !== undefined || this.#closed || this.#readers.size === 0) return Promise.resolve();
    this.#electing ??= this.#tryOwn()
      .catch((err: unknown) => {
        if (this.#closed || this.#readers.size === 0) return;
        this.#logger.warn('could not try to own the shared event queue', { code: errorCode(err) });
      })
      .finally(() => {
        this.#electing = undefined;
      });
    return this.#electing;
  }

  async #tryOwn(): Promise<void> {
    const rowId = this.#rowId as number;
    // One connection tries, again and again, while another process owns the queue: no new
    // connection (a server process on PostgreSQL) per try.
    let conn = this.#candidate;
    if (conn === undefined) {
      conn = await this.#db.connectDedicated();
      const c = conn;
      c.on('error', () => {
        if (this.#candidate === c) this.#candidate = undefined;
      });
      this.#candidate = conn;
    }
    let got = false;
    try {
      const lock = await conn.query<{ got: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS got', [
        ownerLockClass(this.#db),
        rowId,
      ]);
      got = lock.rows[0]?.got === true;
    } catch (err) {
      this.#candidate = undefined;
      await conn.end().catch(() => undefined);
      throw err;
    }
    if (!got) return;
    this.#candidate = undefined;
    if (this.#closed || this.#readers.size === 0) {
      await conn.end().catch(() => undefined);
      return;
    }
    this.#owner = conn;
    const owner = conn;
    owner.on('error', (err) => this.#lost(owner, err));
    owner.on('end', () => this.#lost(owner, undefined));
    // The owner's first write (a registration, or the resumed position) is what readers wait for.
    this.#owning = this.#own(owner, rowId).catch((err: unknown) => this.#lost(owner, err));
  }

  /** Ends the connection that tries for the ownership. */
  async #endCandidate(): Promise<void> {
    const conn = this.#candidate;
    this.#candidate = undefined;
    await conn?.end().catch(() => undefined);
  }

  async #own(conn: pg.Client, rowId: number): Promise<void> {
    const q = this.#q;
    const client = this.#client as ZulipClient;
    const params: EventQueueOptions = { ...this.#params, logger: this.#logger };
    const row = (await conn.query<QueueRow>(`SELECT * FROM ${q}.event_queues WHERE id = $1`, [rowId]))
      .rows[0] as QueueRow;
    let queue: EventQueue;
    if (row.queue_id !== null && row.registration !== null) {
      // Carry on where the last owner stopped: Zulip still holds what it had not acknowledged.
      queue = EventQueue.resume(client, params, {
        queueId: row.queue_id,
        lastEventId: num(row.last_event_id) ?? -1,
        lastMessageId: num(row.last_message_id),
        registration: row.registration,
      });
      await conn.query(
        `UPDATE ${q}.event_queues SET owner_pid = $2, owner_host = $3, owner_since = now(), updated_at = now() WHERE id = $1`,
        [rowId, process.pid, hostname()],
      );
      this.#logger.info('owning the shared event queue: resumed', { queueId: row.queue_id });
    } else {
      queue = await EventQueue.open(client, params);
      const reg = queue.registration;
      await conn.query('BEGIN');
      await conn.query(
        `UPDATE ${q}.event_queues SET owner_pid = $2, owner_host = $3, owner_since = now(), queue_id = $4,
                last_event_id = $5, last_message_id = $6, registration = $7,
                registered_seq = (SELECT coalesce(max(seq), 0) FROM ${q}.event_log), updated_at = now()
          WHERE id = $1`,
        [rowId, process.pid, hostname(), reg.queue_id, reg.last_event_id, reg.max_message_id ?? null, reg],
      );
      await conn.query('SELECT pg_notify($1, $2)', ['zmcp_events', this.#payload()]);
      await conn.query('COMMIT');
      this.#logger.info('owning the shared event queue: registered', { queueId: reg.queue_id });
    }
    if (this.#owner !== conn) {
      await queue.close({ keep: true });
      return;
    }
    this.#queue = queue;
    this.#startHeartbeat(conn);
    while (this.#owner === conn) {
      const batch = await queue.nextBatch();
      if (batch === undefined) break;
      if (batch.length === 0 || this.#owner !== conn) continue;
      await this.#record(conn, rowId, queue, batch);
    }
  }

  /** One batch into the log and the queue's position, in one transaction on the lock's connection. */
  async #record(conn: pg.Client, rowId: number, queue: EventQueue, batch: QueueItem[]): Promise<void> {
    const q = this.#q;
    await conn.query('BEGIN');
    try {
      const inserted = await conn.query<{ seq: string; kind: string }>(
        `INSERT INTO ${q}.event_log (account, item)
           SELECT $1, x FROM unnest($2::jsonb[]) WITH ORDINALITY AS t(x, n) ORDER BY n
         RETURNING seq::text, item->>'kind' AS kind`,
        [this.#key, batch.map((item) => JSON.stringify(toLogged(item)))],
      );
      const seqs = inserted.rows.map((r) => Number(r.seq));
      const last = Math.max(...seqs);
      // A new reader after a re-registration starts from it, with its initial state.
      const gapAt = inserted.rows.filter((r) => r.kind === 'gap').map((r) => Number(r.seq));
      const { position } = queue;
      await conn.query(
        `UPDATE ${q}.event_queues SET queue_id = $2, last_event_id = $3, last_message_id = $4,
                registration = CASE WHEN $5::bigint IS NULL THEN registration ELSE $6::jsonb END,
                registered_seq = coalesce($5::bigint, registered_seq), updated_at = now()
          WHERE id = $1`,
        [
          rowId,
          position.queueId,
          position.lastEventId,
          position.lastMessageId ?? null,
          gapAt.length > 0 ? Math.max(...gapAt) : null,
          position.registration,
        ],
      );
      const keepFrom = last - this.#options.logLimit;
      if (keepFrom > 0) {
        const trimmed = await conn.query(`DELETE FROM ${q}.event_log WHERE account = $1 AND seq <= $2`, [
          this.#key,
          keepFrom,
        ]);
        if ((trimmed.rowCount ?? 0) > 0) {
          await conn.query(
            `UPDATE ${q}.event_queues SET trimmed_through = greatest(trimmed_through, $2) WHERE id = $1`,
            [rowId, keepFrom],
          );
        }
      }
      await conn.query('SELECT pg_notify($1, $2)', ['zmcp_events', this.#payload()]);
      await conn.query('COMMIT');
    } catch (err) {
      await conn.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  #payload(): string {
    return JSON.stringify({ schema: this.#db.schema, account: this.#key });
  }

  #startHeartbeat(conn: pg.Client): void {
    const beat = async () => {
      if (this.#owner !== conn) return;
      try {
        await Promise.race([
          conn.query('SELECT 1'),
          new Promise((_, reject) =>
            setTimeout(() => reject(new Error('heartbeat timed out')), this.#options.heartbeatMs * 3).unref(),
          ),
        ]);
      } catch (err) {
        this.#lost(conn, err);
      }
    };
    this.#heartbeat = setInterval(() => void beat(), this.#options.heartbeatMs);
    this.#heartbeat.unref();
  }

  /** The ownership is gone (its connection failed, or the owner loop did): stop polling, keep the queue. */
  #lost(conn: pg.Client, err: unknown): void {
    if (this.#owner !== conn) return;
    this.#owner = undefined;
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    const queue = this.#queue;
    this.#queue = undefined;
    void queue?.close({ keep: true });
    void conn.end().catch(() => undefined);
    if (!this.#closed && this.#readers.size > 0) {
      this.#logger.warn('lost the ownership of the shared event queue; another process takes over', {
        code: errorCode(err),
      });
    }
  }

  async #stopOwning(): Promise<void> {
    const conn = this.#owner;
    if (conn === undefined) return;
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    this.#owner = undefined;
    const queue = this.#queue;
    this.#queue = undefined;
    await queue?.close({ keep: true });
    await this.#owning?.catch(() => undefined);
    await conn.end().catch(() => undefined);
  }

  #drop(reader: LogReader): void {
    if (!this.#readers.delete(reader)) return;
    if (this.#readers.size > 0) return;
    // Nobody reads here any more: another process with readers takes the queue over.
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#unlisten?.();
    this.#unlisten = undefined;
    void (this.#electing ?? Promise.resolve()).finally(() => this.#endCandidate());
    void this.#stopOwning();
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#readers].map((r) => r.close()));
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#unlisten?.();
    await this.#electing;
    await this.#endCandidate();
    await this.#stopOwning();
    this.#forget();
  }
}

/** One reader of an account's log: an `EventSource` for one engine. */
class LogReader implements EventSource {
  readonly #db: Database;
  readonly #options: Tuning;
  readonly #onClose: () => void;
  #rowId = 0;
  #cursor = 0;
  #registration: RegisterResponse | undefined;
  #wake: (() => void) | undefined;
  #closed = false;
  #reading: Promise<unknown> = Promise.resolve();

  constructor(db: Database, options: Tuning, onClose: () => void) {
    this.#db = db;
    this.#options = options;
    this.#onClose = onClose;
  }

  get registration(): RegisterResponse {
    if (this.#registration === undefined) throw new Error('the reader has not started');
    return this.#registration;
  }

  /**
   * Waits for the queue to be registered (an owner, here or elsewhere, writes it), then starts at
   * the log's end, as a queue registered now would: the registration's message position is the
   * newest the owner has logged, and its streams, subscriptions and people are read afresh
   * (GET), so a reader that joins late never replays what its engine catches up from history.
   */
  async start(rowId: number, client: ZulipClient, elect: () => Promise<void>): Promise<void> {
    this.#rowId = rowId;
    const q = this.#db.q;
    while (!this.#closed) {
      const row = (
        await this.#db.pool.query<QueueRow & { log_seq: string | null }>(
          `SELECT e.*, (SELECT max(seq) FROM ${q}.event_log WHERE account = e.account)::text AS log_seq
             FROM ${q}.event_queues e WHERE e.id = $1`,
          [rowId],
        )
      ).rows[0];
      if (row?.registration != null) {
        const reg = row.registration;
        const [streams, subscriptions, users] = await Promise.all([
          reg.streams === undefined ? undefined : client.getStreams(),
          reg.subscriptions === undefined ? undefined : client.getSubscriptions(),
          reg.realm_users === undefined ? undefined : client.getUsers(),
        ]);
        this.#registration = {
          ...reg,
          queue_id: row.queue_id ?? reg.queue_id,
          last_event_id: num(row.last_event_id) ?? reg.last_event_id,
          max_message_id: num(row.last_message_id) ?? reg.max_message_id,
          ...(streams === undefined ? {} : { streams }),
          ...(subscriptions === undefined ? {} : { subscriptions }),
          ...(users === undefined ? {} : { realm_users: users }),
        } as RegisterResponse;
        this.#cursor = Math.max(Number(row.registered_seq), Number(row.log_seq ?? 0));
        return;
      }
      await this.#sleep();
      await elect();
    }
    throw new DeliveryError('DELIVERY_NOT_RUNNING', 'the shared event queue was closed before it started');
  }

  wake(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #sleep(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.#wake = undefined;
        resolve();
      }, this.#options.pollIntervalMs);
      timer.unref();
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  nextBatch(): Promise<QueueItem[] | undefined> {
    const run = this.#reading.then(() => this.#next());
    this.#reading = run.catch(() => undefined);
    return run;
  }

  async #next(): Promise<QueueItem[] | undefined> {
    const q = this.#db.q;
    let failures = 0;
    while (!this.#closed) {
      let result: pg.QueryResult<LogRow>;
      try {
        result = await this.#read(q);
        failures = 0;
      } catch (err) {
        // The database is away for a while: tried again, as a Zulip queue's poll is, never fatal.
        failures += 1;
        if (failures === 1 || failures % 30 === 0) {
          this.#db.logger.warn('could not read the shared event log; trying again', {
            code: errorCode(err),
            failures,
          });
        }
        await this.#sleep();
        continue;
      }
      const head = result.rows[0];
      if (head === undefined) return undefined;
      const items: QueueItem[] = [];
      const trimmed = Number(head.trimmed_through);
      if (trimmed > this.#cursor) {
        // This reader fell behind the log's bound: what it lost is healed from history, as a
        // lost Zulip queue is.
        const newMax = num(head.last_message_id);
        items.push({
          kind: 'gap',
          lostQueueId: head.queue_id ?? '',
          lastEventId: -1,
          lastMessageId: undefined,
          newQueueId: head.queue_id ?? '',
          newMaxMessageId: newMax,
          registration: { ...(head.registration as RegisterResponse), max_message_id: newMax },
          error: new ZmcpError(
            'CORE_QUEUE_LOST',
            'events were dropped from the shared event log before this reader read them',
          ),
        } as QueueGap);
        this.#cursor = trimmed;
      }
      for (const row of result.rows) {
        if (row.seq === null || row.item === null) continue;
        items.push(fromLogged(row.item));
        this.#cursor = Number(row.seq);
      }
      if (items.length > 0) return items;
      await this.#sleep();
    }
    return undefined;
  }

  /** The queue's row and the log after the cursor (at most 1,000 entries), in one statement. */
  #read(q: string): Promise<pg.QueryResult<LogRow>> {
    return this.#db.pool.query<LogRow>(
      `SELECT e.trimmed_through, e.queue_id, e.last_message_id,
                CASE WHEN e.trimmed_through > $2 THEN e.registration END AS registration,
                l.seq::text AS seq, l.item
           FROM ${q}.event_queues e
           LEFT JOIN LATERAL (SELECT seq, item FROM ${q}.event_log
                               WHERE account = e.account AND seq > greatest($2, e.trimmed_through)
                               ORDER BY seq LIMIT 1000) l ON true
          WHERE e.id = $1`,
      [this.#rowId, this.#cursor],
    );
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.wake();
    this.#onClose();
  }
}
