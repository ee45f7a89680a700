import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isLauncherError, LauncherError, type LauncherErrorCode } from './errors.js';

const codes: LauncherErrorCode[] = [
  'LAUNCHER_CONFIG_INVALID',
  'LAUNCHER_MCP_CONFIG_INVALID',
  'LAUNCHER_ENV_REFERENCE',
  'LAUNCHER_BACKEND_UNSUPPORTED',
  'LAUNCHER_STATE_INVALID',
];

describe('LauncherError', () => {
  it.each(codes)('%s carries name, code, message, details and cause, and is documented', (code) => {
    const cause = new Error('underlying');
    const err = new LauncherError(code, 'what failed', { cause, details: { field: 'x' } });
    expect(err.name).toBe('LauncherError');
    expect(err.code).toBe(code);
    expect(err.message).toBe('what failed');
    expect(err.details).toEqual({ field: 'x' });
    expect(err.cause).toBe(cause);
    expect(isLauncherError(err, code)).toBe(true);
    const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8');
    expect(readme).toContain(`| \`${code}\` |`);
  });

  it('matches on the code, not the class', () => {
    const foreign = Object.assign(new Error('another copy'), { code: 'LAUNCHER_ENV_REFERENCE' });
    expect(isLauncherError(foreign, 'LAUNCHER_ENV_REFERENCE')).toBe(true);
    expect(isLauncherError(foreign, 'LAUNCHER_CONFIG_INVALID')).toBe(false);
    expect(isLauncherError(Object.assign(new Error('x'), { code: 'CORE_TIMEOUT' }))).toBe(false);
    expect(isLauncherError(null)).toBe(false);
    expect('cause' in new LauncherError('LAUNCHER_STATE_INVALID', 'x')).toBe(false);
  });
});
