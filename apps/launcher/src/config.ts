import { join, resolve } from 'node:path';
import {
  defineSettings,
  expandHome,
  flagSwitch,
  homeDirectory,
  integer,
  matching,
  oneOf,
  parsedBy,
  problem,
  type SettingInfo,
  type SettingMeta,
  type SettingProblem,
  setting,
  strictBoolean,
  text,
} from '@zmcp/cli';
import { ALL_STREAMS, checkEmojiName, parseAdmissionList } from '@zmcp/core';
import { parseSessionId } from '@zmcp/delivery';
import { type ServerSettings, serverSettings, type ZulipCredentialSettings } from '@zmcp/server-kit';
import {
  type BackendName,
  backendNames,
  type CodexToolApproval,
  codexApprovalProblem,
  codexToolApprovals,
} from './backends.js';
import { LauncherError } from './errors.js';
import { hasEnvReference } from './mcp-config.js';

export type { SettingInfo } from '@zmcp/cli';

/** Who may start an agent: user ids, and exact email addresses (compared case-insensitively). */
export interface AllowedUsers {
  userIds: readonly number[];
  /** Lowercased. */
  emails: readonly string[];
}

/** A per-stream backend choice: the stream by id, or by its exact name (case-insensitive). */
export interface StreamBackendRule {
  stream: number | string;
  backend: BackendName;
}

/**
 * The Zulip account the launcher listens as, as configured (`@zmcp/server-kit`'s declaration,
 * shared with every zmcp server); resolving it against a zuliprc is `@zmcp/core`'s job.
 */
export type LauncherZulipSettings = ZulipCredentialSettings;

/** The reactions that show a trigger's state on the message that made it. */
export interface StatusEmoji {
  queued: string;
  working: string;
  done: string;
  failed: string;
}

/**
 * The whole configuration of one `zulip-agent` process, from environment variables and flags: the
 * settings it shares with every zmcp server (`@zmcp/server-kit`: the Zulip account, the request
 * deadline, the log level; `stateDir` is the launcher's own `ZULIP_AGENT_STATE_DIR`, `sessionId`
 * its `ZULIP_AGENT_ID`, and it reads every conversation the bot is in), and its own.
 */
export interface LauncherConfig extends ServerSettings {
  command: 'run' | 'help' | 'version';
  demo: boolean;
  backend: BackendName;
  streamBackends: readonly StreamBackendRule[];
  /** Absolute path of the `.mcp.json` holding the zulip server. */
  mcpConfigPath: string;
  mcpServerName: string;
  /** Absolute working directory of the agents. */
  workdir: string;
  backendArgs: Readonly<Record<BackendName, readonly string[]>>;
  codexToolApproval: CodexToolApproval;
  systemPrompt: string | undefined;
  /** Absolute path, read at start. */
  systemPromptFile: string | undefined;
  /** Unset only with `--demo`, which allows the demo realm's people. */
  allowedUsers: AllowedUsers | undefined;
  directMessages: boolean;
  /** Claude Code asks the conversation's people before a tool its rules do not allow. */
  approvals: boolean;
  /** One status message per run, edited as the agent works. */
  progress: boolean;
  /** Shortest time between two edits of a status message, in milliseconds. */
  progressIntervalMs: number;
  maxRunning: number;
  maxQueued: number;
  timeLimitMs: number;
  stopGraceMs: number;
  /** With ZULIP_STATE_URL: how long a worker counts as alive after its last heartbeat. */
  workerLeaseMs: number;
  catchUpMs: number;
  emoji: StatusEmoji;
  /** Names the trigger record (the same as `sessionId`). */
  launcherId: string;
  logDir: string;
}

/** The bin name, as the help and error messages call it. */
export const binName = 'zulip-agent';

/**
 * The settings the launcher shares with every zmcp server, declared once in `@zmcp/server-kit`:
 * the Zulip account, the deadline of each Zulip call, the log level. The rest (toolsets,
 * allowlists, uploads…) belong to the zulip server each agent gets, not to the launcher.
 */
