// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about literal ${VAR} references
import { describe, expect, it } from 'vitest';
import { type BackendName, buildInvocation, type InvocationInput } from './backends.js';
import { parseServerEntry } from './mcp-config.js';

const LITERAL_SECRET = 'literal-secret-0123456789';
const REFERENCED_SECRET = 'referenced-secret-9876543210';
const TOKEN = 'token-abcdef-123456';

const stdio = parseServerEntry({
  command: '/opt/bin/zulip-mcp',
  args: ['--log-level', 'debug', 'quote"back\\slash\u007f'],
  env: {
    ZULIP_SITE: 'https://chat.example.com',
    ZULIP_API_KEY: '${BOT_KEY}',
    ZULIP_EMAIL_PASSWORD: LITERAL_SECRET,
    SESSION_STREAM: 'stale',
    SESSION_TOPIC: 'stale',
  },
});
const http = parseServerEntry({
  type: 'http',
  url: 'https://mcp.example.com/mcp',
  headers: { Authorization: 'Bearer ${MCP_TOKEN}', 'X-Team': 'ops' },
});

function input(backend: BackendName, server = stdio): InvocationInput {
  return {
    backend,
    server,
    binding: { TRIGGER_MESSAGE_ID: '42', ZULIP_INTERRUPT_FILE: '/state/runs/42-a/interrupt' },
    prompt: 'Ann mentioned you.',
    systemPrompt: 'Be brief.',
    extraArgs: ['--extra'],
    runDir: '/state/runs/42-a',
    env: { BOT_KEY: REFERENCED_SECRET, MCP_TOKEN: TOKEN },
  };
}

