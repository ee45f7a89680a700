import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { createRedactor } from '@zmcp/cli';
import {
  AdmissionGate,
  type AdmissionList,
  type AdmissionPath,
  type Conversation,
  type CredentialSource,
  conversationKey,
  EventQueue,
  type Logger,
  type Message,
  mentionSyntax,
  narrow,
  noopLogger,
  PersonNames,
  parseAdmissionList,
  type QueueItem,
  type RealmEmoji,
  type RealmUserEvent,
  type RegisterResponse,
  readNarrow,
  sameStreamName,
  type UpdateMessageEvent,
  type ZulipClient,
} from '@zmcp/core';
import { type EventSource, parseSessionId, type StateLock, type StateStore } from '@zmcp/delivery';
import {
  type LauncherTriggerRow,
  type LauncherWork,
  openZulipRuntime,
  type ZulipRuntime,
} from '@zmcp/server-kit';
import { type AgentExit, type AgentProcess, reapProcessGroup, startAgentProcess } from './agent-process.js';
import {
  type BackendName,
  backendNames,
  buildInvocation,
  type CodexToolApproval,
  codexApprovalProblem,
  codexToolApprovals,
} from './backends.js';
import {
  type AllowedUsers,
  launcherServerSettings,
  type StatusEmoji,
  type StreamBackendRule,
} from './config.js';
import { LauncherError } from './errors.js';
import { holdRecord, TriggerLedger } from './ledger.js';
import { InterruptMailbox } from './mailbox.js';
import { type McpServerEntry, parseServerEntry } from './mcp-config.js';
import { ProgressReporter, readProgressLine } from './progress.js';
import { agentPrompt, followUpNote, systemPrompt } from './prompt.js';
import {
  classifyMessage,
  conversationSlug,
  type IgnoreReason,
  loadTrigger,
  storeTrigger,
  type TriggerInfo,
  TriggerInfoSchema,
} from './triggers.js';

/** A trigger as a fleet's claim row keeps it, checked as the record file's are. */
function fleetTrigger(row: LauncherTriggerRow): TriggerInfo {
  return loadTrigger(TriggerInfoSchema.parse(row.trigger));
}

/** How an agent run ended. `stopped`: the launcher shut down while it ran. */
export type SessionOutcome = 'done' | 'failed' | 'timeout' | 'stopped';

/** What the session-end callback is told about one agent run. */
export interface SessionEndInfo {
  runId: string;
  trigger: TriggerInfo;
  backend: BackendName;
  outcome: SessionOutcome;
  /** A short reason for anything but `done`. */
  reason: string | undefined;
  exitCode: number | null;
  signal: string | null;
  /** Follow-ups the agent took from its interrupt file. */
  followUpsDelivered: number;
  /** The conversation's output log. */
  logFile: string;
  durationMs: number;
}

/** What the launcher did, as it happens: for status displays, metrics and tests. */
export type LauncherEvent =
  | { type: 'ignored'; messageId: number; senderId: number; reason: IgnoreReason | 'stale' }
  | {
      type: 'trigger';
      trigger: TriggerInfo;
      /** start: an agent starts now; queue: it waits for a slot; followup: handed to the running agent; merge: folded into a waiting trigger; refuse: the queue is full. */
      action: 'start' | 'queue' | 'followup' | 'merge' | 'refuse';
    }
  | {
      type: 'started';
      runId: string;
      trigger: TriggerInfo;
      backend: BackendName;
      pid: number;
      argv: readonly string[];
    }
  | { type: 'ended'; end: SessionEndInfo }
  | {
      /**
       * How reading missed triggers from history goes: after a restart (`catch-up`) or an
       * event-queue expiry (`re-registration`); at the start, after each page, and at the end
       * (with `outcome`).
       */
      type: 'progress';
      work: 'catch-up' | 're-registration';
      afterId: number;
      throughId: number;
      reachedId: number;
      messages: number;
      outcome?: 'done' | 'failed';
    }
  | { type: 'recovered'; messageId: number; action: 'requeued' | 'failed' | 'merged'; killedOrphan: boolean };

/** A snapshot of what runs and what waits. */
export interface LauncherStatus {
  running: {
    runId: string;
    trigger: TriggerInfo;
    backend: BackendName;
    pid: number | undefined;
    startedAt: number;
    /** The agent's last line of output, redacted as its log is. */
    lastLine: string | undefined;
  }[];
  queued: TriggerInfo[];
}

/** Options of {@link createLauncher}. */
export interface LauncherOptions {
  /**
   * The bot account the launcher listens as (it must be subscribed to the streams it serves): its
   * credentials, as `@zmcp/core`'s `loadCredentials` (or a zuliprc) gives them. The launcher opens
   * its Zulip runtime with them (`@zmcp/server-kit`'s `openZulipRuntime`) on `start()`.
   */
  zulip: {
    site: string;
    email: string;
    apiKey: string;
    allowInsecureHttp?: boolean | undefined;
    source?: CredentialSource | undefined;
  };
  /** Deadline of each Zulip call, in milliseconds (`ZULIP_REQUEST_TIMEOUT_MS`). Default 15 s. */
  requestTimeoutMs?: number | undefined;
  /**
   * The zulip server every agent gets: a server entry as a `.mcp.json` holds it (`command`,
   * `args`, `env`, `cwd`, or `url`, `headers`), or one returned by `loadServerEntry`.
   */
  mcpServer: McpServerEntry | Readonly<Record<string, unknown>>;
  /** Who may start an agent: user ids, and exact email addresses. Anyone else is ignored. */
  allowedUsers: AllowedUsers | readonly (number | string)[];
  /** The trigger record (unless `stateUrl` is set), run files and interrupt files live here. */
  stateDir: string;
  /**
   * `ZULIP_STATE_URL`: `postgres://…` keeps the trigger record in PostgreSQL (`@zmcp/fleet`)
   * instead of `stateDir`; run files and logs stay on this machine.
   */
  stateUrl?: string | undefined;
  /** Default `claude`. */
  backend?: BackendName | undefined;
  streamBackends?: readonly StreamBackendRule[] | undefined;
  backendArgs?: Partial<Record<BackendName, readonly string[]>> | undefined;
  /**
   * How Codex approves the zulip tools (its `default_tools_approval_mode` for the server). Default
   * `approve`; any other mode needs `--approve-for-me` among the codex arguments (else codex exec
   * refuses every tool that writes, and the launcher refuses to start).
   */
  codexToolApproval?: CodexToolApproval | undefined;
  /** Added to the built-in system prompt. */
  systemPrompt?: string | undefined;
  /** Where agents start. Default: the process's working directory. */
  workdir?: string | undefined;
  /** The agents' environment, and what references in the server entry expand against. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  /** Names the trigger record. Default `zulip-agent`. */
  launcherId?: string | undefined;
  /** One output log per conversation. Default `<stateDir>/logs`. */
  logDir?: string | undefined;
  /**
   * Where the trigger record is kept, under the realm and bot's account key. Default: the runtime's
   * store, PostgreSQL with `stateUrl`, else files on `stateDir` (`<stateDir>/<account>/<launcherId>.json`).
   */
  store?: StateStore | undefined;
  /**
   * With `stateUrl` (and no `store` of its own), how long this worker counts as alive after its
   * last heartbeat (sent every third of it), in ms: a worker silent for longer is dead to the
   * others, which take its triggers over. Default 15 s.
   */
  workerLeaseMs?: number | undefined;
  /** Start agents for DMs to the bot. Default true. */
  directMessages?: boolean | undefined;
  /**
   * Claude Code (in a stream topic) asks the conversation's people, through its zulip server's
   * `permission_prompt`, before a tool its rules do not allow; off, such a tool is refused as
   * `claude -p` refuses it. Default true.
   */
  approvals?: boolean | undefined;
  /** One status message per run in the conversation, edited as the agent works. Default true. */
  progress?: boolean | undefined;
  /** Shortest time between two edits of a status message, in milliseconds. Default 10 s. */
  progressIntervalMs?: number | undefined;
  /** Default 2. */
  maxRunning?: number | undefined;
  /** Default 20. */
  maxQueued?: number | undefined;
  /** Default 30 minutes. */
  timeLimitMs?: number | undefined;
  /** SIGTERM to SIGKILL. Default 10 s. */
  stopGraceMs?: number | undefined;
  /** After a restart, missed triggers younger than this start. Default 1 hour; 0 turns catch-up off. */
  catchUpMs?: number | undefined;
  emoji?: Partial<StatusEmoji> | undefined;
  logger?: Logger | undefined;
  /** Hook: text put first in every agent's prompt (a string, or made per trigger). */
  messagePrefix?: string | ((trigger: TriggerInfo) => string | undefined) | undefined;
  /** Hook: called when an agent run ends, whatever the outcome. */
  onSessionEnd?: ((end: SessionEndInfo) => void | Promise<void>) | undefined;
  /** Hook: every decision and state change, as it happens. */
  onEvent?: ((event: LauncherEvent) => void) | undefined;
}

