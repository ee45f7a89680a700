import { describe, expect, it } from 'vitest';
import { CliError } from './errors.js';
import {
  answerHelpOrVersion,
  defineMain,
  ExitCode,
  reportInvalidConfiguration,
  waitForAbort,
} from './exit.js';

function sink() {
  let text = '';
  return { write: (chunk: string) => (text += chunk), text: () => text };
}

describe('answerHelpOrVersion', () => {
  const texts = { help: () => 'the help\n', version: () => '1.2.3' };
  it('answers --help/-h and --version/-V, help first, and nothing else', () => {
    for (const [argv, printed] of [
      [['--help'], 'the help\n'],
      [['x', '-h'], 'the help\n'],
      [['--version', '--help'], 'the help\n'],
      [['-V'], '1.2.3\n'],
    ] as const) {
      const out = sink();
      expect(answerHelpOrVersion(argv, out, texts)).toBe(ExitCode.ok);
      expect(out.text()).toBe(printed);
    }
    const out = sink();
    expect(answerHelpOrVersion(['--helpful', '--port=-V'], out, texts)).toBeUndefined();
    expect(out.text()).toBe('');
  });
});

describe('reportInvalidConfiguration', () => {
  it('names the bin, lists the problems and says where every setting is, redacted', () => {
    const err = sink();
    const code = reportInvalidConfiguration(err, 'app', ['A: bad', 'B: worse key-123456'], (t) =>
      t.replaceAll('key-123456', '[REDACTED]'),
    );
    expect(code).toBe(ExitCode.configuration);
    expect(err.text()).toBe(
      'app: Invalid configuration:\n  A: bad\n  B: worse [REDACTED]\nRun app --help for every setting.\n',
    );
  });
});

describe('defineMain', () => {
  const configured: unknown[] = [];
  const main = defineMain({
    bin: 'app',
    help: () => 'help text\n',
    version: () => '0.1.0',
    configure: (env) => {
      if (env.BAD !== undefined)
        throw new Error('wrapped', {
          cause: new CliError('CLI_CONFIG_INVALID', 'x', { details: { problems: ['BAD: no'] } }),
        });
      if (env.BROKEN !== undefined) throw new RangeError('not a configuration problem');
      return { value: env.VALUE };
    },
    run: async (config, io, env) => {
      configured.push(config, env.VALUE);
      io.stdout?.write('ran\n');
      return ExitCode.failure;
    },
  });

  it('answers help and the version whatever the environment', async () => {
    const out = sink();
    expect(await main(['--help'], { BAD: '1', BROKEN: '1' }, { stdout: out, stderr: out })).toBe(0);
    expect(await main(['-V'], { BAD: '1' }, { stdout: out, stderr: out })).toBe(0);
    expect(out.text()).toBe('help text\n0.1.0\n');
  });

  it('reports a bad configuration with exit code 2 and never runs', async () => {
    const out = sink();
    const err = sink();
    expect(await main([], { BAD: '1' }, { stdout: out, stderr: err })).toBe(2);
    expect(err.text()).toBe('app: Invalid configuration:\n  BAD: no\nRun app --help for every setting.\n');
    expect(out.text()).toBe('');
  });

  it('throws any other failure of configure on', async () => {
    await expect(main([], { BROKEN: '1' }, { stdout: sink(), stderr: sink() })).rejects.toThrow(RangeError);
  });

  it('runs with the configuration and resolves with run’s exit code', async () => {
    const out = sink();
    configured.length = 0;
    expect(await main([], { VALUE: 'v' }, { stdout: out })).toBe(ExitCode.failure);
    expect(configured).toEqual([{ value: 'v' }, 'v']);
    expect(out.text()).toBe('ran\n');
  });
});

describe('waitForAbort', () => {
  it('resolves when the signal aborts, at once when it has', async () => {
    const controller = new AbortController();
    const waiting = waitForAbort(controller.signal);
    controller.abort();
    await waiting;
    await waitForAbort(controller.signal);
  });
});
