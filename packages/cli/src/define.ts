import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { CliError, isCliError } from './errors.js';
import { createRedactor } from './logging.js';
import { quoteForError } from './quote.js';
import { flagSwitch, type Setting, type SettingInfo, settingMetaOf } from './settings.js';

/** The settings of one bin, keyed by environment variable (or, for a flag-only switch, by the flag). */
export type SettingsShape = Record<string, Setting<unknown>>;

const builtins = {
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
};

/** Every bin's settings end with `--help` (`-h`) and `--version` (`-V`). */
type WithBuiltins<S extends SettingsShape> = S & typeof builtins;

/** The key of a setting: its environment variable, or the flag of a flag-only setting. */
export type SettingKey<S extends SettingsShape> = keyof WithBuiltins<S> & string;

/** The parsed values of a settings shape, `--help` and `--version` included. */
export type SettingValues<S extends SettingsShape> = {
  [K in keyof WithBuiltins<S>]: z.output<WithBuiltins<S>[K]>;
};

/** Reports one problem of a setting: the line names the variable or flag it came from. */
export type ReportProblem<S extends SettingsShape> = (key: SettingKey<S>, message: string) => void;

/** A variable of an earlier server: read as its replacement here, or refused with a pointer. */
export interface LegacySetting {
  /** The earlier variable. */
  name: string;
  /** The server that used it. */
  origin: string;
  /** The setting that replaces it (for a refused one, what to use instead, in words). */
  replacement: string;
  /** Read as `replacement` (`alias`), or a start-up error naming `replacement` (`refused`). */
  handling: 'alias' | 'refused';
  /** For a refused variable: what to do instead. */
  instead?: string;
}

/** How one bin's settings are read, beyond the settings themselves. */
export interface SettingsOptions<S extends SettingsShape> {
  /** The bin's name, as problems and `--help` call it (`zulip-mcp`). */
  bin: string;
  /** Variables of earlier servers, read as their replacements or refused, in this order. */
  legacy?: readonly LegacySetting[];
  /** Checks across settings, run once every value is valid (a conflict, a pair set together). */
  refine?: (values: SettingValues<S>, report: ReportProblem<S>) => void;
  /**
   * Checks on which settings were given at all (by variable, earlier name or flag), run even
   * when some value is bad, so that their problems are reported beside every other.
   */
  checkGiven?: (given: ReadonlySet<SettingKey<S>>, report: ReportProblem<S>) => void;
  /**
   * The error a bad configuration is thrown as, built from the `CLI_CONFIG_INVALID` error (a
   * bin's own error class and code); keep that error as its `cause`, which is how
   * {@link configurationProblems} and `defineMain` recognise it. Default: the `CliError` itself.
   */
  configError?: (err: CliError) => Error;
}

/** What `--help` says around the settings. */
export interface HelpTextOptions {
  /** Lines before the usage line: what the bin does. */
  about: readonly string[];
  /** Lines after the settings (where to read more, exit codes). */
  footer: readonly string[];
}

type Env = Readonly<Record<string, string | undefined>>;

/** The shortest value hidden wherever it turns up: shorter ones would blank out ordinary words. */
const MIN_HIDDEN_LENGTH = 16;

/** Empty variables count as unset. */
function isSet(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== '';
}

function invalidDefinition(setting: string, message: string): CliError {
  return new CliError('CLI_SETTINGS_INVALID', `setting ${setting}: ${message}`, { details: { setting } });
}

function settingLabel(setting: SettingInfo): string {
  if (setting.name.startsWith('-'))
    return setting.flagArg ? `${setting.name} ${setting.flagArg}` : setting.name;
  const flag = setting.flag ? `, ${setting.flag}${setting.flagArg ? ` ${setting.flagArg}` : ''}` : '';
  return `${setting.name}${flag}`;
}

/** The first line of every configuration error; {@link invalidConfigurationMessage} builds the whole. */
const INVALID = 'Invalid configuration:';

/** The message of a configuration error: a heading, then one indented line per problem. */
export function invalidConfigurationMessage(problems: readonly string[]): string {
  return `${INVALID}\n  ${problems.join('\n  ')}`;
}

/**
 * The problems of a configuration error: `details.problems` of a `CLI_CONFIG_INVALID` error, or
 * of one in its `cause` chain (a bin's own error wrapping it); `undefined` for any other error.
 */
