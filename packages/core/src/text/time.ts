import { ZmcpError } from '../errors.js';

/**
 * How a message time is written: `iso` is the full local time with its UTC offset
 * (`2026-09-14T11:42:52+03:00`), `short` is `11:42` today, `09-14 11:42` earlier this year and
 * `2025-09-14 11:42` before that, `none` writes nothing.
 */
export type TimeStyle = 'iso' | 'short' | 'none';

/** Options for {@link formatTimestamp}. */
export interface FormatTimestampOptions {
  /** Default `iso`. */
  readonly style?: TimeStyle | undefined;
  /** IANA zone name (`Europe/Kyiv`, `UTC`). Default `UTC`. */
  readonly timeZone?: string | undefined;
  /** The reference instant for `short` ("today"). Default: the current time, read at each call. */
  readonly now?: Date | number | undefined;
}

/** A span of time: `start` inclusive, `end` exclusive (equal for a single instant). */
export interface DateRange {
  readonly start: Date;
  readonly end: Date;
}

/** Options for {@link parseDateRange}. */
export interface ParseDateRangeOptions {
  /** IANA zone that calendar words and dates are read in. Default `UTC`. */
  readonly timeZone?: string | undefined;
  /** The current instant, for `today`, `N days ago`, open range ends. Default: the current time. */
  readonly now?: Date | number | undefined;
}

// ---------------------------------------------------------------------------------------------
// Zones: UTC offsets through Intl, cached per 15-minute bucket (zone transitions fall on quarter
// hours in current tz data; a bucket whose two ends disagree is computed per instant instead).

const BUCKET_SECONDS = 900;
const MAX_CACHED_BUCKETS = 50_000;
const MAX_CACHED_ZONES = 64;

class Zone {
  readonly name: string;
  private readonly dtf: Intl.DateTimeFormat | undefined;
  private readonly offsets = new Map<number, number>();

  constructor(name: string, dtf: Intl.DateTimeFormat | undefined) {
    this.name = name;
    this.dtf = dtf;
  }

  /** Seconds to add to a UTC instant to get local wall time. */
  offset(sec: number): number {
    if (this.dtf === undefined) return 0;
    const bucket = Math.floor(sec / BUCKET_SECONDS);
    const cached = this.offsets.get(bucket);
    if (cached !== undefined) return cached;
    const a = this.compute(bucket * BUCKET_SECONDS);
    const b = this.compute(bucket * BUCKET_SECONDS + BUCKET_SECONDS - 1);
    if (a !== b) return this.compute(sec);
    if (this.offsets.size >= MAX_CACHED_BUCKETS) this.offsets.clear();
    this.offsets.set(bucket, a);
    return a;
  }

  private compute(sec: number): number {
    const parts = (this.dtf as Intl.DateTimeFormat).formatToParts(new Date(sec * 1000));
    let y = 0;
    let mo = 1;
    let d = 1;
    let h = 0;
    let mi = 0;
    let s = 0;
    let bc = false;
    for (const p of parts) {
      switch (p.type) {
        case 'year':
          y = Number(p.value);
          break;
        case 'month':
          mo = Number(p.value);
          break;
        case 'day':
          d = Number(p.value);
          break;
        case 'hour':
          h = Number(p.value) % 24;
          break;
        case 'minute':
          mi = Number(p.value);
          break;
        case 'second':
          s = Number(p.value);
          break;
        case 'era':
          bc = p.value.startsWith('B');
          break;
        default:
          break;
      }
    }
    if (bc) y = 1 - y;
    return utcSeconds(y, mo, d, h, mi, s) - sec;
  }
}

const UTC_ZONE = new Zone('UTC', undefined);
const zones = new Map<string, Zone>([['UTC', UTC_ZONE]]);

