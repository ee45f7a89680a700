import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  checkZulipSite,
  defineSettings,
  expandHome,
  flagSwitch,
  homeDirectory,
  integer,
  type LegacySetting,
  type LogLevel,
  logLevels,
  matching,
  oneOf,
  optionalBoolean,
  optionalInteger,
  parsedBy,
  problem,
  type ReportProblem,
  type SettingInfo,
  type SettingValues,
  setting,
  splitList,
  streamAllowlist,
  strictBoolean,
  text,
  textWithDefault,
  timeZone,
  zulipAccountSettings,
} from '@zmcp/cli';
import { checkEmojiName, isLoopbackHost, type StreamAllowlist, type TimeStyle } from '@zmcp/core';
import { parseSessionId } from '@zmcp/delivery';
import { parseToolsets, type Toolset } from '@zmcp/tools';
import { parseByteSize, parseUploadRoots, type UploadRootSpec } from '@zmcp/uploads';
import { McpServerError } from './errors.js';

export type { LegacySetting, SettingInfo } from '@zmcp/cli';

/** Zulip credentials as configured; resolving them against a zuliprc is `@zmcp/core`'s job. */
export interface ZulipCredentialSettings {
  /** `ZULIP_REALM` or `ZULIP_SITE`, raw. */
  site: string | undefined;
  email: string | undefined;
  /** Secret: never logged, never echoed in an error. */
  apiKey: string | undefined;
  rcPath: string | undefined;
  allowInsecureHttp: boolean;
}

/** Settings of the Streamable HTTP transport (used with `--http`). */
export interface HttpSettings {
  /** Address to listen on, without IPv6 brackets. */
  host: string;
  /** Port to listen on; 0 picks a free one. */
  port: number;
  /** Bearer token every request must carry; required beyond loopback. Secret. */
  token: string | undefined;
  /** Browser origins allowed to call; unset means loopback origins only. */
  allowedOrigins: readonly string[] | undefined;
  maxSessions: number;
  sessionIdleMs: number;
}

/** The whole configuration of one server process, from environment variables and flags. */
export interface Config {
  /** What the process was asked to do. */
  command: 'serve' | 'help' | 'version';
  /** Serve a simulated, seeded realm instead of a real one. */
  demo: boolean;
  transport: 'stdio' | 'http';
  zulip: ZulipCredentialSettings;
  stateDir: string;
  /**
   * Where `stateDir` came from: the variable or flag, this server's default (`~/.zmcp/state`), or
   * the default of the earlier TypeScript server (`~/.zulip_mcp_state`), used when only that one exists.
   */
  stateDirSource: 'setting' | 'default' | 'earlier default';
  sessionId: string;
  /** IANA time zone of message-line timestamps. */
  timezone: string;
  timestampStyle: TimeStyle;
  readOnly: boolean;
  /** Which toolsets are served (read-only mode still hides every tool that writes). */
  toolsets: Toolset[];
  /** Private streams the server may read: `__ALL__` (also opens DMs), or an allowlist; unset: none. */
  privateStreams: StreamAllowlist | undefined;
  /** Streams the server may write to (names or ids, resolved at start-up); unset means every stream. */
  writeStreams: StreamAllowlist | undefined;
  /** Whether DMs may be sent; unset: yes without a write allowlist, no with one. */
  writeDms: boolean | undefined;
  /** Upload roots, their paths resolved against the working directory. */
  uploadRoots: readonly UploadRootSpec[];
  uploadMaxBytes: number | undefined;
  markdownAutofix: boolean;
  maxMessageLength: number | undefined;
  pageBudgetBytes: number;
  requestTimeoutMs: number;
  toolDeadlineMs: number;
  logLevel: LogLevel;
  http: HttpSettings;
  session: SessionSettings;
  claudeChannels: ClaudeChannelSettings;
}

