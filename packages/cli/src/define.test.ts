import { describe, expect, it } from 'vitest';
import {
  configurationProblems,
  defineSettings,
  invalidConfigurationMessage,
  type LegacySetting,
} from './define.js';
import { CliError, isCliError } from './errors.js';
import { flagSwitch, integer, matching, oneOf, strictBoolean, text, textWithDefault } from './settings.js';

const shape = {
  APP_HOST: textWithDefault(
    {
      group: 'Network',
      flag: '--host',
      flagArg: '<host>',
      defaultText: '127.0.0.1',
      help: 'Address to listen on.',
    },
    '127.0.0.1',
    matching(/^[a-z0-9.:-]+$/, 'expected a host name'),
  ),
  APP_PORT: integer(
    { group: 'Network', flag: '--port', flagArg: '<port>', help: 'Port to listen on.' },
    0,
    65_535,
    3000,
  ),
  APP_READ_ONLY: strictBoolean({ group: 'Access', flag: '--read-only', help: 'Refuse every write.' }, false),
  APP_TOKEN: text(
    { group: 'Access', defaultText: 'unset', help: 'Bearer token | a secret.', secret: true },
    matching(/^\S{16,}$/, 'expected 16 or more characters without spaces'),
  ),
  APP_OWNER: text(
    { group: 'Access', defaultText: 'required', help: 'Who owns it.' },
    matching(/@/, 'expected an email'),
  ),
  APP_STYLE: oneOf({ group: 'Output', help: 'How lines look.' }, ['iso', 'short'], 'iso'),
  APP_TOPIC: text({ group: 'Output', defaultText: 'unset', help: 'Set with APP_STREAM.' }),
  APP_STREAM: text({ group: 'Output', defaultText: 'unset', help: 'Set with APP_TOPIC.' }),
  '--demo': flagSwitch({ group: 'Other', flag: '--demo', defaultText: 'off', help: 'Serve a demo.' }),
};

const legacy: LegacySetting[] = [
  { name: 'OLD_READ_ONLY', origin: 'the old server', replacement: 'APP_READ_ONLY', handling: 'alias' },
  {
    name: 'OLD_SUBSCRIBE',
    origin: 'the old server',
    replacement: 'a tool',
    handling: 'refused',
    instead: 'use the tool',
  },
];

const settings = defineSettings(shape, {
  bin: 'app',
  legacy,
  refine: (values, report) => {
    if ((values.APP_TOPIC === undefined) !== (values.APP_STREAM === undefined)) {
      report(
        values.APP_TOPIC === undefined ? 'APP_TOPIC' : 'APP_STREAM',
        'is set with the other, or neither',
      );
    }
  },
  checkGiven: (given, report) => {
    if (!given.has('APP_OWNER') && !given.has('--demo') && !given.has('--help'))
      report('APP_OWNER', 'is required');
  },
});

const owner = { APP_OWNER: 'ann@example.com' };

function problems(env: Record<string, string>, argv: string[] = []): string[] {
  try {
    settings.parse(env, argv);
  } catch (err) {
    expect(isCliError(err, 'CLI_CONFIG_INVALID')).toBe(true);
    const found = (err as CliError).details?.problems as string[];
    expect((err as Error).message).toBe(invalidConfigurationMessage(found));
    return found;
  }
  throw new Error('expected the configuration to be refused');
}