const sharedNames = [
  'ZULIP_STATE_URL',
  'ZULIP_REQUEST_TIMEOUT_MS',
  'ZMCP_LOG_LEVEL',
  'ZMCP_STATUS_PORT',
  'ZMCP_STATUS_HOST',
  'ZMCP_STATUS_TOKEN',
] as const;
type SharedName = (typeof sharedNames)[number];
const shared = serverSettings({ bin: binName, only: sharedNames });
const isSharedName = (name: string): boolean => (sharedNames as readonly string[]).includes(name);
/** The Zulip account's settings, listed first in the help. */
const zulipAccount = Object.fromEntries(
  Object.entries(shared.shape).filter(([name]) => !isSharedName(name)),
) as Omit<typeof shared.shape, SharedName>;
/** The other shared settings, listed after the launcher's own state and log settings. */
const sharedRest = Object.fromEntries(sharedNames.map((name) => [name, shared.shape[name]])) as Pick<
  typeof shared.shape,
  SharedName
>;

/** What the launcher's Zulip runtime is opened with, beyond the shared settings. */
export interface LauncherRuntimeInput {
  zulip: LauncherZulipSettings;
  /** The launcher's state directory: its state store, one folder per realm and bot. */
  stateDir: string;
  /** Names the trigger record. */
  launcherId: string;
  /** `ZULIP_STATE_URL`: the trigger record in PostgreSQL instead of `stateDir`. */
  stateUrl?: string | undefined;
  requestTimeoutMs?: number | undefined;
}

/**
 * The server settings the launcher opens its Zulip runtime with (`@zmcp/server-kit`'s
 * `openZulipRuntime`): the shared ones as given (or at their declared defaults), the launcher's
 * state directory and record name, and every conversation the bot is in readable, since a trigger
 * may come from any of them (a private stream the bot was added to, a DM).
 */
export function launcherServerSettings(input: LauncherRuntimeInput): ServerSettings {
  const { zulip } = input;
  const settings = shared.resolve(
    {
      ZULIP_REALM: undefined,
      ZULIP_SITE: zulip.site,
      ZULIP_EMAIL: zulip.email,
      ZULIP_API_KEY: zulip.apiKey,
      ZULIP_RC_PATH: zulip.rcPath,
      ZULIP_ALLOW_INSECURE_HTTP: zulip.allowInsecureHttp,
      ZULIP_STATE_URL: input.stateUrl,
      ZULIP_REQUEST_TIMEOUT_MS:
        input.requestTimeoutMs ?? sharedRest.ZULIP_REQUEST_TIMEOUT_MS.parse(undefined),
      // The launcher's logger is given to it; the level only matters to the bin that made it.
      ZMCP_LOG_LEVEL: sharedRest.ZMCP_LOG_LEVEL.parse(undefined),
      // The status page is the bin's, served by runServer; the runtime never serves one.
      ZMCP_STATUS_PORT: undefined,
      ZMCP_STATUS_HOST: sharedRest.ZMCP_STATUS_HOST.parse(undefined),
      ZMCP_STATUS_TOKEN: undefined,
    },
    // Nothing here is read from a file or a variable: the state directory is the launcher's own.
    { env: {}, exists: () => false },
  );
  return asLauncher(settings, input.stateDir, input.launcherId);
}

/** The shared settings as the launcher uses them: its own state directory and record, every conversation readable. */
function asLauncher(settings: ServerSettings, stateDir: string, launcherId: string): ServerSettings {
  return {
    ...settings,
    stateDir,
    stateDirSource: 'setting',
    sessionId: launcherId,
    privateStreams: ALL_STREAMS,
  };
}

/** A status reaction, by core's one rule for an emoji name (colons and case aside). */
function emoji(meta: Omit<SettingMeta, 'defaultText'>, fallback: string) {
  return parsedBy(
    { ...meta, defaultText: fallback },
    (raw) => checkEmojiName(raw),
    () => 'expected an emoji name such as working_on_it or check',
    fallback,
  );
}

