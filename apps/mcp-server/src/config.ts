import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import {
  type CredentialField,
  checkEmojiName,
  credentialProblem,
  isLoopbackHost,
  isValidTimeZone,
  parseReadOnlyFlag,
  parseSite,
  parseStreamAllowlist,
  type StreamAllowlist,
  type TimeStyle,
} from '@zmcp/core';
import { parseSessionId } from '@zmcp/delivery';
import { parseToolsets, type Toolset } from '@zmcp/tools';
import { parseByteSize, parseUploadRoots, type UploadRootSpec } from '@zmcp/uploads';
import { z } from 'zod';
import { McpServerError } from './errors.js';
import { type LogLevel, logLevels } from './logging.js';

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

/** What `--help`, the README and `.env.example` say about one setting. */
export interface SettingInfo {
  /** Environment variable, or the flag itself for flag-only settings. */
  name: string;
  /** The flag that overrides the variable, if any. */
  flag: string | undefined;
  /** Placeholder of the flag's value (`<port>`); unset for switches. */
  flagArg: string | undefined;
  /** Default, as a reader should see it. */
  defaultText: string;
  /** One line of behaviour. */
  help: string;
  group: string;
  /** Secret: never echoed in an error, never accepted as a flag. */
  secret: boolean;
}

type SettingMeta = Omit<SettingInfo, 'name' | 'flag' | 'flagArg' | 'secret'> & {
  flag?: string;
  flagArg?: string;
  secret?: boolean;
};

/** A setting's help entry where the default can be derived from the fallback value. */
type DerivedMeta = Omit<SettingMeta, 'defaultText'> & { defaultText?: string };

const settingMeta = z.registry<SettingMeta>();

type Raw = string | undefined;

function expected<T>(ctx: z.core.$RefinementCtx<Raw>, message: string): T {
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER as T;
}

/** Checks a raw value: `undefined` when it is acceptable, else what was expected. */
type Check = (raw: string) => string | undefined;

function matching(pattern: RegExp, expectedText: string): Check {
  return (raw) => (pattern.test(raw) ? undefined : expectedText);
}

function text(meta: SettingMeta, check?: Check) {
  const schema = z
    .string()
    .optional()
    .transform((raw, ctx): string | undefined => {
      if (raw === undefined) return undefined;
      const problem = check?.(raw);
      if (problem !== undefined) return expected(ctx, problem);
      return raw;
    });
  return schema.register(settingMeta, meta);
}

function textWithDefault(meta: SettingMeta, fallback: string, check: Check) {
  const schema = z
    .string()
    .optional()
    .transform((raw, ctx): string => {
      if (raw === undefined) return fallback;
      const problem = check(raw);
      if (problem !== undefined) return expected(ctx, problem);
      return raw;
    });
  return schema.register(settingMeta, meta);
}

/**
 * A setting read by a library's own parser (the one rule for its kind of value): a throw is
 * reported as `expectedText(err)`.
 */
function parsedBy<T>(
  meta: SettingMeta,
  parse: (raw: string) => T,
  expectedText: (err: unknown) => string,
): z.ZodType<T | undefined, string | undefined>;
function parsedBy<T>(
  meta: SettingMeta,
  parse: (raw: string) => T,
  expectedText: (err: unknown) => string,
  fallback: T,
): z.ZodType<T, string | undefined>;
function parsedBy<T>(
  meta: SettingMeta,
  parse: (raw: string) => T,
  expectedText: (err: unknown) => string,
  fallback?: T,
) {
  const schema = z
    .string()
    .optional()
    .transform((raw, ctx): T | undefined => {
      if (raw === undefined) return fallback;
      try {
        return parse(raw);
      } catch (err) {
        return expected(ctx, expectedText(err));
      }
    });
  return schema.register(settingMeta, meta);
}

/** A credential field checked by core's one rule for it. */
function credential(field: CredentialField, expectedText: string): Check {
  return (raw) => (credentialProblem(field, raw.trim()) === undefined ? undefined : expectedText);
}

function strictBoolean(meta: DerivedMeta, fallback: boolean) {
  const schema = z
    .string()
    .optional()
    .transform((raw, ctx): boolean => {
      if (raw === undefined) return fallback;
      try {
        return parseReadOnlyFlag(raw);
      } catch {
        return expected(ctx, 'expected one of 1/0, true/false, yes/no, on/off');
      }
    });
  return schema.register(settingMeta, {
    ...meta,
    defaultText: meta.defaultText ?? (fallback ? 'on' : 'off'),
  });
}

