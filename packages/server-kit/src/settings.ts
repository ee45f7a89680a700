import { existsSync } from 'node:fs';
import {
  checkZulipSite,
  expandHome,
  homeDirectory,
  integer,
  type LogLevel,
  logLevels,
  matching,
  oneOf,
  optionalBoolean,
  optionalInteger,
  parsedBy,
  problem,
  type SettingValues,
  setting,
  streamAllowlist,
  strictBoolean,
  text,
  textWithDefault,
  timeZone,
  zulipAccountSettings,
} from '@zmcp/cli';
import {
  type AdmissionList,
  isLoopbackHost,
  parseAdmissionList,
  type StreamAllowlist,
  type TimeStyle,
} from '@zmcp/core';
import { parseSessionId } from '@zmcp/delivery';
import { describeStateUrl } from '@zmcp/fleet';
import { parseToolsets, TOOLSETS, type Toolset } from '@zmcp/tools';
import { parseByteSize, parseUploadRoots, type UploadRootSpec } from '@zmcp/uploads';
import { ServerKitError } from './errors.js';

/** Zulip credentials as configured; resolving them against a zuliprc is `@zmcp/core`'s job. */
export interface ZulipCredentialSettings {
  /** `ZULIP_REALM` or `ZULIP_SITE`, raw. */
  site: string | undefined;
  email: string | undefined;
  /** Secret: never logged, never echoed in an error. */
  apiKey: string | undefined;
  /** The zuliprc path, `~` expanded. */
  rcPath: string | undefined;
  allowInsecureHttp: boolean;
}

/** The settings every zmcp server reads alike, resolved: what {@link openZulipRuntime} opens. */
export interface ServerSettings {
  zulip: ZulipCredentialSettings;
  /** The state directory, `~` expanded. */
  stateDir: string;
  /**
   * Where `stateDir` came from: the variable or flag, the default (`~/.zmcp/state`), or the
   * default of the earlier TypeScript server (`~/.zulip_mcp_state`), used when only that one exists.
   */
  stateDirSource: 'setting' | 'default' | 'earlier default';
  /**
   * `ZULIP_STATE_URL`: `postgres://…` puts every piece of state in PostgreSQL (`@zmcp/fleet`),
   * shared by every process given the same URL; unset: files in `stateDir`. Secret (it may hold a
   * password): never logged, never echoed in an error.
   */
  stateUrl: string | undefined;
  sessionId: string;
  /** IANA time zone of message-line timestamps (the system's when unset). */
  timezone: string;
  timestampStyle: TimeStyle;
  /** Every write refused in the one client's transport, and the write tools hidden. */
  readOnly: boolean;
  /** Which toolsets are served (read-only mode still hides every tool that writes). */
  toolsets: Toolset[];
  /** Private streams the server may read: `__ALL__` (also opens DMs), or an allowlist; unset: none. */
  privateStreams: StreamAllowlist | undefined;
  /** Streams the server may write to (names or ids, resolved at start-up); unset means every stream. */
  writeStreams: StreamAllowlist | undefined;
  /** Whether DMs may be sent; unset: yes without a write allowlist, no with one. */
  writeDms: boolean | undefined;
  /**
   * Who may wake, steer or answer the agent (core's admission list: ids and emails); unset: no
   * gate, except where a surface needs one (Claude Code channels stay closed).
   */
  admissionList: AdmissionList | undefined;
  /** The variable `admissionList` came from, named when an entry names nobody (`ZULIP_ALLOWED_USERS`). */
  admissionSetting: string;
  /** Upload roots, their paths resolved against the working directory. */
  uploadRoots: readonly UploadRootSpec[];
  /** Largest file to upload; unset: the realm's limit. */
  uploadMaxBytes: number | undefined;
  markdownAutofix: boolean;
  /** Longest message to send; unset: the realm's limit. */
  maxMessageLength: number | undefined;
  /** How long a successful send is remembered to refuse its repeat, in milliseconds; 0: never. */
  sendOnceWindowMs: number;
  pageBudgetBytes: number;
  requestTimeoutMs: number;
  toolDeadlineMs: number;
  logLevel: LogLevel;
  /**
   * The operator's status page and `/metrics` (`--status-port`): served when `port` is set (0 picks
   * a free port), on `host` (loopback by default), with `token` required beyond loopback. Secret: the token.
   */
  status: { port: number | undefined; host: string; token: string | undefined };
}

