import {
  checkZulipSite,
  defineSettings,
  expandHome,
  flagSwitch,
  homeDirectory,
  integer,
  type LogLevel,
  logLevels,
  oneOf,
  optionalInteger,
  parsedBy,
  problem,
  type Setting,
  type SettingInfo,
  type SettingProblem,
  setting,
  streamAllowlist,
  strictBoolean,
  text,
  timeZone,
  zulipAccountSettings,
} from '@zmcp/cli';
import { checkEmojiName, type StreamAllowlist, type TimeStyle } from '@zmcp/core';
import {
  type FILTER_ENV_VARIABLES,
  type FiltersSeed,
  filtersSeedFromEnv,
  parseSessionId,
} from '@zmcp/delivery';
import type { LegacyHostPolicy } from '@zmcp/mcpl';
import { parseToolsets, type Toolset } from '@zmcp/tools';
import { parseByteSize, parseUploadRoots, type UploadRootSpec } from '@zmcp/uploads';
import { McplServerError } from './errors.js';

export type { SettingInfo } from '@zmcp/cli';

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

/** A variable of the filters file's seed (delivery reads them). */
type FilterVariable = (typeof FILTER_ENV_VARIABLES)[keyof typeof FILTER_ENV_VARIABLES];

const filterHelp: Readonly<Record<FilterVariable, string>> = {
  ZULIP_STREAMS:
    'Seed of the filters file: streams that may reach the agent (comma list); unset: every stream.',
  ZULIP_DM_USERS: 'Seed of the filters file: who may DM the agent, by user id or email; unset: anyone.',
  ZULIP_MUTED_STREAMS: 'Seed of the filters file: streams from which nothing reaches the agent.',
  ZULIP_REACTION_CHANNELS: 'Seed of the filters file: channels that show live reactions (zulip:<stream>).',
  ZULIP_SUPPRESSED_REACTIONS:
    'Seed of the filters file: reaction emoji withheld from the agent (operator-owned).',
  ZULIP_SUPPRESSED_REACTIONS_BASELINE:
    'Suppressed reactions a host adds at every start; never written into the file.',
};
const filterVariables = Object.keys(filterHelp) as FilterVariable[];

/** The seed's settings, each variable checked alone by delivery's own reader of the seed. */
const filterSettings = Object.fromEntries(
  filterVariables.map((variable) => [
    variable,
    setting<string | undefined>(
      { group: 'Filters', defaultText: 'unset', help: filterHelp[variable] },
      (raw) => {
        try {
          filtersSeedFromEnv({ [variable]: raw });
          return raw;
        } catch (err) {
          return problem((err as Error).message.replace(`${variable}: `, ''));
        }
      },
      undefined,
    ),
  ]),
) as { [V in FilterVariable]: Setting<string | undefined> };

/** The toolsets zulip-mcpl serves unless told otherwise. */
const DEFAULT_MCPL_TOOLSETS: readonly Toolset[] = ['read', 'write', 'attention'];

/** `ZULIP_TOOLSETS` by tools' rule, narrowed to what zulip-mcpl serves; `all` is all of those. */
function mcplToolsets(raw: string): Toolset[] | SettingProblem {
  let picked: Toolset[];
  try {
    picked = raw.trim().toLowerCase() === 'all' ? [...MCPL_TOOLSETS] : parseToolsets(raw);
  } catch (err) {
    return problem((err as Error).message);
  }
  const other = picked.find((t) => !MCPL_TOOLSETS.includes(t));
  return other === undefined
    ? picked
    : problem(`the ${other} toolset is zulip-mcp's; zulip-mcpl serves ${MCPL_TOOLSETS.join(', ')}`);
}