/** A switch whose absence means "the library's default" rather than on or off. */
function optionalBoolean(meta: SettingMeta) {
  return z
    .string()
    .optional()
    .transform((raw, ctx): boolean | undefined => {
      if (raw === undefined || raw.trim() === '') return undefined;
      try {
        return parseReadOnlyFlag(raw);
      } catch {
        return expected(ctx, 'expected one of 1/0, true/false, yes/no, on/off');
      }
    })
    .register(settingMeta, meta);
}

function parseInteger(raw: string, min: number, max: number): number | undefined {
  if (!/^\d+$/.test(raw.trim())) return undefined;
  const value = Number(raw.trim());
  return Number.isSafeInteger(value) && value >= min && value <= max ? value : undefined;
}

function integer(meta: DerivedMeta, min: number, max: number, fallback: number) {
  const schema = z
    .string()
    .optional()
    .transform((raw, ctx): number => {
      if (raw === undefined) return fallback;
      return parseInteger(raw, min, max) ?? expected(ctx, `expected a whole number from ${min} to ${max}`);
    });
  return schema.register(settingMeta, { ...meta, defaultText: meta.defaultText ?? String(fallback) });
}

function optionalInteger(meta: SettingMeta, min: number, max: number) {
  const schema = z
    .string()
    .optional()
    .transform((raw, ctx): number | undefined => {
      if (raw === undefined) return undefined;
      return parseInteger(raw, min, max) ?? expected(ctx, `expected a whole number from ${min} to ${max}`);
    });
  return schema.register(settingMeta, meta);
}

function oneOf<const T extends string>(
  meta: DerivedMeta,
  values: readonly T[],
  fallback: T,
  aliases: Readonly<Record<string, T>> = {},
) {
  const schema = z
    .string()
    .optional()
    .transform((raw, ctx): T => {
      if (raw === undefined) return fallback;
      const word = raw.trim().toLowerCase();
      if (Object.hasOwn(aliases, word)) return aliases[word] as T;
      return (values as readonly string[]).includes(word)
        ? (word as T)
        : expected(ctx, `expected one of ${values.join(', ')}`);
    });
  return schema.register(settingMeta, { ...meta, defaultText: meta.defaultText ?? fallback });
}