/** Claude Code channels (stdio only): addressed messages pushed into the session, and the permission relay. */
export interface ClaudeChannelSettings {
  enabled: boolean;
  /** Who may reach the session, by user id or email; empty: nobody (fail closed). */
  users: readonly string[];
  /** Relay Claude Code's permission prompts to `users` as DMs, answered by reaction or `yes <id>`. */
  permissionRelay: boolean;
}

/** How the agent-as-teammate session behaves, and where a launcher binds it. */
export interface SessionSettings {
  dismissEmoji: string | undefined;
  listenEmoji: string | undefined;
  autoTyping: boolean;
  /** Absolute path. */
  interruptFile: string | undefined;
  launch:
    | { stream: string | undefined; topic: string | undefined; triggerMessageId: number | undefined }
    | undefined;
}

const emojiName = (raw: string) => checkEmojiName(raw);
const emojiExpected = () =>
  'expected an emoji name such as stop or robot_ear (letters, digits, "_", "+" or "-")';
const sizeExpected = 'expected a number of bytes such as 26214400 or 25MiB (units K/KiB, M/MiB, G/GiB)';

function inRange(value: number, min: number, max: number): number {
  if (value < min || value > max) throw new RangeError(`${value} is out of range`);
  return value;
}

/**
 * The server's settings, read by one schema: every key is an environment variable (or, for
 * flag-only switches, the flag), every value the raw string as given.
 */
