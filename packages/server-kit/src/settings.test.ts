import { resolve } from 'node:path';
import { configurationProblems, defineSettings, integer } from '@zmcp/cli';
import { describe, expect, it } from 'vitest';
import { isServerKitError, ServerKitError } from './errors.js';
import { type ServerSettingsOptions, serverSettings } from './settings.js';

const home = '/home/agent';

/** A bin made of the shared settings and one of its own, as an app defines it. */
function bin(options: Partial<ServerSettingsOptions> = {}) {
  const server = serverSettings({
    bin: 'zulip-test',
    toolsets: { served: ['read', 'write', 'files'], default: ['read', 'write'] },
    readOnly: 'served',
    ...options,
  });
  const settings = defineSettings(
    {
      ...server.shape,
      TEST_OWN: integer({ group: 'Own', help: 'A setting of the bin alone.' }, 1, 9, 3),
    },
    { bin: 'zulip-test', refine: server.check },
  );
  const parse = (
    env: Record<string, string>,
    argv: string[] = [],
    exists: (path: string) => boolean = () => false,
  ) => {
    const full = { HOME: home, ...env };
    const values = settings.parse(full, argv);
    return { values, config: server.resolve(values, { env: full, cwd: '/srv/agent', exists }) };
  };
  const problems = (env: Record<string, string>, argv: string[] = []): readonly string[] => {
    try {
      parse(env, argv);
    } catch (err) {
      const found = configurationProblems(err);
      if (found !== undefined) return found;
      throw err;
    }
    throw new Error('expected the configuration to be refused');
  };
  return { settings, parse, problems };
}

