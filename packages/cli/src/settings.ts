import { parseReadOnlyFlag, parseStreamAllowlist, type StreamAllowlist } from '@zmcp/core';
import { z } from 'zod';

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
  /** The heading the setting is listed under. */
  group: string;
  /** Secret: never echoed in an error, never accepted as a flag. */
  secret: boolean;
}

/** The help entry a setting is built with; `name` is its key in the settings shape. */
export interface SettingMeta {
  group: string;
  help: string;
  /** Default, as a reader should see it (`''` for none worth saying). */
  defaultText: string;
  /** The flag that overrides the variable (`--port`), or the flag of a flag-only setting. */
  flag?: string;
  /** Placeholder of the flag's value (`<port>`); leave unset for a switch. */
  flagArg?: string;
  /** Never echoed in an error; a secret cannot have a flag (argv is visible to every local user). */
  secret?: boolean;
}

/** A help entry whose default text the builder can derive from the fallback value. */
export type DerivedSettingMeta = Omit<SettingMeta, 'defaultText'> & { defaultText?: string };

/** One setting: a zod schema from the raw string (or unset) to its value, with its help entry. */
export type Setting<T> = z.ZodType<T, string | undefined>;

/** Checks a raw value: `undefined` when it is acceptable, else what was expected ("expected ..."). */
export type Check = (raw: string) => string | undefined;

const registry = z.registry<SettingMeta>();

/** The help entry of a setting schema built here, if it was. */
export function settingMetaOf(schema: z.ZodType): SettingMeta | undefined {
  return registry.get(schema);
}

const PROBLEM = Symbol('setting problem');

/** What a {@link setting} parser returns for a bad value: what was expected instead. */
export interface SettingProblem {
  readonly [PROBLEM]: true;
  readonly expected: string;
}

/** The answer of a {@link setting} parser to a bad value: `expected` says what would be good. */
export function problem(expected: string): SettingProblem {
  return Object.freeze({ [PROBLEM]: true as const, expected });
}

function isProblem(value: unknown): value is SettingProblem {
  return typeof value === 'object' && value !== null && PROBLEM in value;
}

function build<T>(meta: SettingMeta, read: (raw: string) => T | SettingProblem, fallback: T): Setting<T> {
  return z
    .string()
    .optional()
    .transform((raw, ctx): T => {
      if (raw === undefined) return fallback;
      const value = read(raw);
      if (isProblem(value)) {
        ctx.addIssue({ code: 'custom', message: value.expected });
        return z.NEVER;
      }
      return value;
    })
    .register(registry, meta);
}

/**
 * A setting read by `parse`: the value, or {@link problem} naming what was expected. Unset
 * (and empty) gives `fallback`.
 */
export function setting<T>(
  meta: SettingMeta,
  parse: (raw: string) => T | SettingProblem,
  fallback: T,
): Setting<T> {
  return build(meta, parse, fallback);
}

/** A string kept as written; `check` may refuse it. Unset stays `undefined`. */
export function text(meta: SettingMeta, check?: Check): Setting<string | undefined> {
  return build<string | undefined>(
    meta,
    (raw) => {
      const found = check?.(raw);
      return found === undefined ? raw : problem(found);
    },
    undefined,
  );
}

/** A string kept as written, `fallback` when unset; `check` may refuse it. */
export function textWithDefault(meta: SettingMeta, fallback: string, check: Check): Setting<string> {
  return build(
    meta,
    (raw) => {
      const found = check(raw);
      return found === undefined ? raw : problem(found);
    },
    fallback,
  );
}

/** A {@link Check} that accepts what `pattern` matches and otherwise says `expectedText`. */
export function matching(pattern: RegExp, expectedText: string): Check {
  return (raw) => (pattern.test(raw) ? undefined : expectedText);
}

/**
 * A setting read by a library's own parser (the one rule for its kind of value): a throw is
 * reported as `expectedText(err)`. Without `fallback`, unset stays `undefined`.
 */
