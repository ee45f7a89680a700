// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about literal ${VAR} references
import { configSettings as serverConfigSettings } from '@zmcp/mcp-server';
import { describe, expect, it } from 'vitest';
import { configSettings, parseConfig } from '../src/index.js';

const allowed = { ZULIP_AGENT_ALLOWED_USERS: '7, ann@example.test' };

function problems(env: Record<string, string>, argv: string[] = []): string[] {
  try {
    parseConfig(env, argv, { cwd: '/work' });
  } catch (err) {
    expect((err as { code?: unknown }).code).toBe('LAUNCHER_CONFIG_INVALID');
    return (err as { details: { problems: string[] } }).details.problems;
  }
  throw new Error('expected a configuration error');
}

describe('parseConfig', () => {
  it('has defaults for everything but who may call', () => {
    const config = parseConfig({ ...allowed, HOME: '/home/me' }, [], { cwd: '/work' });
    expect(config).toMatchObject({
      command: 'run',
      demo: false,
      backend: 'claude',
      streamBackends: [],
      mcpConfigPath: '/work/.mcp.json',
      mcpServerName: 'zulip',
      workdir: '/work',
      backendArgs: { claude: [], codex: [], opencode: [] },
      allowedUsers: { userIds: [7], emails: ['ann@example.test'] },
      directMessages: true,
      maxRunning: 2,
      maxQueued: 20,
      timeLimitMs: 1_800_000,
      stopGraceMs: 10_000,
      catchUpMs: 3_600_000,
      emoji: { queued: 'hourglass', working: 'working_on_it', done: 'check', failed: 'warning' },
      stateDir: '/home/me/.zmcp/launcher',
      launcherId: 'zulip-agent',
      logDir: '/home/me/.zmcp/launcher/logs',
      logLevel: 'info',
      requestTimeoutMs: 15_000,
      // Its Zulip runtime: its own state directory and record name; every conversation of the bot.
      sessionId: 'zulip-agent',
      privateStreams: '__ALL__',
      readOnly: false,
    });
  });

  it('declares the settings it shares with the servers once, as they do, and none it would ignore', () => {
    const shared = [
      'ZULIP_REALM',
      'ZULIP_SITE',
      'ZULIP_EMAIL',
      'ZULIP_API_KEY',
      'ZULIP_RC_PATH',
      'ZULIP_ALLOW_INSECURE_HTTP',
      'ZULIP_REQUEST_TIMEOUT_MS',
      'ZMCP_LOG_LEVEL',
    ];
    const mine = new Map(configSettings().map((s) => [s.name, s]));
    const server = new Map(serverConfigSettings().map((s) => [s.name, s]));
    for (const name of shared) expect(mine.get(name), name).toEqual(server.get(name));
    for (const name of ['ZULIP_STATE_DIR', 'ZULIP_TOOLSETS', 'ZULIP_READ_ONLY', 'ZULIP_PRIVATE_STREAMS'])
      expect(mine.has(name), name).toBe(false);
    const config = parseConfig({ ...allowed, ZULIP_REQUEST_TIMEOUT_MS: '2500', ZULIP_STATE_DIR: '/x' }, [], {
      cwd: '/work',
    });
    expect(config.requestTimeoutMs).toBe(2500);
    expect(config.stateDir).not.toBe('/x');
    expect(problems({ ...allowed, ZULIP_REQUEST_TIMEOUT_MS: 'soon' })).toEqual([
      'ZULIP_REQUEST_TIMEOUT_MS: expected a whole number from 100 to 600000 (got "soon")',
    ]);
  });

  it('fails closed without an allowlist, and refuses names in it', () => {
    expect(problems({})).toEqual([
      'ZULIP_AGENT_ALLOWED_USERS: is required: list the user ids or emails who may start an agent (no one may otherwise)',
    ]);
    expect(problems({ ZULIP_AGENT_ALLOWED_USERS: '7, Ann Lee' })[0]).toContain(
      '"Ann Lee" is neither a user id nor an email address (names are not accepted: anyone can take a name)',
    );
    expect(problems({ ZULIP_AGENT_ALLOWED_USERS: ' , ' })[0]).toContain(
      'expected user ids or email addresses',
    );
    // --demo allows the demo realm's people instead.
    expect(parseConfig({}, ['--demo']).allowedUsers).toBeUndefined();
  });

  it('lets a flag win over its variable, and resolves paths from the working directory', () => {
    const config = parseConfig(
      { ...allowed, ZULIP_AGENT_BACKEND: 'codex', HOME: '/home/me' },
      [
        '--backend',
        'opencode',
        '--max-running=4',
        '--state-dir',
        'state',
        '--mcp-config',
        '~/cfg.json',
        '--log-level',
        'debug',
      ],
      { cwd: '/work' },
    );
    expect(config).toMatchObject({
      backend: 'opencode',
      maxRunning: 4,
      stateDir: '/work/state',
      logDir: '/work/state/logs',
      mcpConfigPath: '/home/me/cfg.json',
      logLevel: 'debug',
    });
  });

  it('reads per-stream backends, backend arguments and status emoji', () => {
    const config = parseConfig(
      {
        ...allowed,
        ZULIP_AGENT_STREAM_BACKENDS: 'ops=codex, 12 = OpenCode, team=a=claude',
        ZULIP_AGENT_CODEX_ARGS: '["--model", "o4", "--skip-git-repo-check"]',
        ZULIP_AGENT_DONE_EMOJI: ':Tada:',
      },
      [],
    );
    expect(config.streamBackends).toEqual([
      { stream: 'ops', backend: 'codex' },
      { stream: 12, backend: 'opencode' },
      { stream: 'team=a', backend: 'claude' },
    ]);
    expect(config.backendArgs.codex).toEqual(['--model', 'o4', '--skip-git-repo-check']);
    expect(config.emoji.done).toBe('tada');
  });

  it('names every bad setting, never echoing a secret', () => {
    const found = problems(
      {
        ...allowed,
        ZULIP_API_KEY: 'has spaces in the secret',
        ZULIP_AGENT_BACKEND: 'gpt',
        ZULIP_AGENT_STREAM_BACKENDS: 'ops=gpt',
        ZULIP_AGENT_CLAUDE_ARGS: '["--key", "${ZULIP_API_KEY}"]',
        ZULIP_AGENT_OPENCODE_ARGS: '--model x',
        ZULIP_AGENT_MAX_RUNNING: '0',
        ZULIP_AGENT_ID: '.hidden',
        ZULIP_AGENT_WORKING_EMOJI: 'not an emoji',
        ZULIP_AGENT_DIRECT_MESSAGES: 'sometimes',
      },
      ['--unknown', 'value', 'stray'],
    );
    expect(found).toEqual(
      [
        '--unknown: unknown option (zulip-agent --help lists them)',
        '"stray": unexpected argument (zulip-agent takes only options)',
        'ZULIP_API_KEY: expected a Zulip API key: 32 letters and digits',
        'ZULIP_AGENT_BACKEND: expected one of claude, codex, opencode (got "gpt")',
        'ZULIP_AGENT_STREAM_BACKENDS: expected stream=backend pairs such as ops=codex or 12=opencode (backends: claude, codex, opencode) (got "ops=gpt")',
        'ZULIP_AGENT_CLAUDE_ARGS: item 1 holds an environment reference or a {file:…} substitution; nothing is expanded, and secrets stay off command lines (got "[\\"--key\\", [REDACTED]")',
        'ZULIP_AGENT_OPENCODE_ARGS: expected a JSON list of strings, such as ["--model", "x"] (got "--model x")',
        'ZULIP_AGENT_MAX_RUNNING: expected a whole number from 1 to 64 (got "0")',
        'ZULIP_AGENT_WORKING_EMOJI: expected an emoji name such as working_on_it or check (got "not an emoji")',
        'ZULIP_AGENT_ID: ".hidden" starts with a dot (got ".hidden")',
        'ZULIP_AGENT_DIRECT_MESSAGES: expected one of 1/0, true/false, yes/no, on/off (got "sometimes")',
      ].sort((a, b) => order(a) - order(b)),
    );
    expect(found.join('\n')).not.toContain('has spaces');
  });

  it('gives Codex an approval mode for the zulip tools that works, and refuses one that cannot', () => {
    expect(parseConfig(allowed, []).codexToolApproval).toBe('approve');
    // Any other mode asks before each write tool, and codex exec has no one to ask.
    for (const mode of ['auto', 'writes', 'prompt']) {
      for (const env of [{ ZULIP_AGENT_BACKEND: 'codex' }, { ZULIP_AGENT_STREAM_BACKENDS: 'ops=codex' }]) {
        const [line] = problems({ ...allowed, ...env, ZULIP_AGENT_CODEX_TOOL_APPROVAL: mode });
        expect(line).toMatch(/^ZULIP_AGENT_CODEX_TOOL_APPROVAL: /);
        expect(line).toContain('codex exec would refuse every zulip tool that writes (reply, listen');
        expect(line).toContain('--approve-for-me');
      }
      // Not in use, or with codex's automatic reviewer to answer: accepted as configured.
      expect(parseConfig({ ...allowed, ZULIP_AGENT_CODEX_TOOL_APPROVAL: mode }, []).codexToolApproval).toBe(
        mode,
      );
      const reviewed = parseConfig(
        {
          ...allowed,
          ZULIP_AGENT_BACKEND: 'codex',
          ZULIP_AGENT_CODEX_TOOL_APPROVAL: mode,
          ZULIP_AGENT_CODEX_ARGS: '["--approve-for-me"]',
        },
        [],
      );
      expect(reviewed.codexToolApproval).toBe(mode);
    }
    expect(problems({ ...allowed, ZULIP_AGENT_CODEX_TOOL_APPROVAL: 'never' })).toEqual([
      'ZULIP_AGENT_CODEX_TOOL_APPROVAL: expected one of approve, auto, writes, prompt (got "never")',
    ]);
  });

  it('takes no secret as a flag', () => {
    const secrets = configSettings().filter((s) => s.secret);
    // A value shaped like the status token (unset here) is never echoed either: the tail of the
    // CLAUDE_ARGS value above is redacted for it.
    expect(secrets.map((s) => s.name)).toEqual(['ZULIP_API_KEY', 'ZULIP_STATE_URL', 'ZMCP_STATUS_TOKEN']);
    expect(secrets.every((s) => s.flag === undefined)).toBe(true);
  });
});

/** Problems come in schema order after the argv ones; this puts the expected list in that order. */
function order(line: string): number {
  const names = ['--', '"', ...configSettings().map((s) => s.name)];
  return names.findIndex((n) => line.startsWith(n === '--' ? '--unknown' : n === '"' ? '"stray"' : `${n}:`));
}