const configShape = {
  ...zulipAccountSettings(),
  ZULIP_STATE_DIR: text({
    group: 'State',
    flag: '--state-dir',
    flagArg: '<dir>',
    defaultText: '~/.zmcp/state (~/.zulip_mcp_state if only that exists)',
    help: 'Directory of read cursors and other state, one folder per realm and bot; put it on storage that survives a redeploy.',
  }),
  ZULIP_SESSION_ID: parsedBy(
    {
      group: 'State',
      flag: '--session-id',
      flagArg: '<id>',
      defaultText: 'default',
      help: 'Names this agent session’s state files: 1-128 of A-Z a-z 0-9 . _ -, not starting with a dot. Channels deliver for one server per session (a second waits its turn).',
    },
    (raw) => parseSessionId(raw.trim()),
    (err) =>
      `expected 1 to 128 characters of A-Z, a-z, 0-9, ".", "_" or "-" (${String((err as { details?: { reason?: unknown } }).details?.reason ?? 'invalid')})`,
    'default',
  ),
  AGENT_TIMEZONE: timeZone({
    group: 'Message lines',
    flag: '--timezone',
    flagArg: '<zone>',
    defaultText: 'system time zone',
    help: 'IANA time zone of the timestamps in message lines.',
  }),
  AGENT_TIMESTAMP_STYLE: oneOf(
    {
      group: 'Message lines',
      help: 'Timestamps in message lines: iso (full, with offset; full is accepted for it), short (time of day) or none (id only).',
    },
    ['iso', 'short', 'none'],
    'iso',
    // The earlier servers' name for the same style.
    { full: 'iso' },
  ),
  ZULIP_READ_ONLY: strictBoolean(
    {
      group: 'Access',
      flag: '--read-only',
      help: 'Refuse every request that would change the realm, and hide the write tools.',
    },
    false,
  ),
  ZULIP_TOOLSETS: parsedBy<Toolset[]>(
    {
      group: 'Access',
      flag: '--toolsets',
      flagArg: '<list>',
      defaultText: 'read,write,session',
      help: 'Toolsets to serve (comma list of read, write, session, browse, files, manage, monitor, attention), or all.',
    },
    parseToolsets,
    (err) => (err as Error).message,
    parseToolsets(undefined),
  ),
  ZULIP_PRIVATE_STREAMS: streamAllowlist({
    group: 'Access',
    defaultText: 'none',
    help: 'Private streams the server may read (names or ids, comma list); __ALL__ opens every one, and DMs.',
  }),
  ZULIP_WRITE_STREAMS: streamAllowlist({
    group: 'Access',
    defaultText: 'every stream',
    help: 'Streams the server may post, react, type and subscribe in (names or ids, comma list); unset allows all.',
  }),
  ZULIP_WRITE_DMS: optionalBoolean({
    group: 'Access',
    defaultText: 'on; off when ZULIP_WRITE_STREAMS is a list',
    help: 'Whether the server may send DMs; with a write allowlist DMs need this set to true.',
  }),
  ZULIP_UPLOAD_ROOTS: text(
    {
      group: 'Uploads',
      defaultText: 'none',
      help: 'Directories local-file attachments may come from, as name=path pairs (comma list).',
    },
    (raw) => {
      try {
        parseUploadRoots(raw, '/');
        return undefined;
      } catch (err) {
        return (err as Error).message.replace(/^ZULIP_UPLOAD_ROOTS: /, '');
      }
    },
  ),
  ZULIP_UPLOAD_MAX_BYTES: parsedBy(
    {
      group: 'Uploads',
      defaultText: 'the realm’s limit',
      help: 'Largest file to upload: bytes, or with a unit K/KiB, M/MiB, G/GiB (25MiB).',
    },
    (raw) => parseByteSize(raw, 'ZULIP_UPLOAD_MAX_BYTES'),
    () => sizeExpected,
  ),
  ZULIP_MARKDOWN_AUTOFIX: strictBoolean(
    {
      group: 'Messages',
      help: 'Rewrite markdown Zulip renders badly (tables without a blank line before, bold links).',
    },
    true,
  ),
  ZULIP_MAX_MESSAGE_LENGTH: optionalInteger(
    {
      group: 'Messages',
      defaultText: 'the realm’s limit',
      help: 'Longest message to send, in characters after markdown fixes; longer ones are refused.',
    },
    1,
    1_000_000,
  ),
  ZULIP_PAGE_BUDGET_BYTES: parsedBy(
    {
      group: 'Messages',
      defaultText: '16KiB',
      help: 'Byte budget of one page of tool output (1KiB to 1MiB, units as above); past it the page is cut and a cursor continues.',
    },
    (raw) => inRange(parseByteSize(raw, 'ZULIP_PAGE_BUDGET_BYTES'), 1024, 1_048_576),
    () => `${sizeExpected}, from 1KiB to 1MiB`,
    16_384,
  ),
  ZULIP_REQUEST_TIMEOUT_MS: integer(
    { group: 'Timeouts', help: 'Deadline of each Zulip API call, in milliseconds.' },
    100,
    600_000,
    15_000,
  ),
  ZULIP_TOOL_DEADLINE_MS: integer(
    {
      group: 'Timeouts',
      help: 'One deadline shared by all the work of a tool call, in milliseconds (listen has its own timeout).',
    },
    100,
    3_600_000,
    60_000,
  ),
  ZULIP_DISMISS_EMOJI: parsedBy(
    {
      group: 'Agent session',
      defaultText: 'stop',
      help: 'A person reacting with this emoji to one of the bot’s messages ends the session (listen and reply say so).',
    },
    emojiName,
    emojiExpected,
  ),
  ZULIP_LISTEN_EMOJI: parsedBy(
    {
      group: 'Agent session',
      defaultText: 'robot_ear if the realm has it, else ear',
      help: 'Reaction the bot shows on the newest message while listen waits.',
    },
    emojiName,
    emojiExpected,
  ),
  ZULIP_AUTO_TYPING: strictBoolean(
    {
      group: 'Agent session',
      help: 'Show "typing…" while the agent works after listen wakes; stops are always sent.',
    },
    true,
  ),
  ZULIP_INTERRUPT_FILE: text({
    group: 'Agent session',
    defaultText: 'unset',
    help: 'A file another process may drop to wake a listening agent; its text is handed over as untrusted input.',
  }),
  SESSION_STREAM: text({
    group: 'Agent session',
    defaultText: 'unset',
    help: 'Set by a launcher: the stream the stdio session starts bound to (with SESSION_TOPIC).',
  }),
  SESSION_TOPIC: text({
    group: 'Agent session',
    defaultText: 'unset',
    help: 'Set by a launcher: the topic the stdio session starts bound to (with SESSION_STREAM).',
  }),
  TRIGGER_MESSAGE_ID: optionalInteger(
    {
      group: 'Agent session',
      defaultText: 'unset',
      help: 'Set by a launcher: the message that called the agent; alone, it also names the conversation.',
    },
    1,
    Number.MAX_SAFE_INTEGER,
  ),
  ZMCP_LOG_LEVEL: oneOf(
    {
      group: 'Logging',
      flag: '--log-level',
      flagArg: '<level>',
      help: 'Log level on stderr: debug, info, warn, error or silent. Message bodies only at debug.',
    },
    logLevels,
    'info',
  ),
  '--http': flagSwitch({
    group: 'HTTP transport',
    flag: '--http',
    defaultText: 'off (stdio)',
    help: 'Serve Streamable HTTP at http://<host>:<port>/mcp instead of stdio.',
  }),
  ZMCP_HTTP_HOST: textWithDefault(
    {
      group: 'HTTP transport',
      flag: '--host',
      flagArg: '<host>',
      defaultText: '127.0.0.1',
      help: 'Address to listen on; anything but loopback requires ZMCP_HTTP_TOKEN.',
    },
    '127.0.0.1',
    matching(/^[A-Za-z0-9.:[\]-]+$/, 'expected a host name or IP address'),
  ),
  ZMCP_HTTP_PORT: integer(
    {
      group: 'HTTP transport',
      flag: '--port',
      flagArg: '<port>',
      help: 'Port to listen on; 0 picks a free port (the bound address is logged).',
    },
    0,
    65_535,
    3000,
  ),
  ZMCP_HTTP_TOKEN: text(
    {
      group: 'HTTP transport',
      defaultText: 'unset',
      help: 'Bearer token every HTTP request must carry (16+ characters). Secret; required beyond loopback.',
      secret: true,
    },
    matching(/^[\x21-\x7e]{16,}$/, 'expected at least 16 printable characters without spaces'),
  ),
  ZMCP_HTTP_ALLOWED_ORIGINS: setting<readonly string[] | undefined>(
    {
      group: 'HTTP transport',
      defaultText: 'loopback origins',
      help: 'Browser origins allowed to call (comma list); requests without an Origin header are allowed.',
    },
    (raw) => {
      const origins: string[] = [];
      for (const item of splitList(raw)) {
        let origin: string | undefined;
        try {
          const url = new URL(item);
          if (
            (url.protocol === 'http:' || url.protocol === 'https:') &&
            url.origin === item.replace(/\/$/, '')
          )
            origin = url.origin;
        } catch {
          origin = undefined;
        }
        if (origin === undefined)
          return problem('expected origins such as http://localhost:6274, comma-separated');
        origins.push(origin);
      }
      return origins.length > 0 ? origins : problem('expected at least one origin');
    },
    undefined,
  ),
  ZMCP_HTTP_MAX_SESSIONS: integer(
    {
      group: 'HTTP transport',
      help: 'Most concurrent MCP sessions; a new one beyond it replaces the least recently used idle one (503 only if all are busy).',
    },
    1,
    10_000,
    32,
  ),
  ZMCP_HTTP_SESSION_IDLE_MS: integer(
    {
      group: 'HTTP transport',
      help: 'A session with no request for this long, in milliseconds, is closed.',
    },
    1000,
    86_400_000,
    1_800_000,
  ),
  ZULIP_CLAUDE_CHANNELS: strictBoolean(
    {
      group: 'Claude Code channels',
      flag: '--claude-channels',
      help: 'Push messages that mention or DM the bot into a Claude Code session as channel events (stdio only; needs ZULIP_CHANNEL_USERS).',
    },
    false,
  ),
  ZULIP_CHANNEL_USERS: setting<readonly string[]>(
    {
      group: 'Claude Code channels',
      defaultText: 'nobody',
      help: 'Who may reach the session through channel events (user ids or emails, comma list); everyone else is dropped.',
    },
    (raw) => {
      const entries = splitList(raw);
      const bad = entries.find((e) => !/^[1-9][0-9]{0,15}$/.test(e) && !/^[^\s@,]+@[^\s@,]+$/.test(e));
      return bad === undefined ? entries : problem('expected user ids or emails, comma-separated');
    },
    [],
  ),
  ZULIP_CHANNEL_PERMISSION_RELAY: strictBoolean(
    {
      group: 'Claude Code channels',
      help: 'Relay Claude Code’s tool-permission prompts to ZULIP_CHANNEL_USERS by DM; a reaction or "yes <id>" answers (needs ZULIP_PRIVATE_STREAMS=__ALL__).',
    },
    false,
  ),
  '--demo': flagSwitch({
    group: 'Other',
    flag: '--demo',
    defaultText: 'off',
    help: 'Start a simulated, seeded Zulip realm on loopback and serve it; no account needed.',
  }),
};

