import { join, resolve } from 'node:path';
import {
  defineSettings,
  expandHome,
  flagSwitch,
  homeDirectory,
  integer,
  type LegacySetting,
  matching,
  oneOf,
  optionalInteger,
  parsedBy,
  problem,
  type ReportProblem,
  type SettingInfo,
  type SettingValues,
  setting,
  splitList,
  strictBoolean,
  text,
  textWithDefault,
} from '@zmcp/cli';
import { checkEmojiName, isLoopbackHost } from '@zmcp/core';
import { type ServerSettings, serverSettings } from '@zmcp/server-kit';
import { DEFAULT_TOOLSETS, TOOLSETS } from '@zmcp/tools';
import { McpServerError } from './errors.js';
import { decodeSecretKey } from './tokens.js';

export type { LegacySetting, SettingInfo } from '@zmcp/cli';
export type { ZulipCredentialSettings } from '@zmcp/server-kit';

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
  /** `token`: one shared bearer token; `people`: per-person tokens from `zulip-mcp tokens`. */
  auth: 'token' | 'people';
  /** The 32-byte key people's API keys are encrypted with (`ZULIP_SECRET_KEY`); required with `auth: 'people'`. Secret. */
  secretKey: Buffer | undefined;
  /** Bearer token of the admin API (`/admin/tokens`); unset, there is none. Secret. */
  adminToken: string | undefined;
  /** Requests one person's token may make per minute. */
  rateLimitPerMinute: number;
  /** Concurrent long waits (listen, wait_for_messages, subscriptions/listen) one token may hold. */
  maxWaitsPerToken: number;
  /** A person's services unused this long (and holding no session, listen or wait) are closed, in ms. */
  tokenIdleMs: number;
  /** The public URL of the MCP endpoint, as clients dial it (behind a proxy); unset, from the request. */
  publicUrl: string | undefined;
  /** Where people get a token: shown in 401 answers and the protected-resource metadata. */
  tokenHelp: string | undefined;
  /** The audit log (JSON lines, rotated by size). */
  auditLog: string;
  auditMaxBytes: number;
  /** Further realms this server fronts (a JSON list, absolute path); unset: the one realm. */
  realmsFile: string | undefined;
}

/**
 * The whole configuration of one server process, from environment variables and flags: the
 * settings every zmcp server shares (`@zmcp/server-kit`), and this server's own.
 */
export interface Config extends ServerSettings {
  /** What the process was asked to do. */
  command: 'serve' | 'help' | 'version';
  /** Serve a simulated, seeded realm instead of a real one. */
  demo: boolean;
  transport: 'stdio' | 'http';
  http: HttpSettings;
  session: SessionSettings;
  claudeChannels: ClaudeChannelSettings;
}

/** Claude Code channels (stdio only): addressed messages pushed into the session, and the permission relay. */
export interface ClaudeChannelSettings {
  enabled: boolean;
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
  /** Serve `permission_prompt` (Claude Code's `--permission-prompt-tool`), answered in the conversation. */
  permissionPrompt: boolean;
  launch:
    | { stream: string | undefined; topic: string | undefined; triggerMessageId: number | undefined }
    | undefined;
}

const emojiName = (raw: string) => checkEmojiName(raw);
const emojiExpected = () =>
  'expected an emoji name such as stop or robot_ear (letters, digits, "_", "+" or "-")';

/** The bin name, as the help and error messages call it. */
export const binName = 'zulip-mcp';

/** The settings every zmcp server shares, as zulip-mcp serves them: every toolset, read-only mode. */
const server = serverSettings({
  bin: binName,
  toolsets: { served: TOOLSETS, default: DEFAULT_TOOLSETS },
  readOnly: 'served',
});

/**
 * The server's settings, read by one schema: every key is an environment variable (or, for
 * flag-only switches, the flag), every value the raw string as given.
 */