function splitList(raw: string): string[] {
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

function streamAllowlist(meta: SettingMeta) {
  const schema = z
    .string()
    .optional()
    .transform((raw, ctx): StreamAllowlist | undefined => {
      try {
        return parseStreamAllowlist(raw, 'it');
      } catch (err) {
        return expected(ctx, (err as Error).message.replace(/^it: /, ''));
      }
    });
  return schema.register(settingMeta, meta);
}

const emojiName = (raw: string) => checkEmojiName(raw);
const emojiExpected = () =>
  'expected an emoji name such as stop or robot_ear (letters, digits, "_", "+" or "-")';
const siteExpected = 'expected an http(s) URL such as https://chat.example.com';
const sizeExpected = 'expected a number of bytes such as 26214400 or 25MiB (units K/KiB, M/MiB, G/GiB)';

function inRange(value: number, min: number, max: number): number {
  if (value < min || value > max) throw new RangeError(`${value} is out of range`);
  return value;
}

/**
 * The one schema of the server's configuration: every key is an environment variable
 * (or, for flag-only switches, the flag), every value the raw string as given.
 */
const RawConfigSchema = z.object({
  ZULIP_REALM: text(
    {
      group: 'Zulip account',
      defaultText: 'from zuliprc',
      help: 'Zulip server URL, e.g. https://chat.example.com.',
    },
    credential('site', siteExpected),
  ),
  ZULIP_SITE: text(
    {
      group: 'Zulip account',
      defaultText: 'from zuliprc',
      help: 'The same as ZULIP_REALM (the name zuliprc files use); set one of the two.',
    },
    credential('site', siteExpected),
  ),
  ZULIP_EMAIL: text(
    {
      group: 'Zulip account',
      defaultText: 'from zuliprc',
      help: 'Email address of the bot account; set with ZULIP_API_KEY, or neither.',
    },
    credential('email', 'expected an email address such as bot@example.com'),
  ),
  ZULIP_API_KEY: text(
    {
      group: 'Zulip account',
      defaultText: 'from zuliprc',
      help: 'API key of the bot account (32 letters and digits); set with ZULIP_EMAIL. Secret: never logged, no flag.',
      secret: true,
    },
    credential('apiKey', 'expected a Zulip API key: 32 letters and digits'),
  ),
  ZULIP_RC_PATH: text({
    group: 'Zulip account',
    flag: '--zuliprc',
    flagArg: '<path>',
    defaultText: '~/.zuliprc if needed',
    help: 'Path of a zuliprc file; it supplies whatever the variables above leave unset (the variables win).',
  }),
  ZULIP_ALLOW_INSECURE_HTTP: strictBoolean(
    {
      group: 'Zulip account',
      help: 'Allow an http:// server URL that is not loopback (the API key then travels unencrypted).',
    },
    false,
  ),
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
      help: 'Names this agent session’s state files: 1-128 of A-Z a-z 0-9 . _ -, not starting with a dot.',
    },
    (raw) => parseSessionId(raw.trim()),
    (err) =>
      `expected 1 to 128 characters of A-Z, a-z, 0-9, ".", "_" or "-" (${String((err as { details?: { reason?: unknown } }).details?.reason ?? 'invalid')})`,
    'default',
  ),
  AGENT_TIMEZONE: z
    .string()
    .optional()
    .transform((raw, ctx): string | undefined => {
      if (raw === undefined) return undefined;
      // Kept as written: ICU may canonicalise to an older name (Europe/Kyiv → Europe/Kiev).
      const zone = raw.trim();
      return isValidTimeZone(zone)
        ? zone
        : expected(ctx, 'expected an IANA time zone such as Europe/Kyiv or UTC');
    })
    .register(settingMeta, {
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
  ZULIP_TOOLSETS: z
    .string()
    .optional()
    .transform((raw, ctx): Toolset[] => {
      try {
        return parseToolsets(raw);
      } catch (err) {
        return expected(ctx, (err as Error).message);
      }
    })
    .register(settingMeta, {
      group: 'Access',
      flag: '--toolsets',
      flagArg: '<list>',
      defaultText: 'read,write,session',
      help: 'Toolsets to serve (comma list of read, write, session, browse, files, manage, monitor, attention), or all.',
    }),
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
  ZULIP_UPLOAD_ROOTS: z
    .string()
    .optional()
    .superRefine((raw, ctx) => {
      try {
        parseUploadRoots(raw, '/');
      } catch (err) {
        ctx.addIssue({
          code: 'custom',
          message: (err as Error).message.replace(/^ZULIP_UPLOAD_ROOTS: /, ''),
        });
      }
    })
    .register(settingMeta, {
      group: 'Uploads',
      defaultText: 'none',
      help: 'Directories local-file attachments may come from, as name=path pairs (comma list).',
    }),
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
  '--http': z
    .string()
    .optional()
    .transform((raw) => raw !== undefined)
    .register(settingMeta, {
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
  ZMCP_HTTP_ALLOWED_ORIGINS: z
    .string()
    .optional()
    .transform((raw, ctx): readonly string[] | undefined => {
      if (raw === undefined) return undefined;
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
          return expected(ctx, 'expected origins such as http://localhost:6274, comma-separated');
        origins.push(origin);
      }
      return origins.length > 0 ? origins : expected(ctx, 'expected at least one origin');
    })
    .register(settingMeta, {
      group: 'HTTP transport',
      defaultText: 'loopback origins',
      help: 'Browser origins allowed to call (comma list); requests without an Origin header are allowed.',
    }),
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
  ZULIP_CHANNEL_USERS: z
    .string()
    .optional()
    .transform((raw, ctx): readonly string[] => {
      if (raw === undefined) return [];
      const entries = splitList(raw);
      const bad = entries.find((e) => !/^[1-9][0-9]{0,15}$/.test(e) && !/^[^\s@,]+@[^\s@,]+$/.test(e));
      return bad === undefined ? entries : expected(ctx, 'expected user ids or emails, comma-separated');
    })
    .register(settingMeta, {
      group: 'Claude Code channels',
      defaultText: 'nobody',
      help: 'Who may reach the session through channel events (user ids or emails, comma list); everyone else is dropped.',
    }),
  ZULIP_CHANNEL_PERMISSION_RELAY: strictBoolean(
    {
      group: 'Claude Code channels',
      help: 'Relay Claude Code’s tool-permission prompts to ZULIP_CHANNEL_USERS by DM; a reaction or "yes <id>" answers (needs ZULIP_PRIVATE_STREAMS=__ALL__).',
    },
    false,
  ),
  '--demo': z
    .string()
    .optional()
    .transform((raw) => raw !== undefined)
    .register(settingMeta, {
      group: 'Other',
      flag: '--demo',
      defaultText: 'off',
      help: 'Start a simulated, seeded Zulip realm on loopback and serve it; no account needed.',
    }),
  '--help': z
    .string()
    .optional()
    .transform((raw) => raw !== undefined)
    .register(settingMeta, {
      group: 'Other',
      flag: '--help',
      defaultText: '',
      help: 'Print this help and exit.',
    }),
  '--version': z
    .string()
    .optional()
    .transform((raw) => raw !== undefined)
    .register(settingMeta, {
      group: 'Other',
      flag: '--version',
      defaultText: '',
      help: 'Print the version and exit.',
    }),
});

type RawConfig = z.output<typeof RawConfigSchema>;

/** The site as core normalizes it, or the problem core's rule finds with it. */
function normalizedSite(raw: string, allowInsecureHttp: boolean): { url: string } | { problem: string } {
  let url: string;
  try {
    url = parseSite(raw, { allowInsecureHttp: true }).url;
  } catch {
    return { problem: siteExpected };
  }
  try {
    parseSite(raw, { allowInsecureHttp });
  } catch {
    return {
      problem:
        'is plain http to a host that is not loopback, so the API key would travel unencrypted; use https, or set ZULIP_ALLOW_INSECURE_HTTP',
    };
  }
  return { url };
}

const ConfigSchema = RawConfigSchema.superRefine((raw, ctx) => {
  const sites: { key: 'ZULIP_REALM' | 'ZULIP_SITE'; url: string }[] = [];
  for (const key of ['ZULIP_REALM', 'ZULIP_SITE'] as const) {
    const value = raw[key];
    if (value === undefined) continue;
    const site = normalizedSite(value, raw.ZULIP_ALLOW_INSECURE_HTTP);
    if ('problem' in site) ctx.addIssue({ code: 'custom', path: [key], message: site.problem });
    else sites.push({ key, url: site.url });
  }
  if (sites.length === 2 && sites[0]?.url !== sites[1]?.url) {
    ctx.addIssue({
      code: 'custom',
      path: ['ZULIP_SITE'],
      message: 'conflicts with ZULIP_REALM; set only one of the two',
    });
  }
  if ((raw.SESSION_STREAM === undefined) !== (raw.SESSION_TOPIC === undefined)) {
    ctx.addIssue({
      code: 'custom',
      path: [raw.SESSION_STREAM === undefined ? 'SESSION_STREAM' : 'SESSION_TOPIC'],
      message: 'SESSION_STREAM and SESSION_TOPIC are set together, or neither',
    });
  }
  if (raw.ZULIP_CLAUDE_CHANNELS && raw['--http']) {
    ctx.addIssue({
      code: 'custom',
      path: ['ZULIP_CLAUDE_CHANNELS'],
      message: 'Claude Code channels run on stdio only; drop --http',
    });
  }
  if (raw.ZULIP_CLAUDE_CHANNELS && raw.ZULIP_READ_ONLY) {
    ctx.addIssue({
      code: 'custom',
      path: ['ZULIP_CLAUDE_CHANNELS'],
      message: 'needs an event queue, which read-only mode refuses; unset ZULIP_READ_ONLY',
    });
  }
  if (
    raw.ZULIP_CHANNEL_PERMISSION_RELAY &&
    (!raw.ZULIP_CLAUDE_CHANNELS || raw.ZULIP_PRIVATE_STREAMS !== '__ALL__')
  ) {
    ctx.addIssue({
      code: 'custom',
      path: ['ZULIP_CHANNEL_PERMISSION_RELAY'],
      message:
        'needs ZULIP_CLAUDE_CHANNELS and ZULIP_PRIVATE_STREAMS=__ALL__ (its prompts and answers are DMs)',
    });
  }
  if (raw['--http'] && !isLoopbackHost(raw.ZMCP_HTTP_HOST) && raw.ZMCP_HTTP_TOKEN === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['ZMCP_HTTP_TOKEN'],
      message: `is required when the HTTP host is not loopback (host ${raw.ZMCP_HTTP_HOST})`,
    });
  }
});