/** zulip-mcpl's settings: every key a variable (or a flag-only switch), every value the raw string. */
const configShape = {
  ...zulipAccountSettings(),
  ZULIP_STATE_DIR: text({
    group: 'State',
    flag: '--state-dir',
    flagArg: '<dir>',
    defaultText: '~/.zmcp/state',
    help: 'Where watermarks and the filters file live, one folder per realm and bot; put it on storage that survives a redeploy.',
  }),
  ZULIP_SESSION_ID: parsedBy(
    {
      group: 'State',
      flag: '--session-id',
      flagArg: '<id>',
      defaultText: 'default',
      help: 'Names this agent’s state files (1-128 of A-Z a-z 0-9 . _ -); one server delivers per session (a second waits), so two agents need two ids.',
    },
    (raw) => parseSessionId(raw.trim()),
    (err) =>
      `expected 1 to 128 characters of A-Z, a-z, 0-9, ".", "_" or "-", not starting with "." (${String((err as { details?: { reason?: unknown } }).details?.reason ?? 'invalid')})`,
    'default',
  ),
  ZULIP_FILTERS_FILE: text({
    group: 'Filters',
    defaultText: '<state dir>/<account>/<session>.filters.json',
    help: 'The filters file: what reaches the agent, hot-reloaded.',
  }),
  ...filterSettings,
  ZULIP_PRIVATE_STREAMS: streamAllowlist({
    group: 'Access',
    defaultText: 'none',
    help: 'Private streams the agent may read (comma list); __ALL__ opens every one, and DMs.',
  }),
  ZULIP_WRITE_STREAMS: streamAllowlist({
    group: 'Access',
    defaultText: 'every stream',
    help: 'Streams the agent may post to (comma list); unset allows all.',
  }),
  ZULIP_TOOLSETS: setting<Toolset[]>(
    {
      group: 'Access',
      flag: '--toolsets',
      flagArg: '<list>',
      defaultText: DEFAULT_MCPL_TOOLSETS.join(','),
      help: `Toolsets to serve (comma list of ${MCPL_TOOLSETS.join(', ')}), or all.`,
    },
    mcplToolsets,
    [...DEFAULT_MCPL_TOOLSETS],
  ),
  // Read by the rule zulip-mcp reads it with, so that a shared environment means the same here.
  ZULIP_READ_ONLY: strictBoolean(
    {
      group: 'Access',
      help: 'Must stay off: zulip-mcpl cannot run read-only (live delivery registers an event queue, a write); use zulip-mcp for a read-only server.',
    },
    false,
  ),
  ZULIP_UPLOAD_ROOTS: parsedBy(
    {
      group: 'Uploads',
      defaultText: 'none',
      help: 'Directories local attachments may come from (name=path, comma list).',
    },
    (raw) => {
      // Checked here; resolved against the working directory once parsed.
      parseUploadRoots(raw, '/');
      return raw;
    },
    (err) => (err as Error).message.replace(/^ZULIP_UPLOAD_ROOTS: /, ''),
  ),
  ZULIP_UPLOAD_MAX_BYTES: parsedBy(
    { group: 'Uploads', defaultText: 'the realm’s limit', help: 'Largest file to upload (bytes, or 25MiB).' },
    (raw) => parseByteSize(raw, 'ZULIP_UPLOAD_MAX_BYTES'),
    () => 'expected a number of bytes such as 26214400 or 25MiB (units K/KiB, M/MiB, G/GiB)',
  ),
  AGENT_TIMEZONE: timeZone({
    group: 'Message lines',
    flag: '--timezone',
    flagArg: '<zone>',
    defaultText: 'system time zone',
    help: 'IANA time zone of message-line timestamps.',
  }),
  AGENT_TIMESTAMP_STYLE: oneOf(
    {
      group: 'Message lines',
      help: 'Timestamps in message lines: iso (full is accepted for it), short or none.',
    },
    ['iso', 'short', 'none'],
    'iso',
    { full: 'iso' },
  ),
  ZULIP_ATTRIBUTE_DELIVERY: strictBoolean(
    {
      group: 'Delivery',
      help: 'Lead every delivered body with its message-line head and stamp attributed/attributionHeader in metadata; off: bare bodies.',
    },
    true,
  ),
  ZULIP_INLINE_IMAGES: strictBoolean(
    {
      group: 'Delivery',
      help: 'Inline the images of live messages as image blocks, downsampled for a model.',
    },
    true,
  ),
  ZULIP_CATCHUP_LIMIT: integer(
    { group: 'Delivery', help: 'Most messages shown in one <missed> catch-up block.' },
    1,
    1000,
    100,
  ),
  ZULIP_CONTEXT_MESSAGES: integer(
    {
      group: 'Delivery',
      help: 'Recent messages per open channel injected before inference (zulip.context); 0: none.',
    },
    0,
    200,
    20,
  ),
  ZULIP_ACK_EMOJI: parsedBy(
    {
      group: 'Delivery',
      defaultText: 'eyes',
      help: 'The reaction channels/acknowledge adds when the host names none.',
    },
    (raw) => checkEmojiName(raw),
    () => 'expected an emoji name such as eyes or white_check_mark (letters, digits, "_", "+" or "-")',
    'eyes',
  ),
  ZULIP_MARK_READ: strictBoolean(
    { group: 'Delivery', help: 'Mark messages read in Zulip once the host accepts them.' },
    false,
  ),
  ZULIP_MARKDOWN_AUTOFIX: strictBoolean(
    { group: 'Delivery', help: 'Rewrite markdown Zulip renders badly, in tool sends and channels/publish.' },
    true,
  ),
  ZULIP_LEGACY_HOSTS: oneOf<LegacyHostPolicy>(
    {
      group: 'MCPL',
      help: 'What a 0.4 host that never sends a policy gets: advertised (what both sides advertise or speak), mcp-only or inert.',
    },
    ['advertised', 'mcp-only', 'inert'],
    'advertised',
  ),
  ZULIP_REQUEST_TIMEOUT_MS: integer(
    { group: 'Timeouts', help: 'Deadline of each Zulip API call, in ms.' },
    100,
    600_000,
    15_000,
  ),
  ZULIP_TOOL_DEADLINE_MS: integer(
    { group: 'Timeouts', help: 'One deadline shared by all the work of a tool call, in ms.' },
    100,
    3_600_000,
    60_000,
  ),
  ZMCP_LOG_LEVEL: oneOf(
    {
      group: 'Logging',
      flag: '--log-level',
      flagArg: '<level>',
      help: 'Log level on stderr: debug, info, warn, error or silent. Bodies only at debug.',
    },
    logLevels,
    'info',
  ),
  '--tcp': optionalInteger(
    {
      group: 'Transport',
      flag: '--tcp',
      flagArg: '<port>',
      defaultText: 'off (stdio)',
      help: 'Serve MCPL on 127.0.0.1:<port>, one connection at a time, instead of stdio; 0 picks a free port.',
    },
    0,
    65_535,
  ),
  '--demo': flagSwitch({
    group: 'Other',
    flag: '--demo',
    defaultText: 'off',
    help: 'Start a simulated, seeded Zulip realm on loopback and serve it; no account needed.',
  }),
};

