import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  checkEmojiName,
  credentialProblem,
  isValidTimeZone,
  parseReadOnlyFlag,
  parseSite,
  parseStreamAllowlist,
  type StreamAllowlist,
  type TimeStyle,
} from '@zmcp/core';
import {
  type FILTER_ENV_VARIABLES,
  type FiltersSeed,
  filtersSeedFromEnv,
  parseSessionId,
} from '@zmcp/delivery';
import type { LegacyHostPolicy } from '@zmcp/mcpl';
import { parseToolsets, type Toolset } from '@zmcp/tools';
import { parseByteSize, parseUploadRoots, type UploadRootSpec } from '@zmcp/uploads';
import { z } from 'zod';
import { McplServerError } from './errors.js';
import { LOG_LEVELS, type LogLevel } from './logging.js';

/** The toolsets zulip-mcpl can serve: the realm tools and the attention controls. */
export const MCPL_TOOLSETS: readonly Toolset[] = ['read', 'write', 'browse', 'files', 'manage', 'attention'];

/** The whole configuration of one `zulip-mcpl` process. */
export interface McplConfig {
  command: 'serve' | 'help' | 'version';
  /** Serve a simulated, seeded realm instead of a real one. */
  demo: boolean;
  /** Serve one loopback TCP connection at a time on this port instead of stdio (0: any free port). */
  tcpPort: number | undefined;
  zulip: {
    site: string | undefined;
    email: string | undefined;
    /** Secret: never logged, never echoed. */
    apiKey: string | undefined;
    rcPath: string | undefined;
    allowInsecureHttp: boolean;
  };
  stateDir: string;
  sessionId: string;
  /** The filters file as configured; unset: `<session>.filters.json` in the account's state folder. */
  filtersFile: string | undefined;
  /** What a new filters file is created with, and the host's suppressed-reactions baseline. */
  filters: FiltersSeed;
  timezone: string;
  timestampStyle: TimeStyle;
  privateStreams: StreamAllowlist | undefined;
  writeStreams: StreamAllowlist | undefined;
  toolsets: Toolset[];
  uploadRoots: readonly UploadRootSpec[];
  uploadMaxBytes: number | undefined;
  /** Stamp the message-line head in metadata (`attributed`, `attributionHeader`); off: bare bodies. */
  attributeDelivery: boolean;
  /** Inline images of live messages as image blocks (downsampled). */
  inlineImages: boolean;
  catchUpLimit: number;
  contextMessages: number;
  ackEmoji: string;
  markRead: boolean;
  markdownAutofix: boolean;
  requestTimeoutMs: number;
  toolDeadlineMs: number;
  legacyHosts: LegacyHostPolicy;
  logLevel: LogLevel;
}

/** What `--help` and the README say about one setting. */
export interface SettingInfo {
  /** Environment variable, or the flag itself for flag-only settings. */
  name: string;
  flag: string | undefined;
  flagArg: string | undefined;
  defaultText: string;
  help: string;
  group: string;
  secret: boolean;
}

type Meta = Omit<SettingInfo, 'name' | 'flag' | 'flagArg' | 'secret'> & {
  flag?: string;
  flagArg?: string;
  secret?: boolean;
};

const meta = z.registry<Meta>();

/**
 * One setting: the raw string (or `undefined` when unset) through `parse`, which throws with what
 * was expected. Every value is checked by the library that owns the rule for it.
 */
function setting<T>(info: Meta, parse: (raw: string | undefined) => T) {
  return z
    .string()
    .optional()
    .transform((raw, ctx): T => {
      try {
        return parse(raw);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : String(err) });
        return z.NEVER;
      }
    })
    .register(meta, info);
}

function fail(message: string): never {
  throw new Error(message);
}

const text = (info: Meta, check?: (raw: string) => string | undefined) =>
  setting(info, (raw) => {
    if (raw === undefined) return undefined;
    const problem = check?.(raw);
    return problem === undefined ? raw : fail(problem);
  });

const flagSwitch = (info: Meta) => setting(info, (raw) => raw !== undefined);

const bool = (info: Omit<Meta, 'defaultText'>, fallback: boolean) =>
  setting({ ...info, defaultText: fallback ? 'on' : 'off' }, (raw) => {
    if (raw === undefined) return fallback;
    try {
      return parseReadOnlyFlag(raw);
    } catch {
      return fail('expected one of 1/0, true/false, yes/no, on/off');
    }
  });