function backendArgs(backend: BackendName) {
  return setting<readonly string[]>(
    {
      group: 'Agents',
      defaultText: 'none',
      help: `Extra arguments for ${backend}, as a JSON list of strings; environment references and {file:…} are refused.`,
    },
    (raw) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        return problem('expected a JSON list of strings, such as ["--model", "x"]');
      }
      if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) {
        return problem('expected a JSON list of strings, such as ["--model", "x"]');
      }
      const bad = parsed.findIndex((a: string) => hasEnvReference(a));
      if (bad >= 0) {
        return problem(
          `item ${bad} holds an environment reference or a {file:…} substitution; nothing is expanded, and secrets stay off command lines`,
        );
      }
      return parsed as string[];
    },
    [],
  );
}

/** Reads ZULIP_AGENT_ALLOWED_USERS with core's one admission parser: ids and emails; names are refused. */
export function parseAllowedUsers(raw: string): AllowedUsers | SettingProblem {
  if (raw.split(',').every((s) => s.trim() === ''))
    return problem('expected user ids or email addresses, comma-separated');
  let list: ReturnType<typeof parseAdmissionList>;
  try {
    list = parseAdmissionList(raw, 'ZULIP_AGENT_ALLOWED_USERS');
  } catch (err) {
    return problem((err as Error).message.replace(/^ZULIP_AGENT_ALLOWED_USERS:? /, ''));
  }
  if (list === undefined) return problem('expected user ids or email addresses, comma-separated');
  return { userIds: list.ids, emails: list.emails };
}

function parseStreamBackends(raw: string): StreamBackendRule[] | SettingProblem {
  const rules: StreamBackendRule[] = [];
  for (const item of raw.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const eq = item.lastIndexOf('=');
    const stream = eq > 0 ? item.slice(0, eq).trim() : '';
    const backend =
      eq > 0
        ? item
            .slice(eq + 1)
            .trim()
            .toLowerCase()
        : '';
    if (stream === '' || !(backendNames as readonly string[]).includes(backend)) {
      return problem(
        `expected stream=backend pairs such as ops=codex or 12=opencode (backends: ${backendNames.join(', ')})`,
      );
    }
    rules.push({ stream: /^\d+$/.test(stream) ? Number(stream) : stream, backend: backend as BackendName });
  }
  return rules.length > 0 ? rules : problem('expected at least one stream=backend pair');
}

/**
 * The launcher's settings, read by one schema: every key is an environment variable (or, for
 * flag-only switches, the flag), every value the raw string as given.
 */