type SettingKey = keyof RawConfig & string;

/** A variable of an earlier Zulip MCP server: read as its replacement here, or refused with a pointer. */
export interface LegacySetting {
  /** The earlier variable. */
  name: string;
  /** The server that used it. */
  origin: string;
  /** The variable that replaces it. */
  replacement: string;
  /** Read as `replacement` (`alias`), or a start-up error naming `replacement` (`refused`). */
  handling: 'alias' | 'refused';
  /** For a refused variable: what to do instead. */
  instead?: string;
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

/** Every setting in table order, as `--help`, the README and `.env.example` list them. */
export function configSettings(): SettingInfo[] {
  return Object.entries(RawConfigSchema.shape).map(([name, schema]) => {
    const meta = settingMeta.get(schema);
    if (!meta) throw new Error(`setting ${name} has no help entry`);
    return {
      name,
      flag: meta.flag,
      flagArg: meta.flagArg,
      defaultText: meta.defaultText,
      help: meta.help,
      group: meta.group,
      secret: meta.secret ?? false,
    };
  });
}

/** Names of every environment variable the server reads. */
export function configVariableNames(): string[] {
  return configSettings()
    .map((s) => s.name)
    .filter((name) => !name.startsWith('-'));
}

function flagTable(): Map<string, { key: SettingKey; takesValue: boolean }> {
  const flags = new Map<string, { key: SettingKey; takesValue: boolean }>();
  for (const setting of configSettings()) {
    if (setting.flag !== undefined) {
      flags.set(setting.flag, { key: setting.name as SettingKey, takesValue: setting.flagArg !== undefined });
    }
  }
  flags.set('-h', { key: '--help', takesValue: false });
  flags.set('-V', { key: '--version', takesValue: false });
  return flags;
}

function isSet(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== '';
}

/**
 * Reads the earlier servers' variables into `input` under their replacements. Both names set
 * to values that mean different things is a conflict; a refused name is a problem of its own.
 */
function readLegacySettings(
  env: Readonly<Record<string, string | undefined>>,
  input: Record<string, string | undefined>,
  source: Record<string, string>,
  problems: string[],
): void {
  for (const legacy of legacySettingList) {
    const value = env[legacy.name];
    if (!isSet(value)) continue;
    if (legacy.handling === 'refused') {
      problems.push(`${legacy.name}: not supported (a setting of ${legacy.origin}); ${legacy.instead}`);
      continue;
    }
    const key = legacy.replacement as SettingKey;
    const current = input[key];
    if (current === undefined) {
      input[key] = value;
      source[key] = legacy.name;
      continue;
    }
    const field = RawConfigSchema.shape[key] as z.ZodType;
    const ours = field.safeParse(current);
    const theirs = field.safeParse(value);
    if (!ours.success || !theirs.success || !isDeepStrictEqual(ours.data, theirs.data)) {
      problems.push(
        `${legacy.name}: conflicts with ${key} (${legacy.name} is the name ${legacy.origin} used for it); set only ${key}`,
      );
    }
  }
}

function quoteForError(raw: string, secrets: readonly string[] = []): string {
  let shown = raw;
  // A secret may sit in the wrong variable, or in the user-info part of a URL.
  for (const secret of secrets) shown = shown.split(secret).join('[REDACTED]');
  shown = shown.replace(/\/\/[^/@\s]*@/g, '//[REDACTED]@');
  if (shown.length > 60) shown = `${shown.slice(0, 57)}...`;
  return JSON.stringify(shown);
}

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
  const settings = configSettings();
  const secretKeys = new Set(settings.filter((s) => s.secret).map((s) => s.name));
  const flags = flagTable();
  const problems: string[] = [];
  const input: Record<string, string | undefined> = {};
  const source: Record<string, string> = {};

