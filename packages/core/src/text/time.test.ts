import { afterEach, describe, expect, it, vi } from 'vitest';
import { isZmcpError } from '../errors.js';
import {
  createTimestampFormatter,
  formatTimestamp,
  isValidTimeZone,
  parseDateRange,
  parseFutureTime,
} from './time.js';

// Monday 2026-09-14 11:42:52 in Kyiv (UTC+3 in summer).
const NOW = Date.parse('2026-09-14T08:42:52Z');
const TS = NOW / 1000;

function expectCode(fn: () => unknown, code: string): void {
  try {
    fn();
  } catch (err) {
    expect(isZmcpError(err), String(err)).toBe(true);
    expect((err as { code: string }).code).toBe(code);
    return;
  }
  throw new Error(`expected ${code}`);
}

afterEach(() => {
  vi.useRealTimers();
});

describe('formatTimestamp', () => {
  it.each([
    [TS, 'UTC', '2026-09-14T08:42:52+00:00'],
    [TS, 'Europe/Kyiv', '2026-09-14T11:42:52+03:00'],
    [TS, 'Asia/Kolkata', '2026-09-14T14:12:52+05:30'],
    [TS, 'America/St_Johns', '2026-09-14T06:12:52-02:30'],
    [TS, 'Asia/Kathmandu', '2026-09-14T14:27:52+05:45'],
    // The last second before and the first second after Kyiv springs forward (03:00 -> 04:00).
    [1774745999, 'Europe/Kyiv', '2026-03-29T02:59:59+02:00'],
    [1774746000, 'Europe/Kyiv', '2026-03-29T04:00:00+03:00'],
    // Both 03:30s of the autumn fall-back hour.
    [1792888200, 'Europe/Kyiv', '2026-10-25T03:30:00+03:00'],
    [1792891800, 'Europe/Kyiv', '2026-10-25T03:30:00+02:00'],
    [0, 'UTC', '1970-01-01T00:00:00+00:00'],
  ])('iso: %d in %s is %s', (ts, timeZone, expected) => {
    expect(formatTimestamp(ts, { timeZone })).toBe(expected);
  });

  it('defaults to iso in UTC and floors fractional seconds', () => {
    expect(formatTimestamp(TS + 0.9)).toBe('2026-09-14T08:42:52+00:00');
  });

  it.each([
    [TS, '11:42'],
    [TS - 86_400, '09-13 11:42'],
    [TS - 200 * 86_400, '02-26 10:42'],
    [TS - 400 * 86_400, '2025-08-10 11:42'],
  ])('short: %d is %s relative to now', (ts, expected) => {
    expect(formatTimestamp(ts, { style: 'short', timeZone: 'Europe/Kyiv', now: NOW })).toBe(expected);
  });

  it('short: "today" is the local day, not the UTC day', () => {
    // 23:30 local on the 14th in New York is already the 15th in UTC.
    const now = Date.parse('2026-09-15T03:30:00Z');
    expect(
      formatTimestamp(Date.parse('2026-09-14T14:00:00Z') / 1000, {
        style: 'short',
        timeZone: 'America/New_York',
        now,
      }),
    ).toBe('10:00');
  });

  it('short without a fixed now follows the clock, so a long-lived formatter does not go stale', () => {
    vi.useFakeTimers({ now: NOW });
    const format = createTimestampFormatter({ style: 'short', timeZone: 'Europe/Kyiv' });
    expect(format(TS)).toBe('11:42');
    vi.setSystemTime(NOW + 86_400_000);
    expect(format(TS)).toBe('09-14 11:42');
  });

  it('none writes nothing', () => {
    expect(formatTimestamp(TS, { style: 'none' })).toBe('');
  });

  it.each([
    ['an unknown zone', () => formatTimestamp(TS, { timeZone: 'Mars/Olympus' })],
    ['an unknown style', () => formatTimestamp(TS, { style: 'long' as never })],
    ['NaN', () => formatTimestamp(Number.NaN)],
    ['Infinity', () => formatTimestamp(Number.POSITIVE_INFINITY)],
    ['an invalid now', () => formatTimestamp(TS, { style: 'short', now: new Date('nope') })],
  ])('rejects %s with CORE_INVALID_ARGUMENT', (_name, fn) => {
    expectCode(fn, 'CORE_INVALID_ARGUMENT');
  });

  it('names the zone it rejects', () => {
    expect(() => formatTimestamp(TS, { timeZone: 'Mars/Olympus' })).toThrow(/Mars\/Olympus/);
  });

  it('isValidTimeZone', () => {
    expect(isValidTimeZone('Europe/Kyiv')).toBe(true);
    expect(isValidTimeZone('UTC')).toBe(true);
    expect(isValidTimeZone('Nowhere/Land')).toBe(false);
    expect(isValidTimeZone('')).toBe(false);
  });
});