function getZone(name: string | undefined): Zone {
  const key = name ?? 'UTC';
  const cached = zones.get(key);
  if (cached !== undefined) return cached;
  let dtf: Intl.DateTimeFormat;
  try {
    dtf = new Intl.DateTimeFormat('en-US', {
      timeZone: key,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch (cause) {
    throw new ZmcpError(
      'CORE_INVALID_ARGUMENT',
      `Unknown time zone ${JSON.stringify(key)}: use an IANA name such as "Europe/Kyiv", "America/New_York" or "UTC".`,
      { cause, details: { timeZone: key } },
    );
  }
  const resolved = dtf.resolvedOptions().timeZone;
  const zone = resolved === 'UTC' || resolved === 'Etc/UTC' ? new Zone(key, undefined) : new Zone(key, dtf);
  if (zones.size >= MAX_CACHED_ZONES) {
    zones.clear();
    zones.set('UTC', UTC_ZONE);
  }
  zones.set(key, zone);
  return zone;
}

/** True when `name` is an IANA time zone this runtime knows (`Europe/Kyiv`, `UTC`). */
export function isValidTimeZone(name: string): boolean {
  try {
    getZone(name);
    return true;
  } catch {
    return false;
  }
}

function utcSeconds(y: number, mo: number, d: number, h = 0, mi = 0, s = 0): number {
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi, s, 0);
  return date.getTime() / 1000;
}

/**
 * The UTC instant of a local wall time. An ambiguous time (clocks going back) gives the earlier
 * instant; a time in a gap (clocks going forward) is shifted forward by the gap, so a midnight that
 * does not exist becomes the first instant of that day.
 */
function zonedToUtc(zone: Zone, y: number, mo: number, d: number, h = 0, mi = 0, s = 0): number {
  const local = utcSeconds(y, mo, d, h, mi, s);
  const before = zone.offset(local - 86_400);
  const after = zone.offset(local + 86_400);
  let best: number | undefined;
  for (const o of before === after ? [before] : [before, after]) {
    const t = local - o;
    if (zone.offset(t) === o && (best === undefined || t < best)) best = t;
  }
  return best ?? local - before;
}

// ---------------------------------------------------------------------------------------------
// Formatting

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

function pad4(n: number): string {
  if (n < 0) return `-${pad4(-n)}`;
  return n < 1000 ? String(n).padStart(4, '0') : String(n);
}

function formatOffset(offset: number): string {
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  const hh = Math.floor(abs / 3600);
  const mm = Math.floor((abs % 3600) / 60);
  const ss = abs % 60;
  return `${sign}${pad2(hh)}:${pad2(mm)}${ss === 0 ? '' : `:${pad2(ss)}`}`;
}

function toSeconds(value: Date | number | undefined, what: string): number {
  const ms = value === undefined ? Date.now() : typeof value === 'number' ? value : value.getTime();
  if (!Number.isFinite(ms)) {
    throw new ZmcpError('CORE_INVALID_ARGUMENT', `${what} must be a valid date or epoch milliseconds.`, {
      details: { [what]: String(value) },
    });
  }
  return Math.floor(ms / 1000);
}

/** A reusable formatter for one style and zone; the hot path of the message line. */
export type TimestampFormatter = (unixSeconds: number) => string;

/**
 * Builds a reusable timestamp formatter for one style, zone and reference time: the zone is
 * resolved once, so formatting many timestamps costs no Intl call per timestamp once warm.
 *
 * @throws `CORE_INVALID_ARGUMENT` for an unknown zone or style, or an invalid `now`.
 */
export function createTimestampFormatter(options: FormatTimestampOptions = {}): TimestampFormatter {
  const style = options.style ?? 'iso';
  const zone = getZone(options.timeZone);
  if (style === 'none') return () => '';
  if (style === 'iso') {
    // The messages of one page mostly share a day and an offset: each is written once.
    let lastDay = Number.NaN;
    let dayText = '';
    let lastOffset = Number.NaN;
    let offsetText = '';
    return (unixSeconds) => {
      const sec = checkSeconds(unixSeconds);
      const offset = zone.offset(sec);
      const local = sec + offset;
      const day = Math.floor(local / 86_400);
      if (day !== lastDay) {
        const t = new Date(day * 86_400_000);
        dayText = `${pad4(t.getUTCFullYear())}-${pad2(t.getUTCMonth() + 1)}-${pad2(t.getUTCDate())}T`;
        lastDay = day;
      }
      if (offset !== lastOffset) {
        offsetText = formatOffset(offset);
        lastOffset = offset;
      }
      const inDay = local - day * 86_400;
      const h = Math.floor(inDay / 3600);
      const mi = Math.floor((inDay % 3600) / 60);
      return `${dayText}${pad2(h)}:${pad2(mi)}:${pad2(inDay % 60)}${offsetText}`;
    };
  }
  if (style !== 'short') {
    throw new ZmcpError(
      'CORE_INVALID_ARGUMENT',
      `Unknown time style ${JSON.stringify(style)}: use iso, short or none.`,
      {
        details: { style },
      },
    );
  }
  // A fixed `now` is read once; without one, "today" follows the clock, so a long-lived
  // formatter does not go stale at midnight.
  const fixedNow = options.now === undefined ? undefined : toSeconds(options.now, 'now');
  let cachedFor = Number.NaN;
  let today = 0;
  let thisYear = 0;
  return (unixSeconds) => {
    const sec = checkSeconds(unixSeconds);
    const nowSec = fixedNow ?? Math.floor(Date.now() / 1000);
    if (nowSec !== cachedFor) {
      const nowLocal = nowSec + zone.offset(nowSec);
      today = Math.floor(nowLocal / 86_400);
      thisYear = new Date(nowLocal * 1000).getUTCFullYear();
      cachedFor = nowSec;
    }
    const local = sec + zone.offset(sec);
    const t = new Date(local * 1000);
    const hm = `${pad2(t.getUTCHours())}:${pad2(t.getUTCMinutes())}`;
    if (Math.floor(local / 86_400) === today) return hm;
    const md = `${pad2(t.getUTCMonth() + 1)}-${pad2(t.getUTCDate())}`;
    const y = t.getUTCFullYear();
    return y === thisYear ? `${md} ${hm}` : `${pad4(y)}-${md} ${hm}`;
  };
}

function checkSeconds(unixSeconds: number): number {
  if (typeof unixSeconds !== 'number' || !Number.isFinite(unixSeconds)) {
    throw new ZmcpError(
      'CORE_INVALID_ARGUMENT',
      `Timestamp must be a finite number of Unix seconds, got ${String(unixSeconds)}.`,
      {
        details: { timestamp: String(unixSeconds) },
      },
    );
  }
  return Math.floor(unixSeconds);
}

/**
 * Writes a Unix timestamp (seconds) in the given style and IANA zone, DST-correct
 * (see {@link TimeStyle}).
 *
 * @throws `CORE_INVALID_ARGUMENT` for a non-finite timestamp, an unknown zone or style, or an
 *   invalid `now`.
 */
export function formatTimestamp(unixSeconds: number, options: FormatTimestampOptions = {}): string {
  return createTimestampFormatter(options)(unixSeconds);
}

// ---------------------------------------------------------------------------------------------
// Natural dates

const WEEKDAYS: Readonly<Record<string, number>> = {
  monday: 0,
  mon: 0,
  tuesday: 1,
  tue: 1,
  tues: 1,
  wednesday: 2,
  wed: 2,
  thursday: 3,
  thu: 3,
  thur: 3,
  thurs: 3,
  friday: 4,
  fri: 4,
  saturday: 5,
  sat: 5,
  sunday: 6,
  sun: 6,
};

const MAX_COUNT = 36_600;
const DATE_TIME_RE =
  /^(\d{4})-(\d{2})-(\d{2})[t ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(z|[+-]\d{2}(?::?\d{2})?)?$/;
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const MONTH_RE = /^(\d{4})-(\d{2})$/;
const YEAR_RE = /^(\d{4})$/;
const AGO_RE = /^(\d{1,6}|an?) (day|week|month|year|hour|minute|min|second|sec)s? ago$/;
const LAST_N_RE = /^(?:last|past) (\d{1,6}) (day|week|month|hour|minute|min)s?$/;
const CALENDAR_RE = /^(this|last) (week|month|year)$/;
const WEEKDAY_RE = /^(last )?([a-z]+)$/;

interface Context {
  readonly zone: Zone;
  readonly now: number;
  /** Local day number (days since 1970-01-01) of `now` in the zone. */
  readonly today: number;
}

type Span = readonly [start: number, end: number];

function dayToYmd(day: number): [number, number, number] {
  const t = new Date(day * 86_400_000);
  return [t.getUTCFullYear(), t.getUTCMonth() + 1, t.getUTCDate()];
}

function ymdToDay(y: number, mo: number, d: number): number {
  return Math.round(utcSeconds(y, mo, d) / 86_400);
}

function startOfDay(ctx: Context, day: number): number {
  const [y, mo, d] = dayToYmd(day);
  return zonedToUtc(ctx.zone, y, mo, d);
}

function days(ctx: Context, first: number, count: number): Span {
  return [startOfDay(ctx, first), startOfDay(ctx, first + count)];
}

function months(ctx: Context, monthIndex: number, count: number): Span {
  const from = (m: number): number => zonedToUtc(ctx.zone, Math.floor(m / 12), (m % 12) + 1, 1);
  return [from(monthIndex), from(monthIndex + count)];
}

function validDate(y: number, mo: number, d: number): boolean {
  if (mo < 1 || mo > 12 || d < 1) return false;
  const [yy, mm, dd] = dayToYmd(ymdToDay(y, mo, d));
  return yy === y && mm === mo && dd === d;
}

function parseCount(raw: string): number {
  return raw === 'a' || raw === 'an' ? 1 : Number(raw);
}

function parseSingle(text: string, ctx: Context): Span | undefined {
  const { now, today } = ctx;
  if (text === 'now') return [now, now];
  if (text === 'today') return days(ctx, today, 1);
  if (text === 'yesterday') return days(ctx, today - 1, 1);
  if (text === 'tomorrow') return days(ctx, today + 1, 1);

  let m = DATE_TIME_RE.exec(text);
  if (m !== null) {
    const [y, mo, d, h, mi] = [1, 2, 3, 4, 5].map((i) => Number(m?.[i]));
    const hasSeconds = m[6] !== undefined;
    const s = hasSeconds ? Number(m[6]) : 0;
    if (
      !validDate(y as number, mo as number, d as number) ||
      (h as number) > 23 ||
      (mi as number) > 59 ||
      s > 59
    ) {
      return undefined;
    }
    let start: number;
    const zoneText = m[7];
    if (zoneText === undefined) {
      start = zonedToUtc(ctx.zone, y as number, mo as number, d as number, h, mi, s);
    } else {
      let offset = 0;
      if (zoneText !== 'z') {
        const digits = zoneText.slice(1).replace(':', '');
        const oh = Number(digits.slice(0, 2));
        const om = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
        if (oh > 23 || om > 59) return undefined;
        offset = (zoneText.startsWith('-') ? -1 : 1) * (oh * 3600 + om * 60);
      }
      start = utcSeconds(y as number, mo as number, d as number, h, mi, s) - offset;
    }
    return [start, start + (hasSeconds ? 1 : 60)];
  }
  m = DATE_RE.exec(text);
  if (m !== null) {
    const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
    return validDate(y, mo, d) ? days(ctx, ymdToDay(y, mo, d), 1) : undefined;
  }
  m = MONTH_RE.exec(text);
  if (m !== null) {
    const [y, mo] = [Number(m[1]), Number(m[2])];
    return mo >= 1 && mo <= 12 ? months(ctx, y * 12 + mo - 1, 1) : undefined;
  }
  m = YEAR_RE.exec(text);
  if (m !== null) return months(ctx, Number(m[1]) * 12, 12);

  const [ty, tm] = dayToYmd(today);
  const thisMonth = ty * 12 + tm - 1;
  const mondayThisWeek = today - ((((today + 3) % 7) + 7) % 7); // 1970-01-01 was a Thursday

  m = AGO_RE.exec(text);
  if (m !== null) {
    const n = parseCount(m[1] as string);
    if (n > MAX_COUNT) return undefined;
    switch (m[2]) {
      case 'day':
        return days(ctx, today - n, 1);
      case 'week':
        return days(ctx, mondayThisWeek - 7 * n, 7);
      case 'month':
        return months(ctx, thisMonth - n, 1);
      case 'year':
        return months(ctx, (ty - n) * 12, 12);
      case 'hour':
        return [now - n * 3600, now - n * 3600];
      case 'second':
      case 'sec':
        return [now - n, now - n];
      default:
        return [now - n * 60, now - n * 60];
    }
  }
  m = LAST_N_RE.exec(text);
  if (m !== null) {
    const n = Number(m[1]);
    if (n < 1 || n > MAX_COUNT) return undefined;
    switch (m[2]) {
      case 'day':
        return [startOfDay(ctx, today - n + 1), startOfDay(ctx, today + 1)];
      case 'week':
        return [startOfDay(ctx, mondayThisWeek - 7 * (n - 1)), startOfDay(ctx, mondayThisWeek + 7)];
      case 'month':
        return months(ctx, thisMonth - n + 1, n);
      case 'hour':
        return [now - n * 3600, now];
      default:
        return [now - n * 60, now];
    }
  }
  m = CALENDAR_RE.exec(text);
  if (m !== null) {
    const back = m[1] === 'last' ? 1 : 0;
    if (m[2] === 'week') return days(ctx, mondayThisWeek - 7 * back, 7);
    if (m[2] === 'month') return months(ctx, thisMonth - back, 1);
    return months(ctx, (ty - back) * 12, 12);
  }
  m = WEEKDAY_RE.exec(text);
  if (m !== null) {
    const target = WEEKDAYS[m[2] as string];
    if (target === undefined) return undefined;
    const todayIndex = today - mondayThisWeek;
    let back = (todayIndex - target + 7) % 7;
    if (m[1] !== undefined && back === 0) back = 7;
    return days(ctx, today - back, 1);
  }
  return undefined;
}

/**
 * Reads a natural date or range in the agent's time zone and returns the UTC span it covers,
 * DST-correct (a day is midnight to midnight local time, 23 or 25 hours when clocks change).
 *
 * Accepted (case-insensitive):
 * - `today`, `yesterday`, `tomorrow`, `now` (an instant);
 * - `N days ago` (that calendar day), `N weeks ago` / `N months ago` / `N years ago` (that calendar
 *   week, Monday first, month or year), `N hours ago` / `N minutes ago` (an instant);
 * - `this week`, `last week`, `this month`, `last month`, `this year`, `last year` (calendar);
 * - `last N days` (today and the N-1 days before it), `last N weeks`, `last N months`,
 *   `last N hours` / `last N minutes` (rolling, up to now); `past` works like `last`;
 * - `monday` … `sunday` (the latest such day, today included), `last monday` (today excluded);
 * - `2026-09-14`, `2026-09`, `2026`; `2026-09-14T11:42` (a minute), `2026-09-14 11:42:52` (a second),
 *   with an optional `Z` or `+03:00` that overrides the zone;
 * - ranges `A..B` from the start of `A` to the end of `B`, either side may be left open
 *   (`2026-09-01..` runs to now, `..2026-09-14` from the epoch).
 *
 * @throws `CORE_INVALID_ARGUMENT` for input it cannot read, a range that ends before it starts,
 *   an unknown zone, or an invalid `now`.
 */
export function parseDateRange(input: string, options: ParseDateRangeOptions = {}): DateRange {
  const zone = getZone(options.timeZone);
  const now = toSeconds(options.now, 'now');
  const ctx: Context = { zone, now, today: Math.floor((now + zone.offset(now)) / 86_400) };
  const text = typeof input === 'string' ? input.trim().toLowerCase().replace(/\s+/g, ' ') : '';
  const fail = (why: string): ZmcpError =>
    new ZmcpError(
      'CORE_INVALID_ARGUMENT',
      `Cannot read ${JSON.stringify(String(input).slice(0, 80))} as a date: ${why}. Use today, yesterday, N days ago, last week, last N days, a weekday, YYYY-MM-DD, YYYY-MM-DDTHH:MM, or a range A..B.`,
      { details: { input: String(input).slice(0, 200) } },
    );
  if (text === '' || text.length > 100) throw fail(text === '' ? 'it is empty' : 'it is too long');

  const dots = text.indexOf('..');
  if (dots < 0) {
    const span = parseSingle(text, ctx);
    if (span === undefined) throw fail('unrecognised');
    return { start: new Date(span[0] * 1000), end: new Date(span[1] * 1000) };
  }
  const left = text.slice(0, dots).trim();
  const right = text.slice(dots + 2).trim();
  if (left === '' && right === '') throw fail('both ends of the range are empty');
  let start = 0;
  let end = now;
  if (left !== '') {
    const span = parseSingle(left, ctx);
    if (span === undefined) throw fail(`unrecognised range start ${JSON.stringify(left)}`);
    start = span[0];
  }
  if (right !== '') {
    const span = parseSingle(right, ctx);
    if (span === undefined) throw fail(`unrecognised range end ${JSON.stringify(right)}`);
    end = span[1];
  }
  if (end < start) throw fail('the range ends before it starts');
  return { start: new Date(start * 1000), end: new Date(end * 1000) };
}

// ---------------------------------------------------------------------------------------------
// Future instants (when to be reminded)

const IN_RE = /^in (\d{1,6}|an?) (minute|min|hour|hr|day|week)s?$/;
const CLOCK_RE = /^(\d{1,2})(?::(\d{2}))?(?: ?(am|pm))?$/;
const DAY_AT_RE = /^(today|tomorrow|[a-z]+|\d{4}-\d{2}-\d{2})(?: at)? (.+)$/;
const UNIT_SECONDS: Readonly<Record<string, number>> = {
  minute: 60,
  min: 60,
  hour: 3600,
  hr: 3600,
  day: 86_400,
  week: 604_800,
};

/** A wall-clock time of day, `14:30`, `9:05`, `9am`, `5:30 pm`, in seconds after midnight. */
function parseClock(text: string): number | undefined {
  const m = CLOCK_RE.exec(text);
  if (m === null) return undefined;
  let h = Number(m[1]);
  const mi = m[2] === undefined ? 0 : Number(m[2]);
  const half = m[3];
  if (half === undefined && m[2] === undefined) return undefined; // a bare number is no time
  if (mi > 59) return undefined;
  if (half !== undefined) {
    if (h < 1 || h > 12) return undefined;
    h = (h % 12) + (half === 'pm' ? 12 : 0);
  } else if (h > 23) return undefined;
  return h * 3600 + mi * 60;
}

/**
 * Reads a future instant in the agent's time zone, for a reminder: `in 30 minutes`, `in 2 hours`,
 * `in 3 days`, `in a week`; a day and a time, `today 17:00`, `tomorrow 9am`, `friday at 14:30`
 * (the next such day, today if that time is still ahead), `2026-09-14 09:00`; or a date-time with
 * a zone, `2026-09-14T09:00:00Z`, `2026-09-14T09:00+03:00`. A day without a time is refused rather
 * than guessed.
 *
 * @throws `CORE_INVALID_ARGUMENT` for input it cannot read, an instant that is not after `now`,
 *   an unknown zone, or an invalid `now`.
 */
export function parseFutureTime(input: string, options: ParseDateRangeOptions = {}): Date {
  const zone = getZone(options.timeZone);
  const now = toSeconds(options.now, 'now');
  const ctx: Context = { zone, now, today: Math.floor((now + zone.offset(now)) / 86_400) };
  const text = typeof input === 'string' ? input.trim().toLowerCase().replace(/\s+/g, ' ') : '';
  const fail = (why: string): ZmcpError =>
    new ZmcpError(
      'CORE_INVALID_ARGUMENT',
      `Cannot read ${JSON.stringify(String(input).slice(0, 80))} as a time to come: ${why}. Use in 30 minutes, in 2 hours, in 3 days, today 17:00, tomorrow 9am, friday 14:30, or YYYY-MM-DD HH:MM.`,
      { details: { input: String(input).slice(0, 200) } },
    );
  if (text === '' || text.length > 100) throw fail(text === '' ? 'it is empty' : 'it is too long');
  const at = readFuture(text, ctx);
  if (at === 'no-time') throw fail('say what time of day');
  if (at === undefined) throw fail('unrecognised');
  if (at <= now) throw fail('that is not in the future');
  return new Date(at * 1000);
}

function readFuture(text: string, ctx: Context): number | 'no-time' | undefined {
  let m = IN_RE.exec(text);
  if (m !== null) {
    const n = parseCount(m[1] as string);
    if (n < 1 || n > MAX_COUNT) return undefined;
    return ctx.now + n * (UNIT_SECONDS[m[2] as string] as number);
  }
  if (DATE_TIME_RE.test(text)) return parseSingle(text, ctx)?.[0];
  m = DAY_AT_RE.exec(text);
  if (m === null) {
    // A day alone (tomorrow, friday, 2026-09-14) has no time of day.
    return parseSingle(text, ctx) === undefined ? undefined : 'no-time';
  }
  const clock = parseClock(m[2] as string);
  if (clock === undefined) return undefined;
  const day = m[1] as string;
  let first: number;
  if (day === 'today') first = ctx.today;
  else if (day === 'tomorrow') first = ctx.today + 1;
  else {
    const dm = DATE_RE.exec(day);
    if (dm !== null) {
      const [y, mo, d] = [Number(dm[1]), Number(dm[2]), Number(dm[3])];
      if (!validDate(y, mo, d)) return undefined;
      first = ymdToDay(y, mo, d);
    } else {
      const target = WEEKDAYS[day];
      if (target === undefined) return undefined;
      const todayIndex = (((ctx.today + 3) % 7) + 7) % 7; // 1970-01-01 was a Thursday
      first = ctx.today + ((target - todayIndex + 7) % 7);
      if (wallTime(ctx, first, clock) <= ctx.now) first += 7;
    }
  }
  return wallTime(ctx, first, clock);
}

/** The UTC instant of `clock` seconds after local midnight of local day `day`. */
function wallTime(ctx: Context, day: number, clock: number): number {
  const [y, mo, d] = dayToYmd(day);
  return zonedToUtc(ctx.zone, y, mo, d, Math.floor(clock / 3600), Math.floor((clock % 3600) / 60));
}