export function configurationProblems(err: unknown): readonly string[] | undefined {
  let at = err;
  for (let depth = 0; typeof at === 'object' && at !== null && depth < 8; depth++) {
    if (isCliError(at, 'CLI_CONFIG_INVALID')) {
      const problems = at.details?.problems;
      return Array.isArray(problems) ? (problems as string[]) : [at.message];
    }
    at = (at as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * The settings of one bin, from {@link defineSettings}: one zod schema over the environment and
 * the flags, and the `--help` text, README table and `.env.example` check generated from it.
 */
export class Settings<S extends SettingsShape> {
  /** The bin's name. */
  readonly bin: string;
  /** The one schema: every key a variable (or flag-only switch), every input the raw string. */
  readonly schema: z.ZodObject<WithBuiltins<S>>;
  readonly #checked: z.ZodType<SettingValues<S>>;
  readonly #infos: readonly SettingInfo[];
  readonly #flags: ReadonlyMap<string, { key: SettingKey<S>; takesValue: boolean }>;
  readonly #legacy: readonly LegacySetting[];
  readonly #checkGiven: SettingsOptions<S>['checkGiven'];
  readonly #configError: (err: CliError) => Error;

  constructor(shape: S, options: SettingsOptions<S>) {
    for (const name of Object.keys(builtins)) {
      if (Object.hasOwn(shape, name)) throw invalidDefinition(name, 'is built in; leave it out of the shape');
    }
    this.bin = options.bin;
    this.schema = z.object({ ...shape, ...builtins });
    const refine = options.refine;
    this.#checked = (refine === undefined
      ? this.schema
      : this.schema.superRefine((values, ctx) =>
          refine(values as SettingValues<S>, (key, message) =>
            ctx.addIssue({ code: 'custom', path: [key], message }),
          ),
        )) as unknown as z.ZodType<SettingValues<S>>;
    this.#infos = Object.entries(this.schema.shape).map(([name, schema]) => {
      const meta = settingMetaOf(schema as z.ZodType);
      if (meta === undefined)
        throw invalidDefinition(name, 'has no help entry (build it with a setting builder)');
      if (meta.secret === true && meta.flag !== undefined)
        throw invalidDefinition(name, 'is a secret and cannot have a flag (argv is visible to every user)');
      if (name.startsWith('-') && meta.flag !== name)
        throw invalidDefinition(name, 'is a flag-only setting and must have itself as its flag');
      return Object.freeze({
        name,
        flag: meta.flag,
        flagArg: meta.flagArg,
        defaultText: meta.defaultText,
        help: meta.help,
        group: meta.group,
        secret: meta.secret ?? false,
      });
    });
    const flags = new Map<string, { key: SettingKey<S>; takesValue: boolean }>();
    const addFlag = (flag: string, key: string, takesValue: boolean) => {
      if (flags.has(flag))
        throw invalidDefinition(key, `its flag ${flag} is taken by ${flags.get(flag)?.key}`);
      flags.set(flag, { key: key as SettingKey<S>, takesValue });
    };
    for (const info of this.#infos) {
      if (info.flag !== undefined) addFlag(info.flag, info.name, info.flagArg !== undefined);
    }
    addFlag('-h', '--help', false);
    addFlag('-V', '--version', false);
    this.#flags = flags;
    this.#legacy = options.legacy ?? [];
    for (const legacy of this.#legacy) {
      if (legacy.handling === 'alias' && !Object.hasOwn(shape, legacy.replacement))
        throw invalidDefinition(legacy.name, `is read as ${legacy.replacement}, which is no setting`);
    }
    this.#checkGiven = options.checkGiven;
    this.#configError = options.configError ?? ((err) => err);
  }

  /** Every setting in table order, as `--help`, the README and `.env.example` list them. */
  readonly list = (): SettingInfo[] => this.#infos.map((info) => ({ ...info }));

  /** Names of every environment variable the bin reads (flag-only settings left out). */
  readonly variableNames = (): string[] =>
    this.#infos.map((s) => s.name).filter((name) => !name.startsWith('-'));

  /**
   * Parses the environment and the command-line flags (a flag wins over its variable) into the
   * settings' values. Empty variables count as unset. Earlier servers' variables are read as
   * their replacements; set beside a replacement to a value that means something else, or
   * refused, they are problems like any other. A flag's value may follow it or be given as
   * `--flag=value`; a switch whose setting is a variable takes `--flag=off` too.
   *
   * @throws CliError `CLI_CONFIG_INVALID` naming every bad variable or flag and what was
   *   expected, never a secret's value (not even one pasted into another variable, nor the
   *   user-info of a URL), nor any value a secret setting would accept, since it may be one;
   *   `details.problems` lists the lines. With `configError`, the error it builds from that one.
   */
  readonly parse = (env: Env, argv: readonly string[]): SettingValues<S> => {
    const problems: string[] = [];
    const input: Record<string, string | undefined> = {};
    const source: Record<string, string> = {};
    for (const name of this.variableNames()) {
      const value = env[name];
      if (isSet(value)) {
        input[name] = value;
        source[name] = name;
      }
    }
    this.#readLegacy(env, input, source, problems);
    this.#readFlags(argv, input, source, problems);

    const result = this.#checked.safeParse(input);
    const issues: { key: string; message: string }[] = result.success
      ? []
      : result.error.issues.map((issue) => ({ key: String(issue.path[0] ?? ''), message: issue.message }));
    this.#checkGiven?.(new Set(Object.keys(input) as SettingKey<S>[]), (key, message) =>
      issues.push({ key, message }),
    );

    const secretKeys = new Set(this.#infos.filter((s) => s.secret).map((s) => s.name));
    const hidden = this.#hiddenValues(input, argv);
    const redact = createRedactor(hidden);
    const reported = new Set<string>();
    for (const { key, message } of issues) {
      const raw = input[key];
      const shown = raw !== undefined && !secretKeys.has(key) ? ` (got ${quoteForError(raw, hidden)})` : '';
      const line = `${source[key] ?? key}: ${message}${shown}`;
      if (reported.has(line)) continue;
      reported.add(line);
      problems.push(line);
    }
    if (problems.length > 0 || !result.success) {
      // Whole lines, not only the values they quote: a check's message may name the value too.
      const lines = problems.map(redact);
      const err = new CliError('CLI_CONFIG_INVALID', invalidConfigurationMessage(lines), {
        details: { problems: lines },
      });
      throw this.#configError(err);
    }
    return result.data;
  };

  /**
   * What no problem may show: every secret setting's value, and every part of any value given
   * (the whole value, its words, its runs of letters and digits) that a secret setting of this
   * bin would accept as its own, since a secret may sit in the wrong variable while its own is
   * unset (or come from a file). Only parts of {@link MIN_HIDDEN_LENGTH} characters or more:
   * shorter ones would blank out ordinary words.
   */
  #hiddenValues(input: Readonly<Record<string, string | undefined>>, argv: readonly string[]): string[] {
    const hidden = new Set<string>();
    const secrets = this.#infos.filter((s) => s.secret).map((s) => this.schema.shape[s.name] as z.ZodType);
    for (const info of this.#infos) {
      const value = input[info.name]?.trim();
      if (info.secret && value !== undefined && value.length >= MIN_HIDDEN_LENGTH) hidden.add(value);
    }
    if (secrets.length === 0) return [...hidden].sort((a, b) => b.length - a.length);
    for (const raw of [...Object.values(input), ...argv]) {
      if (raw === undefined) continue;
      const parts = new Set([raw.trim(), ...raw.split(/\s+/), ...raw.split(/[^A-Za-z0-9]+/)]);
      for (const part of parts) {
        if (part.length < MIN_HIDDEN_LENGTH || hidden.has(part)) continue;
        if (secrets.some((schema) => schema.safeParse(part).success)) hidden.add(part);
      }
    }
    // Longest first, so a part holding another is blanked whole.
    return [...hidden].sort((a, b) => b.length - a.length);
  }

  #readLegacy(
    env: Env,
    input: Record<string, string | undefined>,
    source: Record<string, string>,
    problems: string[],
  ): void {
    for (const legacy of this.#legacy) {
      const value = env[legacy.name];
      if (!isSet(value)) continue;
      if (legacy.handling === 'refused') {
        problems.push(`${legacy.name}: not supported (a setting of ${legacy.origin}); ${legacy.instead}`);
        continue;
      }
      const key = legacy.replacement;
      const current = input[key];
      if (current === undefined) {
        input[key] = value;
        source[key] = legacy.name;
        continue;
      }
      const field = this.schema.shape[key] as z.ZodType;
      const ours = field.safeParse(current);
      const theirs = field.safeParse(value);
      if (!ours.success || !theirs.success || !isDeepStrictEqual(ours.data, theirs.data)) {
        problems.push(
          `${legacy.name}: conflicts with ${key} (${legacy.name} is the name ${legacy.origin} used for it); set only ${key}`,
        );
      }
    }
  }

  #readFlags(
    argv: readonly string[],
    input: Record<string, string | undefined>,
    source: Record<string, string>,
    problems: string[],
  ): void {
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i] as string;
      const eq = arg.indexOf('=');
      const inline = arg.startsWith('--') && eq > 0;
      const name = inline ? arg.slice(0, eq) : arg;
      const flag = this.#flags.get(name);
      if (flag === undefined) {
        if (arg.startsWith('-')) {
          problems.push(`${name}: unknown option (${this.bin} --help lists them)`);
          // Its value is skipped unseen: it may be a secret someone tried to pass as a flag.
          if (eq < 0 && argv[i + 1] !== undefined && !argv[i + 1]?.startsWith('-')) i++;
        } else problems.push(`${quoteForError(arg)}: unexpected argument (${this.bin} takes only options)`);
        continue;
      }
      let value: string;
      if (inline) {
        // A flag-only switch has no value to give; a variable's switch (--read-only=off) has.
        if (!flag.takesValue && flag.key.startsWith('-')) {
          problems.push(`${name}: takes no value`);
          continue;
        }
        value = arg.slice(eq + 1);
      } else if (flag.takesValue) {
        const next = argv[i + 1];
        if (next === undefined || next.startsWith('--')) {
          problems.push(`${name}: expects a value`);
          continue;
        }
        value = next;
        i++;
      } else value = 'true';
      input[flag.key] = value;
      source[flag.key] = name;
    }
  }

  /** The `--help` text: what the bin does, usage, every setting with its flag, default and help, then `footer`. */
  readonly helpText = (options: HelpTextOptions): string => {
    const settings = this.#infos;
    const width = Math.max(...settings.map((s) => settingLabel(s).length)) + 2;
    const lines = [
      ...options.about,
      '',
      `Usage: ${this.bin} [options]`,
      '',
      'Settings are environment variables; where a flag is shown, it overrides the variable.',
      'Boolean variables take 1/0, true/false, yes/no or on/off. Empty variables count as unset.',
    ];
    const aliases = this.#legacy.filter((s) => s.handling === 'alias');
    if (aliases.length > 0) {
      lines.push(
        `Earlier servers' names are read as their replacements: ${aliases
          .map((s) => `${s.name} as ${s.replacement}`)
          .join(', ')}.`,
      );
    }
    let group = '';
    for (const setting of settings) {
      if (setting.group !== group) {
        group = setting.group;
        lines.push('', `${group}:`);
      }
      const fallback = setting.defaultText ? ` [default: ${setting.defaultText}]` : '';
      lines.push(`  ${settingLabel(setting).padEnd(width)}${setting.help}${fallback}`);
    }
    lines.push('', ...options.footer, '');
    return lines.join('\n');
  };

  /** The README's settings table, in markdown, generated from the same entries as `--help`. */
  readonly markdownTable = (): string => {
    const rows = this.#infos.map((s) => {
      const variable = s.name.startsWith('-') ? '' : `\`${s.name}\``;
      const flag = s.flag ? `\`${s.flag}${s.flagArg ? ` ${s.flagArg}` : ''}\`` : '';
      return `| ${variable} | ${flag} | ${s.defaultText} | ${s.help.replace(/\|/g, '\\|')} |`;
    });
    return ['| variable | flag | default | what it does |', '|---|---|---|---|', ...rows].join('\n');
  };

  /**
   * What is wrong with a hand-written `.env.example` (lines `NAME=value`, commented out or not):
   * a variable it leaves out, one that is no setting, one assigned twice. Empty when it is right.
   */
  readonly envExampleProblems = (text: string): string[] => {
    const assigned = [...text.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1] as string);
    const names = this.variableNames();
    const problems: string[] = [];
    for (const name of names) if (!assigned.includes(name)) problems.push(`${name}: missing`);
    const seen = new Set<string>();
    for (const name of assigned) {
      if (!names.includes(name)) problems.push(`${name}: not a setting of ${this.bin}`);
      else if (seen.has(name)) problems.push(`${name}: assigned more than once`);
      seen.add(name);
    }
    return problems;
  };
}

/**
 * Defines the settings of one bin from its shape (each entry built with a setting builder such
 * as {@link text} or {@link integer}); `--help` (`-h`) and `--version` (`-V`) are added at the end.
 *
 * @throws CliError `CLI_SETTINGS_INVALID` when an entry was not built with a builder, a flag is
 *   given twice or to a secret, a flag-only setting is not named by its flag, or an earlier name
 *   is read as a setting that does not exist.
 */
export function defineSettings<S extends SettingsShape>(shape: S, options: SettingsOptions<S>): Settings<S> {
  return new Settings(shape, options);
}