const int = (info: Omit<Meta, 'defaultText'>, min: number, max: number, fallback: number) =>
  setting({ ...info, defaultText: String(fallback) }, (raw) => {
    if (raw === undefined) return fallback;
    const value = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
    return Number.isSafeInteger(value) && value >= min && value <= max
      ? value
      : fail(`expected a whole number from ${min} to ${max}`);
  });

const credential = (field: 'site' | 'email' | 'apiKey', expected: string) => (raw: string) =>
  credentialProblem(field, raw.trim()) === undefined ? undefined : expected;

const allowlist = (info: Meta) =>
  setting(info, (raw) => {
    try {
      return parseStreamAllowlist(raw, 'it');
    } catch (err) {
      return fail((err as Error).message.replace(/^it: /, ''));
    }
  });

const siteExpected = 'expected an http(s) URL such as https://chat.example.com';
const filterHelp: Record<keyof typeof FILTER_ENV_VARIABLES, string> = {
  streams: 'Seed of the filters file: streams that may reach the agent (comma list); unset: every stream.',
  dmUsers: 'Seed of the filters file: who may DM the agent, by user id or email; unset: anyone.',
  mutedStreams: 'Seed of the filters file: streams from which nothing reaches the agent.',
  reactionChannels: 'Seed of the filters file: channels that show live reactions (zulip:<stream>).',
  suppressedReactionEmojis:
    'Seed of the filters file: reaction emoji withheld from the agent (operator-owned).',
  baseline: 'Suppressed reactions a host adds at every start; never written into the file.',
};

