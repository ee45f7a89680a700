import {
  defineSettings,
  expandHome,
  flagSwitch,
  homeDirectory,
  integer,
  oneOf,
  optionalInteger,
  parsedBy,
  problem,
  type Setting,
  type SettingInfo,
  setting,
  strictBoolean,
  text,
} from '@zmcp/cli';
import { checkEmojiName } from '@zmcp/core';
import { type FILTER_ENV_VARIABLES, type FiltersSeed, filtersSeedFromEnv } from '@zmcp/delivery';
import type { LegacyHostPolicy } from '@zmcp/mcpl';
import { type ServerSettings, serverSettings } from '@zmcp/server-kit';
import type { Toolset } from '@zmcp/tools';
import { McplServerError } from './errors.js';

export type { SettingInfo } from '@zmcp/cli';

/** The toolsets zulip-mcpl can serve: the realm tools and the attention controls. */
export const MCPL_TOOLSETS: readonly Toolset[] = ['read', 'write', 'browse', 'files', 'manage', 'attention'];

/**
 * The whole configuration of one `zulip-mcpl` process: the settings every zmcp server shares
 * (`@zmcp/server-kit`; `readOnly` is always false, since read-only is refused), and its own.
 */
export interface McplConfig extends ServerSettings {
  command: 'serve' | 'help' | 'version';
  /** Serve a simulated, seeded realm instead of a real one. */
  demo: boolean;
  /** Serve one loopback TCP connection at a time on this port instead of stdio (0: any free port). */
  tcpPort: number | undefined;
  /** The filters file as configured; unset: `<session>.filters.json` in the account's state folder. */
  filtersFile: string | undefined;
  /** What a new filters file is created with, and the host's suppressed-reactions baseline. */
  filters: FiltersSeed;
  /** Stamp the message-line head in metadata (`attributed`, `attributionHeader`); off: bare bodies. */
  attributeDelivery: boolean;
  /** Inline images of live messages as image blocks (downsampled). */
  inlineImages: boolean;
  catchUpLimit: number;
  contextMessages: number;
  ackEmoji: string;
  markRead: boolean;
  legacyHosts: LegacyHostPolicy;
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

/** The bin name, as the help and error messages call it. */
export const binName = 'zulip-mcpl';

/** The settings every zmcp server shares, as zulip-mcpl serves them: its toolsets, never read-only. */
const server = serverSettings({
  bin: binName,
  toolsets: { served: MCPL_TOOLSETS, default: DEFAULT_MCPL_TOOLSETS, otherBin: 'zulip-mcp' },
  readOnly: { because: 'live delivery registers an event queue, a write', instead: 'zulip-mcp' },
});

/** zulip-mcpl's settings: every key a variable (or a flag-only switch), every value the raw string. */
const configShape = {
  ...server.shape,
  ZULIP_FILTERS_FILE: text({
    group: 'Filters',
    defaultText: '<state dir>/<account>/<session>.filters.json',
    help: 'The filters file: what reaches the agent, hot-reloaded. With ZULIP_STATE_URL the filters are a row in PostgreSQL instead, and this must stay unset.',
  }),
  ...filterSettings,
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
  ZULIP_LEGACY_HOSTS: oneOf<LegacyHostPolicy>(
    {
      group: 'MCPL',
      help: 'What a 0.4 host that never sends a policy gets: advertised (what both sides advertise or speak), mcp-only or inert.',
    },
    ['advertised', 'mcp-only', 'inert'],
    'advertised',
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

const settings = defineSettings(configShape, {
  bin: binName,
  // Checks across settings, made once every value is valid.
  refine: (raw, report) => {
    server.check(raw, report);
    if (raw.ZULIP_FILTERS_FILE !== undefined && raw.ZULIP_STATE_URL !== undefined) {
      report(
        'ZULIP_FILTERS_FILE',
        'must stay unset with ZULIP_STATE_URL: the filters are a row in PostgreSQL then, the same for every process',
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
 * Reads nothing but its arguments, apart from the system time zone (the default zone), the
 * working directory (where relative upload roots start, unless `options.cwd`) and whether the
 * default state directories exist (`options.exists`).
 *
 * @throws McplServerError `MCPL_SERVER_CONFIG_INVALID` naming every bad variable or flag and what
 *   was expected (secrets never echoed); `details.problems` lists them.
 */
export function parseConfig(
  env: Readonly<Record<string, string | undefined>>,
  argv: readonly string[],
  options: { cwd?: string; exists?: (path: string) => boolean } = {},
): McplConfig {
  const home = homeDirectory(env);
  const raw = settings.parse(env, argv);
  return {
    ...server.resolve(raw, { env, cwd: options.cwd, exists: options.exists }),
    command: raw['--help'] ? 'help' : raw['--version'] ? 'version' : 'serve',
    demo: raw['--demo'],
    tcpPort: raw['--tcp'],
    filtersFile: raw.ZULIP_FILTERS_FILE === undefined ? undefined : expandHome(raw.ZULIP_FILTERS_FILE, home),
    // Each variable was checked alone; together they are the seed.
    filters: filtersSeedFromEnv(Object.fromEntries(filterVariables.map((name) => [name, raw[name]]))),
    attributeDelivery: raw.ZULIP_ATTRIBUTE_DELIVERY,
    inlineImages: raw.ZULIP_INLINE_IMAGES,
    catchUpLimit: raw.ZULIP_CATCHUP_LIMIT,
    contextMessages: raw.ZULIP_CONTEXT_MESSAGES,
    ackEmoji: raw.ZULIP_ACK_EMOJI,
    markRead: raw.ZULIP_MARK_READ,
    legacyHosts: raw.ZULIP_LEGACY_HOSTS,
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