/** The Zulip account's settings (`@zmcp/cli`'s `zulipAccountSettings`): every bin declares them. */
type AccountSettingName = keyof ReturnType<typeof zulipAccountSettings>;

/** A shared setting a bin may leave out with `only` (see {@link ServerSettingsOptions}): any but the Zulip account's. */
export type SharedSettingName = Exclude<keyof ServerSettingsShape, AccountSettingName>;

/** The toolsets a bin serves: see {@link ServerSettingsOptions.toolsets}. */
export interface BinToolsets {
  served: readonly Toolset[];
  default: readonly Toolset[];
  otherBin?: string | undefined;
}

/** Whether a bin serves read-only mode: see {@link ServerSettingsOptions.readOnly}. */
export type BinReadOnly = 'served' | { because: string; instead: string };

/** What the shared settings' entries are built from. */
interface BinDescription {
  bin: string;
  toolsets?: BinToolsets | undefined;
  readOnly?: BinReadOnly | undefined;
}

/** How one bin serves the shared settings: where bins legitimately differ. */
export interface ServerSettingsOptions<K extends SharedSettingName = SharedSettingName> {
  /** The bin, as problems name it (`zulip-mcp`). */
  bin: string;
  /**
   * The toolsets the bin serves (`ZULIP_TOOLSETS=all` means these) and those it serves when the
   * variable is unset (`default` in the list means these). `otherBin` is named in the problem
   * for a toolset another bin serves. Required when the bin declares `ZULIP_TOOLSETS`.
   */
  toolsets?: BinToolsets | undefined;
  /**
   * `'served'`: `ZULIP_READ_ONLY` (`--read-only`) makes the bin read-only. Otherwise the bin cannot
   * run read-only: the variable is still read by the same rule (so a shared environment means the
   * same to every bin), and on it is a configuration problem saying `because` and naming `instead`.
   * Required when the bin declares `ZULIP_READ_ONLY`.
   */
  readOnly?: BinReadOnly | undefined;
  /**
   * The shared settings the bin declares beside the Zulip account's, for a bin that is not a tool
   * server (the launcher: a request deadline and a log level). The others are neither read nor
   * listed, and {@link ServerSettingsKit.resolve} gives them their defaults (no toolsets, not
   * read-only). Default: every one.
   */
  only?: readonly K[] | undefined;
}

const sizeExpected = 'expected a number of bytes such as 26214400 or 25MiB (units K/KiB, M/MiB, G/GiB)';

function inRange(value: number, min: number, max: number): number {
  if (value < min || value > max) throw new RangeError(`${value} is out of range`);
  return value;
}

function invalidOptions(option: string, message: string): ServerKitError {
  return new ServerKitError('SERVER_KIT_INVALID_OPTIONS', message, { details: { option } });
}

/** The shared settings a bin declares: the Zulip account's, and those of `only` (default: all). */
function declaredSettings(
  options: ServerSettingsOptions<SharedSettingName>,
  all: readonly string[],
): ReadonlySet<string> {
  if (options.only === undefined) return new Set(all);
  const account = new Set<string>(Object.keys(zulipAccountSettings()));
  for (const name of options.only) {
    if (account.has(name) || !all.includes(name)) {
      throw invalidOptions(
        'only',
        `${JSON.stringify(name)} is no shared setting a bin may choose (the Zulip account's are always declared)`,
      );
    }
  }
  return new Set(
    all.filter((name) => account.has(name) || options.only?.includes(name as SharedSettingName)),
  );
}