/** The one schema of zulip-mcpl's settings: every key a variable (or a flag-only switch). */
const RawSchema = z.object({
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
      help: 'The same as ZULIP_REALM; set one of the two.',
    },
    credential('site', siteExpected),
  ),
  ZULIP_EMAIL: text(
    {
      group: 'Zulip account',
      defaultText: 'from zuliprc',
      help: 'Email of the bot account; set with ZULIP_API_KEY.',
    },
    credential('email', 'expected an email address such as bot@example.com'),
  ),
  ZULIP_API_KEY: text(
    {
      group: 'Zulip account',
      defaultText: 'from zuliprc',
      help: 'API key of the bot account. Secret: never logged, no flag.',
      secret: true,
    },
    credential('apiKey', 'expected a Zulip API key: 32 letters and digits'),
  ),
  ZULIP_RC_PATH: text({
    group: 'Zulip account',
    flag: '--zuliprc',
    flagArg: '<path>',
    defaultText: '~/.zuliprc if needed',
    help: 'A zuliprc file; it supplies what the variables above leave unset.',
  }),
  ZULIP_ALLOW_INSECURE_HTTP: bool(
    { group: 'Zulip account', help: 'Allow an http:// server URL that is not loopback.' },
    false,
  ),
  ZULIP_STATE_DIR: text({
    group: 'State',
    flag: '--state-dir',
    flagArg: '<dir>',
    defaultText: '~/.zmcp/state',
    help: 'Where watermarks and the filters file live, one folder per realm and bot; put it on storage that survives a redeploy.',
  }),
  ZULIP_SESSION_ID: setting(
    {
      group: 'State',
      flag: '--session-id',
      flagArg: '<id>',
      defaultText: 'default',
      help: 'Names this agent’s state files (1-128 of A-Z a-z 0-9 . _ -).',
    },
    (raw) => {
      if (raw === undefined) return 'default';
      try {
        return parseSessionId(raw.trim());
      } catch {
        return fail('expected 1 to 128 characters of A-Z, a-z, 0-9, ".", "_" or "-", not starting with "."');
      }
    },
  ),
  ZULIP_FILTERS_FILE: text({
    group: 'Filters',
    defaultText: '<state dir>/<account>/<session>.filters.json',
    help: 'The filters file: what reaches the agent, hot-reloaded.',
  }),
  ZULIP_STREAMS: text({ group: 'Filters', defaultText: 'unset', help: filterHelp.streams }),
  ZULIP_DM_USERS: text({ group: 'Filters', defaultText: 'unset', help: filterHelp.dmUsers }),
  ZULIP_MUTED_STREAMS: text({ group: 'Filters', defaultText: 'unset', help: filterHelp.mutedStreams }),
  ZULIP_REACTION_CHANNELS: text({
    group: 'Filters',
    defaultText: 'unset',
    help: filterHelp.reactionChannels,
  }),
  ZULIP_SUPPRESSED_REACTIONS: text({
    group: 'Filters',
    defaultText: 'unset',
    help: filterHelp.suppressedReactionEmojis,
  }),
  ZULIP_SUPPRESSED_REACTIONS_BASELINE: text({
    group: 'Filters',
    defaultText: 'unset',
    help: filterHelp.baseline,
  }),
  ZULIP_PRIVATE_STREAMS: allowlist({
    group: 'Access',
    defaultText: 'none',
    help: 'Private streams the agent may read (comma list); __ALL__ opens every one, and DMs.',
  }),
  ZULIP_WRITE_STREAMS: allowlist({
    group: 'Access',
    defaultText: 'every stream',
    help: 'Streams the agent may post to (comma list); unset allows all.',
  }),
  ZULIP_TOOLSETS: setting(
    {
      group: 'Access',
      flag: '--toolsets',
      flagArg: '<list>',
      defaultText: 'read,write,attention',
      help: `Toolsets to serve (comma list of ${MCPL_TOOLSETS.join(', ')}), or all.`,
    },
    (raw) => {
      if (raw === undefined || raw.trim() === '') return ['read', 'write', 'attention'] as Toolset[];
      const picked = raw.trim().toLowerCase() === 'all' ? [...MCPL_TOOLSETS] : parseToolsets(raw);
      const other = picked.find((t) => !MCPL_TOOLSETS.includes(t));
      if (other !== undefined) {
        fail(`the ${other} toolset is zulip-mcp's; zulip-mcpl serves ${MCPL_TOOLSETS.join(', ')}`);
      }
      return picked;
    },
  ),
  ZULIP_UPLOAD_ROOTS: setting(
    {
      group: 'Uploads',
      defaultText: 'none',
      help: 'Directories local attachments may come from (name=path, comma list).',
    },
    (raw) => {
      try {
        parseUploadRoots(raw, '/');
      } catch (err) {
        fail((err as Error).message.replace(/^ZULIP_UPLOAD_ROOTS: /, ''));
      }
      return raw;
    },
  ),
  ZULIP_UPLOAD_MAX_BYTES: setting(
    { group: 'Uploads', defaultText: 'the realm’s limit', help: 'Largest file to upload (bytes, or 25MiB).' },
    (raw) => (raw === undefined ? undefined : parseByteSize(raw, 'ZULIP_UPLOAD_MAX_BYTES')),
  ),
  AGENT_TIMEZONE: text(
    {
      group: 'Message lines',
      flag: '--timezone',
      flagArg: '<zone>',
      defaultText: 'system time zone',
      help: 'IANA time zone of message-line timestamps.',
    },
    (raw) =>
      isValidTimeZone(raw.trim()) ? undefined : 'expected an IANA time zone such as Europe/Kyiv or UTC',
  ),
  AGENT_TIMESTAMP_STYLE: setting(
    {
      group: 'Message lines',
      defaultText: 'iso',
      help: 'Timestamps in message lines: iso (full is accepted for it), short or none.',
    },
    (raw): TimeStyle => {
      if (raw === undefined) return 'iso';
      const word = raw.trim().toLowerCase();
      if (word === 'full') return 'iso';
      return word === 'iso' || word === 'short' || word === 'none'
        ? word
        : fail('expected one of iso, short, none');
    },
  ),
  ZULIP_ATTRIBUTE_DELIVERY: bool(
    {
      group: 'Delivery',
      help: 'Lead every delivered body with its message-line head and stamp attributed/attributionHeader in metadata; off: bare bodies.',
    },
    true,
  ),
  ZULIP_INLINE_IMAGES: bool(
    {
      group: 'Delivery',
      help: 'Inline the images of live messages as image blocks, downsampled for a model.',
    },
    true,
  ),
  ZULIP_CATCHUP_LIMIT: int(
    { group: 'Delivery', help: 'Most messages shown in one <missed> catch-up block.' },
    1,
    1000,
    100,
  ),
  ZULIP_CONTEXT_MESSAGES: int(
    {
      group: 'Delivery',
      help: 'Recent messages per open channel injected before inference (zulip.context); 0: none.',
    },
    0,
    200,
    20,
  ),
  ZULIP_ACK_EMOJI: setting(
    {
      group: 'Delivery',
      defaultText: 'eyes',
      help: 'The reaction channels/acknowledge adds when the host names none.',
    },
    (raw) => (raw === undefined ? 'eyes' : checkEmojiName(raw.trim())),
  ),
  ZULIP_MARK_READ: bool(
    { group: 'Delivery', help: 'Mark messages read in Zulip once the host accepts them.' },
    false,
  ),
  ZULIP_MARKDOWN_AUTOFIX: bool(
    { group: 'Delivery', help: 'Rewrite markdown Zulip renders badly, in tool sends and channels/publish.' },
    true,
  ),
  ZULIP_LEGACY_HOSTS: setting(
    {
      group: 'MCPL',
      defaultText: 'advertised',
      help: 'What a 0.4 host that never sends a policy gets: advertised (what both sides advertise), mcp-only or inert.',
    },
    (raw): LegacyHostPolicy => {
      if (raw === undefined) return 'advertised';
      const word = raw.trim().toLowerCase();
      return word === 'advertised' || word === 'mcp-only' || word === 'inert'
        ? word
        : fail('expected one of advertised, mcp-only, inert');
    },
  ),
  ZULIP_REQUEST_TIMEOUT_MS: int(
    { group: 'Timeouts', help: 'Deadline of each Zulip API call, in ms.' },
    100,
    600_000,
    15_000,
  ),
  ZULIP_TOOL_DEADLINE_MS: int(
    { group: 'Timeouts', help: 'One deadline shared by all the work of a tool call, in ms.' },
    100,
    3_600_000,
    60_000,
  ),
  ZMCP_LOG_LEVEL: setting(
    {
      group: 'Logging',
      flag: '--log-level',
      flagArg: '<level>',
      defaultText: 'info',
      help: 'Log level on stderr: debug, info, warn, error or silent. Bodies only at debug.',
    },
    (raw): LogLevel => {
      if (raw === undefined) return 'info';
      const word = raw.trim().toLowerCase();
      return (LOG_LEVELS as readonly string[]).includes(word)
        ? (word as LogLevel)
        : fail(`expected one of ${LOG_LEVELS.join(', ')}`);
    },
  ),
  '--tcp': setting(
    {
      group: 'Transport',
      flag: '--tcp',
      flagArg: '<port>',
      defaultText: 'off (stdio)',
      help: 'Serve MCPL on 127.0.0.1:<port>, one connection at a time, instead of stdio; 0 picks a free port.',
    },
    (raw) => {
      if (raw === undefined) return undefined;
      const port = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
      return Number.isInteger(port) && port >= 0 && port <= 65_535
        ? port
        : fail('expected a port from 0 to 65535');
    },
  ),
  '--demo': flagSwitch({
    group: 'Other',
    flag: '--demo',
    defaultText: 'off',
    help: 'Start a simulated, seeded Zulip realm on loopback and serve it; no account needed.',
  }),
  '--help': flagSwitch({
    group: 'Other',
    flag: '--help',
    defaultText: '',
    help: 'Print this help and exit.',
  }),
  '--version': flagSwitch({
    group: 'Other',
    flag: '--version',
    defaultText: '',
    help: 'Print the version and exit.',
  }),
});