export function parsedBy<T>(
  meta: SettingMeta,
  parse: (raw: string) => T,
  expectedText: (err: unknown) => string,
): Setting<T | undefined>;
export function parsedBy<T>(
  meta: SettingMeta,
  parse: (raw: string) => T,
  expectedText: (err: unknown) => string,
  fallback: T,
): Setting<T>;
export function parsedBy<T>(
  meta: SettingMeta,
  parse: (raw: string) => T,
  expectedText: (err: unknown) => string,
  fallback?: T,
): Setting<T | undefined> {
  return build<T | undefined>(
    meta,
    (raw) => {
      try {
        return parse(raw);
      } catch (err) {
        return problem(expectedText(err));
      }
    },
    fallback,
  );
}

const booleanExpected = 'expected one of 1/0, true/false, yes/no, on/off';

function readBoolean(raw: string): boolean | SettingProblem {
  try {
    return parseReadOnlyFlag(raw);
  } catch {
    return problem(booleanExpected);
  }
}

/**
 * A switch read by core's one boolean rule (1/0, true/false, yes/no, on/off; anything else is
 * refused, never taken as off). The default text is `on` or `off` unless given.
 */
export function strictBoolean(meta: DerivedSettingMeta, fallback: boolean): Setting<boolean> {
  return build(
    { ...meta, defaultText: meta.defaultText ?? (fallback ? 'on' : 'off') },
    readBoolean,
    fallback,
  );
}

/** A switch whose absence means "the library's default" rather than on or off. */
export function optionalBoolean(meta: SettingMeta): Setting<boolean | undefined> {
  return build<boolean | undefined>(
    meta,
    (raw) => (raw.trim() === '' ? undefined : readBoolean(raw)),
    undefined,
  );
}

/** A flag-only switch (`--demo`): `true` when the flag is given. It takes no value. */
export function flagSwitch(meta: SettingMeta & { flag: string }): Setting<boolean> {
  return z
    .string()
    .optional()
    .transform((raw) => raw !== undefined)
    .register(registry, meta);
}

function readInteger(raw: string, min: number, max: number): number | SettingProblem {
  const trimmed = raw.trim();
  const value = /^\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  return Number.isSafeInteger(value) && value >= min && value <= max
    ? value
    : problem(`expected a whole number from ${min} to ${max}`);
}

/** A whole number from `min` to `max` (digits only: no sign, exponent or fraction). */
export function integer(
  meta: DerivedSettingMeta,
  min: number,
  max: number,
  fallback: number,
): Setting<number> {
  return build(
    { ...meta, defaultText: meta.defaultText ?? String(fallback) },
    (raw) => readInteger(raw, min, max),
    fallback,
  );
}

/** A whole number from `min` to `max`; unset stays `undefined`. */
export function optionalInteger(meta: SettingMeta, min: number, max: number): Setting<number | undefined> {
  return build<number | undefined>(meta, (raw) => readInteger(raw, min, max), undefined);
}

/**
 * One of `values`, compared trimmed and case-insensitively; `aliases` maps other words to a
 * value (an earlier server's name for it).
 */
export function oneOf<const T extends string>(
  meta: DerivedSettingMeta,
  values: readonly T[],
  fallback: T,
  aliases: Readonly<Record<string, T>> = {},
): Setting<T> {
  return build(
    { ...meta, defaultText: meta.defaultText ?? fallback },
    (raw) => {
      const word = raw.trim().toLowerCase();
      if (Object.hasOwn(aliases, word)) return aliases[word] as T;
      return (values as readonly string[]).includes(word)
        ? (word as T)
        : problem(`expected one of ${values.join(', ')}`);
    },
    fallback,
  );
}

/** A stream allowlist read by core's one rule for it (names or ids, comma list, or `__ALL__`). */
export function streamAllowlist(meta: SettingMeta): Setting<StreamAllowlist | undefined> {
  return build<StreamAllowlist | undefined>(
    meta,
    (raw) => {
      try {
        return parseStreamAllowlist(raw, 'it');
      } catch (err) {
        return problem((err as Error).message.replace(/^it: /, ''));
      }
    },
    undefined,
  );
}

/** The items of a comma list, trimmed, empty ones dropped. */
export function splitList(raw: string): string[] {
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}