  for (const name of configVariableNames()) {
    const value = env[name];
    if (isSet(value)) {
      input[name] = value;
      source[name] = name;
    }
  }

  readLegacySettings(env, input, source, problems);

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const eq = arg.indexOf('=');
    const flagName = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const flag = flags.get(flagName);
    if (!flag) {
      if (arg.startsWith('-')) {
        problems.push(`${flagName}: unknown option (zulip-mcp --help lists them)`);
        // Its value is skipped unseen: it may be a secret someone tried to pass as a flag.
        if (eq < 0 && argv[i + 1] !== undefined && !argv[i + 1]?.startsWith('-')) i++;
      } else problems.push(`${quoteForError(arg)}: unexpected argument (zulip-mcp takes only options)`);
      continue;
    }
    let value: string | undefined;
    if (eq > 0 && arg.startsWith('--')) value = arg.slice(eq + 1);
    else if (flag.takesValue) {
      value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) {
        problems.push(`${flagName}: expects a value`);
        continue;
      }
      i++;
    } else value = 'true';
    if (!flag.takesValue && flag.key.startsWith('-') && value !== 'true') {
      problems.push(`${flagName}: takes no value`);
      continue;
    }
    input[flag.key] = value;
    source[flag.key] = flagName;
  }

  const result = ConfigSchema.safeParse(input);
  if (!result.success) {
    const secretValues = [...secretKeys]
      .map((key) => input[key]?.trim())
      .filter((value): value is string => value !== undefined && value.length >= 16);
    const reported = new Set<string>();
    for (const issue of result.error.issues) {
      const key = String(issue.path[0] ?? '');
      const raw = input[key];
      const shown =
        raw !== undefined && !secretKeys.has(key) ? ` (got ${quoteForError(raw, secretValues)})` : '';
      const line = `${source[key] ?? key}: ${issue.message}${shown}`;
      if (reported.has(line)) continue;
      reported.add(line);
      problems.push(line);
    }
  }
  if (problems.length > 0 || !result.success) {
    throw new McpServerError('MCP_CONFIG_INVALID', `Invalid configuration:\n  ${problems.join('\n  ')}`, {
      details: { problems },
    });
  }

  const raw = result.data;
  const home = env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir();
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