/** Every setting in table order, as `--help` and the README list them. */
export function configSettings(): SettingInfo[] {
  return Object.entries(RawSchema.shape).map(([name, schema]) => {
    const info = meta.get(schema);
    if (info === undefined) throw new Error(`setting ${name} has no help entry`);
    return {
      name,
      flag: info.flag,
      flagArg: info.flagArg,
      defaultText: info.defaultText,
      help: info.help,
      group: info.group,
      secret: info.secret ?? false,
    };
  });
}

/** Names of every environment variable zulip-mcpl reads. */
export function configVariableNames(): string[] {
  return configSettings()
    .map((s) => s.name)
    .filter((name) => !name.startsWith('-'));
}

function expandHome(path: string, home: string): string {
  if (path === '~') return home;
  return path.startsWith('~/') ? join(home, path.slice(2)) : path;
}

/**
 * Parses the environment and flags (a flag wins over its variable; empty variables are unset).
 *
 * @throws McplServerError `MCPL_SERVER_CONFIG_INVALID` naming every bad variable or flag and what
 *   was expected (secrets never echoed); `details.problems` lists them.
 */
export function parseConfig(
  env: Readonly<Record<string, string | undefined>>,
  argv: readonly string[],
  options: { cwd?: string } = {},
): McplConfig {
  const settings = configSettings();
  const problems: string[] = [];
  const input: Record<string, string> = {};
  const source: Record<string, string> = {};
  for (const name of configVariableNames()) {
    const value = env[name];
    if (value !== undefined && value.trim() !== '') {
      input[name] = value;
      source[name] = name;
    }
  }
  const flags = new Map(
    settings.filter((s) => s.flag !== undefined).map((s) => [s.flag as string, s] as const),
  );
  flags.set('-h', settings.find((s) => s.name === '--help') as SettingInfo);
  flags.set('-V', settings.find((s) => s.name === '--version') as SettingInfo);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    const s = flags.get(name);
    if (s === undefined) {
      problems.push(
        arg.startsWith('-')
          ? `${name}: unknown option (zulip-mcpl --help lists them)`
          : `${JSON.stringify(arg.slice(0, 40))}: unexpected argument (zulip-mcpl takes only options)`,
      );
      continue;
    }
    let value = 'true';
    if (s.flagArg !== undefined) {
      const next = eq > 0 ? arg.slice(eq + 1) : argv[++i];
      if (next === undefined || (eq < 0 && next.startsWith('--'))) {
        problems.push(`${name}: expects a value`);
        continue;
      }
      value = next;
    } else if (eq > 0) {
      problems.push(`${name}: takes no value`);
      continue;
    }
    input[s.name] = value;
    source[s.name] = name;
  }
  // Read-only mode belongs to zulip-mcp: live delivery needs an event queue, which is a write.
  // Ignoring the variable would serve writes to an operator who asked for none.
  const readOnly = env.ZULIP_READ_ONLY;
  if (readOnly !== undefined && readOnly.trim() !== '') {
    let on = true;
    try {
      on = parseReadOnlyFlag(readOnly);
    } catch {
      // An unreadable value is refused like a set one.
    }
    if (on) {
      problems.push(
        'ZULIP_READ_ONLY: zulip-mcpl cannot run read-only (live delivery registers an event queue); use zulip-mcp with ZULIP_READ_ONLY for a read-only server',
      );
    }
  }
  const secretKeys = new Set(settings.filter((s) => s.secret).map((s) => s.name));
  const parsed = RawSchema.safeParse(input);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const key = String(issue.path[0] ?? '');
      const raw = input[key];
      const got =
        raw === undefined || secretKeys.has(key)
          ? ''
          : ` (got ${JSON.stringify(raw.length > 60 ? `${raw.slice(0, 57)}...` : raw)})`;
      problems.push(`${source[key] ?? key}: ${issue.message}${got}`);
    }
  }
  let filters: FiltersSeed | undefined;
  try {
    filters = filtersSeedFromEnv(input);
  } catch (err) {
    problems.push((err as Error).message);
  }
  const raw = parsed.data;
  if (raw !== undefined) {
    if (raw.ZULIP_REALM !== undefined && raw.ZULIP_SITE !== undefined) {
      const a = parseSite(raw.ZULIP_REALM, { allowInsecureHttp: true }).url;
      const b = parseSite(raw.ZULIP_SITE, { allowInsecureHttp: true }).url;
      if (a !== b) problems.push('ZULIP_SITE: conflicts with ZULIP_REALM; set only one of the two');
    }
    for (const key of ['ZULIP_REALM', 'ZULIP_SITE'] as const) {
      const value = raw[key];
      if (value === undefined) continue;
      try {
        parseSite(value, { allowInsecureHttp: raw.ZULIP_ALLOW_INSECURE_HTTP });
      } catch {
        problems.push(
          `${key}: is plain http to a host that is not loopback; use https, or set ZULIP_ALLOW_INSECURE_HTTP`,
        );
      }
    }
  }
  if (problems.length > 0 || raw === undefined || filters === undefined) {
    throw new McplServerError(
      'MCPL_SERVER_CONFIG_INVALID',
      `Invalid configuration:\n  ${problems.join('\n  ')}`,
      {
        details: { problems },
      },
    );
  }
  const home = env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir();
  const stateDir = expandHome(raw.ZULIP_STATE_DIR ?? '~/.zmcp/state', home);
  const cwd = options.cwd ?? process.cwd();
  return {
    command: raw['--help'] ? 'help' : raw['--version'] ? 'version' : 'serve',
    demo: raw['--demo'],
    tcpPort: raw['--tcp'],
    zulip: {
      site: raw.ZULIP_REALM ?? raw.ZULIP_SITE,
      email: raw.ZULIP_EMAIL,
      apiKey: raw.ZULIP_API_KEY,
      rcPath: raw.ZULIP_RC_PATH === undefined ? undefined : expandHome(raw.ZULIP_RC_PATH, home),
      allowInsecureHttp: raw.ZULIP_ALLOW_INSECURE_HTTP,
    },
    stateDir,
    sessionId: raw.ZULIP_SESSION_ID,
    filtersFile: raw.ZULIP_FILTERS_FILE === undefined ? undefined : expandHome(raw.ZULIP_FILTERS_FILE, home),
    filters,
    timezone: raw.AGENT_TIMEZONE?.trim() ?? Intl.DateTimeFormat().resolvedOptions().timeZone,
    timestampStyle: raw.AGENT_TIMESTAMP_STYLE,
    privateStreams: raw.ZULIP_PRIVATE_STREAMS,
    writeStreams: raw.ZULIP_WRITE_STREAMS,
    toolsets: raw.ZULIP_TOOLSETS,
    uploadRoots: parseUploadRoots(raw.ZULIP_UPLOAD_ROOTS, cwd),
    uploadMaxBytes: raw.ZULIP_UPLOAD_MAX_BYTES,
    attributeDelivery: raw.ZULIP_ATTRIBUTE_DELIVERY,
    inlineImages: raw.ZULIP_INLINE_IMAGES,
    catchUpLimit: raw.ZULIP_CATCHUP_LIMIT,
    contextMessages: raw.ZULIP_CONTEXT_MESSAGES,
    ackEmoji: raw.ZULIP_ACK_EMOJI,
    markRead: raw.ZULIP_MARK_READ,
    markdownAutofix: raw.ZULIP_MARKDOWN_AUTOFIX,
    requestTimeoutMs: raw.ZULIP_REQUEST_TIMEOUT_MS,
    toolDeadlineMs: raw.ZULIP_TOOL_DEADLINE_MS,
    legacyHosts: raw.ZULIP_LEGACY_HOSTS,
    logLevel: raw.ZMCP_LOG_LEVEL,
  };
}