function span(input: string, timeZone = 'Europe/Kyiv', now = NOW): [string, string] {
  const r = parseDateRange(input, { timeZone, now });
  return [r.start.toISOString(), r.end.toISOString()];
}

describe('createTimestampFormatter', () => {
  it('iso: one formatter over a run across days, years and DST changes writes what a fresh one does', () => {
    // Around Kyiv's spring-forward and autumn-back changes, midnight, a new year and before 1970.
    const run = [
      1774745999,
      1774746000,
      1774746001,
      1792886399,
      1792886400,
      1792890000,
      1798754399,
      1798754400,
      TS,
      TS + 1,
      TS - 86_400,
      -1,
      -86_401,
      0,
      1774745999,
    ];
    for (const timeZone of ['UTC', 'Europe/Kyiv', 'Asia/Kathmandu', 'America/St_Johns']) {
      const format = createTimestampFormatter({ timeZone });
      expect(run.map(format), timeZone).toEqual(run.map((t) => formatTimestamp(t, { timeZone })));
      for (const t of run) {
        // The wall time Intl gives for the zone, as `YYYY-MM-DD HH:MM:SS`.
        const wall = new Date(t * 1000).toLocaleString('sv-SE', { timeZone });
        expect(format(t), `${timeZone} ${t}`).toMatch(
          new RegExp(`^${wall.replace(' ', 'T')}[+-]\\d\\d:\\d\\d$`),
        );
      }
    }
  });
});