type RawConfig = SettingValues<typeof configShape>;

/** Checks across settings, made once every value is valid. */
function refineConfig(raw: RawConfig, report: ReportProblem<typeof configShape>): void {
  checkZulipSite(raw, report);
  if ((raw.SESSION_STREAM === undefined) !== (raw.SESSION_TOPIC === undefined)) {
    report(
      raw.SESSION_STREAM === undefined ? 'SESSION_STREAM' : 'SESSION_TOPIC',
      'SESSION_STREAM and SESSION_TOPIC are set together, or neither',
    );
  }
  if (raw.ZULIP_CLAUDE_CHANNELS && raw['--http']) {
    report('ZULIP_CLAUDE_CHANNELS', 'Claude Code channels run on stdio only; drop --http');
  }
  if (raw.ZULIP_CLAUDE_CHANNELS && raw.ZULIP_READ_ONLY) {
    report(
      'ZULIP_CLAUDE_CHANNELS',
      'needs an event queue, which read-only mode refuses; unset ZULIP_READ_ONLY',
    );
  }
  if (
    raw.ZULIP_CHANNEL_PERMISSION_RELAY &&
    (!raw.ZULIP_CLAUDE_CHANNELS || raw.ZULIP_PRIVATE_STREAMS !== '__ALL__')
  ) {
    report(
      'ZULIP_CHANNEL_PERMISSION_RELAY',
      'needs ZULIP_CLAUDE_CHANNELS and ZULIP_PRIVATE_STREAMS=__ALL__ (its prompts and answers are DMs)',
    );
  }
  if (raw['--http'] && !isLoopbackHost(raw.ZMCP_HTTP_HOST) && raw.ZMCP_HTTP_TOKEN === undefined) {
    report('ZMCP_HTTP_TOKEN', `is required when the HTTP host is not loopback (host ${raw.ZMCP_HTTP_HOST})`);
  }
}