function expandHome(path: string, home: string): string {
  if (path === '~') return home;
  return path.startsWith('~/') ? join(home, path.slice(2)) : path;
}

function settingLabel(setting: SettingInfo): string {
  if (setting.name.startsWith('-'))
    return setting.flagArg ? `${setting.name} ${setting.flagArg}` : setting.name;
  const flag = setting.flag ? `, ${setting.flag}${setting.flagArg ? ` ${setting.flagArg}` : ''}` : '';
  return `${setting.name}${flag}`;
}

/** The `--help` text: usage, then every setting with its flag, default and one line of help. */
export function helpText(): string {
  const settings = configSettings();
  const width = Math.max(...settings.map((s) => settingLabel(s).length)) + 2;
  const lines = [
    'zulip-mcp: a Zulip realm for any MCP client (stdio by default, Streamable HTTP with --http).',
    '',
    'Usage: zulip-mcp [options]',
    '',
    'Settings are environment variables; where a flag is shown, it overrides the variable.',
    'Boolean variables take 1/0, true/false, yes/no or on/off. Empty variables count as unset.',
    `Earlier servers' names are read as their replacements: ${legacySettingList
      .filter((s) => s.handling === 'alias')
      .map((s) => `${s.name} as ${s.replacement}`)
      .join(', ')}.`,
  ];
  let group = '';
  for (const setting of settings) {
    if (setting.group !== group) {
      group = setting.group;
      lines.push('', `${group}:`);
    }
    const fallback = setting.defaultText ? ` [default: ${setting.defaultText}]` : '';
    lines.push(`  ${settingLabel(setting).padEnd(width)}${setting.help}${fallback}`);
  }
  lines.push('', 'The README of @zmcp/mcp-server explains each setting and shows client configurations.', '');
  return lines.join('\n');
}

/** The README's settings table, in markdown, generated from the same table as `--help`. */
export function configMarkdownTable(): string {
  const rows = configSettings().map((s) => {
    const variable = s.name.startsWith('-') ? '' : `\`${s.name}\``;
    const flag = s.flag ? `\`${s.flag}${s.flagArg ? ` ${s.flagArg}` : ''}\`` : '';
    const fallback = s.defaultText ? s.defaultText : '';
    return `| ${variable} | ${flag} | ${fallback} | ${s.help.replace(/\|/g, '\\|')} |`;
  });
  return ['| variable | flag | default | what it does |', '|---|---|---|---|', ...rows].join('\n');
}