describe('parseDateRange', () => {
  it.each([
    ['today', ['2026-09-13T21:00:00.000Z', '2026-09-14T21:00:00.000Z']],
    ['  ToDay ', ['2026-09-13T21:00:00.000Z', '2026-09-14T21:00:00.000Z']],
    ['yesterday', ['2026-09-12T21:00:00.000Z', '2026-09-13T21:00:00.000Z']],
    ['tomorrow', ['2026-09-14T21:00:00.000Z', '2026-09-15T21:00:00.000Z']],
    ['now', ['2026-09-14T08:42:52.000Z', '2026-09-14T08:42:52.000Z']],
    ['3 days ago', ['2026-09-10T21:00:00.000Z', '2026-09-11T21:00:00.000Z']],
    ['a day ago', ['2026-09-12T21:00:00.000Z', '2026-09-13T21:00:00.000Z']],
    ['0 days ago', ['2026-09-13T21:00:00.000Z', '2026-09-14T21:00:00.000Z']],
    ['1 week ago', ['2026-09-06T21:00:00.000Z', '2026-09-13T21:00:00.000Z']],
    ['2 months ago', ['2026-06-30T21:00:00.000Z', '2026-07-31T21:00:00.000Z']],
    ['1 year ago', ['2024-12-31T22:00:00.000Z', '2025-12-31T22:00:00.000Z']],
    ['2 hours ago', ['2026-09-14T06:42:52.000Z', '2026-09-14T06:42:52.000Z']],
    ['30 minutes ago', ['2026-09-14T08:12:52.000Z', '2026-09-14T08:12:52.000Z']],
    ['this week', ['2026-09-13T21:00:00.000Z', '2026-09-20T21:00:00.000Z']],
    ['last week', ['2026-09-06T21:00:00.000Z', '2026-09-13T21:00:00.000Z']],
    ['this month', ['2026-08-31T21:00:00.000Z', '2026-09-30T21:00:00.000Z']],
    ['last month', ['2026-07-31T21:00:00.000Z', '2026-08-31T21:00:00.000Z']],
    ['this year', ['2025-12-31T22:00:00.000Z', '2026-12-31T22:00:00.000Z']],
    ['last 7 days', ['2026-09-07T21:00:00.000Z', '2026-09-14T21:00:00.000Z']],
    ['past 1 day', ['2026-09-13T21:00:00.000Z', '2026-09-14T21:00:00.000Z']],
    ['last 2 weeks', ['2026-09-06T21:00:00.000Z', '2026-09-20T21:00:00.000Z']],
    ['last 3 hours', ['2026-09-14T05:42:52.000Z', '2026-09-14T08:42:52.000Z']],
    ['last 15 minutes', ['2026-09-14T08:27:52.000Z', '2026-09-14T08:42:52.000Z']],
    ['monday', ['2026-09-13T21:00:00.000Z', '2026-09-14T21:00:00.000Z']],
    ['last monday', ['2026-09-06T21:00:00.000Z', '2026-09-07T21:00:00.000Z']],
    ['friday', ['2026-09-10T21:00:00.000Z', '2026-09-11T21:00:00.000Z']],
    ['sun', ['2026-09-12T21:00:00.000Z', '2026-09-13T21:00:00.000Z']],
    ['2026-09-01', ['2026-08-31T21:00:00.000Z', '2026-09-01T21:00:00.000Z']],
    ['2026-02', ['2026-01-31T22:00:00.000Z', '2026-02-28T22:00:00.000Z']],
    ['2026', ['2025-12-31T22:00:00.000Z', '2026-12-31T22:00:00.000Z']],
    ['2026-09-14T11:42', ['2026-09-14T08:42:00.000Z', '2026-09-14T08:43:00.000Z']],
    ['2026-09-14 11:42:52', ['2026-09-14T08:42:52.000Z', '2026-09-14T08:42:53.000Z']],
    ['2026-09-14T11:42:52Z', ['2026-09-14T11:42:52.000Z', '2026-09-14T11:42:53.000Z']],
    ['2026-09-14T11:42-05:00', ['2026-09-14T16:42:00.000Z', '2026-09-14T16:43:00.000Z']],
    ['2026-09-14T11:42+0530', ['2026-09-14T06:12:00.000Z', '2026-09-14T06:13:00.000Z']],
    ['2026-09-01..2026-09-14', ['2026-08-31T21:00:00.000Z', '2026-09-14T21:00:00.000Z']],
    ['2026-09-01 .. yesterday', ['2026-08-31T21:00:00.000Z', '2026-09-13T21:00:00.000Z']],
    ['3 days ago..now', ['2026-09-10T21:00:00.000Z', '2026-09-14T08:42:52.000Z']],
    ['2026-09-10..', ['2026-09-09T21:00:00.000Z', '2026-09-14T08:42:52.000Z']],
    ['..1970-01-01', ['1970-01-01T00:00:00.000Z', '1970-01-01T21:00:00.000Z']],
  ])('%s in Europe/Kyiv', (input, expected) => {
    expect(span(input)).toEqual(expected);
  });

  it.each([
    // Spring forward: the day is 23 hours long.
    ['2026-03-29', 'Europe/Kyiv', ['2026-03-28T22:00:00.000Z', '2026-03-29T21:00:00.000Z']],
    // Fall back: 25 hours.
    ['2026-10-25', 'Europe/Kyiv', ['2026-10-24T21:00:00.000Z', '2026-10-25T22:00:00.000Z']],
    ['2026-03-08', 'America/New_York', ['2026-03-08T05:00:00.000Z', '2026-03-09T04:00:00.000Z']],
    // Chile springs forward at midnight: the day starts at 01:00 local.
    ['2026-09-06', 'America/Santiago', ['2026-09-06T04:00:00.000Z', '2026-09-07T03:00:00.000Z']],
    // A wall time inside the spring gap moves forward by the gap; an ambiguous one takes the first.
    ['2026-03-29T03:30', 'Europe/Kyiv', ['2026-03-29T01:30:00.000Z', '2026-03-29T01:31:00.000Z']],
    ['2026-10-25T03:30', 'Europe/Kyiv', ['2026-10-25T00:30:00.000Z', '2026-10-25T00:31:00.000Z']],
    ['2026-12-31', 'Pacific/Kiritimati', ['2026-12-30T10:00:00.000Z', '2026-12-31T10:00:00.000Z']],
  ])('%s in %s is DST-correct', (input, timeZone, expected) => {
    expect(span(input, timeZone)).toEqual(expected);
  });

  it('last week across a DST change spans 167 hours', () => {
    const now = Date.parse('2026-11-04T12:00:00Z');
    const [start, end] = span('last week', 'America/New_York', now);
    expect((Date.parse(end) - Date.parse(start)) / 3_600_000).toBe(7 * 24 + 1);
  });

  it('uses UTC by default', () => {
    const r = parseDateRange('2026-09-14', { now: NOW });
    expect([r.start.toISOString(), r.end.toISOString()]).toEqual([
      '2026-09-14T00:00:00.000Z',
      '2026-09-15T00:00:00.000Z',
    ]);
  });

  it.each([
    [''],
    ['   '],
    ['someday'],
    ['2026-02-30'],
    ['2026-13'],
    ['2026-09-14T25:00'],
    ['2026-09-14T11:60'],
    ['last 0 days'],
    ['99999999 days ago'],
    ['2026-09-14..2026-09-01'],
    ['..'],
    ['x..2026-09-01'],
    ['2026-09-01..y'],
    ['blursday'],
    ['a'.repeat(500)],
  ])('rejects %j with CORE_INVALID_ARGUMENT', (input) => {
    expectCode(() => parseDateRange(input, { timeZone: 'UTC', now: NOW }), 'CORE_INVALID_ARGUMENT');
  });

  it('says what it accepts', () => {
    expect(() => parseDateRange('someday', { now: NOW })).toThrow(/YYYY-MM-DD/);
  });

  it('rejects an unknown zone', () => {
    expectCode(
      () => parseDateRange('today', { timeZone: 'Nowhere/Land', now: NOW }),
      'CORE_INVALID_ARGUMENT',
    );
  });
});