/** The bin name, as the help and error messages call it. */
export const binName = 'zulip-mcpl';

const settings = defineSettings(configShape, {
  bin: binName,
  // Checks across settings, made once every value is valid.
  refine: (raw, report) => {
    checkZulipSite(raw, report);
    // Ignoring it would serve writes to an operator who asked for none.
    if (raw.ZULIP_READ_ONLY) {
      report(
        'ZULIP_READ_ONLY',
        'zulip-mcpl cannot run read-only (live delivery registers an event queue); use zulip-mcp with ZULIP_READ_ONLY for a read-only server',
      );
    }
  },
  configError: (err) =>
    new McplServerError('MCPL_SERVER_CONFIG_INVALID', err.message, {
      cause: err,
      details: { ...err.details },
    }),
});

/**
 * Parses the environment and flags (a flag wins over its variable; empty variables are unset).
 * Reads nothing but its arguments, apart from the system time zone (the default zone) and the
 * working directory (where relative upload roots start, unless `options.cwd`).
 *
 * @throws McplServerError `MCPL_SERVER_CONFIG_INVALID` naming every bad variable or flag and what
 *   was expected (secrets never echoed); `details.problems` lists them.
 */
export function parseConfig(
  env: Readonly<Record<string, string | undefined>>,
  argv: readonly string[],
  options: { cwd?: string } = {},
): McplConfig {
  const home = homeDirectory(env);
  const raw = settings.parse(env, argv);
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
    stateDir: expandHome(raw.ZULIP_STATE_DIR ?? '~/.zmcp/state', home),
    sessionId: raw.ZULIP_SESSION_ID,
    filtersFile: raw.ZULIP_FILTERS_FILE === undefined ? undefined : expandHome(raw.ZULIP_FILTERS_FILE, home),
    // Each variable was checked alone; together they are the seed.
    filters: filtersSeedFromEnv(Object.fromEntries(filterVariables.map((name) => [name, raw[name]]))),
    timezone: raw.AGENT_TIMEZONE ?? Intl.DateTimeFormat().resolvedOptions().timeZone,
    timestampStyle: raw.AGENT_TIMESTAMP_STYLE,
    privateStreams: raw.ZULIP_PRIVATE_STREAMS,
    writeStreams: raw.ZULIP_WRITE_STREAMS,
    toolsets: raw.ZULIP_TOOLSETS,
    uploadRoots: parseUploadRoots(raw.ZULIP_UPLOAD_ROOTS, options.cwd ?? process.cwd()),
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

/** The `--help` text: usage, then every setting with its flag, default and one line of help. */
export function helpText(): string {
  return settings.helpText({
    about: [
      'zulip-mcpl: Zulip for MCP Live hosts (channels, push events, catch-up, context), stdio by default.',
    ],
    footer: ['The README of @zmcp/mcpl-server shows host configurations and wake policies.'],
  });
}

/** The README's settings table, generated from the same schema as `--help`. */
export const configMarkdownTable: () => string = settings.markdownTable;

/** Every setting in table order, as `--help` and the README list them. */
export const configSettings: () => SettingInfo[] = settings.list;

/** Names of every environment variable zulip-mcpl reads. */
export const configVariableNames: () => string[] = settings.variableNames;
