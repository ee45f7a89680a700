import { ALL_STREAMS } from '@zmcp/core';
import { describe, expect, it } from 'vitest';
import {
  flagSwitch,
  integer,
  matching,
  oneOf,
  optionalBoolean,
  optionalInteger,
  parsedBy,
  problem,
  type Setting,
  setting,
  settingMetaOf,
  splitList,
  streamAllowlist,
  strictBoolean,
  text,
  textWithDefault,
} from './settings.js';

const meta = { group: 'G', help: 'h', defaultText: 'd' };

/** The value, or the one problem the setting reports for `raw`. */
function read<T>(schema: Setting<T>, raw: string | undefined): T | { problem: string } {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  expect(result.error.issues).toHaveLength(1);
  return { problem: result.error.issues[0]?.message ?? '' };
}

describe('setting builders', () => {
  it('text keeps the value as written, and a check may refuse it', () => {
    const plain = text(meta);
    expect(read(plain, undefined)).toBeUndefined();
    expect(read(plain, ' a b ')).toBe(' a b ');
    const host = text(meta, matching(/^[a-z.]+$/, 'expected a host name'));
    expect(read(host, 'example.com')).toBe('example.com');
    expect(read(host, 'bad host')).toEqual({ problem: 'expected a host name' });
    const withDefault = textWithDefault(meta, '127.0.0.1', matching(/^\S+$/, 'expected no spaces'));
    expect(read(withDefault, undefined)).toBe('127.0.0.1');
    expect(read(withDefault, 'a b')).toEqual({ problem: 'expected no spaces' });
  });

  it('strictBoolean takes core’s words and refuses anything else, never reading it as off', () => {
    const flag = strictBoolean({ group: 'G', help: 'h' }, true);
    expect(read(flag, undefined)).toBe(true);
    for (const word of ['1', 'true', 'YES', ' on ']) expect(read(flag, word)).toBe(true);
    for (const word of ['0', 'false', 'no', 'off']) expect(read(flag, word)).toBe(false);
    expect(read(flag, 'maybe')).toEqual({ problem: 'expected one of 1/0, true/false, yes/no, on/off' });
    expect(settingMetaOf(flag)?.defaultText).toBe('on');
    expect(settingMetaOf(strictBoolean({ group: 'G', help: 'h' }, false))?.defaultText).toBe('off');
    expect(
      settingMetaOf(strictBoolean({ group: 'G', help: 'h', defaultText: 'it depends' }, false))?.defaultText,
    ).toBe('it depends');
    const optional = optionalBoolean(meta);
    expect(read(optional, undefined)).toBeUndefined();
    expect(read(optional, 'no')).toBe(false);
    expect(read(optional, 'sometimes')).toEqual({
      problem: 'expected one of 1/0, true/false, yes/no, on/off',
    });
  });

  it('flagSwitch is true when given at all', () => {
    const demo = flagSwitch({ ...meta, flag: '--demo' });
    expect(read(demo, undefined)).toBe(false);
    expect(read(demo, 'true')).toBe(true);
  });

  it('integer takes digits only, within its range', () => {
    const port = integer({ group: 'G', help: 'h' }, 0, 65_535, 3000);
    expect(read(port, undefined)).toBe(3000);
    expect(read(port, ' 8080 ')).toBe(8080);
    for (const raw of ['-1', '80.5', '1e3', '0x10', '65536', 'http', '99999999999999999999']) {
      expect(read(port, raw)).toEqual({ problem: 'expected a whole number from 0 to 65535' });
    }
    expect(settingMetaOf(port)?.defaultText).toBe('3000');
    const optional = optionalInteger(meta, 1, 10);
    expect(read(optional, undefined)).toBeUndefined();
    expect(read(optional, '10')).toBe(10);
    expect(read(optional, '0')).toEqual({ problem: 'expected a whole number from 1 to 10' });
  });

  it('oneOf compares trimmed and case-insensitively, with aliases', () => {
    const style = oneOf({ group: 'G', help: 'h' }, ['iso', 'short', 'none'], 'iso', { full: 'iso' });
    expect(read(style, undefined)).toBe('iso');
    expect(read(style, ' Short ')).toBe('short');
    expect(read(style, 'FULL')).toBe('iso');
    expect(read(style, 'long')).toEqual({ problem: 'expected one of iso, short, none' });
    // An alias table is looked up by its own keys only.
    expect(read(style, 'constructor')).toEqual({ problem: 'expected one of iso, short, none' });
    expect(settingMetaOf(style)?.defaultText).toBe('iso');
  });

  it('streamAllowlist reads by core’s rule and reports core’s reason', () => {
    const list = streamAllowlist(meta);
    expect(read(list, undefined)).toBeUndefined();
    expect(read(list, '__ALL__')).toBe(ALL_STREAMS);
    expect(read(list, 'ops, 12')).toEqual(['ops', 12]);
    const refused = read(list, 'ops,__ALL__');
    expect(refused).toEqual({ problem: expect.stringMatching(/^__ALL__ must stand alone/) });
  });

  it('parsedBy turns a library parser’s throw into the problem it names', () => {
    const size = parsedBy(
      meta,
      (raw) => {
        if (!/^\d+$/.test(raw)) throw new RangeError(raw);
        return Number(raw);
      },
      (err) => `expected bytes, not ${(err as Error).message}`,
    );
    expect(read(size, undefined)).toBeUndefined();
    expect(read(size, '12')).toBe(12);
    expect(read(size, 'lots')).toEqual({ problem: 'expected bytes, not lots' });
    const withFallback = parsedBy(meta, Number, () => 'never', 7);
    expect(read(withFallback, undefined)).toBe(7);
  });

  it('setting takes a parser that returns its value or a problem, whatever the value’s shape', () => {
    const pairs = setting<{ problem: string } | undefined>(
      meta,
      (raw) => (raw === 'bad' ? problem('expected good') : { problem: raw }),
      undefined,
    );
    // A value that merely looks like a problem is a value.
    expect(read(pairs, 'x')).toEqual({ problem: 'x' });
    const refused = pairs.safeParse('bad');
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.message).toBe('expected good');
  });

  it('records the help entry of every setting it builds', () => {
    const secret = text({ ...meta, secret: true, flagArg: '<x>' });
    expect(settingMetaOf(secret)).toEqual({ ...meta, secret: true, flagArg: '<x>' });
  });

  it('splitList trims and drops empty items', () => {
    expect(splitList(' a, b ,,c , ')).toEqual(['a', 'b', 'c']);
    expect(splitList(' , ')).toEqual([]);
  });
});