describe('Settings.parse', () => {
  it('fills in defaults, and reads every variable', () => {
    expect(settings.parse(owner, [])).toEqual({
      APP_HOST: '127.0.0.1',
      APP_PORT: 3000,
      APP_READ_ONLY: false,
      APP_OWNER: 'ann@example.com',
      APP_STYLE: 'iso',
      '--demo': false,
      '--help': false,
      '--version': false,
    });
    const values = settings.parse(
      { ...owner, APP_HOST: 'h.example', APP_PORT: '80', APP_READ_ONLY: 'yes', APP_STYLE: 'SHORT' },
      [],
    );
    expect(values).toMatchObject({
      APP_HOST: 'h.example',
      APP_PORT: 80,
      APP_READ_ONLY: true,
      APP_STYLE: 'short',
    });
  });

  it('treats empty variables as unset, and ignores variables it does not know', () => {
    expect(settings.parse({ ...owner, APP_PORT: '  ', APP_READ_ONLY: '', OTHER: 'x' }, [])).toMatchObject({
      APP_PORT: 3000,
      APP_READ_ONLY: false,
    });
  });

  it('lets a flag win over its variable, with its value after it or after =', () => {
    const env = { ...owner, APP_PORT: '80', APP_READ_ONLY: 'true' };
    expect(settings.parse(env, ['--port', '81']).APP_PORT).toBe(81);
    expect(settings.parse(env, ['--port=82']).APP_PORT).toBe(82);
    // A variable's switch takes a value after =; alone it means on.
    expect(settings.parse(env, ['--read-only=off']).APP_READ_ONLY).toBe(false);
    expect(settings.parse(owner, ['--read-only']).APP_READ_ONLY).toBe(true);
    expect(settings.parse({}, ['--demo'])['--demo']).toBe(true);
    expect(settings.parse({}, ['-h'])['--help']).toBe(true);
    expect(settings.parse(owner, ['-V'])['--version']).toBe(true);
  });

  it('reports every problem at once, named as it was given, with what was expected', () => {
    expect(
      problems({ APP_PORT: 'lots', APP_STYLE: 'long', OLD_SUBSCRIBE: 'general' }, [
        '--host',
        'bad host',
        '--nope',
        'stray',
        '--port',
      ]),
    ).toEqual([
      'OLD_SUBSCRIBE: not supported (a setting of the old server); use the tool',
      '--nope: unknown option (app --help lists them)',
      '--port: expects a value',
      '--host: expected a host name (got "bad host")',
      'APP_PORT: expected a whole number from 0 to 65535 (got "lots")',
      'APP_STYLE: expected one of iso, short (got "long")',
      'APP_OWNER: is required',
    ]);
    expect(problems(owner, ['serve'])).toEqual(['"serve": unexpected argument (app takes only options)']);
    expect(problems(owner, ['--port', '--demo'])).toEqual(['--port: expects a value']);
    expect(problems(owner, ['--demo=true'])).toEqual(['--demo: takes no value']);
    expect(problems(owner, ['--help=yes'])).toEqual(['--help: takes no value']);
  });

  it('runs refine only once every value is valid, and checkGiven always', () => {
    expect(problems({ ...owner, APP_TOPIC: 't' })).toEqual(['APP_STREAM: is set with the other, or neither']);
    expect(problems({ ...owner, APP_TOPIC: 't', APP_PORT: 'x' })).toEqual([
      'APP_PORT: expected a whole number from 0 to 65535 (got "x")',
    ]);
    expect(problems({ APP_PORT: 'x' })).toEqual([
      'APP_PORT: expected a whole number from 0 to 65535 (got "x")',
      'APP_OWNER: is required',
    ]);
  });

  it('never echoes a secret: not its own value, not pasted elsewhere, not in a URL', () => {
    const token = 'tok-0123456789abcdef';
    const found = problems({
      APP_TOKEN: 'has spaces in it, secret',
      APP_OWNER: 'https://bot:hunter2@chat.example.com',
    });
    expect(found).toEqual(['APP_TOKEN: expected 16 or more characters without spaces']);
    const pasted = problems({ APP_TOKEN: token, APP_OWNER: owner.APP_OWNER, APP_HOST: `x ${token}` });
    expect(pasted).toEqual(['APP_HOST: expected a host name (got "x [REDACTED]")']);
    // (Short: a value of 16 characters without spaces could be the token itself, and is blanked whole.)
    const url = problems({ ...owner, APP_HOST: 'http://u:pw@h.i' });
    expect(url).toEqual(['APP_HOST: expected a host name (got "http://[REDACTED]@h.i")']);
    // The word after an unknown option may be the secret someone tried to pass: it is skipped unseen.
    expect(problems(owner, ['--token', token])).toEqual(['--token: unknown option (app --help lists them)']);
    expect(problems(owner, ['--token=hunter2'])).toEqual(['--token: unknown option (app --help lists them)']);
  });

  it('cuts a long value in a problem', () => {
    const [line] = problems({ ...owner, APP_HOST: 'a b '.repeat(25) });
    expect(line).toBe(`APP_HOST: expected a host name (got "${'a b '.repeat(14)}a...")`);
  });

  it('never shows a value a secret setting would take, even with that setting unset', () => {
    // The token pasted into the wrong variable while its own is unset (or set elsewhere, as in a
    // file): any value, word or run of letters and digits the token's rule accepts is blanked,
    // also where a check's own message names the value.
    const token = 'Tok_0123456789abcdef';
    expect(problems({ ...owner, APP_HOST: token })).toEqual([
      'APP_HOST: expected a host name (got "[REDACTED]")',
    ]);
    expect(problems({ ...owner, APP_HOST: `host ${token}` })).toEqual([
      'APP_HOST: expected a host name (got "host [REDACTED]")',
    ]);
    const naming = defineSettings(
      {
        KEY: text(
          { group: 'G', defaultText: '', help: 'k', secret: true },
          matching(/^[a-z0-9]{32}$/, 'a key'),
        ),
        NAME: text({ group: 'G', defaultText: '', help: 'n' }, (raw) => `${JSON.stringify(raw)} is no name`),
      },
      { bin: 'b' },
    );
    const key = 'abcdefghijklmnopqrstuvwxyz012345';
    let message = '';
    try {
      naming.parse({ NAME: `id=${key};` }, [`${key}`]);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('NAME: "id=[REDACTED];" is no name (got "id=[REDACTED];")');
    expect(message).toContain('"[REDACTED]": unexpected argument');
    expect(message).not.toContain(key);
    // Short values stay readable.
    expect(problems({ ...owner, APP_STYLE: 'long' })).toEqual([
      'APP_STYLE: expected one of iso, short (got "long")',
    ]);
  });

  it('reads an earlier name as its replacement, and refuses one that means something else beside it', () => {
    expect(settings.parse({ ...owner, OLD_READ_ONLY: 'yes' }, []).APP_READ_ONLY).toBe(true);
    expect(settings.parse({ ...owner, OLD_READ_ONLY: 'yes', APP_READ_ONLY: 'on' }, []).APP_READ_ONLY).toBe(
      true,
    );
    expect(problems({ ...owner, OLD_READ_ONLY: 'yes', APP_READ_ONLY: 'off' })).toEqual([
      'OLD_READ_ONLY: conflicts with APP_READ_ONLY (OLD_READ_ONLY is the name the old server used for it); set only APP_READ_ONLY',
    ]);
    // A bad value read under an earlier name is reported under that name.
    expect(problems({ ...owner, OLD_READ_ONLY: 'maybe' })).toEqual([
      'OLD_READ_ONLY: expected one of 1/0, true/false, yes/no, on/off (got "maybe")',
    ]);
    // A flag still wins over an earlier name.
    expect(settings.parse({ ...owner, OLD_READ_ONLY: 'yes' }, ['--read-only=no']).APP_READ_ONLY).toBe(false);
  });

  it('reports a line once even when it is found twice', () => {
    const twice = defineSettings(
      { A: text({ group: 'G', defaultText: '', help: 'a' }) },
      {
        bin: 'b',
        refine: (_values, report) => {
          report('A', 'is wrong');
          report('A', 'is wrong');
        },
      },
    );
    expect(() => twice.parse({ A: 'x' }, [])).toThrow(
      /^Invalid configuration:\n {2}A: is wrong \(got "x"\)$/,
    );
  });

  it('throws the bin’s own error from configError, with the problems behind it as its cause', () => {
    class BinError extends Error {
      readonly code = 'BIN_CONFIG_INVALID';
    }
    const own = defineSettings(
      { A: integer({ group: 'G', help: 'a' }, 1, 2, 1) },
      { bin: 'b', configError: (err) => new BinError(err.message, { cause: err }) },
    );
    let caught: unknown;
    try {
      own.parse({ A: '3' }, []);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(BinError);
    expect((caught as Error).message).toBe(
      'Invalid configuration:\n  A: expected a whole number from 1 to 2 (got "3")',
    );
    expect(configurationProblems(caught)).toEqual(['A: expected a whole number from 1 to 2 (got "3")']);
    expect(configurationProblems(new Error('other', { cause: new Error('deeper') }))).toBeUndefined();
    expect(configurationProblems(new CliError('CLI_SETTINGS_INVALID', 'x'))).toBeUndefined();
    expect(configurationProblems(undefined)).toBeUndefined();
  });

  it('has bound methods, so a bin can export them as they are', () => {
    const { parse, list, variableNames } = settings;
    expect(parse(owner, []).APP_PORT).toBe(3000);
    expect(list()[0]?.name).toBe('APP_HOST');
    expect(variableNames()).not.toContain('--demo');
  });
});

describe('the generated documents', () => {
  it('lists every setting in table order, --help and --version last', () => {
    expect(settings.variableNames()).toEqual([
      'APP_HOST',
      'APP_PORT',
      'APP_READ_ONLY',
      'APP_TOKEN',
      'APP_OWNER',
      'APP_STYLE',
      'APP_TOPIC',
      'APP_STREAM',
    ]);
    const listed = settings.list();
    expect(listed.map((s) => s.name).slice(-3)).toEqual(['--demo', '--help', '--version']);
    expect(listed.find((s) => s.name === 'APP_TOKEN')).toEqual({
      name: 'APP_TOKEN',
      flag: undefined,
      flagArg: undefined,
      defaultText: 'unset',
      help: 'Bearer token | a secret.',
      group: 'Access',
      secret: true,
    });
    (listed[0] as { help: string }).help = 'changed';
    expect(settings.list()[0]?.help).toBe('Address to listen on.');
  });

  it('writes --help: what the bin does, usage, settings by group, the earlier names, the footer', () => {
    const small = defineSettings(
      {
        A_PORT: integer({ group: 'Network', flag: '--port', flagArg: '<port>', help: 'Port.' }, 0, 9, 1),
        A_ON: strictBoolean({ group: 'Network', help: 'Switch.' }, true),
        '--demo': flagSwitch({ group: 'Other', flag: '--demo', defaultText: 'off', help: 'Demo.' }),
      },
      { bin: 'tiny', legacy: [{ name: 'OLD_ON', origin: 'x', replacement: 'A_ON', handling: 'alias' }] },
    );
    expect(small.helpText({ about: ['tiny: a test.'], footer: ['Read the README.'] })).toBe(
      [
        'tiny: a test.',
        '',
        'Usage: tiny [options]',
        '',
        'Settings are environment variables; where a flag is shown, it overrides the variable.',
        'Boolean variables take 1/0, true/false, yes/no or on/off. Empty variables count as unset.',
        "Earlier servers' names are read as their replacements: OLD_ON as A_ON.",
        '',
        'Network:',
        '  A_PORT, --port <port>  Port. [default: 1]',
        '  A_ON                   Switch. [default: on]',
        '',
        'Other:',
        '  --demo                 Demo. [default: off]',
        '  --help                 Print this help and exit.',
        '  --version              Print the version and exit.',
        '',
        'Read the README.',
        '',
      ].join('\n'),
    );
    expect(small.markdownTable()).toBe(
      [
        '| variable | flag | default | what it does |',
        '|---|---|---|---|',
        '| `A_PORT` | `--port <port>` | 1 | Port. |',
        '| `A_ON` |  | on | Switch. |',
        '|  | `--demo` | off | Demo. |',
        '|  | `--help` |  | Print this help and exit. |',
        '|  | `--version` |  | Print the version and exit. |',
      ].join('\n'),
    );
  });

  it('escapes pipes in the README table only', () => {
    expect(settings.markdownTable()).toContain('| Bearer token \\| a secret. |');
    expect(settings.helpText({ about: [], footer: [] })).toContain('Bearer token | a secret.');
  });

  it('checks a hand-written .env.example against the variables', () => {
    const small = defineSettings(
      {
        A: text({ group: 'G', defaultText: '', help: 'a' }),
        B: text({ group: 'G', defaultText: '', help: 'b' }),
      },
      { bin: 'tiny' },
    );
    expect(small.envExampleProblems('# Comment about A=1\n# A=1\nB=two\n')).toEqual([]);
    expect(small.envExampleProblems('A=1\n# A=2\nC=3\n')).toEqual([
      'B: missing',
      'A: assigned more than once',
      'C: not a setting of tiny',
    ]);
  });
});

describe('defineSettings', () => {
  const entry = { group: 'G', defaultText: '', help: 'h' };
  it.each([
    ['an entry not built with a builder', { A: text(entry).optional() }, 'A'],
    ['a secret with a flag', { A: text({ ...entry, flag: '--a', flagArg: '<a>', secret: true }) }, 'A'],
    [
      'a flag given twice',
      { A: text({ ...entry, flag: '--x', flagArg: '<x>' }), B: text({ ...entry, flag: '--x' }) },
      'B',
    ],
    ['a flag taking -h', { A: strictBoolean({ group: 'G', help: 'h', flag: '-h' }, false) }, '--help'],
    [
      'a flag-only setting named apart from its flag',
      { '--a': flagSwitch({ ...entry, flag: '--b' }) },
      '--a',
    ],
    ['--help defined again', { '--help': flagSwitch({ ...entry, flag: '--help' }) }, '--help'],
  ])('refuses %s', (_what, badShape, setting) => {
    let caught: unknown;
    try {
      defineSettings(badShape as never, { bin: 'b' });
    } catch (err) {
      caught = err;
    }
    expect(isCliError(caught, 'CLI_SETTINGS_INVALID')).toBe(true);
    expect((caught as CliError).details).toEqual({ setting });
  });

  it('refuses an earlier name read as no setting', () => {
    expect(() =>
      defineSettings(
        { A: text(entry) },
        { bin: 'b', legacy: [{ name: 'OLD', origin: 'x', replacement: 'B', handling: 'alias' }] },
      ),
    ).toThrow(expect.objectContaining({ code: 'CLI_SETTINGS_INVALID', details: { setting: 'OLD' } }));
  });
});
