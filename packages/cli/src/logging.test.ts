import { describe, expect, it } from 'vitest';
import { createLogger, createRedactor, type LoggerOptions, logLevels } from './logging.js';

const at = new Date('2030-01-02T03:04:05.678Z');

/** Every line a logger writes, for one batch of calls. */
function written(
  options: Omit<LoggerOptions, 'write' | 'now'>,
  use: (log: ReturnType<typeof createLogger>) => void,
) {
  const out: string[] = [];
  use(createLogger({ ...options, write: (line) => out.push(line), now: () => at }));
  return out;
}

describe('createLogger', () => {
  it('formats a record as ts level msg key=value, quoting only what needs it', () => {
    const out = written({ level: 'debug' }, (log) =>
      log.debug('sent', {
        to: 'ann@example.com',
        n: 3,
        big: 10n,
        no: false,
        text: 'a b',
        ids: [1, 2],
        skip: undefined,
        nil: null,
      }),
    );
    expect(out).toEqual([
      '2030-01-02T03:04:05.678Z debug sent to=ann@example.com n=3 big=10 no=false text="a b" ids=[1,2] nil=null\n',
    ]);
  });

  it('shows an error as its code and message, on the same line as the rest', () => {
    const out = written({ level: 'info' }, (log) => {
      log.error('failed\nbadly', {
        err: Object.assign(new Error('line one\rline two'), { code: 'X_FAILED' }),
      });
      log.error('plain', { err: new TypeError('no code') });
    });
    expect(out).toEqual([
      '2030-01-02T03:04:05.678Z error failed\\nbadly err="X_FAILED: line one\\rline two"\n',
      '2030-01-02T03:04:05.678Z error plain err="no code"\n',
    ]);
  });

  it('writes a placeholder for a field it cannot serialise', () => {
    const cyclic: { self?: unknown } = {};
    cyclic.self = cyclic;
    expect(written({ level: 'info' }, (log) => log.info('x', { cyclic }))[0]).toContain(
      'cyclic="[unserializable]"',
    );
  });

  it('keeps only records at or above its level', () => {
    const levels = (level: (typeof logLevels)[number]) =>
      written({ level }, (log) => {
        log.debug('d');
        log.info('i');
        log.warn('w');
        log.error('e');
      }).map((line) => line.split(' ')[1]);
    expect(logLevels.map(levels)).toEqual([
      ['debug', 'info', 'warn', 'error'],
      ['info', 'warn', 'error'],
      ['warn', 'error'],
      ['error'],
      [],
    ]);
  });

  it('cuts a long field, counting what it left out, after the secrets in it are gone', () => {
    const secret = 'S3cr3tS3cr3tS3cr3t';
    const [line] = written({ level: 'info', secrets: [secret] }, (log) =>
      log.info('dump', { body: `${'x'.repeat(1995)}${secret}${'y'.repeat(5000)}` }),
    );
    expect(line).not.toMatch(/S3cr/);
    expect(line).toMatch(/body=x{1995}\[REDA\.\.\.\[5005 more chars\]\n$/);
  });

  it('redacts every known secret in the message and the fields, in the form JSON writes it too', () => {
    const key = 'abc"def\\ghi-0123456789';
    const out = written({ level: 'info', secrets: [undefined, '', key] }, (log) =>
      log.info(`using ${key}`, { header: { key }, list: [key] }),
    ).join('');
    expect(out).not.toContain('abc');
    expect(out.split('[REDACTED]')).toHaveLength(4);
  });
});

describe('createRedactor', () => {
  it('replaces a secret that contains another as a whole', () => {
    expect(createRedactor(['pass', 'password1'])('password1 pass')).toBe('[REDACTED] [REDACTED]');
  });

  it('replaces Bearer and Basic credentials without being told them', () => {
    expect(createRedactor([])('authorization=Bearer a.b-c_d~e+f/g= then basic dXNlcjpwYXNz')).toBe(
      'authorization=Bearer [REDACTED] then basic [REDACTED]',
    );
  });
});

describe('secrets learnt at runtime', () => {
  it('logger.redact hides a secret in every later record, the message, a field and an error', () => {
    const key = 'personKey-7f3a9c1e';
    const out = written({ level: 'debug' }, (log) => {
      log.info('before', { key });
      log.redact(key);
      log.redact(undefined);
      log.info(`using ${key}`, { key, err: new Error(`Zulip refused ${key}`) });
    });
    expect(out[0]).toContain(key);
    expect(out[1]).not.toContain(key);
    expect(out[1]?.split('[REDACTED]')).toHaveLength(4);
  });

  it('a shared redactor: what one logger learns, the other logger and the redactor itself hide', () => {
    const redactor = createRedactor(['start-secret']);
    const out: string[] = [];
    const one = createLogger({ level: 'info', redactor, write: (l) => out.push(l), now: () => at });
    const two = createLogger({
      level: 'info',
      redactor,
      secrets: ['two-secret'],
      write: (l) => out.push(l),
      now: () => at,
    });
    one.redact('zmcp_0123456789abcdef_token');
    two.info('seen', { t: 'zmcp_0123456789abcdef_token', a: 'start-secret', b: 'two-secret' });
    one.info('seen', { b: 'two-secret' });
    expect(out.join('')).not.toMatch(/token|secret/);
    expect(redactor('page with zmcp_0123456789abcdef_token')).toBe('page with [REDACTED]');
  });
});
