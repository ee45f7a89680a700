import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CliError, type CliErrorCode, isCliError } from './errors.js';

const codes: CliErrorCode[] = ['CLI_CONFIG_INVALID', 'CLI_SETTINGS_INVALID', 'CLI_README_MARKERS_MISSING'];

describe('CliError', () => {
  it.each(codes)('%s carries name, code, message, details and cause', (code) => {
    const cause = new Error('underlying');
    const err = new CliError(code, 'what failed', { cause, details: { setting: 'X' } });
    expect(err).toBeInstanceOf(Error);
    expect(err).toBeInstanceOf(CliError);
    expect(err.name).toBe('CliError');
    expect(err.code).toBe(code);
    expect(err.message).toBe('what failed');
    expect(err.details).toEqual({ setting: 'X' });
    expect(err.cause).toBe(cause);
    expect(isCliError(err)).toBe(true);
    expect(isCliError(err, code)).toBe(true);
  });

  it('leaves cause and details unset when not given', () => {
    const err = new CliError('CLI_CONFIG_INVALID', 'x');
    expect('cause' in err).toBe(false);
    expect(err.details).toBeUndefined();
  });

  it('is recognised by its brand across copies of the package, not by its code alone', () => {
    const foreign = Object.assign(new Error('from another copy'), {
      code: 'CLI_CONFIG_INVALID',
      [Symbol.for('@zmcp/cli.CliError')]: true,
    });
    expect(foreign).toBeInstanceOf(CliError);
    expect(isCliError(foreign, 'CLI_CONFIG_INVALID')).toBe(true);
    expect(isCliError(foreign, 'CLI_SETTINGS_INVALID')).toBe(false);
    expect(isCliError(Object.assign(new Error('x'), { code: 'CLI_CONFIG_INVALID' }))).toBe(false);
    expect(isCliError(null)).toBe(false);
    expect(isCliError('CLI_CONFIG_INVALID')).toBe(false);
  });
});

describe('the error codes', () => {
  it('are each listed above and documented in the README', () => {
    const source = readFileSync(new URL('./errors.ts', import.meta.url), 'utf8');
    const declared = [...source.matchAll(/^\s+\| '(CLI_[A-Z_]+)'/gm)].map((m) => m[1]);
    expect([...declared].sort()).toEqual([...codes].sort());
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    for (const code of declared) expect(readme, code).toMatch(new RegExp(`^\\| \`${code}\` +\\|`, 'm'));
  });
});