const zulipmcp = 'zulipmcp (the Python server)';
const mcplServer = 'the earlier TypeScript Zulip MCP server';

const legacySettingList: readonly LegacySetting[] = [
  { name: 'ZULIPMCP_READ_ONLY', origin: zulipmcp, replacement: 'ZULIP_READ_ONLY', handling: 'alias' },
  {
    name: 'BOT_ALLOWED_PRIVATE_STREAMS',
    origin: zulipmcp,
    replacement: 'ZULIP_PRIVATE_STREAMS',
    handling: 'alias',
  },
  {
    name: 'BOT_ALLOWED_WRITE_STREAMS',
    origin: zulipmcp,
    replacement: 'ZULIP_WRITE_STREAMS',
    handling: 'alias',
  },
  {
    name: 'ZULIPMCP_MARKDOWN_AUTOFIX',
    origin: zulipmcp,
    replacement: 'ZULIP_MARKDOWN_AUTOFIX',
    handling: 'alias',
  },
  {
    name: 'ZULIP_SUBSCRIBE',
    origin: mcplServer,
    replacement: 'the subscribe tool',
    handling: 'refused',
    instead:
      'the bot is not subscribed to anything at start-up here; subscribe it in Zulip or with the subscribe tool, and use start_monitoring to follow streams',
  },
];

