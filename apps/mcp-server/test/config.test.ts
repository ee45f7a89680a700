import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Config, McpServerError, parseConfig } from '../src/index.js';

const home = { HOME: '/home/agent' };

/** The problems a bad configuration reports, one line per setting. */
function problems(env: Record<string, string>, argv: string[] = []): string[] {
  try {
    parseConfig({ ...home, ...env }, argv, { exists: () => false });
  } catch (err) {
    expect(err).toBeInstanceOf(McpServerError);
    expect(err).toMatchObject({ code: 'MCP_CONFIG_INVALID' });
    return (err as McpServerError).details?.problems as string[];
  }
  throw new Error('expected the configuration to be refused');
}

function parse(env: Record<string, string>, argv: string[] = []): Config {
  return parseConfig({ ...home, ...env }, argv, { exists: () => false });
}

describe('parseConfig: hosting for an organization', () => {
  const key = Buffer.alloc(32, 1).toString('base64');
  it('refuses per-person tokens without ZULIP_SECRET_KEY, over stdio, or beside the shared token', () => {
    expect(problems({ ZMCP_HTTP_AUTH: 'people' }, ['--http'])).toEqual([
      expect.stringMatching(/^ZULIP_SECRET_KEY: is required with ZMCP_HTTP_AUTH=people/),
    ]);
    expect(problems({ ZMCP_HTTP_AUTH: 'people', ZULIP_SECRET_KEY: key })).toEqual([
      expect.stringMatching(/^ZMCP_HTTP_AUTH: people serves Streamable HTTP only/),
    ]);
    expect(
      problems({ ZMCP_HTTP_AUTH: 'people', ZULIP_SECRET_KEY: key, ZMCP_HTTP_TOKEN: 'x'.repeat(20) }, [
        '--http',
      ]),
    ).toEqual([expect.stringMatching(/^ZMCP_HTTP_TOKEN: is not used with ZMCP_HTTP_AUTH=people/)]);
  });

  it('takes a 32-byte secret key as base64 or hex, never showing a bad one', () => {
    expect(parse({ ZULIP_SECRET_KEY: key }).http.secretKey).toEqual(Buffer.alloc(32, 1));
    expect(parse({ ZULIP_SECRET_KEY: 'ab'.repeat(32) }).http.secretKey).toEqual(Buffer.alloc(32, 0xab));
    const bad = problems({ ZULIP_SECRET_KEY: 'too-short-secret-value' });
    expect(bad).toEqual([expect.stringMatching(/^ZULIP_SECRET_KEY: expected 32 bytes/)]);
    expect(bad.join('')).not.toContain('too-short-secret-value');
  });

  it('puts the audit log in the state directory unless told', () => {
    const config = parse({ ZULIP_STATE_DIR: '/srv/zmcp' });
    expect(config.http.auditLog).toBe(resolve('/srv/zmcp/audit.log'));
    expect(config.http).toMatchObject({ auth: 'token', rateLimitPerMinute: 600, maxWaitsPerToken: 4 });
  });
});

