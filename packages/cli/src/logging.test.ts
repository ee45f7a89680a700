import { describe, expect, it } from 'vitest';
import { createLogger, createRedactor, type LogLevel, logLevels } from './logging.js';

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
  it('writes one line per record: ts level msg key=value, quoting what needs it', () => {
    const { logger, lines } = capture('info');
    logger.info('tool call', {
      tool: 'echo',
      ms: 12,
      ok: true,
      why: 'two words',
      list: [1],
      gone: undefined,
    });
    expect(lines).toEqual([
      '2026-09-14T08:42:52.000Z info tool call tool=echo ms=12 ok=true why="two words" list=[1]\n',
    ]);
  });

  it('keeps a record on one line, and shows an error by its code and message', () => {
    const { logger, lines } = capture('debug');
    logger.warn('first\r\nsecond', { err: Object.assign(new Error('boom\nbang'), { code: 'CORE_X' }) });
    expect(lines).toEqual(['2026-09-14T08:42:52.000Z warn first\\r\\nsecond err="CORE_X: boom\\nbang"\n']);
  });

  it('survives a field it cannot serialise', () => {
    const { logger, lines } = capture('debug');
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    logger.debug('odd', { loop, big: 10n });
    expect(lines[0]).toContain('loop="[unserializable]" big=10');
  });

  it('cuts long fields after redacting them, never in the middle of a secret', () => {
    const apiKey = 'K'.repeat(32);
    const { logger, lines } = capture('debug', [apiKey]);
    logger.debug('args', { data: `${'a'.repeat(1990)}${apiKey}${'b'.repeat(100)}` });
    expect(lines[0]).not.toContain('KKKK');
    logger.debug('args', { data: 'A'.repeat(10_000) });
    expect(lines[1]).toContain('...[8000 more chars]');
    expect(lines[1]?.length).toBeLessThan(2200);
  });

  it('drops records below its level, and everything when silent', () => {
    expect(logLevels).toEqual(['debug', 'info', 'warn', 'error', 'silent']);
    const warn = capture('warn');
    warn.logger.debug('no');
    warn.logger.info('no');
    warn.logger.warn('yes');
    warn.logger.error('yes');
    expect(warn.lines.map((l) => l.split(' ')[1])).toEqual(['warn', 'error']);
    const silent = capture('silent');
    silent.logger.error('nothing');
    expect(silent.lines).toEqual([]);
  });

  it('redacts known secrets, in the message and every field, JSON-escaped too', () => {
    const apiKey = 'Zk3yZk3yZk3yZk3yZk3yZk3yZk3yZk3y';
    const token = 'tok"en-with-quote-0123';
    const { logger, lines } = capture('debug', [apiKey, token, undefined, '']);
    logger.error(`request failed for key ${apiKey}`, {
      url: `https://x/?k=${apiKey}`,
      token,
      nested: { token },
    });
    const out = lines.join('');
    expect(out).not.toContain(apiKey);
    expect(out).not.toContain('tok"en');
    expect(out).not.toContain('tok\\"en');
    expect(out.match(/\[REDACTED\]/g)).toHaveLength(4);
  });
});

describe('createRedactor', () => {
  it('replaces the longest secret first, and Authorization-style credentials it was not told about', () => {
    const redact = createRedactor(['abcd', 'abcdefgh']);
    expect(redact('x abcdefgh y abcd')).toBe('x [REDACTED] y [REDACTED]');
    expect(redact('Authorization: Bearer abc.def-ghi; Basic Ym90OmtleQ==')).toBe(
      'Authorization: Bearer [REDACTED]; Basic [REDACTED]',
    );
  });
});