/** The variables of earlier Zulip MCP servers this one recognises, and what it does with each. */
export function legacySettings(): LegacySetting[] {
  return legacySettingList.map((s) => ({ ...s }));
}

/** The bin name, as the help and error messages call it. */
export const binName = 'zulip-mcp';

const settings = defineSettings(configShape, {
  bin: binName,
  legacy: legacySettingList,
  refine: refineConfig,
  configError: (err) =>
    new McpServerError('MCP_CONFIG_INVALID', err.message, { cause: err, details: { ...err.details } }),
});

/** Every setting in table order, as `--help`, the README and `.env.example` list them. */
export const configSettings: () => SettingInfo[] = settings.list;

/** Names of every environment variable the server reads. */
export const configVariableNames: () => string[] = settings.variableNames;

/**
 * Parses the process environment and command-line flags (a flag wins over its variable)
 * into a validated `Config`. Reads nothing but its arguments, apart from the system time zone
 * (the default zone), the working directory (where relative upload roots start) and whether the
 * default state directories exist (`options.exists`). Empty variables count as unset. The
 * variables of earlier servers ({@link legacySettings}) are read as their replacements; set
 * beside a replacement to a different value, or refused, they are problems like any other.
 *
 * @throws McpServerError `MCP_CONFIG_INVALID` naming every bad variable or flag and what
 * was expected; the values of secrets are never included. `details.problems` lists them.
 */