describe('serverSettings', () => {
  it('fills in the documented defaults', () => {
    const { config, values } = bin().parse({});
    expect(config).toEqual({
      zulip: {
        site: undefined,
        email: undefined,
        apiKey: undefined,
        rcPath: undefined,
        allowInsecureHttp: false,
      },
      stateDir: `${home}/.zmcp/state`,
      stateDirSource: 'default',
      sessionId: 'default',
      timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      timestampStyle: 'iso',
      readOnly: false,
      toolsets: ['read', 'write'],
      privateStreams: undefined,
      writeStreams: undefined,
      writeDms: undefined,
      admissionList: undefined,
      admissionSetting: 'ZULIP_ALLOWED_USERS',
      uploadRoots: [],
      uploadMaxBytes: undefined,
      markdownAutofix: true,
      maxMessageLength: undefined,
      sendOnceWindowMs: 300_000,
      pageBudgetBytes: 16_384,
      requestTimeoutMs: 15_000,
      toolDeadlineMs: 60_000,
      logLevel: 'info',
      status: { port: undefined, host: '127.0.0.1', token: undefined },
    });
    // The bin's own settings are read beside them.
    expect(values.TEST_OWN).toBe(3);
  });

  it('reads every shared variable, and lets a flag win', () => {
    const { config } = bin().parse(
      {
        ZULIP_REALM: 'https://chat.example.com',
        ZULIP_EMAIL: 'bot@example.com',
        ZULIP_API_KEY: 'abcdefABCDEF0123456789ghijklmnop',
        ZULIP_RC_PATH: '~/zuliprc',
        ZULIP_STATE_DIR: '~/state',
        ZULIP_SESSION_ID: 'agent-7',
        AGENT_TIMEZONE: 'Europe/Kyiv',
        AGENT_TIMESTAMP_STYLE: 'full',
        ZULIP_TOOLSETS: 'files',
        ZULIP_PRIVATE_STREAMS: 'ops, 12',
        ZULIP_WRITE_STREAMS: 'bots',
        ZULIP_WRITE_DMS: 'yes',
        ZULIP_ALLOWED_USERS: '12, Ann@Example.com',
        ZULIP_UPLOAD_ROOTS: 'notes=./notes',
        ZULIP_UPLOAD_MAX_BYTES: '1MiB',
        ZULIP_MARKDOWN_AUTOFIX: 'off',
        ZULIP_MAX_MESSAGE_LENGTH: '5000',
        ZULIP_SEND_ONCE_WINDOW_MS: '0',
        ZULIP_PAGE_BUDGET_BYTES: '4KiB',
        ZULIP_REQUEST_TIMEOUT_MS: '2000',
        ZULIP_TOOL_DEADLINE_MS: '30000',
        ZMCP_LOG_LEVEL: 'debug',
      },
      ['--read-only', '--session-id=flag', '--log-level', 'warn'],
    );
    expect(config).toMatchObject({
      zulip: {
        site: 'https://chat.example.com',
        rcPath: `${home}/zuliprc`,
        apiKey: 'abcdefABCDEF0123456789ghijklmnop',
      },
      stateDir: `${home}/state`,
      stateDirSource: 'setting',
      sessionId: 'flag',
      timezone: 'Europe/Kyiv',
      timestampStyle: 'iso',
      readOnly: true,
      toolsets: ['files'],
      privateStreams: ['ops', 12],
      writeStreams: ['bots'],
      writeDms: true,
      admissionList: { ids: [12], emails: ['ann@example.com'] },
      uploadRoots: [{ name: 'notes', path: resolve('/srv/agent', 'notes') }],
      uploadMaxBytes: 1_048_576,
      markdownAutofix: false,
      maxMessageLength: 5000,
      sendOnceWindowMs: 0,
      pageBudgetBytes: 4096,
      requestTimeoutMs: 2000,
      toolDeadlineMs: 30_000,
      logLevel: 'warn',
    });
  });

  it('keeps state where the earlier server kept it only when that directory alone exists', () => {
    const earlier = `${home}/.zulip_mcp_state`;
    expect(bin().parse({}, [], (p) => p === earlier).config).toMatchObject({
      stateDir: earlier,
      stateDirSource: 'earlier default',
    });
    expect(bin().parse({}, [], () => true).config.stateDirSource).toBe('default');
  });

  it('reads all and default as the bin’s own toolsets, and names the bin that serves another', () => {
    const kit = bin({
      toolsets: { served: ['read', 'write', 'files'], default: ['read'], otherBin: 'zulip-big' },
    });
    expect(kit.parse({ ZULIP_TOOLSETS: 'all' }).config.toolsets).toEqual(['read', 'write', 'files']);
    expect(kit.parse({ ZULIP_TOOLSETS: 'default, files' }).config.toolsets).toEqual(['read', 'files']);
    expect(kit.problems({ ZULIP_TOOLSETS: 'read,monitor' })).toEqual([
      `ZULIP_TOOLSETS: the monitor toolset is zulip-big's; zulip-test serves read, write, files (got "read,monitor")`,
    ]);
    expect(bin().problems({ ZULIP_TOOLSETS: 'monitor' })).toEqual([
      'ZULIP_TOOLSETS: the monitor toolset is not served by zulip-test; zulip-test serves read, write, files (got "monitor")',
    ]);
    expect(kit.problems({ ZULIP_TOOLSETS: 'reed' })).toEqual([
      expect.stringMatching(
        /^ZULIP_TOOLSETS: unknown toolset "reed"; expected "all", "default" or a list of/,
      ),
    ]);
  });

  it('reads ZULIP_READ_ONLY by the one rule in a bin that cannot run read-only, and refuses it on', () => {
    const kit = bin({ readOnly: { because: 'it must write', instead: 'zulip-other' } });
    expect(kit.parse({ ZULIP_READ_ONLY: 'off' }).config.readOnly).toBe(false);
    expect(kit.problems({ ZULIP_READ_ONLY: 'true' })).toEqual([
      'ZULIP_READ_ONLY: zulip-test cannot run read-only (it must write); use zulip-other with ZULIP_READ_ONLY for a read-only server (got "true")',
    ]);
    expect(kit.problems({ ZULIP_READ_ONLY: 'maybe' })).toEqual([
      expect.stringMatching(/^ZULIP_READ_ONLY: expected one of 1\/0, true\/false, yes\/no, on\/off/),
    ]);
    // No switch for what the bin refuses.
    expect(kit.problems({}, ['--read-only'])).toEqual([
      expect.stringMatching(/^--read-only: unknown option/),
    ]);
    const help = kit.settings.list().find((s) => s.name === 'ZULIP_READ_ONLY');
    expect(help?.help).toBe(
      'Must stay off: zulip-test cannot run read-only (it must write); use zulip-other for a read-only server.',
    );
  });

  it('declares only the Zulip account and the settings named in `only`; the rest resolve to their defaults', () => {
    const server = serverSettings({
      bin: 'zulip-small',
      only: ['ZULIP_REQUEST_TIMEOUT_MS', 'ZMCP_LOG_LEVEL'],
    });
    expect(Object.keys(server.shape)).toEqual([
      'ZULIP_REALM',
      'ZULIP_SITE',
      'ZULIP_EMAIL',
      'ZULIP_API_KEY',
      'ZULIP_RC_PATH',
      'ZULIP_ALLOW_INSECURE_HTTP',
      'ZULIP_REQUEST_TIMEOUT_MS',
      'ZMCP_LOG_LEVEL',
    ]);
    const settings = defineSettings({ ...server.shape }, { bin: 'zulip-small', refine: server.check });
    // What it does not declare is not its setting: the variable is not read, the flag is unknown.
    const env = {
      HOME: home,
      ZULIP_SITE: 'https://chat.example.com',
      ZULIP_REQUEST_TIMEOUT_MS: '2500',
      ZULIP_TOOL_DEADLINE_MS: '1000',
      ZULIP_READ_ONLY: 'on',
      ZULIP_STATE_DIR: '/elsewhere',
    };
    const config = server.resolve(settings.parse(env, ['--log-level=warn']), { env, exists: () => false });
    const full = bin().parse({});
    expect(config).toEqual({
      ...full.config,
      zulip: { ...full.config.zulip, site: 'https://chat.example.com' },
      toolsets: [],
      requestTimeoutMs: 2500,
      logLevel: 'warn',
    });
    expect(() => settings.parse(env, ['--read-only'])).toThrow(/--read-only: unknown option/);
    // The site pair is still checked.
    expect(() => settings.parse({ ZULIP_REALM: 'http://chat.example.com' }, [])).toThrow(
      /ZULIP_REALM: is plain http/,
    );
  });

  it.each([
    ['only', { bin: 'zulip-small', only: ['ZULIP_SITE'] }],
    ['only', { bin: 'zulip-small', only: ['ZULIP_NOPE'] }],
    ['toolsets', { bin: 'zulip-small', only: ['ZULIP_TOOLSETS'] }],
    ['readOnly', { bin: 'zulip-small', only: ['ZULIP_READ_ONLY'] }],
    ['toolsets', { bin: 'zulip-small', readOnly: 'served' }],
  ])('refuses a subset that misdescribes the bin (%s)', (option, options) => {
    let thrown: unknown;
    try {
      serverSettings(options as ServerSettingsOptions);
    } catch (err) {
      thrown = err;
    }
    expect(isServerKitError(thrown, 'SERVER_KIT_INVALID_OPTIONS')).toBe(true);
    expect((thrown as ServerKitError).details).toEqual({ option });
  });

  it('reads who may reach the agent with core’s one parser: names are refused', () => {
    expect(bin().problems({ ZULIP_ALLOWED_USERS: '12, Ann Lee' })).toEqual([
      expect.stringMatching(/^ZULIP_ALLOWED_USERS: .*"Ann Lee" is neither a user id nor an email address/),
    ]);
  });

  it('checks the Zulip site pair as every bin does', () => {
    expect(bin().problems({ ZULIP_REALM: 'http://chat.example.com' })).toEqual([
      expect.stringMatching(/^ZULIP_REALM: is plain http .*ZULIP_ALLOW_INSECURE_HTTP/),
    ]);
  });

  it.each([
    ['bin', { bin: ' ' }],
    ['toolsets.served', { toolsets: { served: [], default: [] } }],
    ['toolsets.served', { toolsets: { served: ['read', 'nope' as 'read'], default: [] } }],
    ['toolsets.default', { toolsets: { served: ['read'], default: ['write'] } }],
  ] as const)('refuses options that misdescribe the bin (%s)', (option, options) => {
    let thrown: unknown;
    try {
      bin(options as Partial<ServerSettingsOptions>);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ServerKitError);
    expect(isServerKitError(thrown, 'SERVER_KIT_INVALID_OPTIONS')).toBe(true);
    expect((thrown as ServerKitError).details).toEqual({ option });
  });
});
