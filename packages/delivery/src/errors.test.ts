import { describe, expect, it } from 'vitest';
import { DeliveryError, type DeliveryErrorCode, isDeliveryError } from './errors.js';

const codes: DeliveryErrorCode[] = [
  'DELIVERY_INVALID_SESSION_ID',
  'DELIVERY_INVALID_ARGUMENT',
  'DELIVERY_STATE_CORRUPT',
  'DELIVERY_IO_FAILED',
  'DELIVERY_NOT_MONITORED',
  'DELIVERY_FILTERS_INVALID',
  'DELIVERY_FILTERS_STALE',
  'DELIVERY_FILTERS_OPERATOR_ONLY',
  'DELIVERY_UNKNOWN_CHANNEL',
  'DELIVERY_NOT_RUNNING',
];

describe('DeliveryError', () => {
  it.each(codes)('%s carries name, code, message, details and cause', (code) => {
    const cause = new Error('underlying');
    const err = new DeliveryError(code, 'what failed', { cause, details: { file: '/x' } });
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('DeliveryError');
    expect(err.code).toBe(code);
    expect(err.message).toBe('what failed');
    expect(err.details).toEqual({ file: '/x' });
    expect(err.cause).toBe(cause);
    expect(isDeliveryError(err)).toBe(true);
    expect(isDeliveryError(err, code)).toBe(true);
  });

  it('leaves cause and details unset when not given', () => {
    const err = new DeliveryError('DELIVERY_IO_FAILED', 'x');
    expect('cause' in err).toBe(false);
    expect(err.details).toBeUndefined();
  });

  it('isDeliveryError matches on the code, not the class', () => {
    const foreign = Object.assign(new Error('from another copy'), { code: 'DELIVERY_STATE_CORRUPT' });
    expect(isDeliveryError(foreign, 'DELIVERY_STATE_CORRUPT')).toBe(true);
    expect(isDeliveryError(foreign, 'DELIVERY_IO_FAILED')).toBe(false);
    expect(isDeliveryError(Object.assign(new Error('x'), { code: 'CORE_TIMEOUT' }))).toBe(false);
    expect(isDeliveryError(Object.assign(new Error('x'), { code: 'ENOENT' }))).toBe(false);
    expect(isDeliveryError('DELIVERY_IO_FAILED')).toBe(false);
    expect(isDeliveryError(null)).toBe(false);
  });
});

describe('the error codes', () => {
  it('are each listed above and documented in the README', async () => {
    const { readFile } = await import('node:fs/promises');
    const source = await readFile(new URL('./errors.ts', import.meta.url), 'utf8');
    const start = source.indexOf('export type DeliveryErrorCode');
    const union = source.slice(start, source.indexOf("';", start) + 2);
    const declared = [...union.matchAll(/'(DELIVERY_[A-Z_]+)'/g)].map((m) => m[1]);
    expect(declared.sort()).toEqual([...codes].sort());
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    for (const code of declared) expect(readme, code).toMatch(new RegExp(`^\\| \`${code}\` +\\|`, 'm'));
  });
});