function checkOptions(
  options: ServerSettingsOptions<SharedSettingName>,
  declared: ReadonlySet<string>,
): void {
  if (options.bin.trim() === '') throw invalidOptions('bin', 'serverSettings needs the bin’s name');
  if (declared.has('ZULIP_TOOLSETS') && options.toolsets === undefined) {
    throw invalidOptions('toolsets', 'a bin that declares ZULIP_TOOLSETS says which toolsets it serves');
  }
  if (declared.has('ZULIP_READ_ONLY') && options.readOnly === undefined) {
    throw invalidOptions(
      'readOnly',
      'a bin that declares ZULIP_READ_ONLY says whether it serves read-only mode',
    );
  }
  if (options.toolsets === undefined) return;
  const { served, default: fallback } = options.toolsets;
  if (served.length === 0) throw invalidOptions('toolsets.served', 'a bin serves at least one toolset');
  for (const t of served) {
    if (!TOOLSETS.includes(t)) throw invalidOptions('toolsets.served', `${JSON.stringify(t)} is no toolset`);
  }
  for (const t of fallback) {
    if (!served.includes(t)) {
      throw invalidOptions('toolsets.default', `the default toolset ${JSON.stringify(t)} is not served`);
    }
  }
}

/** What a bin that does not declare `ZULIP_TOOLSETS` serves: no toolset. */
const NO_TOOLSETS = { served: TOOLSETS, default: [] } as const;

/** `ZULIP_TOOLSETS` by tools' rule (`parseToolsets`), with `all` and `default` meaning the bin's own. */
function toolsetsOf(raw: string, options: BinToolsets, bin: string) {
  const entries = raw
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '');
  let picked: Toolset[];
  try {
    if (entries.includes('all')) picked = TOOLSETS.filter((t) => options.served.includes(t));
    else if (entries.length === 0) picked = [];
    else
      picked = parseToolsets(
        entries.flatMap((e): readonly string[] => (e === 'default' ? options.default : [e])).join(','),
      );
  } catch (err) {
    return problem((err as Error).message);
  }
  const other = picked.find((t) => !options.served.includes(t));
  if (other === undefined) return picked;
  const whose = options.otherBin === undefined ? `is not served by ${bin}` : `is ${options.otherBin}'s`;
  return problem(`the ${other} toolset ${whose}; ${bin} serves ${options.served.join(', ')}`);
}

function readOnlySetting(options: BinDescription) {
  const { readOnly = 'served', bin } = options;
  return readOnly === 'served'
    ? strictBoolean(
        {
          group: 'Access',
          flag: '--read-only',
          help: 'Refuse every request that would change the realm, and hide the write tools.',
        },
        false,
      )
    : strictBoolean(
        {
          group: 'Access',
          help: `Must stay off: ${bin} cannot run read-only (${readOnly.because}); use ${readOnly.instead} for a read-only server.`,
        },
        false,
      );
}