describe('parseFutureTime', () => {
  // Monday 2026-09-14 11:42:52 in Kyiv (UTC+3).
  const now = Date.UTC(2026, 8, 14, 8, 42, 52);
  const at = (input: string, timeZone = 'Europe/Kyiv') =>
    parseFutureTime(input, { timeZone, now }).toISOString();

  it.each([
    ['in 30 minutes', '2026-09-14T09:12:52.000Z'],
    ['in 90 min', '2026-09-14T10:12:52.000Z'],
    ['in an hour', '2026-09-14T09:42:52.000Z'],
    ['In 2 Hours', '2026-09-14T10:42:52.000Z'],
    ['in 3 days', '2026-09-17T08:42:52.000Z'],
    ['in a week', '2026-09-21T08:42:52.000Z'],
    ['today 17:00', '2026-09-14T14:00:00.000Z'],
    ['tomorrow 9am', '2026-09-15T06:00:00.000Z'],
    ['tomorrow at 9:30 pm', '2026-09-15T18:30:00.000Z'],
    ['friday at 14:30', '2026-09-18T11:30:00.000Z'],
    ['monday 12:00', '2026-09-14T09:00:00.000Z'],
    ['monday 11:00', '2026-09-21T08:00:00.000Z'],
    ['2026-09-20 08:15', '2026-09-20T05:15:00.000Z'],
    ['2026-09-20 at 8:15', '2026-09-20T05:15:00.000Z'],
    ['2026-09-20T08:15:00Z', '2026-09-20T08:15:00.000Z'],
    ['2026-09-20T08:15+01:00', '2026-09-20T07:15:00.000Z'],
  ])('%s is %s', (input, expected) => {
    expect(at(input)).toBe(expected);
  });

  it('reads a wall time across a DST change in the zone', () => {
    // Kyiv moves to UTC+2 on 2026-10-25: 09:00 the day after is 07:00 UTC.
    expect(at('2026-10-26 09:00')).toBe('2026-10-26T07:00:00.000Z');
  });

  it.each([
    ['', 'it is empty'],
    ['tomorrow', 'say what time of day'],
    ['friday', 'say what time of day'],
    ['2026-09-20', 'say what time of day'],
    ['today 9:00', 'not in the future'],
    ['2026-09-14T08:00Z', 'not in the future'],
    ['in 0 minutes', 'unrecognised'],
    ['yesterday 10:00', 'unrecognised'],
    ['tomorrow 25:00', 'unrecognised'],
    ['tomorrow 13pm', 'unrecognised'],
    ['tomorrow 9', 'unrecognised'],
    ['someday 9:00', 'unrecognised'],
    ['2026-02-30 09:00', 'unrecognised'],
    ['x'.repeat(200), 'too long'],
  ])('refuses %j (%s)', (input, why) => {
    expect(() => parseFutureTime(input, { timeZone: 'Europe/Kyiv', now })).toThrow(
      expect.objectContaining({ code: 'CORE_INVALID_ARGUMENT', message: expect.stringContaining(why) }),
    );
  });
});