const configShape = {
  ...server.shape,
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
  ZULIP_PERMISSION_PROMPT: strictBoolean(
    {
      group: 'Agent session',
      help: 'Serve permission_prompt (Claude Code’s --permission-prompt-tool; zulip-agent sets it): the request is posted in the conversation and ZULIP_ALLOWED_USERS answer with a reaction or "yes <id>".',
    },
    false,
  ),
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
  ZMCP_HTTP_AUTH: oneOf(
    {
      group: 'Hosting for an organization',
      help: 'token: one shared ZMCP_HTTP_TOKEN; people: each person’s own token (zulip-mcp tokens create), acting as them.',
    },
    ['token', 'people'] as const,
    'token',
  ),
  ZULIP_SECRET_KEY: setting<Buffer | undefined>(
    {
      group: 'Hosting for an organization',
      defaultText: 'unset',
      help: 'Encrypts people’s Zulip API keys at rest: 32 bytes as base64 (openssl rand -base64 32) or 64 hex digits. Secret; required with ZMCP_HTTP_AUTH=people.',
      secret: true,
    },
    (raw) =>
      decodeSecretKey(raw) ??
      problem('expected 32 bytes as base64 (openssl rand -base64 32) or 64 hex digits'),
    undefined,
  ),
  ZMCP_ADMIN_TOKEN: text(
    {
      group: 'Hosting for an organization',
      defaultText: 'unset (no admin API)',
      help: 'Bearer token of the admin API at /admin/tokens (create, list, revoke tokens over HTTP). Secret.',
      secret: true,
    },
    matching(/^[\x21-\x7e]{16,}$/, 'expected at least 16 printable characters without spaces'),
  ),
  ZMCP_TOKEN_RATE_LIMIT: integer(
    {
      group: 'Hosting for an organization',
      help: 'Requests one person’s token may make per minute (429 beyond).',
    },
    1,
    100_000,
    600,
  ),
  ZMCP_TOKEN_MAX_WAITS: integer(
    {
      group: 'Hosting for an organization',
      help: 'Long waits (listen, wait_for_messages, subscriptions/listen) one token may hold at once (429 beyond).',
    },
    1,
    1000,
    4,
  ),
  ZMCP_TOKEN_IDLE_MS: integer(
    {
      group: 'Hosting for an organization',
      help: 'A person’s services (their Zulip client, tools and sessions) unused for this long, in milliseconds, with no session, listen or wait open, are closed; their next request opens them again.',
    },
    1000,
    604_800_000,
    1_800_000,
  ),
  ZMCP_PUBLIC_URL: setting<string | undefined>(
    {
      group: 'Hosting for an organization',
      defaultText: 'from the request',
      help: 'The MCP endpoint as clients dial it (https://mcp.example.com/mcp behind a proxy): the resource of the protected-resource metadata.',
    },
    (raw) => {
      try {
        const url = new URL(raw);
        if (url.protocol === 'https:' || url.protocol === 'http:') return url.href;
      } catch {}
      return problem('expected an http(s) URL such as https://mcp.example.com/mcp');
    },
    undefined,
  ),
  ZMCP_TOKEN_HELP: text({
    group: 'Hosting for an organization',
    defaultText: 'unset',
    help: 'Where people get a token (a URL or a sentence): said in every 401 and in the protected-resource metadata.',
  }),
  ZMCP_AUDIT_LOG: text({
    group: 'Hosting for an organization',
    defaultText: '<state dir>/audit.log',
    help: 'The audit log: one JSON line per write and admin operation (token label, user id, target; never content). Read it with zulip-mcp audit.',
  }),
  ZMCP_AUDIT_MAX_BYTES: integer(
    {
      group: 'Hosting for an organization',
      help: 'The audit log is rotated past this size (one earlier file kept, audit.log.1).',
    },
    4096,
    1_073_741_824,
    10_485_760,
  ),
  ZMCP_REALMS_FILE: text({
    group: 'Hosting for an organization',
    defaultText: 'unset (one realm)',
    help: 'Further Zulip organizations to front (with ZMCP_HTTP_AUTH=people): a JSON list of { "zuliprc", "privateStreams"?, "writeStreams"?, "writeDms"? }, one bot per realm.',
  }),
  ZULIP_CLAUDE_CHANNELS: strictBoolean(
    {
      group: 'Claude Code channels',
      flag: '--claude-channels',
      help: 'Push messages that mention or DM the bot into a Claude Code session as channel events (stdio only; needs ZULIP_ALLOWED_USERS).',
    },
    false,
  ),
  ZULIP_CHANNEL_PERMISSION_RELAY: strictBoolean(
    {
      group: 'Claude Code channels',
      help: 'Relay Claude Code’s tool-permission prompts to ZULIP_ALLOWED_USERS by DM; a reaction or "yes <id>" answers (needs ZULIP_PRIVATE_STREAMS=__ALL__).',
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
  server.check(raw, report);
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
  if (raw.ZULIP_PERMISSION_PROMPT && raw.ZULIP_ALLOWED_USERS === undefined) {
    report(
      'ZULIP_PERMISSION_PROMPT',
      'needs ZULIP_ALLOWED_USERS: nobody else may answer a permission prompt',
    );
  }
  if (raw.ZMCP_HTTP_AUTH === 'people' && raw.ZULIP_SECRET_KEY === undefined) {
    report(
      'ZULIP_SECRET_KEY',
      'is required with ZMCP_HTTP_AUTH=people: it encrypts each person’s API key at rest (openssl rand -base64 32)',
    );
  }
  if (raw.ZMCP_REALMS_FILE !== undefined && raw.ZMCP_HTTP_AUTH !== 'people') {
    report('ZMCP_REALMS_FILE', 'fronts several realms with ZMCP_HTTP_AUTH=people only');
  }
  if (raw.ZMCP_HTTP_AUTH === 'people' && !raw['--http']) {
    report('ZMCP_HTTP_AUTH', 'people serves Streamable HTTP only: add --http');
  }
  if (raw.ZMCP_HTTP_AUTH === 'people' && raw.ZMCP_HTTP_TOKEN !== undefined) {
    report('ZMCP_HTTP_TOKEN', 'is not used with ZMCP_HTTP_AUTH=people (each person has a token); unset it');
  }
  if (
    raw['--http'] &&
    raw.ZMCP_HTTP_AUTH === 'token' &&
    !isLoopbackHost(raw.ZMCP_HTTP_HOST) &&
    raw.ZMCP_HTTP_TOKEN === undefined
  ) {
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
  // Who may reach a Claude Code session is the one admission list every surface shares now.
  {
    name: 'ZULIP_CHANNEL_USERS',
    origin: 'zulip-mcp before ZULIP_ALLOWED_USERS',
    replacement: 'ZULIP_ALLOWED_USERS',
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
  const cwd = options.cwd ?? process.cwd();
  const resolved = server.resolve(raw, { env, cwd, exists: options.exists });
  return {
    ...resolved,
    command: raw['--help'] ? 'help' : raw['--version'] ? 'version' : 'serve',
    demo: raw['--demo'],
    transport: raw['--http'] ? 'http' : 'stdio',
    session: {
      dismissEmoji: raw.ZULIP_DISMISS_EMOJI,
      listenEmoji: raw.ZULIP_LISTEN_EMOJI,
      autoTyping: raw.ZULIP_AUTO_TYPING,
      interruptFile:
        raw.ZULIP_INTERRUPT_FILE === undefined
          ? undefined
          : resolve(cwd, expandHome(raw.ZULIP_INTERRUPT_FILE, home)),
      permissionPrompt: raw.ZULIP_PERMISSION_PROMPT,
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
      permissionRelay: raw.ZULIP_CHANNEL_PERMISSION_RELAY,
    },
    http: {
      host: withoutBrackets(raw.ZMCP_HTTP_HOST),
      port: raw.ZMCP_HTTP_PORT,
      token: raw.ZMCP_HTTP_TOKEN,
      allowedOrigins: raw.ZMCP_HTTP_ALLOWED_ORIGINS,
      maxSessions: raw.ZMCP_HTTP_MAX_SESSIONS,
      sessionIdleMs: raw.ZMCP_HTTP_SESSION_IDLE_MS,
      auth: raw.ZMCP_HTTP_AUTH,
      secretKey: raw.ZULIP_SECRET_KEY,
      adminToken: raw.ZMCP_ADMIN_TOKEN,
      rateLimitPerMinute: raw.ZMCP_TOKEN_RATE_LIMIT,
      maxWaitsPerToken: raw.ZMCP_TOKEN_MAX_WAITS,
      tokenIdleMs: raw.ZMCP_TOKEN_IDLE_MS,
      publicUrl: raw.ZMCP_PUBLIC_URL,
      tokenHelp: raw.ZMCP_TOKEN_HELP,
      auditLog:
        raw.ZMCP_AUDIT_LOG === undefined
          ? join(resolved.stateDir, 'audit.log')
          : resolve(cwd, expandHome(raw.ZMCP_AUDIT_LOG, home)),
      auditMaxBytes: raw.ZMCP_AUDIT_MAX_BYTES,
      realmsFile:
        raw.ZMCP_REALMS_FILE === undefined ? undefined : resolve(cwd, expandHome(raw.ZMCP_REALMS_FILE, home)),
    },
  };
}

/** The listen address as `listen()` takes it: an IPv6 literal without its brackets. */
function withoutBrackets(host: string): string {
  const trimmed = host.trim();
  return trimmed.startsWith('[') && trimmed.endsWith(']') ? trimmed.slice(1, -1) : trimmed;
}

/** The `--help` text: usage, then every setting with its flag, default and one line of help. */
export function helpText(): string {
  return settings.helpText({
    about: [
      'zulip-mcp: a Zulip realm for any MCP client (stdio by default, Streamable HTTP with --http).',
      'Hosting it for an organization: zulip-mcp tokens create|list|revoke, zulip-mcp audit (zulip-mcp tokens --help).',
    ],
    footer: ['The README of @zmcp/mcp-server explains each setting and shows client configurations.'],
  });
}

/** The README's settings table, in markdown, generated from the same table as `--help`. */
export const configMarkdownTable: () => string = settings.markdownTable;