/** A launcher: listens for triggers and runs one agent per conversation. */
export interface Launcher {
  /**
   * Connects, recovers what an earlier run left (queued triggers start, an agent that was
   * running is reported failed), catches up on triggers missed while down, and starts listening.
   * @throws LauncherError `LAUNCHER_STATE_INVALID` when called twice or after close; the
   *   client's `CORE_*` codes when the realm cannot be reached; `DELIVERY_STATE_CORRUPT`.
   */
  start(): Promise<void>;
  /** Stops listening, stops every agent (SIGTERM, then SIGKILL after the grace) and waits for them. Idempotent. */
  close(): Promise<void>;
  status(): LauncherStatus;
  /** Settles when the launcher stopped on its own (its event queue failed for good), with the error. */
  readonly failed: Promise<unknown>;
}

interface Run {
  runId: string;
  trigger: TriggerInfo;
  backend: BackendName;
  agent: AgentProcess;
  mailbox: InterruptMailbox;
  runDir: string;
  logFile: string;
  startedAt: number;
  followUps: number[];
  /** It waited in the queue, so its trigger carries the queued reaction. */
  fromQueue: boolean;
  /** Its status message, once it started (with live progress on). */
  progress: ProgressReporter | undefined;
  /** The Claude Code session this DM run started (forgotten again when the run fails). */
  startedSession: string | undefined;
}

const DEFAULT_EMOJI: StatusEmoji = {
  queued: 'hourglass',
  working: 'working_on_it',
  done: 'check',
  failed: 'warning',
};
/** A DM answering an approval prompt (`yes abcde`, `no abcde`), as the approvals desk reads one. */
const APPROVAL_ANSWER = /^\s*(y|yes|n|no)\s+[a-km-z]{5}\s*$/i;
/** Shortest time between two edits of a status message: six a minute at most, far inside Zulip's rate limits. */
const DEFAULT_PROGRESS_INTERVAL_MS = 10_000;
/** The edit window Zulip has by default, assumed when the realm does not say. */
const DEFAULT_EDIT_LIMIT_SECONDS = 600;
/** Mentions and DMs read back per request while catching up. */
const CATCH_UP_PAGE = 1000;

/** The realm's people as a registration lists them (`realm_users`), for telling them apart by name. */
function peopleOf(registration: RegisterResponse): { user_id: number; full_name: string }[] {
  return (registration.realm_users ?? []).map((u) => ({ user_id: u.user_id, full_name: u.full_name }));
}

/** `realm_message_content_edit_limit_seconds` of a registration: null for no limit, Zulip's default when absent. */
function editLimitOf(registration: RegisterResponse): number | null {
  const value = (registration as Record<string, unknown>).realm_message_content_edit_limit_seconds;
  if (value === null) return null;
  return typeof value === 'number' && value > 0 ? value : DEFAULT_EDIT_LIMIT_SECONDS;
}

function normalizeAllowedUsers(value: LauncherOptions['allowedUsers']): AdmissionList {
  const entries = Array.isArray(value)
    ? (value as readonly (number | string)[])
    : [...(value as AllowedUsers).userIds, ...(value as AllowedUsers).emails];
  try {
    return parseAdmissionList(entries, 'allowedUsers') ?? { ids: [], emails: [] };
  } catch (err) {
    throw new LauncherError('LAUNCHER_CONFIG_INVALID', (err as Error).message, {
      cause: err,
      details: { problems: ['allowedUsers'] },
    });
  }
}

function positive(name: string, value: number | undefined, fallback: number, min: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < min) {
    throw new LauncherError('LAUNCHER_CONFIG_INVALID', `${name} must be a whole number of at least ${min}.`, {
      details: { problems: [name] },
    });
  }
  return v;
}

function isParsedEntry(value: LauncherOptions['mcpServer']): value is McpServerEntry {
  const v = value as { transport?: unknown; raw?: unknown };
  return (v.transport === 'stdio' || v.transport === 'http') && typeof v.raw === 'object' && v.raw !== null;
}