const configShape = {
  ...zulipAccount,
  ZULIP_AGENT_BACKEND: oneOf(
    {
      group: 'Agents',
      flag: '--backend',
      flagArg: '<name>',
      help: 'The agent CLI to start: claude (Claude Code), codex (codex exec) or opencode (opencode run).',
    },
    backendNames,
    'claude',
  ),
  ZULIP_AGENT_STREAM_BACKENDS: setting<readonly StreamBackendRule[]>(
    {
      group: 'Agents',
      defaultText: 'none',
      help: 'Per-stream backends as stream=backend pairs (comma list); a stream is its id or exact name.',
    },
    parseStreamBackends,
    [],
  ),
  ZULIP_AGENT_MCP_CONFIG: text({
    group: 'Agents',
    flag: '--mcp-config',
    flagArg: '<path>',
    defaultText: '.mcp.json in the work directory',
    help: 'The .mcp.json whose zulip server every agent gets, translated for its backend.',
  }),
  ZULIP_AGENT_MCP_SERVER: text(
    {
      group: 'Agents',
      flag: '--mcp-server',
      flagArg: '<name>',
      defaultText: 'zulip',
      help: 'The name of the zulip server in that .mcp.json.',
    },
    matching(/^[^\s]{1,100}$/, 'expected a server name without spaces'),
  ),
  ZULIP_AGENT_WORKDIR: text({
    group: 'Agents',
    flag: '--workdir',
    flagArg: '<dir>',
    defaultText: 'the current directory',
    help: 'Working directory the agents start in.',
  }),
  ZULIP_AGENT_CLAUDE_ARGS: backendArgs('claude'),
  ZULIP_AGENT_CODEX_ARGS: backendArgs('codex'),
  ZULIP_AGENT_OPENCODE_ARGS: backendArgs('opencode'),
  ZULIP_AGENT_CODEX_TOOL_APPROVAL: oneOf(
    {
      group: 'Agents',
      help: 'How codex approves the zulip tools: approve runs them; auto, writes and prompt ask first, which codex exec refuses unless --approve-for-me is among its arguments.',
    },
    codexToolApprovals,
    'approve',
  ),
  ZULIP_AGENT_SYSTEM_PROMPT: text({
    group: 'Agents',
    defaultText: 'none',
    help: 'Text added to the built-in system prompt of every agent (team conventions, where the code is).',
  }),
  ZULIP_AGENT_APPROVALS: strictBoolean(
    {
      group: 'Agents',
      help: 'Claude Code asks in the conversation before a tool its rules do not allow (a ✅ or "yes <id>" from an allowed user runs it); off: it is refused.',
    },
    true,
  ),
  ZULIP_AGENT_PROGRESS: strictBoolean(
    {
      group: 'Agents',
      help: 'One status message in the conversation, edited as the agent works (elapsed time, step, tools used); the answer comes as a new message.',
    },
    true,
  ),
  ZULIP_AGENT_PROGRESS_INTERVAL_MS: integer(
    {
      group: 'Agents',
      help: 'Shortest time between two edits of a status message, in milliseconds (one a minute at least keeps the clock current).',
    },
    1000,
    600_000,
    10_000,
  ),
  ZULIP_AGENT_SYSTEM_PROMPT_FILE: text({
    group: 'Agents',
    defaultText: 'none',
    help: 'A file whose text is added to the system prompt, after ZULIP_AGENT_SYSTEM_PROMPT; read at start.',
  }),
  ZULIP_AGENT_ALLOWED_USERS: setting<AllowedUsers | undefined>(
    {
      group: 'Who may call',
      defaultText: 'required',
      help: 'Who may start an agent: user ids or exact email addresses (comma list). Anyone else is ignored.',
    },
    parseAllowedUsers,
    undefined,
  ),
  ZULIP_AGENT_DIRECT_MESSAGES: strictBoolean(
    {
      group: 'Who may call',
      help: 'Start agents for direct messages to the bot (one-to-one; in a group DM only when mentioned).',
    },
    true,
  ),
  ZULIP_AGENT_MAX_RUNNING: integer(
    {
      group: 'Limits',
      flag: '--max-running',
      flagArg: '<n>',
      help: 'Most agents running at once; later triggers wait in a queue, marked on the message.',
    },
    1,
    64,
    2,
  ),
  ZULIP_AGENT_MAX_QUEUED: integer(
    {
      group: 'Limits',
      help: 'Most triggers waiting for a free slot; beyond it a trigger is refused with a short reply.',
    },
    0,
    1000,
    20,
  ),
  ZULIP_AGENT_TIME_LIMIT_MS: integer(
    {
      group: 'Limits',
      help: 'Longest an agent may run, in milliseconds; then it is stopped and the trigger marked failed.',
    },
    1000,
    86_400_000,
    1_800_000,
  ),
  ZULIP_AGENT_STOP_GRACE_MS: integer(
    {
      group: 'Limits',
      help: 'How long a stopped agent gets after SIGTERM before SIGKILL, in milliseconds.',
    },
    0,
    600_000,
    10_000,
  ),
  ZULIP_AGENT_WORKER_LEASE_MS: integer(
    {
      group: 'Limits',
      help: 'With ZULIP_STATE_URL: a worker silent this long (in milliseconds; it renews every third of it) is dead to the others, which take its triggers over.',
    },
    300,
    600_000,
    15_000,
  ),
  ZULIP_AGENT_CATCH_UP_MS: integer(
    {
      group: 'Limits',
      help: 'After a restart, triggers missed while down start if younger than this, in milliseconds; 0: none.',
    },
    0,
    604_800_000,
    3_600_000,
  ),
  ZULIP_AGENT_QUEUED_EMOJI: emoji(
    { group: 'Status', help: 'Reaction on a trigger waiting for a free slot.' },
    'hourglass',
  ),
  ZULIP_AGENT_WORKING_EMOJI: emoji(
    { group: 'Status', help: 'Reaction on a trigger whose agent is running.' },
    'working_on_it',
  ),
  ZULIP_AGENT_DONE_EMOJI: emoji(
    { group: 'Status', help: 'Reaction on a trigger whose agent finished.' },
    'check',
  ),
  ZULIP_AGENT_FAILED_EMOJI: emoji(
    { group: 'Status', help: 'Reaction on a trigger whose agent failed, timed out or was refused.' },
    'warning',
  ),
  ZULIP_AGENT_STATE_DIR: text({
    group: 'State and logs',
    flag: '--state-dir',
    flagArg: '<dir>',
    defaultText: '~/.zmcp/launcher',
    help: 'Directory of the trigger record (one folder per realm and bot), run files and interrupt files; keep it across restarts.',
  }),
  ZULIP_AGENT_ID: parsedBy(
    {
      group: 'State and logs',
      defaultText: 'zulip-agent',
      help: 'Names this launcher’s trigger record (<id>.json in the realm and bot’s folder of the state directory); 1-128 of A-Z a-z 0-9 . _ -.',
    },
    (raw) => parseSessionId(raw.trim()),
    (err) => (err as Error).message.replace(/^invalid session id: /, ''),
    'zulip-agent',
  ),
  ZULIP_AGENT_LOG_DIR: text({
    group: 'State and logs',
    flag: '--log-dir',
    flagArg: '<dir>',
    defaultText: '<state dir>/logs',
    help: 'Directory of the agents’ output, one log file per conversation.',
  }),
  ...sharedRest,
  '--demo': flagSwitch({
    group: 'Other',
    flag: '--demo',
    defaultText: 'off',
    help: 'Listen on a simulated, seeded Zulip realm on loopback, with a scripted first mention; no account needed.',
  }),
};

