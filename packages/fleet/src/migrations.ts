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
  {
    version: 2,
    compatibleFrom: 1,
    description: 'every kind of state: the 2026-era key, agent and task, and the send-once memory',
    sql: `
ALTER TABLE state DROP CONSTRAINT state_kind_check;
ALTER TABLE state ADD CONSTRAINT state_kind_check
  CHECK (kind IN ('monitor', 'delivery', 'filters', 'key', 'agent', 'task', 'sends'));
`,
  },
  {
    version: 3,
    compatibleFrom: 1,
    description: 'per-person access tokens of a hosted server: one row per token and their list',
    sql: `
ALTER TABLE state DROP CONSTRAINT state_kind_check;
ALTER TABLE state ADD CONSTRAINT state_kind_check
  CHECK (kind IN ('monitor', 'delivery', 'filters', 'key', 'agent', 'task', 'sends', 'token', 'tokens'));
`,
  },
  {
    version: 4,
    compatibleFrom: 1,
    description: 'one shared Zulip event queue per realm and bot: its owner, position and event log',
    sql: `
-- One row per realm and bot (account) whose events are shared: its id names the owner's advisory
-- lock; the queue's position (queue id, last event id, last message id, registration) lets a new
-- owner resume it; registered_seq is the log position the registration answers to.
CREATE TABLE event_queues (
  id              integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account         text        NOT NULL UNIQUE,
  owner_pid       integer,
  owner_host      text,
  owner_since     timestamptz,
  queue_id        text,
  last_event_id   bigint,
  last_message_id bigint,
  registration    jsonb,
  registered_seq  bigint      NOT NULL DEFAULT 0,
  trimmed_through bigint      NOT NULL DEFAULT 0,
  updated_at      timestamptz NOT NULL DEFAULT now()
);

-- What the owner received, in order, for every process serving the account (bounded: the owner
-- trims it). A new row is announced on the channel zmcp_events.
CREATE TABLE event_log (
  seq     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account text   NOT NULL,
  item    jsonb  NOT NULL
);
CREATE INDEX event_log_account_seq ON event_log (account, seq);
`,
  },
  {
    version: 5,
    compatibleFrom: 1,
    description: 'the fleet’s processes (a heartbeat row each) and the counted leases they hold',
    sql: `
-- One row per running process (its bin, pid, host, start and last heartbeat); a row not seen for
-- a while is a process that is gone, shown as such and then removed.
CREATE TABLE processes (
  id         text        PRIMARY KEY,
  bin        text        NOT NULL,
  pid        integer     NOT NULL,
  host       text        NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  last_seen  timestamptz NOT NULL DEFAULT now()
);

-- A counted lease (a per-token long wait): held by a process, counted only while that process
-- is seen, so the leases of a process that died stop counting with its heartbeat.
CREATE TABLE leases (
  id         text        PRIMARY KEY,
  scope      text        NOT NULL,
  process_id text        NOT NULL REFERENCES processes (id) ON DELETE CASCADE,
  taken_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX leases_scope ON leases (scope);
`,
  },
  {
    version: 6,
    compatibleFrom: 1,
    description:
      'launcher workers on several machines: the fleet row, worker leases, one claim row per trigger',
    sql: `
-- One row per realm and bot (account) and launcher id: every decision about its triggers is
-- taken holding this row (SELECT ... FOR UPDATE), so the workers decide one at a time; it keeps
-- the newest message id examined, where a fleet that was wholly down catches up from.
CREATE TABLE launcher_fleets (
  account         text   NOT NULL,
  launcher        text   NOT NULL,
  last_message_id bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (account, launcher)
);

-- One row per live worker: its lease, renewed by its heartbeat. A worker whose lease ran out is
-- dead to the others: they delete its row and take over its triggers.
CREATE TABLE launcher_workers (
  account    text        NOT NULL,
  launcher   text        NOT NULL,
  worker     text        NOT NULL,
  host       text        NOT NULL,
  pid        integer     NOT NULL,
  since      timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (account, launcher, worker)
);

-- One row per trigger (its claim): inserted once (ON CONFLICT DO NOTHING), by whichever worker
-- sees the message first; worker names the one whose agent runs it (running) or got it (followup).
CREATE TABLE launcher_triggers (
  account      text        NOT NULL,
  launcher     text        NOT NULL,
  message_id   bigint      NOT NULL,
  conversation text        NOT NULL,
  trigger      jsonb       NOT NULL,
  status       text        NOT NULL CHECK (status IN ('queued', 'running', 'followup', 'merged', 'done', 'failed')),
  worker       text,
  run_id       text,
  pid          integer,
  into_id      bigint,
  reason       text,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account, launcher, message_id)
);
CREATE INDEX launcher_triggers_active ON launcher_triggers (account, launcher, status, message_id);
`,
  },
];

/** The schema version this release writes. */
export const SCHEMA_VERSION = (MIGRATIONS.at(-1) as Migration).version;