describe('parseConfig', () => {
  it('fills in the documented defaults', () => {
    const config = parse({});
    expect(config).toMatchObject({
      command: 'serve',
      demo: false,
      transport: 'stdio',
      zulip: {
        site: undefined,
        email: undefined,
        apiKey: undefined,
        rcPath: undefined,
        allowInsecureHttp: false,
      },
      stateDir: '/home/agent/.zmcp/state',
      stateDirSource: 'default',
      sessionId: 'default',
      timestampStyle: 'iso',
      readOnly: false,
      privateStreams: undefined,
      writeStreams: undefined,
      uploadRoots: [],
      uploadMaxBytes: undefined,
      markdownAutofix: true,
      maxMessageLength: undefined,
      pageBudgetBytes: 16_384,
      requestTimeoutMs: 15_000,
      toolDeadlineMs: 60_000,
      logLevel: 'info',
      http: {
        host: '127.0.0.1',
        port: 3000,
        token: undefined,
        allowedOrigins: undefined,
        maxSessions: 32,
        sessionIdleMs: 1_800_000,
      },
    });
    expect(config.timezone).toBe(Intl.DateTimeFormat().resolvedOptions().timeZone);
  });

  it('reads every variable', () => {
    const config = parse({
      ZULIP_REALM: 'https://chat.example.com',
      ZULIP_EMAIL: 'bot@example.com',
      ZULIP_API_KEY: 'abcdefABCDEF0123456789ghijklmnop',
      ZULIP_RC_PATH: '~/zuliprc',
      ZULIP_ALLOW_INSECURE_HTTP: 'yes',
      ZULIP_STATE_DIR: '/srv/state',
      ZULIP_SESSION_ID: 'agent-7.a_b',
      AGENT_TIMEZONE: 'Europe/Kyiv',
      AGENT_TIMESTAMP_STYLE: 'short',
      ZULIP_READ_ONLY: 'on',
      ZULIP_PRIVATE_STREAMS: 'ops, secrets ,',
      ZULIP_WRITE_STREAMS: 'bots,ops',
      ZULIP_UPLOAD_ROOTS: 'notes=./notes, out=/srv/out',
      ZULIP_UPLOAD_MAX_BYTES: '1048576',
      ZULIP_MARKDOWN_AUTOFIX: '0',
      ZULIP_MAX_MESSAGE_LENGTH: '5000',
      ZULIP_PAGE_BUDGET_BYTES: '4096',
      ZULIP_REQUEST_TIMEOUT_MS: '2000',
      ZULIP_TOOL_DEADLINE_MS: '30000',
      ZMCP_LOG_LEVEL: 'DEBUG',
      ZMCP_HTTP_HOST: '[::1]',
      ZMCP_HTTP_PORT: '0',
      ZMCP_HTTP_TOKEN: 'tok-0123456789abcdef',
      ZMCP_HTTP_ALLOWED_ORIGINS: 'http://localhost:6274,https://app.example/',
      ZMCP_HTTP_MAX_SESSIONS: '4',
      ZMCP_HTTP_SESSION_IDLE_MS: '60000',
    });
    expect(config).toMatchObject({
      zulip: {
        site: 'https://chat.example.com',
        email: 'bot@example.com',
        apiKey: 'abcdefABCDEF0123456789ghijklmnop',
        rcPath: '/home/agent/zuliprc',
        allowInsecureHttp: true,
      },
      stateDir: '/srv/state',
      sessionId: 'agent-7.a_b',
      timezone: 'Europe/Kyiv',
      timestampStyle: 'short',
      readOnly: true,
      privateStreams: ['ops', 'secrets'],
      writeStreams: ['bots', 'ops'],
      uploadRoots: [
        { name: 'notes', path: resolve('./notes') },
        { name: 'out', path: '/srv/out' },
      ],
      uploadMaxBytes: 1_048_576,
      markdownAutofix: false,
      maxMessageLength: 5000,
      pageBudgetBytes: 4096,
      requestTimeoutMs: 2000,
      toolDeadlineMs: 30_000,
      logLevel: 'debug',
      http: {
        host: '::1',
        port: 0,
        token: 'tok-0123456789abcdef',
        allowedOrigins: ['http://localhost:6274', 'https://app.example'],
        maxSessions: 4,
        sessionIdleMs: 60_000,
      },
    });
  });

  it('lets a flag win over its variable, in both flag spellings', () => {
    const config = parse({ ZMCP_HTTP_PORT: '4000', ZULIP_SESSION_ID: 'env', ZULIP_READ_ONLY: 'false' }, [
      '--http',
      '--port',
      '5000',
      '--session-id=flag',
      '--read-only',
      '--host=localhost',
      '--zuliprc',
      '/etc/zuliprc',
      '--log-level',
      'warn',
    ]);
    expect(config.transport).toBe('http');
    expect(config.http.port).toBe(5000);
    expect(config.http.host).toBe('localhost');
    expect(config.sessionId).toBe('flag');
    expect(config.readOnly).toBe(true);
    expect(config.zulip.rcPath).toBe('/etc/zuliprc');
    expect(config.logLevel).toBe('warn');
    expect(parse({ ZULIP_READ_ONLY: 'true' }, ['--read-only=off']).readOnly).toBe(false);
  });

  it('accepts ZULIP_SITE as the realm, and refuses two different realms', () => {
    expect(parse({ ZULIP_SITE: 'https://a.example' }).zulip.site).toBe('https://a.example');
    expect(problems({ ZULIP_REALM: 'https://a.example', ZULIP_SITE: 'https://b.example' })).toEqual([
      expect.stringMatching(/^ZULIP_SITE: conflicts with ZULIP_REALM/),
    ]);
  });

  it('compares ZULIP_REALM and ZULIP_SITE as core normalizes them', () => {
    expect(parse({ ZULIP_REALM: 'https://a.example/', ZULIP_SITE: 'https://a.example' }).zulip.site).toBe(
      'https://a.example/',
    );
    expect(
      parse({ ZULIP_REALM: 'https://a.example/api/v1', ZULIP_SITE: 'https://A.example' }).transport,
    ).toBe('stdio');
  });

  it('refuses plain http beyond loopback unless allowed, like the client would', () => {
    expect(problems({ ZULIP_REALM: 'http://chat.example.com' })).toEqual([
      expect.stringMatching(/^ZULIP_REALM: is plain http .*ZULIP_ALLOW_INSECURE_HTTP/),
    ]);
    expect(parse({ ZULIP_REALM: 'http://127.0.0.1:9991' }).zulip.site).toBe('http://127.0.0.1:9991');
    expect(
      parse({ ZULIP_REALM: 'http://chat.example.com', ZULIP_ALLOW_INSECURE_HTTP: '1' }).zulip
        .allowInsecureHttp,
    ).toBe(true);
  });

  it('refuses an API key that is not Zulip-shaped, such as a one-letter test key', () => {
    for (const key of ['e', 'x'.repeat(31), `${'x'.repeat(32)}!`]) {
      expect(problems({ ZULIP_API_KEY: key })).toEqual([
        'ZULIP_API_KEY: expected a Zulip API key: 32 letters and digits',
      ]);
    }
  });

  it('never echoes a secret from another variable or a URL', () => {
    const apiKey = 'Zk3yZk3yZk3yZk3yZk3yZk3yZk3yZk3y';
    const found = problems({
      ZULIP_API_KEY: apiKey,
      ZULIP_EMAIL: apiKey,
      ZULIP_REALM: 'https://bot:hunter2@chat.example.com',
    });
    expect(found.join('\n')).not.toContain(apiKey);
    expect(found.join('\n')).not.toContain('hunter2');
    expect(found).toContainEqual(expect.stringMatching(/^ZULIP_EMAIL: .*\(got "\[REDACTED\]"\)$/));
  });

  it('treats empty variables as unset', () => {
    const config = parse({ ZULIP_API_KEY: '', ZMCP_HTTP_PORT: '  ', ZULIP_READ_ONLY: '' });
    expect(config.zulip.apiKey).toBeUndefined();
    expect(config.http.port).toBe(3000);
    expect(config.readOnly).toBe(false);
  });

  it('recognises --help, --version and --demo', () => {
    expect(parse({}, ['--help']).command).toBe('help');
    expect(parse({}, ['-V']).command).toBe('version');
    expect(parse({}, ['--demo']).demo).toBe(true);
  });

  it.each([
    ['ZULIP_READ_ONLY', 'maybe', /^ZULIP_READ_ONLY: expected one of 1\/0, true\/false.* \(got "maybe"\)$/],
    ['ZULIP_MARKDOWN_AUTOFIX', '2', /^ZULIP_MARKDOWN_AUTOFIX: expected one of/],
    ['ZULIP_ALLOW_INSECURE_HTTP', 'y', /^ZULIP_ALLOW_INSECURE_HTTP: expected one of/],
    ['ZMCP_HTTP_PORT', '65536', /^ZMCP_HTTP_PORT: expected a whole number from 0 to 65535 \(got "65536"\)$/],
    ['ZMCP_HTTP_PORT', '-1', /^ZMCP_HTTP_PORT: expected a whole number/],
    ['ZMCP_HTTP_PORT', '80.5', /^ZMCP_HTTP_PORT: expected a whole number/],
    [
      'ZULIP_PAGE_BUDGET_BYTES',
      '100',
      /^ZULIP_PAGE_BUDGET_BYTES: expected a number of bytes .*from 1KiB to 1MiB/,
    ],
    ['ZULIP_REQUEST_TIMEOUT_MS', '1e3', /^ZULIP_REQUEST_TIMEOUT_MS: expected a whole number/],
    ['ZULIP_TOOL_DEADLINE_MS', '0', /^ZULIP_TOOL_DEADLINE_MS: expected a whole number from 100/],
    [
      'ZULIP_UPLOAD_MAX_BYTES',
      'lots',
      /^ZULIP_UPLOAD_MAX_BYTES: expected a number of bytes such as 26214400 or 25MiB/,
    ],
    ['ZULIP_UPLOAD_MAX_BYTES', '25MB', /^ZULIP_UPLOAD_MAX_BYTES: expected a number of bytes/],
    ['ZULIP_SESSION_ID', '.x', /^ZULIP_SESSION_ID: expected 1 to 128 characters.*starts with a dot/],
    ['ZULIP_SESSION_ID', 'a.delivery', /^ZULIP_SESSION_ID: expected .*reserved suffix/],
    ['ZULIP_MAX_MESSAGE_LENGTH', '0', /^ZULIP_MAX_MESSAGE_LENGTH: expected a whole number from 1/],
    ['ZMCP_HTTP_MAX_SESSIONS', '0', /^ZMCP_HTTP_MAX_SESSIONS: expected a whole number from 1/],
    ['ZMCP_HTTP_SESSION_IDLE_MS', '10', /^ZMCP_HTTP_SESSION_IDLE_MS: expected a whole number from 1000/],
    ['AGENT_TIMEZONE', 'Mars/Olympus', /^AGENT_TIMEZONE: expected an IANA time zone/],
    ['AGENT_TIMESTAMP_STYLE', 'long', /^AGENT_TIMESTAMP_STYLE: expected one of iso, short, none/],
    ['ZMCP_LOG_LEVEL', 'loud', /^ZMCP_LOG_LEVEL: expected one of debug, info, warn, error, silent/],
    ['ZULIP_SESSION_ID', '../etc', /^ZULIP_SESSION_ID: expected 1 to 128 characters/],
    ['ZULIP_SESSION_ID', 'x'.repeat(129), /^ZULIP_SESSION_ID: expected 1 to 128 characters/],
    ['ZULIP_EMAIL', 'not-an-email', /^ZULIP_EMAIL: expected an email address/],
    ['ZULIP_PRIVATE_STREAMS', 'ops,__ALL__', /^ZULIP_PRIVATE_STREAMS: __ALL__ must stand alone/],
    ['ZULIP_WRITE_STREAMS', ' , ', /^ZULIP_WRITE_STREAMS: it lists no streams/],
    ['ZULIP_UPLOAD_ROOTS', './notes', /^ZULIP_UPLOAD_ROOTS: entry "\.\/notes" is not name=path/],
    ['ZULIP_UPLOAD_ROOTS', 'a=/x,a=/y', /^ZULIP_UPLOAD_ROOTS: root name a is given twice/],
    ['ZMCP_HTTP_ALLOWED_ORIGINS', 'localhost:3000', /^ZMCP_HTTP_ALLOWED_ORIGINS: expected origins/],
    ['ZMCP_HTTP_ALLOWED_ORIGINS', 'http://a.example/path', /^ZMCP_HTTP_ALLOWED_ORIGINS: expected origins/],
    ['ZMCP_HTTP_HOST', 'bad host', /^ZMCP_HTTP_HOST: expected a host name/],
  ])('refuses %s=%j, naming the variable and what it expects', (name, value, message) => {
    expect(problems({ [name]: value })).toEqual([expect.stringMatching(message)]);
  });

  it('names the flag when the bad value came from a flag', () => {
    expect(problems({ ZMCP_HTTP_PORT: '80' }, ['--port', 'http'])).toEqual([
      expect.stringMatching(/^--port: expected a whole number from 0 to 65535 \(got "http"\)$/),
    ]);
    expect(problems({}, ['--read-only=perhaps'])).toEqual([
      expect.stringMatching(/^--read-only: expected one of/),
    ]);
  });

  it('reports every problem at once', () => {
    expect(problems({ ZULIP_READ_ONLY: 'x', ZMCP_HTTP_PORT: 'x' }, ['--nope'])).toHaveLength(3);
  });

  it('refuses unknown options, stray arguments and missing flag values', () => {
    expect(problems({}, ['--verbose'])).toEqual([expect.stringMatching(/^--verbose: unknown option/)]);
    expect(problems({}, ['serve'])).toEqual([expect.stringMatching(/^"serve": unexpected argument/)]);
    expect(problems({}, ['--port'])).toEqual(['--port: expects a value']);
    expect(problems({}, ['--http=yes'])).toEqual(['--http: takes no value']);
  });

  it('never echoes a secret’s value', () => {
    const apiKey = 'secret key with spaces';
    const token = 'short';
    const found = problems({ ZULIP_API_KEY: apiKey, ZMCP_HTTP_TOKEN: token, ZULIP_READ_ONLY: 'bad' });
    expect(found).toHaveLength(3);
    expect(found).toContainEqual(
      expect.stringMatching(/^ZULIP_API_KEY: expected a Zulip API key: 32 letters and digits$/),
    );
    expect(found).toContainEqual(expect.stringMatching(/^ZMCP_HTTP_TOKEN: expected at least 16 printable/));
    let message = '';
    try {
      parseConfig({ ZULIP_API_KEY: apiKey, ZMCP_HTTP_TOKEN: token }, []);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).not.toContain(apiKey);
    expect(message).not.toContain(`"${token}"`);
  });

  it('secrets cannot be passed as flags', () => {
    // The value after an unknown option is not echoed either: it may be the secret.
    expect(problems({}, ['--api-key', 'hunter2-secret'])).toEqual([
      '--api-key: unknown option (zulip-mcp --help lists them)',
    ]);
    expect(problems({}, ['--token=hunter2-secret'])).toEqual([
      '--token: unknown option (zulip-mcp --help lists them)',
    ]);
  });

  it('requires a bearer token to serve HTTP beyond loopback', () => {
    expect(problems({}, ['--http', '--host', '0.0.0.0'])).toEqual([
      expect.stringMatching(/^ZMCP_HTTP_TOKEN: is required when the HTTP host is not loopback/),
    ]);
    expect(parse({ ZMCP_HTTP_TOKEN: 'a-long-enough-token' }, ['--http', '--host', '0.0.0.0']).http.host).toBe(
      '0.0.0.0',
    );
    // Loopback needs none, and stdio ignores the host.
    expect(parse({}, ['--http', '--host', '127.0.0.2']).transport).toBe('http');
    expect(parse({ ZMCP_HTTP_HOST: '0.0.0.0' }).transport).toBe('stdio');
  });

  it('opens every private stream with __ALL__', () => {
    expect(parse({ ZULIP_PRIVATE_STREAMS: '__ALL__' }).privateStreams).toBe('__ALL__');
  });

  it('reads sizes in the uploads grammar, emoji names by core’s rule', () => {
    expect(parse({ ZULIP_UPLOAD_MAX_BYTES: '25MiB' }).uploadMaxBytes).toBe(25 * 1024 * 1024);
    expect(parse({ ZULIP_PAGE_BUDGET_BYTES: '32KiB' }).pageBudgetBytes).toBe(32_768);
    expect(parse({ ZULIP_DISMISS_EMOJI: ':Stop:' }).session.dismissEmoji).toBe('stop');
  });

  it('keeps the time zone as written', () => {
    expect(parse({ AGENT_TIMEZONE: 'UTC' }).timezone).toBe('UTC');
    expect(parse({}, ['--timezone', 'America/New_York']).timezone).toBe('America/New_York');
  });

  it('reads the agent session settings and a launcher’s binding', () => {
    const config = parse(
      {
        ZULIP_DISMISS_EMOJI: 'wave',
        ZULIP_LISTEN_EMOJI: 'robot_ear',
        ZULIP_AUTO_TYPING: 'off',
        ZULIP_INTERRUPT_FILE: '~/wake.txt',
        SESSION_STREAM: 'general',
        SESSION_TOPIC: 'deploys',
        TRIGGER_MESSAGE_ID: '4710',
      },
      [],
    );
    expect(config.session).toEqual({
      dismissEmoji: 'wave',
      listenEmoji: 'robot_ear',
      autoTyping: false,
      interruptFile: '/home/agent/wake.txt',
      permissionPrompt: false,
      launch: { stream: 'general', topic: 'deploys', triggerMessageId: 4710 },
    });
    expect(parse({}).session).toEqual({
      dismissEmoji: undefined,
      listenEmoji: undefined,
      autoTyping: true,
      interruptFile: undefined,
      permissionPrompt: false,
      launch: undefined,
    });
    expect(parse({ TRIGGER_MESSAGE_ID: '9' }).session.launch).toEqual({
      stream: undefined,
      topic: undefined,
      triggerMessageId: 9,
    });
  });

  it('refuses a launcher binding with a stream but no topic, and malformed emoji names', () => {
    expect(problems({ SESSION_STREAM: 'general' })).toEqual([
      'SESSION_TOPIC: SESSION_STREAM and SESSION_TOPIC are set together, or neither',
    ]);
    expect(problems({ ZULIP_DISMISS_EMOJI: 'st op' })[0]).toMatch(
      /^ZULIP_DISMISS_EMOJI: expected an emoji name/,
    );
    expect(problems({ ZULIP_LISTEN_EMOJI: '👂' })[0]).toMatch(/^ZULIP_LISTEN_EMOJI: expected an emoji name/);
    expect(problems({ TRIGGER_MESSAGE_ID: 'latest' })[0]).toMatch(
      /^TRIGGER_MESSAGE_ID: expected a whole number/,
    );
  });

  describe('names of earlier servers', () => {
    it('reads ZULIPMCP_READ_ONLY as ZULIP_READ_ONLY, strictly', () => {
      expect(parse({ ZULIPMCP_READ_ONLY: '1' }).readOnly).toBe(true);
      expect(parse({ ZULIPMCP_READ_ONLY: '0' }).readOnly).toBe(false);
      expect(problems({ ZULIPMCP_READ_ONLY: 'maybe' })).toEqual([
        expect.stringMatching(/^ZULIPMCP_READ_ONLY: expected one of 1\/0, true\/false.* \(got "maybe"\)$/),
      ]);
    });

    it('reads the allowlists and the markdown switch of zulipmcp', () => {
      const config = parse({
        BOT_ALLOWED_PRIVATE_STREAMS: 'ops,leads',
        BOT_ALLOWED_WRITE_STREAMS: 'bots',
        ZULIPMCP_MARKDOWN_AUTOFIX: '0',
      });
      expect(config.privateStreams).toEqual(['ops', 'leads']);
      expect(config.writeStreams).toEqual(['bots']);
      expect(config.markdownAutofix).toBe(false);
      expect(parse({ BOT_ALLOWED_PRIVATE_STREAMS: '__ALL__' }).privateStreams).toBe('__ALL__');
    });

    it('accepts both names when they mean the same, and refuses a conflict naming both', () => {
      expect(parse({ ZULIPMCP_READ_ONLY: '1', ZULIP_READ_ONLY: 'true' }).readOnly).toBe(true);
      expect(problems({ ZULIPMCP_READ_ONLY: '1', ZULIP_READ_ONLY: 'false' })).toEqual([
        expect.stringMatching(
          /^ZULIPMCP_READ_ONLY: conflicts with ZULIP_READ_ONLY.*set only ZULIP_READ_ONLY$/,
        ),
      ]);
      expect(problems({ BOT_ALLOWED_WRITE_STREAMS: 'a', ZULIP_WRITE_STREAMS: 'a,b' })).toEqual([
        expect.stringMatching(/^BOT_ALLOWED_WRITE_STREAMS: conflicts with ZULIP_WRITE_STREAMS/),
      ]);
      // A flag still wins over both.
      expect(parse({ ZULIPMCP_READ_ONLY: '0' }, ['--read-only']).readOnly).toBe(true);
    });

    it('refuses ZULIP_SUBSCRIBE, saying what to use instead', () => {
      expect(problems({ ZULIP_SUBSCRIBE: 'general' })).toEqual([
        expect.stringMatching(/^ZULIP_SUBSCRIBE: not supported .*subscribe tool.*start_monitoring/),
      ]);
    });

    it('reads AGENT_TIMESTAMP_STYLE=full as iso', () => {
      expect(parse({ AGENT_TIMESTAMP_STYLE: 'full' }).timestampStyle).toBe('iso');
      expect(parse({ AGENT_TIMESTAMP_STYLE: 'FULL' }).timestampStyle).toBe('iso');
    });

    it('keeps using the earlier default state directory when only it exists', () => {
      const earlier = '/home/agent/.zulip_mcp_state';
      const current = '/home/agent/.zmcp/state';
      const only = (...paths: string[]) => ({ exists: (p: string) => paths.includes(p) });
      expect(parseConfig(home, [], only(earlier))).toMatchObject({
        stateDir: earlier,
        stateDirSource: 'earlier default',
      });
      expect(parseConfig(home, [], only(earlier, current))).toMatchObject({
        stateDir: current,
        stateDirSource: 'default',
      });
      expect(parseConfig({ ...home, ZULIP_STATE_DIR: '/srv/s' }, [], only(earlier))).toMatchObject({
        stateDir: '/srv/s',
        stateDirSource: 'setting',
      });
    });
  });
});
