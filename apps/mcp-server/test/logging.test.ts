import { describe, expect, it } from 'vitest';
import { createLogger, type LogLevel } from '../src/index.js';

function capture(level: LogLevel, secrets: (string | undefined)[] = []) {
  const lines: string[] = [];
  const logger = createLogger({
    level,
    secrets,
    write: (line) => lines.push(line),
    now: () => new Date('2026-09-14T08:42:52.000Z'),
  });
  return { logger, lines };
}

describe('createLogger', () => {
  it('writes one line per record: ts level msg key=value', () => {
    const { logger, lines } = capture('info');
    logger.info('tool call', { tool: 'echo', ms: 12, ok: true, why: 'two words', gone: undefined });
    expect(lines).toEqual([
      '2026-09-14T08:42:52.000Z info tool call tool=echo ms=12 ok=true why="two words"\n',
    ]);
  });

  it('keeps a record on one line whatever its content', () => {
    const { logger, lines } = capture('debug');
    logger.warn('first\nsecond', {
      body: 'a\nb',
      err: Object.assign(new Error('boom\nbang'), { code: 'CORE_X' }),
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]?.trimEnd()).not.toContain('\n');
    expect(lines[0]).toContain('err="CORE_X: boom\\nbang"');
  });

  it('never cuts a field in the middle of a secret', () => {
    const apiKey = 'K'.repeat(32);
    const { logger, lines } = capture('debug', [apiKey]);
    logger.debug('args', { data: `${'a'.repeat(1990)}${apiKey}${'b'.repeat(100)}` });
    expect(lines[0]).not.toContain('KKKK');
  });

  it('cuts very long fields', () => {
    const { logger, lines } = capture('debug');
    logger.debug('args', { data: 'A'.repeat(10_000) });
    expect(lines[0]?.length).toBeLessThan(2200);
    expect(lines[0]).toContain('...[8000 more chars]');
  });

  it('drops records below its level, and everything when silent', () => {
    const info = capture('info');
    info.logger.debug('hidden');
    info.logger.info('shown');
    info.logger.error('shown too');
    expect(info.lines.map((l) => l.split(' ')[1])).toEqual(['info', 'error']);

    const silent = capture('silent');
    silent.logger.error('nothing');
    expect(silent.lines).toEqual([]);
  });

  it('redacts the known secrets wherever they appear', () => {
    const apiKey = 'Zk3yZk3yZk3yZk3yZk3yZk3yZk3yZk3y';
    const token = 'tok"en-with-quote-0123';
    const { logger, lines } = capture('debug', [apiKey, token, undefined]);
    logger.error(`request failed for key ${apiKey}`, {
      url: `https://x/?k=${apiKey}`,
      token,
      nested: { token },
    });
    const out = lines.join('');
    expect(out).not.toContain(apiKey);
    expect(out).not.toContain('tok"en');
    expect(out).not.toContain('tok\\"en');
    expect(out.match(/\[REDACTED\]/g)?.length).toBe(4);
  });

  it('redacts authorization header values it was not told about', () => {
    const { logger, lines } = capture('debug');
    logger.debug('headers', { authorization: 'Bearer abc.def-ghi', basic: 'Basic Ym90OmtleQ==' });
    expect(lines[0]).toContain('Bearer [REDACTED]');
    expect(lines[0]).toContain('Basic [REDACTED]');
    expect(lines[0]).not.toContain('abc.def');
    expect(lines[0]).not.toContain('Ym90OmtleQ');
  });
});