function shapeOf(options: BinDescription) {
  const toolsets = options.toolsets ?? NO_TOOLSETS;
  const { served, default: fallback } = toolsets;
  return {
    ...zulipAccountSettings(),
    ZULIP_STATE_DIR: text({
      group: 'State',
      flag: '--state-dir',
      flagArg: '<dir>',
      defaultText: '~/.zmcp/state (~/.zulip_mcp_state if only that exists)',
      help: 'Directory of the server’s state (read cursors, delivery watermarks, filters), one folder per realm and bot; put it on storage that survives a redeploy.',
    }),
    ZULIP_STATE_URL: text(
      {
        group: 'State',
        secret: true,
        defaultText: 'files in the state directory',
        help: 'postgres://user:password@host:5432/db keeps the state in PostgreSQL (schema zmcp, created at start) instead of files, shared by every process given the same URL, so several can serve one bot. Secret: never logged.',
      },
      (raw) => {
        try {
          describeStateUrl(raw.trim());
          return undefined;
        } catch {
          return 'expected a URL starting with postgres:// or postgresql://';
        }
      },
    ),
    ZULIP_SESSION_ID: parsedBy(
      {
        group: 'State',
        flag: '--session-id',
        flagArg: '<id>',
        defaultText: 'default',
        help: 'Names this agent session’s state files: 1-128 of A-Z a-z 0-9 . _ -, not starting with a dot. One server delivers per session (a second waits its turn), so two agents need two ids.',
      },
      (raw) => parseSessionId(raw.trim()),
      (err) =>
        `expected 1 to 128 characters of A-Z, a-z, 0-9, ".", "_" or "-", not starting with "." (${String((err as { details?: { reason?: unknown } }).details?.reason ?? 'invalid')})`,
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
    ZULIP_READ_ONLY: readOnlySetting(options),
    ZULIP_TOOLSETS: setting<Toolset[]>(
      {
        group: 'Access',
        flag: '--toolsets',
        flagArg: '<list>',
        defaultText: fallback.join(','),
        help: `Toolsets to serve (comma list of ${served.join(', ')}), or all.`,
      },
      (raw) => toolsetsOf(raw, toolsets, options.bin),
      [...fallback],
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
    ZULIP_ALLOWED_USERS: parsedBy(
      {
        group: 'Access',
        defaultText: 'no gate',
        help: 'Who may wake, steer or answer the agent: user ids or email addresses (comma list), resolved to ids at start-up; anyone else’s dismissals, follow-ups, channel events and approvals change nothing.',
      },
      (raw) => parseAdmissionList(raw, 'ZULIP_ALLOWED_USERS'),
      (err) => String((err as Error).message).replace(/^ZULIP_ALLOWED_USERS:? /, ''),
    ),
    ZULIP_UPLOAD_ROOTS: text(
      {
        group: 'Uploads',
        defaultText: 'none',
        help: 'Directories local-file attachments may come from, as name=path pairs (comma list).',
      },
      (raw) => {
        // Checked here; resolved against the working directory once parsed.
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
        help: 'Rewrite markdown Zulip renders badly (tables without a blank line before, bold links) in what the server sends.',
      },
      true,
    ),
    ZULIP_MAX_MESSAGE_LENGTH: optionalInteger(
      {
        group: 'Messages',
        defaultText: 'the realm’s limit',
        help: 'Longest message to send, in characters after markdown fixes; send tools refuse a longer one, channel replies are split to fit.',
      },
      1,
      1_000_000,
    ),
    ZULIP_SEND_ONCE_WINDOW_MS: integer(
      {
        group: 'Messages',
        help: 'A send with the same text to the same conversation as one that succeeded within this many milliseconds is refused, with the earlier message’s id and link, unless the call says repeat; 0 turns it off.',
      },
      0,
      86_400_000,
      300_000,
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
    ZMCP_STATUS_PORT: optionalInteger(
      {
        group: 'Status page',
        flag: '--status-port',
        flagArg: '<port>',
        defaultText: 'off',
        help: 'Serve the operator’s status page and /metrics (Prometheus) on this port; 0 picks a free one. The page’s URL is logged at start.',
      },
      0,
      65_535,
    ),
    ZMCP_STATUS_HOST: textWithDefault(
      {
        group: 'Status page',
        flag: '--status-host',
        flagArg: '<host>',
        defaultText: '127.0.0.1',
        help: 'Address the status page listens on; anything but loopback requires ZMCP_STATUS_TOKEN.',
      },
      '127.0.0.1',
      matching(/^[A-Za-z0-9.:[\]-]+$/, 'expected a host name or IP address'),
    ),
    ZMCP_STATUS_TOKEN: text(
      {
        group: 'Status page',
        defaultText: 'unset',
        help: 'Bearer token the status page and /metrics require (16+ characters; a browser opens /?token=… once). Secret; required beyond loopback.',
        secret: true,
      },
      matching(/^[\x21-\x7e]{16,}$/, 'expected at least 16 printable characters without spaces'),
    ),
  };
}

/** The shared settings' entries, keyed by variable, to spread into a bin's settings shape. */
export type ServerSettingsShape = ReturnType<typeof shapeOf>;

/** The shared settings a bin declares: the Zulip account's and `K` (see `only`). */
export type DeclaredServerSettings<K extends SharedSettingName = SharedSettingName> = Pick<
  ServerSettingsShape,
  AccountSettingName | K
>;

/** The parsed values of a shape that holds the shared settings a bin declares. */
export type ServerSettingValues<K extends SharedSettingName = SharedSettingName> = Pick<
  SettingValues<ServerSettingsShape>,
  AccountSettingName | K
>;

/** Where {@link ServerSettingsKit.resolve} reads what is not a setting. */
export interface ResolveContext {
  /** The bin's environment: `HOME` expands `~`. */
  env: Readonly<Record<string, string | undefined>>;
  /** Where relative upload roots start. Default: the working directory. */
  cwd?: string | undefined;
  /** Whether a default state directory exists. Default: the file system's answer. */
  exists?: ((path: string) => boolean) | undefined;
}

/** The settings every zmcp server shares, declared once, for one bin: from {@link serverSettings}. */
export interface ServerSettingsKit<K extends SharedSettingName = SharedSettingName> {
  /**
   * The entries the bin declares: the Zulip account (`@zmcp/cli`'s), then state, message lines,
   * access, uploads, messages, timeouts and logging (those of `only`, when given). A bin spreads
   * them into its own shape.
   */
  readonly shape: DeclaredServerSettings<K>;
  /**
   * The checks across the shared settings, from the bin's `refine`: the Zulip site pair (cli's
   * `checkZulipSite`) and, for a bin that cannot run read-only, `ZULIP_READ_ONLY` on.
   */
  check(
    values: ServerSettingValues<K>,
    report: (key: keyof DeclaredServerSettings<K> & string, message: string) => void,
  ): void;
  /**
   * The parsed values as {@link ServerSettings}: `~` expanded by `HOME`, the system time zone for an
   * unset one, upload roots resolved against `cwd`, the state directory chosen; a setting the bin
   * does not declare at its default.
   */
  resolve(values: ServerSettingValues<K>, context: ResolveContext): ServerSettings;
}

/**
 * The settings every zmcp server shares (`ZULIP_STATE_DIR`, `ZULIP_STATE_URL`, `ZULIP_SESSION_ID`, `AGENT_TIMEZONE`,
 * `ZULIP_READ_ONLY`, `ZULIP_TOOLSETS`, the allowlists, uploads, message limits, deadlines,
 * `ZMCP_LOG_LEVEL` and the Zulip account), each with one help text, for the bin `options` describe;
 * with `only`, the Zulip account's and those named.
 *
 * @throws ServerKitError `SERVER_KIT_INVALID_OPTIONS` for an empty bin name, an unknown toolset, a
 *   default toolset the bin does not serve, a name in `only` that is not a shared setting a bin may
 *   choose, or `ZULIP_TOOLSETS` (`ZULIP_READ_ONLY`) declared without `toolsets` (`readOnly`).
 */
export function serverSettings<K extends SharedSettingName = SharedSettingName>(
  options: ServerSettingsOptions<K>,
): ServerSettingsKit<K> {
  const full = shapeOf(options);
  const declared = declaredSettings(options, Object.keys(full));
  checkOptions(options, declared);
  const { readOnly, bin } = options;
  // What the bin does not declare is read as if unset: each setting's own default.
  const defaults: Record<string, unknown> = {};
  const shape: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(full)) {
    if (declared.has(name)) shape[name] = schema;
    else defaults[name] = schema.parse(undefined);
  }
  return {
    shape: shape as DeclaredServerSettings<K>,
    check(values, report) {
      checkZulipSite(values, report);
      // Ignoring it would serve writes to an operator who asked for none.
      const given = values as Partial<ServerSettingValues>;
      if (
        given.ZMCP_STATUS_PORT !== undefined &&
        given.ZMCP_STATUS_HOST !== undefined &&
        !isLoopbackHost(given.ZMCP_STATUS_HOST) &&
        given.ZMCP_STATUS_TOKEN === undefined
      ) {
        (report as (key: string, message: string) => void)(
          'ZMCP_STATUS_TOKEN',
          `is required when the status page's host is not loopback (host ${given.ZMCP_STATUS_HOST})`,
        );
      }
      if (readOnly !== undefined && readOnly !== 'served' && given.ZULIP_READ_ONLY === true) {
        (report as (key: string, message: string) => void)(
          'ZULIP_READ_ONLY',
          `${bin} cannot run read-only (${readOnly.because}); use ${readOnly.instead} with ZULIP_READ_ONLY for a read-only server`,
        );
      }
    },
    resolve(declaredValues, context) {
      const values = { ...defaults, ...declaredValues } as ServerSettingValues;
      const home = homeDirectory(context.env);
      const cwd = context.cwd ?? process.cwd();
      const state = stateDirectory(values.ZULIP_STATE_DIR, home, context.exists ?? existsSync);
      return {
        zulip: {
          site: values.ZULIP_REALM ?? values.ZULIP_SITE,
          email: values.ZULIP_EMAIL,
          apiKey: values.ZULIP_API_KEY,
          rcPath: values.ZULIP_RC_PATH === undefined ? undefined : expandHome(values.ZULIP_RC_PATH, home),
          allowInsecureHttp: values.ZULIP_ALLOW_INSECURE_HTTP,
        },
        stateDir: state.dir,
        stateDirSource: state.source,
        stateUrl: blankAsUnset(values.ZULIP_STATE_URL),
        sessionId: values.ZULIP_SESSION_ID,
        timezone: values.AGENT_TIMEZONE ?? Intl.DateTimeFormat().resolvedOptions().timeZone,
        timestampStyle: values.AGENT_TIMESTAMP_STYLE,
        readOnly: values.ZULIP_READ_ONLY,
        toolsets: values.ZULIP_TOOLSETS,
        privateStreams: values.ZULIP_PRIVATE_STREAMS,
        writeStreams: values.ZULIP_WRITE_STREAMS,
        writeDms: values.ZULIP_WRITE_DMS,
        admissionList: values.ZULIP_ALLOWED_USERS,
        admissionSetting: 'ZULIP_ALLOWED_USERS',
        uploadRoots: parseUploadRoots(values.ZULIP_UPLOAD_ROOTS, cwd),
        uploadMaxBytes: values.ZULIP_UPLOAD_MAX_BYTES,
        markdownAutofix: values.ZULIP_MARKDOWN_AUTOFIX,
        maxMessageLength: values.ZULIP_MAX_MESSAGE_LENGTH,
        sendOnceWindowMs: values.ZULIP_SEND_ONCE_WINDOW_MS,
        pageBudgetBytes: values.ZULIP_PAGE_BUDGET_BYTES,
        requestTimeoutMs: values.ZULIP_REQUEST_TIMEOUT_MS,
        toolDeadlineMs: values.ZULIP_TOOL_DEADLINE_MS,
        logLevel: values.ZMCP_LOG_LEVEL,
        status: {
          port: values.ZMCP_STATUS_PORT,
          host: values.ZMCP_STATUS_HOST,
          token: values.ZMCP_STATUS_TOKEN,
        },
      };
    },
  };
}

function blankAsUnset(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

/** The default state directory, and the one the earlier TypeScript server used by default. */
const DEFAULT_STATE_DIR = '~/.zmcp/state';
const EARLIER_DEFAULT_STATE_DIR = '~/.zulip_mcp_state';

function stateDirectory(
  value: string | undefined,
  home: string,
  exists: (path: string) => boolean,
): { dir: string; source: ServerSettings['stateDirSource'] } {
  if (value !== undefined) return { dir: expandHome(value, home), source: 'setting' };
  const dir = expandHome(DEFAULT_STATE_DIR, home);
  const earlier = expandHome(EARLIER_DEFAULT_STATE_DIR, home);
  // A volume mounted where the earlier server kept its state keeps serving; our files go into
  // per-account folders there and never touch the earlier server's own files.
  if (!exists(dir) && exists(earlier)) return { dir: earlier, source: 'earlier default' };
  return { dir, source: 'default' };
}