function label(s: SettingInfo): string {
  if (s.name.startsWith('-')) return s.flagArg === undefined ? s.name : `${s.name} ${s.flagArg}`;
  return s.flag === undefined
    ? s.name
    : `${s.name}, ${s.flag}${s.flagArg === undefined ? '' : ` ${s.flagArg}`}`;
}

/** The `--help` text: usage, then every setting with its flag, default and one line of help. */
export function helpText(): string {
  const settings = configSettings();
  const width = Math.max(...settings.map((s) => label(s).length)) + 2;
  const lines = [
    'zulip-mcpl: Zulip for MCP Live hosts (channels, push events, catch-up, context), stdio by default.',
    '',
    'Usage: zulip-mcpl [options]',
    '',
    'Settings are environment variables; where a flag is shown, it overrides the variable.',
    'Booleans take 1/0, true/false, yes/no or on/off. Empty variables count as unset.',
  ];
  let group = '';
  for (const s of settings) {
    if (s.group !== group) {
      group = s.group;
      lines.push('', `${group}:`);
    }
    lines.push(
      `  ${label(s).padEnd(width)}${s.help}${s.defaultText === '' ? '' : ` [default: ${s.defaultText}]`}`,
    );
  }
  lines.push('', 'The README of @zmcp/mcpl-server shows host configurations and wake policies.', '');
  return lines.join('\n');
}

/** The README's settings table, generated from the same schema as `--help`. */
export function configMarkdownTable(): string {
  const rows = configSettings().map((s) => {
    const variable = s.name.startsWith('-') ? '' : `\`${s.name}\``;
    const flag = s.flag === undefined ? '' : `\`${s.flag}${s.flagArg === undefined ? '' : ` ${s.flagArg}`}\``;
    return `| ${variable} | ${flag} | ${s.defaultText} | ${s.help.replace(/\|/g, '\\|')} |`;
  });
  return ['| variable | flag | default | what it does |', '|---|---|---|---|', ...rows].join('\n');
}