const settings = defineSettings(configShape, {
  bin: binName,
  // One rule with the other bins: URLs core accepts, plain http only to loopback unless allowed.
  refine: (raw, report) => {
    shared.check(raw, report);
    const codex =
      raw.ZULIP_AGENT_BACKEND === 'codex' ||
      raw.ZULIP_AGENT_STREAM_BACKENDS.some((r) => r.backend === 'codex');
    const problem = codex
      ? codexApprovalProblem(raw.ZULIP_AGENT_CODEX_TOOL_APPROVAL, raw.ZULIP_AGENT_CODEX_ARGS)
      : undefined;
    if (problem !== undefined) report('ZULIP_AGENT_CODEX_TOOL_APPROVAL', problem);
  },
  configError: (err) =>
    new LauncherError('LAUNCHER_CONFIG_INVALID', err.message, { cause: err, details: { ...err.details } }),
  // Checked on what was given, so it is reported beside every other problem.
  checkGiven: (given, report) => {
    if (
      given.has('ZULIP_AGENT_ALLOWED_USERS') ||
      (['--demo', '--help', '--version'] as const).some((k) => given.has(k))
    )
      return;
    report(
      'ZULIP_AGENT_ALLOWED_USERS',
      'is required: list the user ids or emails who may start an agent (no one may otherwise)',
    );
  },
});

/** Every setting in table order, as `--help`, the README and `.env.example` list them. */
export const configSettings: () => SettingInfo[] = settings.list;

/** Names of every environment variable the launcher reads. */
export const configVariableNames: () => string[] = settings.variableNames;

/**
 * Parses the environment and command-line flags (a flag wins over its variable) into a validated
 * {@link LauncherConfig}. Pure: it reads nothing but its arguments (relative paths start from
 * `options.cwd`, default the process's). Empty variables count as unset.
 *
 * @throws LauncherError `LAUNCHER_CONFIG_INVALID` naming every bad variable or flag and what was
 *   expected, never a secret's value; `details.problems` lists them.
 */