export function parseConfig(
  env: Readonly<Record<string, string | undefined>>,
  argv: readonly string[],
  options: { cwd?: string; exists?: (path: string) => boolean } = {},
): Config {
  const raw = settings.parse(env, argv);

  const home = homeDirectory(env);
  const state = stateDirectory(raw.ZULIP_STATE_DIR, home, options.exists ?? existsSync);
  return {
    command: raw['--help'] ? 'help' : raw['--version'] ? 'version' : 'serve',
    demo: raw['--demo'],
    transport: raw['--http'] ? 'http' : 'stdio',
    zulip: {
      site: raw.ZULIP_REALM ?? raw.ZULIP_SITE,
      email: raw.ZULIP_EMAIL,
      apiKey: raw.ZULIP_API_KEY,
      rcPath: raw.ZULIP_RC_PATH === undefined ? undefined : expandHome(raw.ZULIP_RC_PATH, home),
      allowInsecureHttp: raw.ZULIP_ALLOW_INSECURE_HTTP,
    },
    stateDir: state.dir,
    stateDirSource: state.source,
    sessionId: raw.ZULIP_SESSION_ID,
    timezone: raw.AGENT_TIMEZONE ?? Intl.DateTimeFormat().resolvedOptions().timeZone,
    timestampStyle: raw.AGENT_TIMESTAMP_STYLE,
    readOnly: raw.ZULIP_READ_ONLY,
    toolsets: raw.ZULIP_TOOLSETS,
    privateStreams: raw.ZULIP_PRIVATE_STREAMS,
    writeStreams: raw.ZULIP_WRITE_STREAMS,
    writeDms: raw.ZULIP_WRITE_DMS,
    uploadRoots: parseUploadRoots(raw.ZULIP_UPLOAD_ROOTS, options.cwd ?? process.cwd()),
    uploadMaxBytes: raw.ZULIP_UPLOAD_MAX_BYTES,
    markdownAutofix: raw.ZULIP_MARKDOWN_AUTOFIX,
    maxMessageLength: raw.ZULIP_MAX_MESSAGE_LENGTH,
    pageBudgetBytes: raw.ZULIP_PAGE_BUDGET_BYTES,
    requestTimeoutMs: raw.ZULIP_REQUEST_TIMEOUT_MS,
    toolDeadlineMs: raw.ZULIP_TOOL_DEADLINE_MS,
    logLevel: raw.ZMCP_LOG_LEVEL,
    session: {
      dismissEmoji: raw.ZULIP_DISMISS_EMOJI,
      listenEmoji: raw.ZULIP_LISTEN_EMOJI,
      autoTyping: raw.ZULIP_AUTO_TYPING,
      interruptFile:
        raw.ZULIP_INTERRUPT_FILE === undefined
          ? undefined
          : resolve(options.cwd ?? process.cwd(), expandHome(raw.ZULIP_INTERRUPT_FILE, home)),
      launch:
        raw.SESSION_STREAM === undefined && raw.TRIGGER_MESSAGE_ID === undefined
          ? undefined
          : {
              stream: raw.SESSION_STREAM,
              topic: raw.SESSION_TOPIC,
              triggerMessageId: raw.TRIGGER_MESSAGE_ID,
            },
    },
    claudeChannels: {
      enabled: raw.ZULIP_CLAUDE_CHANNELS,
      users: raw.ZULIP_CHANNEL_USERS,
      permissionRelay: raw.ZULIP_CHANNEL_PERMISSION_RELAY,
    },
    http: {
      host: withoutBrackets(raw.ZMCP_HTTP_HOST),
      port: raw.ZMCP_HTTP_PORT,
      token: raw.ZMCP_HTTP_TOKEN,
      allowedOrigins: raw.ZMCP_HTTP_ALLOWED_ORIGINS,
      maxSessions: raw.ZMCP_HTTP_MAX_SESSIONS,
      sessionIdleMs: raw.ZMCP_HTTP_SESSION_IDLE_MS,
    },
  };
}

/** The default state directory, and the one the earlier TypeScript server used by default. */
const DEFAULT_STATE_DIR = '~/.zmcp/state';
const EARLIER_DEFAULT_STATE_DIR = '~/.zulip_mcp_state';

function stateDirectory(
  setting: string | undefined,
  home: string,
  exists: (path: string) => boolean,
): { dir: string; source: Config['stateDirSource'] } {
  if (setting !== undefined) return { dir: expandHome(setting, home), source: 'setting' };
  const dir = expandHome(DEFAULT_STATE_DIR, home);
  const earlier = expandHome(EARLIER_DEFAULT_STATE_DIR, home);
  // A volume mounted where the earlier server kept its state keeps serving; our files go into
  // per-account folders there and never touch the earlier server's own files.
  if (!exists(dir) && exists(earlier)) return { dir: earlier, source: 'earlier default' };
  return { dir, source: 'default' };
}

/** The listen address as `listen()` takes it: an IPv6 literal without its brackets. */
function withoutBrackets(host: string): string {
  const trimmed = host.trim();
  return trimmed.startsWith('[') && trimmed.endsWith(']') ? trimmed.slice(1, -1) : trimmed;
}

/** The `--help` text: usage, then every setting with its flag, default and one line of help. */
export function helpText(): string {
  return settings.helpText({
    about: ['zulip-mcp: a Zulip realm for any MCP client (stdio by default, Streamable HTTP with --http).'],
    footer: ['The README of @zmcp/mcp-server explains each setting and shows client configurations.'],
  });
}

/** The README's settings table, in markdown, generated from the same table as `--help`. */
export const configMarkdownTable: () => string = settings.markdownTable;