function describeMinutes(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Math.round(ms / 1000)} s`;
}

class ZulipLauncher implements Launcher {
  readonly #o: LauncherOptions;
  readonly #server: McpServerEntry;
  readonly #allowed: AdmissionList;
  /** Who may call, wake or steer an agent: the allowlist resolved to user ids, following address changes. */
  #gate: AdmissionGate | undefined;
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #stateDir: string;
  readonly #logDir: string;
  readonly #runsDir: string;
  readonly #workdir: string;
  readonly #id: string;
  readonly #emoji: StatusEmoji;
  readonly #maxRunning: number;
  readonly #maxQueued: number;
  readonly #timeLimitMs: number;
  readonly #stopGraceMs: number;
  readonly #catchUpMs: number;
  readonly #logger: Logger;
  readonly #systemPrompt: string;
  readonly #redact: (text: string) => string;
  #runtime: ZulipRuntime | undefined;
  /** The Claude Code session of each DM conversation (kept while the launcher runs). */
  readonly #dmSessions = new Map<string, string>();
  /** The realm's message-edit window in seconds (null: none), from the registration. */
  #editLimitSeconds: number | null = DEFAULT_EDIT_LIMIT_SECONDS;
  #client: ZulipClient | undefined;
  #selfId = 0;
  /** The realm's display names: a follow-up note names a person as every surface does. */
  readonly #people = new PersonNames();
  #ledger: TriggerLedger | undefined;
  /** The lock of the trigger record, held from start to close. */
  #recordLock: StateLock | undefined;
  #queue: EventSource | undefined;
  /** With ZULIP_STATE_URL: the work shared by every launcher with this id (claims, leases, the queue). */
  #work: LauncherWork | undefined;
  /** The fleet-wide queue as last read, for status(). */
  #fleetQueued: TriggerInfo[] = [];
  #heartbeat: NodeJS.Timeout | undefined;
  /** A look for dead workers is waiting in the chain: the next renewal does not queue another. */
  #looking = false;
  #unsubscribe: (() => void) | undefined;
  #wake: (() => void) | undefined;
  readonly #workerLeaseMs: number;
  readonly #stop = new AbortController();
  readonly #runs = new Map<string, Run>();
  #waiting: TriggerInfo[] = [];
  #seen = 0;
  #chain: Promise<unknown> = Promise.resolve();
  readonly #background = new Set<Promise<unknown>>();
  /** Each started run's end, recorded. */
  readonly #ending = new Set<Promise<unknown>>();
  readonly #reactions = new Map<number, Promise<void>>();
  #realmEmoji = new Map<string, RealmEmoji>();
  #state: 'new' | 'starting' | 'running' | 'closing' | 'closed' = 'new';
  #loop: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  #fail!: (err: unknown) => void;
  readonly failed: Promise<unknown>;

  constructor(options: LauncherOptions) {
    this.#o = options;
    this.#server = isParsedEntry(options.mcpServer) ? options.mcpServer : parseServerEntry(options.mcpServer);
    this.#allowed = normalizeAllowedUsers(options.allowedUsers);
    this.#env = options.env ?? process.env;
    this.#stateDir = resolve(options.stateDir);
    this.#logDir = resolve(options.logDir ?? join(this.#stateDir, 'logs'));
    this.#runsDir = join(this.#stateDir, 'runs');
    this.#workdir = resolve(options.workdir ?? process.cwd());
    try {
      this.#id = parseSessionId(options.launcherId ?? 'zulip-agent');
    } catch (err) {
      throw new LauncherError('LAUNCHER_CONFIG_INVALID', `launcherId: ${(err as Error).message}`, {
        cause: err,
        details: { problems: ['launcherId'] },
      });
    }
    this.#emoji = { ...DEFAULT_EMOJI, ...options.emoji };
    this.#maxRunning = positive('maxRunning', options.maxRunning, 2, 1);
    this.#maxQueued = positive('maxQueued', options.maxQueued, 20, 0);
    this.#timeLimitMs = positive('timeLimitMs', options.timeLimitMs, 1_800_000, 1);
    this.#stopGraceMs = positive('stopGraceMs', options.stopGraceMs, 10_000, 0);
    this.#catchUpMs = positive('catchUpMs', options.catchUpMs, 3_600_000, 0);
    this.#workerLeaseMs = positive('workerLeaseMs', options.workerLeaseMs, 15_000, 300);
    this.#logger = options.logger ?? noopLogger;
    this.#systemPrompt = systemPrompt([options.systemPrompt]);
    for (const backend of this.#backendsInUse()) {
      if (!backendNames.includes(backend)) {
        throw new LauncherError('LAUNCHER_CONFIG_INVALID', `unknown backend ${JSON.stringify(backend)}.`, {
          details: { problems: ['backend'] },
        });
      }
    }
    const approval = options.codexToolApproval ?? 'approve';
    if (!codexToolApprovals.includes(approval)) {
      throw new LauncherError(
        'LAUNCHER_CONFIG_INVALID',
        `codexToolApproval: expected one of ${codexToolApprovals.join(', ')}.`,
        { details: { problems: ['codexToolApproval'] } },
      );
    }
    const codexProblem = this.#backendsInUse().includes('codex')
      ? codexApprovalProblem(approval, options.backendArgs?.codex ?? [])
      : undefined;
    if (codexProblem !== undefined) {
      throw new LauncherError('LAUNCHER_CONFIG_INVALID', `codexToolApproval: ${codexProblem}`, {
        details: { problems: ['codexToolApproval'] },
      });
    }
    // Every backend that may run is given the entry once now, so a reference to an unset
    // variable or an entry a backend cannot carry stops start-up instead of a first trigger.
    const secrets = new Set<string>([options.zulip.apiKey]);
    // The state URL may hold a password: agents' output never shows it.
    if (options.stateUrl !== undefined) {
      secrets.add(options.stateUrl);
      const password = URL.canParse(options.stateUrl) ? new URL(options.stateUrl).password : '';
      if (password.length >= 4) secrets.add(decodeURIComponent(password));
    }
    for (const backend of this.#backendsInUse()) {
      const trial = buildInvocation({
        backend,
        server: this.#server,
        binding: {},
        prompt: '',
        systemPrompt: '',
        extraArgs: [],
        runDir: this.#runsDir,
        env: this.#env,
      });
      for (const s of trial.secrets) secrets.add(s);
    }
    this.#redact = createRedactor([...secrets]);
    this.failed = new Promise((resolve) => {
      this.#fail = resolve;
    });
  }

  #backendsInUse(): BackendName[] {
    return [
      ...new Set([this.#o.backend ?? 'claude', ...(this.#o.streamBackends ?? []).map((r) => r.backend)]),
    ];
  }

  status(): LauncherStatus {
    return {
      running: [...this.#runs.values()].map((r) => ({
        runId: r.runId,
        trigger: r.trigger,
        backend: r.backend,
        pid: r.agent.pid,
        startedAt: r.startedAt,
        lastLine: r.agent.lastLine,
      })),
      queued: this.#work === undefined ? [...this.#waiting] : [...this.#fleetQueued],
    };
  }

  async start(): Promise<void> {
    if (this.#state !== 'new') {
      throw new LauncherError('LAUNCHER_STATE_INVALID', 'start() was already called on this launcher.');
    }
    this.#state = 'starting';
    try {
      await this.#start();
      this.#state = 'running';
    } catch (err) {
      this.#state = 'closed';
      this.#stop.abort();
      await this.#queue?.close();
      this.#stopFleet();
      await this.#work?.leave().catch(() => undefined);
      await this.#recordLock?.release().catch(() => undefined);
      await this.#runtime?.close();
      throw err;
    }
  }

  async #start(): Promise<void> {
    for (const dir of [this.#stateDir, this.#logDir, this.#runsDir])
      await mkdir(dir, { recursive: true, mode: 0o700 });
    // The one client, the account and its state key, as every zmcp bin opens them.
    const { zulip } = this.#o;
    const runtime = await openZulipRuntime({
      settings: launcherServerSettings({
        zulip: {
          site: zulip.site,
          email: zulip.email,
          apiKey: zulip.apiKey,
          rcPath: undefined,
          allowInsecureHttp: zulip.allowInsecureHttp ?? false,
        },
        stateDir: this.#stateDir,
        stateUrl: this.#o.stateUrl,
        launcherId: this.#id,
        requestTimeoutMs: this.#o.requestTimeoutMs,
      }),
      credentials: {
        site: zulip.site,
        email: zulip.email,
        apiKey: zulip.apiKey,
        source: zulip.source ?? { kind: 'env' },
      },
      logger: this.#logger,
    });
    this.#runtime = runtime;
    const client = runtime.client;
    this.#client = client;
    this.#selfId = runtime.identity.user_id;
    const emoji = await client.getRealmEmoji().catch(() => [] as RealmEmoji[]);
    // Emails become user ids now (one that names nobody stops start-up); the launcher's own
    // queue carries realm_user events, so the gate follows address changes from it.
    const gate = await AdmissionGate.open(client, this.#allowed, {
      setting: 'ZULIP_AGENT_ALLOWED_USERS',
      logger: this.#logger,
      follow: false,
      call: { signal: this.#stop.signal },
    });
    this.#gate = gate;
    this.#realmEmoji = new Map(emoji.filter((e) => e.deactivated !== true).map((e) => [e.name, e]));
    const store = this.#o.store ?? runtime.store;
    const work =
      this.#o.store === undefined
        ? runtime.backend.launcherWork?.({
            account: runtime.account,
            launcher: this.#id,
            worker: `${process.pid}-${randomBytes(6).toString('hex')}`,
            leaseMs: this.#workerLeaseMs,
          })
        : undefined;
    if (work !== undefined) {
      await this.#startWorker(runtime, work);
      return;
    }
    // One launcher per record at a time, on this machine or, with ZULIP_STATE_URL, on every
    // machine: a second one with the same id waits here and takes over when the first stops or dies.
    this.#recordLock = await holdRecord(
      store,
      { account: runtime.account, session: this.#id, kind: 'monitor' },
      { signal: this.#stop.signal, logger: this.#logger },
    );
    const { ledger, fresh } = await TriggerLedger.open(store, this.#id, {
      account: runtime.account,
    });
    this.#ledger = ledger;
    // Registered before catching up: nothing posted from here on can fall between the two. The
    // realm's people come with it and stay current from its events; the empty topic is named ""
    // here as in every history read, so a conversation has one key, live or caught up.
    const queue = await EventQueue.open(client, {
      eventTypes: ['message', 'realm_user', 'update_message'],
      // The realm's settings too: its message-edit window bounds how long a status message is edited.
      fetchEventTypes: ['message', 'realm_user', 'realm'],
      clientCapabilities: { empty_topic_name: true },
      applyMarkdown: false,
      signal: this.#stop.signal,
      logger: this.#logger,
    });
    this.#queue = queue;
    this.#editLimitSeconds = editLimitOf(queue.registration);
    this.#people.replace(peopleOf(queue.registration));
    gate.directory.loadRegistration(queue.registration);
    const upTo = queue.registration.max_message_id ?? 0;
    await this.#recover();
    if (fresh) {
      this.#seen = upTo;
      await ledger.advance(upTo);
    } else {
      this.#seen = ledger.lastMessageId;
      await this.#catchUp(upTo);
    }
    const dmReads = this.#server.transport === 'stdio' ? this.#server.env.ZULIP_PRIVATE_STREAMS : undefined;
    if (
      (this.#o.directMessages ?? true) &&
      this.#server.transport === 'stdio' &&
      dmReads?.toUpperCase() !== '__ALL__'
    ) {
      this.#logger.warn(
        'direct messages start agents, but the zulip server entry does not set ZULIP_PRIVATE_STREAMS=__ALL__: those agents cannot read the DM that called them',
      );
    }
    this.#logger.info('listening for mentions and direct messages', {
      account: runtime.identity.email,
      backend: this.#o.backend ?? 'claude',
      maxRunning: this.#maxRunning,
    });
    await this.#serial(() => this.#pump());
    this.#loop = this.#consume(queue);
  }

  /**
   * A worker of a fleet (ZULIP_STATE_URL): every launcher with this id shares the triggers
   * through the database, reads the bot's one shared event queue, and keeps a lease alive.
   */
  async #startWorker(runtime: ZulipRuntime, work: LauncherWork): Promise<void> {
    this.#work = work;
    const { fresh, lastMessageId } = await work.join();
    const broadcast = runtime.backend.broadcast;
    const topic = `zmcp-launcher:${runtime.account}:${this.#id}`;
    // Another worker ended a run or took over from a dead one: a slot may be free here.
    this.#wake = () => broadcast?.publish(topic, { wake: true });
    this.#unsubscribe = broadcast?.subscribe(topic, () => {
      this.#serial(() => this.#pump()).catch(() => undefined); // logged by the chain
    });
    await broadcast?.ready();
    const params = {
      eventTypes: ['message', 'realm_user', 'update_message'] as const,
      fetchEventTypes: ['message', 'realm_user', 'realm'],
      clientCapabilities: { empty_topic_name: true },
      applyMarkdown: false,
      signal: this.#stop.signal,
      logger: this.#logger,
    };
    const queue: EventSource =
      runtime.events !== undefined
        ? await runtime.events({ ...params, eventTypes: [...params.eventTypes] })
        : await EventQueue.open(runtime.client, { ...params, eventTypes: [...params.eventTypes] });
    this.#queue = queue;
    this.#people.replace(peopleOf(queue.registration));
    this.#gate?.directory.loadRegistration(queue.registration);
    const upTo = queue.registration.max_message_id ?? 0;
    await this.#serial(() => this.#takeOver());
    if (fresh) {
      this.#seen = upTo;
      await work.advance(upTo);
    } else {
      this.#seen = lastMessageId;
      await this.#catchUp(upTo);
    }
    this.#heartbeat = setInterval(
      () => {
        void this.#beat();
      },
      Math.max(100, Math.floor(this.#workerLeaseMs / 3)),
    );
    this.#heartbeat.unref();
    this.#logger.info('listening for mentions and direct messages, as one worker of the launcher fleet', {
      account: runtime.identity.email,
      worker: work.worker,
      backend: this.#o.backend ?? 'claude',
      maxRunning: this.#maxRunning,
    });
    await this.#serial(() => this.#pump());
    this.#loop = this.#consumeBatches(queue);
  }

  /**
   * Renews this worker's lease at once (outside the chain of steps, so a long step such as a
   * catch-up cannot let it run out), then, in the chain, takes over from dead workers and starts
   * what waits.
   */
  async #beat(): Promise<void> {
    const work = this.#work as LauncherWork;
    if (this.#state !== 'running') return;
    let held: boolean;
    try {
      held = await work.heartbeat();
    } catch (err) {
      this.#logger.warn('could not renew the worker lease; trying again', { err });
      return;
    }
    if (!held) {
      if (this.#state !== 'running') return;
      // The others counted this worker dead and reported its agents: none may run on.
      const err = new LauncherError(
        'LAUNCHER_STATE_INVALID',
        'this worker lost its lease (the others took its triggers over); it stops',
      );
      this.#logger.error(err.message, { worker: work.worker });
      this.#stopFleet();
      this.#fail(err);
      return;
    }
    if (this.#looking) return;
    this.#looking = true;
    await this.#serial(async () => {
      try {
        await this.#takeOver();
        await this.#pump();
      } finally {
        this.#looking = false;
      }
    }).catch(() => undefined); // logged by the chain
  }

  /** Reports the agents of dead workers as a restart reports its own (failed, with a reply), stopping any left on this machine. */
  async #takeOver(): Promise<void> {
    const work = this.#work as LauncherWork;
    const reaped = await work.reap();
    for (const row of reaped) {
      const killed =
        row.pid !== undefined && row.runId !== undefined ? await this.#stopOrphan(row.pid, row.runId) : false;
      if (row.runId !== undefined) await rm(join(this.#runsDir, row.runId), { recursive: true, force: true });
      this.#reportLost(row.messageId, fleetTrigger(row), row.runId, killed, 'its worker died');
    }
    if (reaped.length > 0) this.#wake?.();
  }

  #reportLost(
    id: number,
    trigger: TriggerInfo,
    runId: string | undefined,
    killed: boolean,
    why: string,
  ): void {
    this.#react(id, 'working', 'remove');
    this.#react(id, 'failed', 'add');
    this.#notify(
      trigger,
      'The launcher restarted while I was working on this; mention me again to pick it up.',
    );
    this.#logger.warn(`an agent was running when ${why}; reported as failed`, {
      messageId: id,
      runId,
      stoppedOrphan: killed,
    });
    this.#emit({ type: 'recovered', messageId: id, action: 'failed', killedOrphan: killed });
  }

  #stopFleet(): void {
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }

  async #consumeBatches(queue: EventSource): Promise<void> {
    try {
      for (;;) {
        const batch = await queue.nextBatch();
        if (batch === undefined) {
          if (this.#stop.signal.aborted) return;
          throw new LauncherError('LAUNCHER_STATE_INVALID', 'the shared event queue ended');
        }
        for (const item of batch) await this.#serial(() => this.#onItem(item));
      }
    } catch (err) {
      if (this.#stop.signal.aborted) return;
      this.#logger.error('the event queue failed; the launcher stops listening', { err });
      this.#fail(err);
    }
  }

  async #advance(messageId: number): Promise<void> {
    if (this.#work !== undefined) await this.#work.advance(messageId);
    else await this.#ledger?.advance(messageId);
  }

  async close(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    this.#closing = this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const was = this.#state;
    this.#state = 'closing';
    this.#stop.abort();
    await this.#queue?.close();
    await this.#loop?.catch(() => undefined);
    // A launcher whose start failed has nothing to stop and no catch-up point to save (it would
    // write a record that never saw the realm).
    if (was !== 'new' && was !== 'closed') {
      const runs = [...this.#runs.values()];
      await Promise.all(runs.map((r) => r.agent.stop('shutdown')));
      await Promise.all([...this.#ending]);
      // Each run's end is recorded in the chain; wait for all of it.
      await this.#drainChain();
      this.#stopFleet();
      await this.#advance(this.#seen).catch((err: unknown) =>
        this.#logger.warn('could not save the catch-up point', { err }),
      );
      await this.#work
        ?.leave()
        .catch((err: unknown) => this.#logger.warn('could not give the worker lease up', { err }));
      while (this.#background.size > 0) await Promise.all([...this.#background]);
    }
    await this.#gate?.close();
    await this.#recordLock
      ?.release()
      .catch((err: unknown) => this.#logger.warn('could not release the trigger record', { err }));
    await this.#runtime?.close();
    this.#state = 'closed';
  }

  async #drainChain(): Promise<void> {
    let last: Promise<unknown>;
    do {
      last = this.#chain;
      await last;
    } while (last !== this.#chain);
  }

  /** Work on triggers and run ends happens one piece at a time, in order. */
  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(work);
    this.#chain = next.catch((err: unknown) => this.#logger.error('launcher step failed', { err }));
    return next;
  }

  /** Zulip calls whose result nothing waits on (reactions, notices); close() waits for them. */
  #track(work: Promise<unknown>, what: string): void {
    const p = work.catch((err: unknown) => this.#logger.warn(`could not ${what}`, { err }));
    this.#background.add(p);
    void p.finally(() => this.#background.delete(p));
  }

  #emit(event: LauncherEvent): void {
    try {
      this.#o.onEvent?.(event);
    } catch (err) {
      this.#logger.warn('onEvent hook threw', { err });
    }
  }

  async #consume(queue: EventQueue): Promise<void> {
    try {
      for await (const item of queue) {
        await this.#serial(() => this.#onItem(item));
      }
    } catch (err) {
      if (this.#stop.signal.aborted) return;
      this.#logger.error('the event queue failed; the launcher stops listening', { err });
      this.#fail(err);
    }
  }

  async #onItem(item: QueueItem): Promise<void> {
    if (item.kind === 'gap') {
      this.#logger.warn('the event queue was replaced; reading missed triggers from history');
      this.#people.replace(peopleOf(item.registration));
      this.#gate?.directory.loadRegistration(item.registration);
      await this.#catchUp(item.newMaxMessageId ?? this.#seen, true);
      return;
    }
    if (item.kind !== 'event') return;
    if (item.event.type === 'message') await this.#onMessage(item.event.message);
    else if (item.event.type === 'realm_user') this.#onRealmUser(item.event);
    else if (item.event.type === 'update_message') await this.#onTopicMoved(item.event);
  }

  /**
   * A whole topic renamed, resolved or moved (Zulip's `change_all`): the conversation of an agent
   * running or waiting there is carried to the new name, so a mention there is a follow-up, not a
   * second agent, and the status message and notices go there. (The agent's own zulip server
   * follows it too, and ends the session when the topic is resolved.)
   */
  async #onTopicMoved(event: UpdateMessageEvent): Promise<void> {
    if (
      event.propagate_mode !== 'change_all' ||
      event.orig_subject === undefined ||
      event.stream_id === undefined
    )
      return;
    if (event.subject === undefined && event.new_stream_id === undefined) return;
    const from = conversationKey({ kind: 'stream', streamId: event.stream_id, topic: event.orig_subject });
    const streamId = event.new_stream_id ?? event.stream_id;
    const topic = event.subject ?? event.orig_subject;
    const to = conversationKey({ kind: 'stream', streamId, topic });
    if (from === to || this.#runs.has(to)) return;
    let stream: string | undefined;
    if (streamId !== event.stream_id) {
      const lookup = await (this.#runtime as ZulipRuntime).services.directory.streamLookup({
        timeoutMs: 10_000,
      });
      stream = lookup(streamId)?.name;
    }
    const carry = (t: TriggerInfo): TriggerInfo => ({
      ...t,
      conversation: to,
      streamId,
      topic,
      stream: stream ?? t.stream,
    });
    const run = this.#runs.get(from);
    if (run !== undefined) {
      this.#runs.delete(from);
      run.trigger = carry(run.trigger);
      this.#runs.set(to, run);
      run.progress?.retarget({ kind: 'stream', streamId, topic });
      this.#logger.info('a running agent’s topic moved; its conversation follows', {
        messageId: run.trigger.messageId,
      });
    }
    for (let i = 0; i < this.#waiting.length; i++) {
      const t = this.#waiting[i] as TriggerInfo;
      if (t.conversation === from) this.#waiting[i] = carry(t);
    }
    // A fleet's claim rows move too (every worker hears the event; the change is the same).
    await this.#work?.move(from, to, {
      conversation: to,
      streamId,
      topic,
      ...(stream === undefined ? {} : { stream }),
    });
  }

  /** A person joined or was renamed: later lines tell them apart from whoever shares the name. */
  #onRealmUser(event: RealmUserEvent): void {
    const person = event.person as { user_id: number; full_name?: unknown };
    if (typeof person.full_name === 'string') this.#people.set(person.user_id, person.full_name);
    // An address added or changed moves the allowlist's admission with it.
    this.#gate?.directory.apply(event);
  }

  /**
   * Reads mentions and DMs after the catch-up point up to `upTo` from history, as if they had just
   * arrived: through core's read gate (the policy's scope check before fetching, strays dropped
   * after) and its history pager (anchors, Zulip's per-request cap), as every tool reads.
   */
  async #catchUp(upTo: number, inChain = false): Promise<void> {
    const runtime = this.#runtime as ZulipRuntime;
    const from = this.#seen;
    if (upTo <= from) return;
    const found = new Map<number, Message>();
    if (this.#catchUpMs > 0) {
      const work = inChain ? 're-registration' : 'catch-up';
      let reached = from;
      let read = 0;
      const progress = (outcome?: 'done' | 'failed') =>
        this.#emit({
          type: 'progress',
          work,
          afterId: from,
          throughId: upTo,
          reachedId: reached,
          messages: read,
          ...(outcome === undefined ? {} : { outcome }),
        });
      progress();
      try {
        const call = { signal: this.#stop.signal };
        const streams = await runtime.services.directory.streamLookup(call);
        const searches = [narrow().is('mentioned').build(), narrow().is('dm').build()];
        for (const [i, terms] of searches.entries()) {
          let after = from;
          for (;;) {
            const page = await readNarrow(runtime.client, runtime.policy, {
              narrow: terms,
              range: { kind: 'since', afterId: after, limit: CATCH_UP_PAGE },
              streams,
              pageSize: CATCH_UP_PAGE,
              call,
            });
            for (const m of page.messages) if (m.id <= upTo) found.set(m.id, m);
            const last = page.messages[page.messages.length - 1];
            read += page.messages.length;
            // Two searches over the same range: each covers half of the way.
            const through = Math.min(upTo, last?.id ?? upTo);
            reached = from + Math.floor((through - from + i * (upTo - from)) / searches.length);
            progress();
            if (!page.hasMore || last === undefined || last.id >= upTo) break;
            after = last.id;
          }
        }
      } catch (err) {
        progress('failed');
        throw err;
      }
      reached = upTo;
      progress('done');
    }
    const oldest = Date.now() - this.#catchUpMs;
    const handle = async () => {
      for (const m of [...found.values()].sort((a, b) => a.id - b.id)) {
        if (m.timestamp * 1000 < oldest) {
          this.#seen = Math.max(this.#seen, m.id);
          this.#emit({ type: 'ignored', messageId: m.id, senderId: m.sender_id, reason: 'stale' });
          continue;
        }
        await this.#onMessage(m);
      }
      this.#seen = Math.max(this.#seen, upTo);
      await this.#advance(upTo);
    };
    if (found.size > 0)
      this.#logger.info('catching up on triggers missed while away', { messages: found.size });
    await (inChain ? handle() : this.#serial(handle));
  }

  async #onMessage(message: Message): Promise<void> {
    if (message.id <= this.#seen) return;
    this.#seen = message.id;
    if (this.#state === 'closing' || this.#state === 'closed') return;
    const decision = classifyMessage(message, {
      selfUserId: this.#selfId,
      admit: (senderId, trigger) => this.#admit(senderId, trigger),
      directMessages: this.#o.directMessages ?? true,
    });
    if (decision.kind === 'ignored') {
      if (decision.reason !== 'own-message' && decision.reason !== 'not-addressed') {
        this.#logger.info('trigger ignored', {
          messageId: message.id,
          senderId: message.sender_id,
          reason: decision.reason,
        });
      }
      this.#emit({
        type: 'ignored',
        messageId: decision.messageId,
        senderId: decision.senderId,
        reason: decision.reason,
      });
      return;
    }
    const trigger = decision.trigger;
    if (this.#work !== undefined) {
      await this.#onFleetTrigger(this.#work, trigger, message);
      return;
    }
    const ledger = this.#ledger as TriggerLedger;
    if (ledger.get(trigger.messageId) !== undefined) return;
    const run = this.#runs.get(trigger.conversation);
    if (run !== undefined && trigger.kind === 'dm' && APPROVAL_ANSWER.test(message.content)) {
      // `yes <id>` in the DM of a running agent answers its approval prompt (its zulip server takes
      // it): recorded, so it never becomes a trigger, and neither a note nor a later run.
      await ledger.add(storeTrigger(trigger), 'followup', { into: run.trigger.messageId });
      this.#logger.info('an approval answer, left to the agent’s zulip server', {
        messageId: trigger.messageId,
      });
      return;
    }
    if (run !== undefined) {
      await ledger.add(storeTrigger(trigger), 'followup', { into: run.trigger.messageId });
      await this.#handOver(run, trigger, message);
      this.#emit({ type: 'trigger', trigger, action: 'followup' });
      return;
    }
    const waiting = this.#waiting.find((t) => t.conversation === trigger.conversation);
    if (waiting !== undefined) {
      await ledger.add(storeTrigger(trigger), 'merged', { into: waiting.messageId });
      this.#emit({ type: 'trigger', trigger, action: 'merge' });
      return;
    }
    if (this.#runs.size < this.#maxRunning) {
      this.#emit({ type: 'trigger', trigger, action: 'start' });
      await this.#startRun(trigger, 'new');
      return;
    }
    if (this.#waiting.length < this.#maxQueued) {
      await ledger.add(storeTrigger(trigger), 'queued');
      this.#waiting.push(trigger);
      this.#emit({ type: 'trigger', trigger, action: 'queue' });
      this.#logger.info('trigger queued', { messageId: trigger.messageId, ahead: this.#waiting.length - 1 });
      this.#react(trigger.messageId, 'queued', 'add');
      return;
    }
    await ledger.add(storeTrigger(trigger), 'failed', { reason: 'queue full' });
    this.#emit({ type: 'trigger', trigger, action: 'refuse' });
    this.#react(trigger.messageId, 'failed', 'add');
    this.#notify(
      trigger,
      `I am busy with ${this.#runs.size} other conversations and ${this.#waiting.length} are waiting; mention me again later.`,
    );
  }

  /** Writes a follow-up to a running agent's interrupt file. */
  async #handOver(run: Run, trigger: TriggerInfo, message: Message): Promise<void> {
    run.followUps.push(trigger.messageId);
    // The note names the message: the agent gets it once, through listen or in the note.
    const note = followUpNote(message, { selfUserId: this.#selfId, people: this.#people });
    await run.mailbox.post(trigger.messageId, note).catch((err: unknown) => {
      this.#logger.warn('could not write the interrupt file', { runId: run.runId, err });
    });
    this.#logger.info('follow-up handed to the running agent', {
      messageId: trigger.messageId,
      runId: run.runId,
    });
  }

  /**
   * A trigger seen by a worker of a fleet: every worker reads every event, the first one records
   * the trigger and decides (in the database, holding the fleet's row); the worker whose agent
   * runs the conversation hands a follow-up over, whichever worker recorded it.
   */
  async #onFleetTrigger(work: LauncherWork, trigger: TriggerInfo, message: Message): Promise<void> {
    const { inserted, action, row } = await work.intake(
      { messageId: trigger.messageId, conversation: trigger.conversation, trigger: storeTrigger(trigger) },
      { maxRunning: this.#maxRunning, maxQueued: this.#maxQueued },
    );
    if (row.status === 'followup' && row.worker === work.worker) {
      const run = this.#runs.get(trigger.conversation);
      if (run !== undefined && run.trigger.messageId === row.into && !run.followUps.includes(row.messageId)) {
        if (trigger.kind === 'dm' && APPROVAL_ANSWER.test(message.content)) {
          // `yes <id>` answers the agent's approval prompt (its zulip server takes it): handled,
          // so it never becomes a note or a later run.
          run.followUps.push(row.messageId);
          this.#logger.info('an approval answer, left to the agent’s zulip server', {
            messageId: trigger.messageId,
          });
          return;
        }
        await this.#handOver(run, trigger, message);
        // Told by the worker whose agent got it, whichever worker recorded it.
        this.#emit({ type: 'trigger', trigger, action: 'followup' });
      }
    }
    if (!inserted || action === undefined || action === 'followup') return;
    this.#emit({ type: 'trigger', trigger, action });
    if (action === 'start') {
      await this.#startRun(trigger, 'claimed');
    } else if (action === 'queue') {
      this.#logger.info('trigger queued', { messageId: trigger.messageId });
      this.#react(trigger.messageId, 'queued', 'add');
      await this.#refreshQueue();
    } else if (action === 'refuse') {
      this.#react(trigger.messageId, 'failed', 'add');
      this.#notify(
        trigger,
        `I am busy: ${this.#maxQueued} conversations are waiting already; mention me again later.`,
      );
    }
  }

  async #refreshQueue(): Promise<void> {
    const rows: LauncherTriggerRow[] = (await this.#work?.active()) ?? [];
    this.#fleetQueued = rows.filter((r) => r.status === 'queued').map((r) => fleetTrigger(r));
  }

  /** The gate's decision on a would-be trigger: a follow-up where an agent runs or waits, else a mention or a DM. */
  #admit(senderId: number, trigger: TriggerInfo): boolean {
    const path: AdmissionPath =
      this.#runs.has(trigger.conversation) ||
      this.#waiting.some((t) => t.conversation === trigger.conversation) ||
      this.#fleetQueued.some((t) => t.conversation === trigger.conversation)
        ? 'follow-up'
        : trigger.kind === 'dm'
          ? 'dm'
          : 'mention';
    return this.#gate?.check(senderId, path) ?? false;
  }

  #backendFor(trigger: TriggerInfo): BackendName {
    if (trigger.kind === 'stream') {
      for (const rule of this.#o.streamBackends ?? []) {
        if (
          typeof rule.stream === 'number'
            ? rule.stream === trigger.streamId
            : trigger.stream !== undefined && sameStreamName(rule.stream, trigger.stream)
        ) {
          return rule.backend;
        }
      }
    }
    return this.#o.backend ?? 'claude';
  }

  #prefix(trigger: TriggerInfo): string | undefined {
    const hook = this.#o.messagePrefix;
    if (hook === undefined) return undefined;
    if (typeof hook === 'string') return hook;
    try {
      return hook(trigger);
    } catch (err) {
      this.#logger.warn('messagePrefix hook threw; starting without a prefix', { err });
      return undefined;
    }
  }

  /** Starts the agent of a trigger; its state is on disk as `running` before the process exists. */
  async #startRun(trigger: TriggerInfo, from: 'new' | 'queued' | 'claimed'): Promise<void> {
    const work = this.#work;
    const ledger = this.#ledger as TriggerLedger;
    const record = (change: {
      status?: 'running' | 'failed';
      runId?: string;
      pid?: number;
      reason?: string;
      backend?: string;
    }) => {
      if (work === undefined) return ledger.update(trigger.messageId, change);
      const { backend: _backend, ...rest } = change;
      return work.update(trigger.messageId, rest);
    };
    const backend = this.#backendFor(trigger);
    const runId = `${trigger.messageId}-${randomBytes(3).toString('hex')}`;
    const runDir = join(this.#runsDir, runId);
    const logFile = join(this.#logDir, `${conversationSlug(trigger)}.log`);
    const mailbox = new InterruptMailbox(join(runDir, 'interrupt'));
    // The agent's zulip server answers to the same people: dismissals and follow-ups from anyone
    // else change nothing there either. Ids, resolved now (the caller was admitted when it called).
    const admitted = this.#gate?.admitted ?? [];
    const binding: Record<string, string> = {
      ZULIP_INTERRUPT_FILE: mailbox.path,
      ZULIP_ALLOWED_USERS: (admitted.length > 0 ? admitted : [trigger.senderId]).join(','),
    };
    // A DM trigger names its conversation too (where an approval prompt goes; a DM binds no topic).
    binding.TRIGGER_MESSAGE_ID = String(trigger.messageId);
    if (from === 'new') await ledger.add(storeTrigger(trigger), 'running', { runId, backend });
    else await record({ status: 'running', runId, backend });
    // A DM conversation is one Claude Code session across runs; `/new` starts a fresh one.
    let session: { mode: 'new' | 'resume'; id: string } | undefined;
    if (trigger.kind === 'dm' && backend === 'claude') {
      const known = trigger.fresh === true ? undefined : this.#dmSessions.get(trigger.conversation);
      session = known === undefined ? { mode: 'new', id: randomUUID() } : { mode: 'resume', id: known };
      this.#dmSessions.set(trigger.conversation, session.id);
    }
    let invocation: ReturnType<typeof buildInvocation>;
    try {
      invocation = buildInvocation({
        backend,
        server: this.#server,
        binding,
        prompt: agentPrompt(trigger, this.#prefix(trigger)),
        systemPrompt: this.#systemPrompt,
        extraArgs: this.#o.backendArgs?.[backend] ?? [],
        runDir,
        env: this.#env,
        codexToolApproval: this.#o.codexToolApproval,
        approvals: this.#o.approvals ?? true,
        progress: this.#o.progress ?? true,
        session,
      });
      await mkdir(runDir, { recursive: true, mode: 0o700 });
      for (const file of invocation.files) await writeFile(file.path, file.content, { mode: 0o600 });
    } catch (err) {
      this.#logger.error('could not prepare the agent run', { messageId: trigger.messageId, err });
      await record({ status: 'failed', reason: 'could not prepare the run' });
      this.#wake?.();
      if (from === 'queued') this.#react(trigger.messageId, 'queued', 'remove');
      this.#react(trigger.messageId, 'failed', 'add');
      this.#notify(trigger, 'I could not start: the launcher could not prepare the run (its log says why).');
      return;
    }
    const agent = startAgentProcess({
      command: invocation.command,
      args: invocation.args,
      stdin: invocation.stdin,
      cwd: this.#workdir,
      env: { ...this.#env, ...invocation.env, ZULIP_AGENT_RUN: runId },
      logFile,
      header: `=== ${new Date().toISOString()} run ${runId}: ${backend} for message ${trigger.messageId} in ${trigger.kind === 'stream' ? JSON.stringify(`#${trigger.stream} > ${trigger.topic}`) : `DM with ${trigger.dmUserIds?.join(',')}`}`,
      redact: this.#redact,
      timeLimitMs: this.#timeLimitMs,
      stopGraceMs: this.#stopGraceMs,
      // With live progress, stdout is the CLI's JSON events (redacted as the log is: what the
      // model says can reach the status message).
      onStdoutLine:
        (this.#o.progress ?? true)
          ? (line) => run.progress?.observe(readProgressLine(backend, line))
          : undefined,
    });
    const run: Run = {
      runId,
      trigger,
      backend,
      agent,
      mailbox,
      runDir,
      logFile,
      startedAt: Date.now(),
      followUps: [],
      fromQueue: from === 'queued',
      progress: undefined,
      startedSession: session?.mode === 'new' ? session.id : undefined,
    };
    this.#runs.set(trigger.conversation, run);
    void agent.started.then(
      (pid) => {
        this.#logger.info('agent started', { messageId: trigger.messageId, runId, backend, pid });
        this.#emit({
          type: 'started',
          runId,
          trigger,
          backend,
          pid,
          argv: [invocation.command, ...invocation.args],
        });
        this.#track(record({ pid }), 'record the agent pid');
        if (from === 'queued') this.#react(trigger.messageId, 'queued', 'remove');
        this.#react(trigger.messageId, 'working', 'add');
        run.progress = this.#progressFor(trigger);
      },
      () => undefined,
    );
    // close() waits for every run's end to be recorded (it needs the store still open).
    this.#ending.add(
      agent.exited
        .then((exit) => this.#serial(() => this.#finish(run, exit)))
        .catch((err: unknown) => this.#logger.error('could not record the end of a run', { runId, err })),
    );
  }

  async #finish(run: Run, exit: AgentExit): Promise<void> {
    const ledger = this.#ledger as TriggerLedger;
    const work = this.#work;
    const untaken = await run.mailbox.drain();
    this.#runs.delete(run.trigger.conversation);
    let outcome: SessionOutcome;
    let reason: string | undefined;
    let notice: string | undefined;
    if (exit.spawnError !== undefined) {
      outcome = 'failed';
      reason = `could not start ${run.backend}: ${exit.spawnError}`;
      notice = `I could not start: ${run.backend} could not be run where the launcher runs (${exit.spawnError}).`;
    } else if (exit.stoppedFor === 'time limit') {
      outcome = 'timeout';
      reason = `stopped after the time limit of ${describeMinutes(this.#timeLimitMs)}`;
      notice = `I was stopped after the time limit of ${describeMinutes(this.#timeLimitMs)}, before I finished.`;
    } else if (exit.stoppedFor !== undefined) {
      outcome = 'stopped';
      reason = 'the launcher shut down';
      notice = 'The launcher shut down while I was working on this; mention me again to pick it up.';
    } else if (exit.code === 0) {
      outcome = 'done';
    } else {
      outcome = 'failed';
      reason = exit.code !== null ? `exited with code ${exit.code}` : `ended by ${exit.signal ?? 'a signal'}`;
      notice = `Something went wrong: the agent (${run.backend}) ${reason} before it finished. Its log is on the launcher's host.`;
    }
    if (work !== undefined) {
      const delivered = run.followUps.filter((id) => !untaken.includes(id));
      await work.finish(
        run.trigger.messageId,
        { status: outcome === 'done' ? 'done' : 'failed', reason },
        delivered,
      );
      this.#wake?.();
    } else
      await ledger.update(run.trigger.messageId, { status: outcome === 'done' ? 'done' : 'failed', reason });
    for (const id of work === undefined ? run.followUps : []) {
      if (!untaken.includes(id)) await ledger.update(id, { status: 'done' });
    }
    // Follow-ups the agent never took are not dropped: the newest becomes a trigger of its own.
    const newest = untaken.length > 0 && work === undefined ? Math.max(...untaken) : undefined;
    if (newest !== undefined) {
      for (const id of untaken)
        if (id !== newest) await ledger.update(id, { status: 'merged', into: newest });
      await ledger.update(newest, { status: 'queued' });
      const record = ledger.get(newest);
      if (record !== undefined) this.#waiting.unshift(loadTrigger(record.trigger));
    }
    await run.progress?.finish(outcome);
    // A session that never got going is not carried on: the next DM starts afresh.
    if (outcome !== 'done' && run.startedSession !== undefined) {
      if (this.#dmSessions.get(run.trigger.conversation) === run.startedSession)
        this.#dmSessions.delete(run.trigger.conversation);
    }
    if (exit.spawnError === undefined) this.#react(run.trigger.messageId, 'working', 'remove');
    else if (run.fromQueue) this.#react(run.trigger.messageId, 'queued', 'remove');
    this.#react(run.trigger.messageId, outcome === 'done' ? 'done' : 'failed', 'add');
    if (notice !== undefined) this.#notify(run.trigger, notice);
    this.#track(rm(run.runDir, { recursive: true, force: true }), 'remove the run directory');
    const end: SessionEndInfo = {
      runId: run.runId,
      trigger: run.trigger,
      backend: run.backend,
      outcome,
      reason,
      exitCode: exit.code,
      signal: exit.signal,
      followUpsDelivered: run.followUps.length - untaken.length,
      logFile: run.logFile,
      durationMs: Date.now() - run.startedAt,
    };
    this.#logger.info('agent ended', { messageId: run.trigger.messageId, runId: run.runId, outcome, reason });
    this.#emit({ type: 'ended', end });
    const hook = this.#o.onSessionEnd;
    if (hook !== undefined) {
      this.#track((async () => hook(end))(), 'run the onSessionEnd hook');
    }
    await this.#pump();
  }

  /** Starts waiting triggers while there are free slots; runs inside the chain, like every other step. */
  async #pump(): Promise<void> {
    const work = this.#work;
    if (work !== undefined) {
      while (this.#state === 'running' || this.#state === 'starting') {
        const row = await work.claimNext(this.#maxRunning);
        if (row === undefined) break;
        await this.#startRun(fleetTrigger(row), 'queued');
      }
      await this.#refreshQueue();
      return;
    }
    while (this.#state !== 'closing' && this.#state !== 'closed' && this.#runs.size < this.#maxRunning) {
      const next = this.#waiting.shift();
      if (next === undefined) return;
      if (this.#runs.has(next.conversation)) continue;
      await this.#startRun(next, 'queued');
    }
  }

  /** What an earlier process left: waiting triggers wait again; an agent that ran is gone, and said so. */
  async #recover(): Promise<void> {
    const ledger = this.#ledger as TriggerLedger;
    for (const record of ledger.active()) {
      const id = record.trigger.messageId;
      if (record.status === 'queued') {
        this.#waiting.push(loadTrigger(record.trigger));
        this.#emit({ type: 'recovered', messageId: id, action: 'requeued', killedOrphan: false });
      } else if (record.status === 'followup') {
        await ledger.update(id, { status: 'merged' });
        this.#emit({ type: 'recovered', messageId: id, action: 'merged', killedOrphan: false });
      } else if (record.status === 'running') {
        const killed =
          record.pid !== undefined && record.runId !== undefined
            ? await this.#stopOrphan(record.pid, record.runId)
            : false;
        await ledger.update(id, { status: 'failed', reason: 'the launcher restarted while the agent ran' });
        if (record.runId !== undefined)
          await rm(join(this.#runsDir, record.runId), { recursive: true, force: true });
        const trigger = loadTrigger(record.trigger);
        this.#react(id, 'working', 'remove');
        this.#react(id, 'failed', 'add');
        this.#notify(
          trigger,
          'The launcher restarted while I was working on this; mention me again to pick it up.',
        );
        this.#logger.warn('an agent was running when the launcher stopped; reported as failed', {
          messageId: id,
          runId: record.runId,
          stoppedOrphan: killed,
        });
        this.#emit({ type: 'recovered', messageId: id, action: 'failed', killedOrphan: killed });
      }
    }
  }

  /**
   * Stops an agent a crashed launcher left behind, if it still runs: only a process whose
   * environment carries this run's marker (Linux `/proc`), so a reused pid is never hit.
   */
  async #stopOrphan(pid: number, runId: string): Promise<boolean> {
    if (!(await groupCarries(pid, runId))) return false;
    try {
      process.kill(-pid, 'SIGTERM');
    } catch {
      return false;
    }
    await reapProcessGroup(pid, this.#stopGraceMs);
    return true;
  }

  #emojiParams(name: string): {
    emojiName: string;
    emojiCode?: string;
    reactionType: 'unicode_emoji' | 'realm_emoji';
  } {
    const custom = this.#realmEmoji.get(name);
    return custom !== undefined
      ? { emojiName: name, emojiCode: custom.id, reactionType: 'realm_emoji' }
      : { emojiName: name, reactionType: 'unicode_emoji' };
  }

  /** Adds or removes a status reaction; the changes on one message go out in order. */
  #react(messageId: number, which: keyof StatusEmoji, op: 'add' | 'remove'): void {
    const client = this.#client;
    if (client === undefined) return;
    const params = this.#emojiParams(this.#emoji[which]);
    const before = this.#reactions.get(messageId) ?? Promise.resolve();
    const call = before.then(() =>
      (op === 'add' ? client.addReaction(messageId, params) : client.removeReaction(messageId, params)).catch(
        (err: unknown) => {
          const code = (err as { zulipCode?: unknown }).zulipCode;
          if (code === 'REACTION_ALREADY_EXISTS' || code === 'REACTION_DOES_NOT_EXIST') return;
          this.#logger.warn(`could not ${op} the ${which} reaction`, { messageId, err });
        },
      ),
    );
    this.#reactions.set(messageId, call);
    void call.finally(() => {
      if (this.#reactions.get(messageId) === call) this.#reactions.delete(messageId);
    });
    this.#track(call, 'change a reaction');
  }

  /** A short message in the trigger's conversation, mentioning who called. */
  /** The status message of a run that started, unless live progress is off. */
  #progressFor(trigger: TriggerInfo): ProgressReporter | undefined {
    const runtime = this.#runtime;
    if (!(this.#o.progress ?? true) || runtime === undefined || this.#state === 'closing') return undefined;
    const to: Conversation =
      trigger.kind === 'stream'
        ? { kind: 'stream', streamId: trigger.streamId as number, topic: trigger.topic ?? '' }
        : { kind: 'dm', userIds: [...(trigger.dmUserIds ?? [trigger.senderId])] };
    return new ProgressReporter({
      services: runtime.services,
      to,
      intervalMs: this.#o.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS,
      editLimitSeconds: this.#editLimitSeconds,
      logger: this.#logger,
    });
  }

  #notify(trigger: TriggerInfo, text: string): void {
    const client = this.#client;
    if (client === undefined) return;
    const content = `${mentionSyntax({ user_id: trigger.senderId, full_name: trigger.senderName })} ${text}`;
    const send =
      trigger.kind === 'stream'
        ? client.sendMessage({
            type: 'stream',
            to: trigger.streamId as number,
            topic: trigger.topic ?? '',
            content,
          })
        : client.sendMessage({ type: 'direct', to: [...(trigger.dmUserIds ?? [trigger.senderId])], content });
    this.#track(send, 'post a status reply');
  }
}