/** The `-c` overrides of a codex command line, values parsed (they are TOML written as JSON-compatible text). */
function overrides(args: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    if (args[i] !== '-c') continue;
    const item = args[++i] as string;
    const eq = item.indexOf('=');
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

describe('buildInvocation', () => {
  it.each(['claude', 'codex', 'opencode'] as const)(
    'keeps every secret off the %s command line',
    (backend) => {
      for (const server of [stdio, http]) {
        const run = buildInvocation(input(backend, server));
        const argv = [run.command, ...run.args].join('\u0000');
        for (const secret of [LITERAL_SECRET, REFERENCED_SECRET, TOKEN]) expect(argv).not.toContain(secret);
        // What the logs must redact: the values the entry's secrets expand to.
        if (server === stdio)
          expect(run.secrets).toEqual(expect.arrayContaining([REFERENCED_SECRET, LITERAL_SECRET]));
        else expect(run.secrets).toContain(`Bearer ${TOKEN}`);
      }
    },
  );

  it('gives Claude Code a .mcp.json of its own, with the binding, references left for it to expand', () => {
    const run = buildInvocation(input('claude'));
    expect(run.command).toBe('claude');
    expect(run.stdin).toBe('Ann mentioned you.');
    expect(run.args).toEqual([
      '-p',
      '--allowedTools',
      'mcp__zulip',
      '--mcp-config',
      '/state/runs/42-a/mcp.json',
      '--strict-mcp-config',
      '--append-system-prompt',
      'Be brief.',
      '--extra',
    ]);
    expect(run.files).toHaveLength(1);
    const file = JSON.parse(run.files[0]?.content ?? '') as { mcpServers: Record<string, { env: object }> };
    expect(file.mcpServers.zulip).toEqual({
      command: '/opt/bin/zulip-mcp',
      args: ['--log-level', 'debug', 'quote"back\\slash\u007f'],
      env: {
        ZULIP_SITE: 'https://chat.example.com',
        ZULIP_API_KEY: '${BOT_KEY}',
        ZULIP_EMAIL_PASSWORD: LITERAL_SECRET,
        TRIGGER_MESSAGE_ID: '42',
        ZULIP_INTERRUPT_FILE: '/state/runs/42-a/interrupt',
      },
    });
    expect(run.env).toEqual({});
  });

  it('gives Codex -c overrides that forward env values by name, and the binding inline', () => {
    const run = buildInvocation(input('codex'));
    expect(run.args[0]).toBe('exec');
    expect(run.args.slice(-3)).toEqual(['--extra', '--', '-']);
    expect(run.stdin).toBe('Ann mentioned you.');
    const o = overrides(run.args);
    // Every value is TOML that is also JSON here: strings and lists of strings.
    expect(JSON.parse(o['mcp_servers.zulip.command'] as string)).toBe('/opt/bin/zulip-mcp');
    expect(JSON.parse(o['mcp_servers.zulip.args'] as string)).toEqual([
      '--log-level',
      'debug',
      'quote"back\\slash\u007f',
    ]);
    expect(o['mcp_servers.zulip.args']).toContain('\\u007f');
    expect(JSON.parse(o['mcp_servers.zulip.env_vars'] as string)).toEqual([
      'ZULIP_SITE',
      'ZULIP_API_KEY',
      'ZULIP_EMAIL_PASSWORD',
    ]);
    expect(o['mcp_servers.zulip.env']).toBe(
      '{"TRIGGER_MESSAGE_ID"="42","ZULIP_INTERRUPT_FILE"="/state/runs/42-a/interrupt"}',
    );
    expect(JSON.parse(o.developer_instructions as string)).toBe('Be brief.');
    expect(run.env).toEqual({
      ZULIP_SITE: 'https://chat.example.com',
      ZULIP_API_KEY: REFERENCED_SECRET,
      ZULIP_EMAIL_PASSWORD: LITERAL_SECRET,
    });
  });

  it('gives Codex HTTP headers through environment variables', () => {
    const run = buildInvocation(input('codex', http));
    const o = overrides(run.args);
    expect(JSON.parse(o['mcp_servers.zulip.url'] as string)).toBe('https://mcp.example.com/mcp');
    expect(o['mcp_servers.zulip.env_http_headers']).toBe(
      '{"Authorization"="ZULIP_AGENT_HEADER_0","X-Team"="ZULIP_AGENT_HEADER_1"}',
    );
    expect(run.env).toEqual({ ZULIP_AGENT_HEADER_0: `Bearer ${TOKEN}`, ZULIP_AGENT_HEADER_1: 'ops' });
  });

  it('gives OpenCode inline JSON configuration in its environment, and the system prompt as an instructions file', () => {
    const run = buildInvocation(input('opencode'));
    expect(run.args).toEqual(['run', '--extra']);
    expect(run.stdin).toBe('Ann mentioned you.');
    const config = JSON.parse(run.env.OPENCODE_CONFIG_CONTENT as string);
    expect(config).toEqual({
      $schema: 'https://opencode.ai/config.json',
      instructions: ['/state/runs/42-a/instructions.md'],
      mcp: {
        zulip: {
          type: 'local',
          command: ['/opt/bin/zulip-mcp', '--log-level', 'debug', 'quote"back\\slash\u007f'],
          environment: {
            ZULIP_SITE: 'https://chat.example.com',
            ZULIP_API_KEY: REFERENCED_SECRET,
            ZULIP_EMAIL_PASSWORD: LITERAL_SECRET,
            TRIGGER_MESSAGE_ID: '42',
            ZULIP_INTERRUPT_FILE: '/state/runs/42-a/interrupt',
          },
          enabled: true,
        },
      },
    });
    expect(run.files).toEqual([{ path: '/state/runs/42-a/instructions.md', content: 'Be brief.\n' }]);
    const remote = JSON.parse(buildInvocation(input('opencode', http)).env.OPENCODE_CONFIG_CONTENT as string);
    expect(remote.mcp.zulip).toEqual({
      type: 'remote',
      url: 'https://mcp.example.com/mcp',
      headers: { Authorization: `Bearer ${TOKEN}`, 'X-Team': 'ops' },
      enabled: true,
    });
  });

  it('refuses what a backend cannot carry, and references to unset variables', () => {
    const withCwd = parseServerEntry({ command: 'zulip-mcp', cwd: '/srv' });
    expect(() => buildInvocation(input('opencode', withCwd))).toThrow(
      expect.objectContaining({ code: 'LAUNCHER_BACKEND_UNSUPPORTED' }),
    );
    expect(overrides(buildInvocation(input('codex', withCwd)).args)['mcp_servers.zulip.cwd']).toBe('"/srv"');
    const lone = parseServerEntry({ command: 'zulip-mcp', args: ['\ud800'] });
    expect(() => buildInvocation(input('codex', lone))).toThrow(
      expect.objectContaining({ code: 'LAUNCHER_BACKEND_UNSUPPORTED' }),
    );
    for (const backend of ['claude', 'codex', 'opencode'] as const) {
      expect(() => buildInvocation({ ...input(backend), env: {} })).toThrow(
        expect.objectContaining({
          code: 'LAUNCHER_MCP_CONFIG_INVALID',
          message: expect.stringContaining('$BOT_KEY'),
        }),
      );
    }
  });
});