export function parseConfig(
  env: Readonly<Record<string, string | undefined>>,
  argv: readonly string[],
  options: { cwd?: string } = {},
): LauncherConfig {
  const raw = settings.parse(env, argv);
  const cwd = options.cwd ?? process.cwd();
  const home = homeDirectory(env);
  const path = (p: string) => resolve(cwd, expandHome(p, home));
  const workdir = path(raw.ZULIP_AGENT_WORKDIR ?? '.');
  const stateDir = path(raw.ZULIP_AGENT_STATE_DIR ?? '~/.zmcp/launcher');
  const mcpConfig = raw.ZULIP_AGENT_MCP_CONFIG;
  const base = asLauncher(
    shared.resolve(raw, { env, cwd, exists: () => false }),
    stateDir,
    raw.ZULIP_AGENT_ID,
  );
  return {
    ...base,
    // A relative zuliprc path starts from the working directory, as every path here does.
    zulip: { ...base.zulip, rcPath: raw.ZULIP_RC_PATH === undefined ? undefined : path(raw.ZULIP_RC_PATH) },
    stateDirSource: raw.ZULIP_AGENT_STATE_DIR === undefined ? 'default' : 'setting',
    command: raw['--help'] ? 'help' : raw['--version'] ? 'version' : 'run',
    demo: raw['--demo'],
    backend: raw.ZULIP_AGENT_BACKEND,
    streamBackends: raw.ZULIP_AGENT_STREAM_BACKENDS,
    mcpConfigPath: mcpConfig === undefined ? join(workdir, '.mcp.json') : path(mcpConfig),
    mcpServerName: raw.ZULIP_AGENT_MCP_SERVER ?? 'zulip',
    workdir,
    backendArgs: {
      claude: raw.ZULIP_AGENT_CLAUDE_ARGS,
      codex: raw.ZULIP_AGENT_CODEX_ARGS,
      opencode: raw.ZULIP_AGENT_OPENCODE_ARGS,
    },
    codexToolApproval: raw.ZULIP_AGENT_CODEX_TOOL_APPROVAL,
    systemPrompt: raw.ZULIP_AGENT_SYSTEM_PROMPT,
    systemPromptFile:
      raw.ZULIP_AGENT_SYSTEM_PROMPT_FILE === undefined ? undefined : path(raw.ZULIP_AGENT_SYSTEM_PROMPT_FILE),
    allowedUsers: raw.ZULIP_AGENT_ALLOWED_USERS,
    directMessages: raw.ZULIP_AGENT_DIRECT_MESSAGES,
    approvals: raw.ZULIP_AGENT_APPROVALS,
    progress: raw.ZULIP_AGENT_PROGRESS,
    progressIntervalMs: raw.ZULIP_AGENT_PROGRESS_INTERVAL_MS,
    maxRunning: raw.ZULIP_AGENT_MAX_RUNNING,
    maxQueued: raw.ZULIP_AGENT_MAX_QUEUED,
    timeLimitMs: raw.ZULIP_AGENT_TIME_LIMIT_MS,
    stopGraceMs: raw.ZULIP_AGENT_STOP_GRACE_MS,
    workerLeaseMs: raw.ZULIP_AGENT_WORKER_LEASE_MS,
    catchUpMs: raw.ZULIP_AGENT_CATCH_UP_MS,
    emoji: {
      queued: raw.ZULIP_AGENT_QUEUED_EMOJI,
      working: raw.ZULIP_AGENT_WORKING_EMOJI,
      done: raw.ZULIP_AGENT_DONE_EMOJI,
      failed: raw.ZULIP_AGENT_FAILED_EMOJI,
    },
    launcherId: raw.ZULIP_AGENT_ID,
    logDir: raw.ZULIP_AGENT_LOG_DIR === undefined ? join(stateDir, 'logs') : path(raw.ZULIP_AGENT_LOG_DIR),
  };
}

/** The `--help` text: usage, then every setting with its flag, default and one line of help. */
export function helpText(): string {
  return settings.helpText({
    about: [
      'zulip-agent: an @-mention of the bot in Zulip starts a coding agent (Claude Code, Codex or',
      'OpenCode) in that conversation, with the zulip MCP server of your .mcp.json bound to it.',
    ],
    footer: ['Exit codes: 0 after a clean shutdown, 1 when start-up fails, 2 on a bad configuration.'],
  });
}

/** The README's settings table, in markdown, generated from the same table as `--help`. */
export const configMarkdownTable: () => string = settings.markdownTable;