/**
 * Whether a process of group `pgid` belongs to run `runId` (Linux `/proc`): the agent itself
 * carries the run's marker, and its zulip server (still running when the agent has exited
 * already) the run's interrupt file, in their environments.
 */
async function groupCarries(pgid: number, runId: string): Promise<boolean> {
  const carries = async (pid: number | string) => {
    const env = (await readFile(`/proc/${pid}/environ`, 'latin1').catch(() => '')).split('\0');
    return env.some(
      (v) =>
        v === `ZULIP_AGENT_RUN=${runId}` ||
        (v.startsWith('ZULIP_INTERRUPT_FILE=') && v.endsWith(`${sep}${runId}${sep}interrupt`)),
    );
  };
  if (await carries(pgid)) return true;
  const entries = await readdir('/proc').catch(() => [] as string[]);
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'latin1').catch(() => undefined);
    if (stat === undefined) continue;
    // After the command's closing parenthesis: state, ppid, pgrp.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && (await carries(entry))) return true;
  }
  return false;
}

/**
 * Builds a launcher in process: the `zulip-agent` command is this plus configuration. It
 * validates the options and the server entry now (an environment reference in the command,
 * args, cwd or url, or a reference to an unset variable, fails here), connects on `start()`.
 *
 * @throws LauncherError `LAUNCHER_CONFIG_INVALID`, `LAUNCHER_MCP_CONFIG_INVALID`,
 *   `LAUNCHER_ENV_REFERENCE`, `LAUNCHER_BACKEND_UNSUPPORTED`.
 */
export function createLauncher(options: LauncherOptions): Launcher {
  return new ZulipLauncher(options);
}
