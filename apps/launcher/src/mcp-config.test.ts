// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about literal ${VAR} references
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isLauncherError } from './errors.js';
import {
  expandReferences,
  hasEnvReference,
  loadServerEntry,
  parseServerEntry,
  selectServer,
} from './mcp-config.js';

function codeOf(fn: () => unknown): { code: unknown; message: string; details: unknown } {
  try {
    fn();
  } catch (err) {
    const e = err as { code?: unknown; message: string; details?: unknown };
    return { code: e.code, message: e.message, details: e.details };
  }
  throw new Error('expected a throw');
}

describe('parseServerEntry', () => {
  it('reads a command entry and an HTTP entry', () => {
    const stdio = parseServerEntry({
      command: 'npx',
      args: ['-y', '@zmcp/mcp-server'],
      env: { ZULIP_RC_PATH: '/etc/zuliprc', ZULIP_API_KEY: '${KEY}' },
      cwd: '/srv',
    });
    expect(stdio).toMatchObject({
      transport: 'stdio',
      command: 'npx',
      args: ['-y', '@zmcp/mcp-server'],
      env: { ZULIP_API_KEY: '${KEY}' },
      cwd: '/srv',
    });
    const http = parseServerEntry({
      type: 'http',
      url: 'https://mcp.example.com/mcp',
      headers: { Authorization: 'Bearer ${TOKEN}' },
    });
    expect(http).toMatchObject({ transport: 'http', headers: { Authorization: 'Bearer ${TOKEN}' } });
  });

  it.each([
    ['command', { command: '${HOME}/bin/zulip-mcp' }],
    ['args[1]', { command: 'zulip-mcp', args: ['--x', '--key=$ZULIP_API_KEY'] }],
    ['args[0]', { command: 'zulip-mcp', args: ['{env:ZULIP_API_KEY}'] }],
    // OpenCode substitutes a file's content for {file:path} in its configuration, command included.
    ['args[1]', { command: 'zulip-mcp', args: ['--key', '{file:~/.zuliprc}'] }],
    ['command', { command: '{file:/etc/zulip/command}' }],
    ['cwd', { command: 'zulip-mcp', cwd: '/srv/{file:/etc/hostname}' }],
    ['url', { type: 'http', url: 'https://x.example/mcp?key={file:/run/key}' }],
    ['cwd', { command: 'zulip-mcp', cwd: '${WORK}' }],
    ['url', { type: 'http', url: 'https://x.example/mcp?key=${KEY}' }],
  ])('fails closed on an environment reference or file substitution in %s: %j', (field, entry) => {
    const err = codeOf(() => parseServerEntry(entry));
    expect(err.code).toBe('LAUNCHER_ENV_REFERENCE');
    expect(err.details).toEqual({ field });
    expect(err.message).toContain(field);
  });

  it.each([
    [{}, 'needs a "command"'],
    [{ command: 'x', url: 'https://x.example' }, 'not both'],
    [{ type: 'sse', url: 'https://x.example' }, 'SSE'],
    [{ type: 'http', url: 'https://user:pw@x.example' }, 'credentials'],
    [{ type: 'http', url: 'ftp://x.example' }, 'http or https'],
    [{ command: 'x', env: { 'BAD-NAME': 'v' } }, 'not a variable name'],
    [{ command: 'x', args: 'one string' }, 'malformed at "args"'],
  ])('refuses a malformed entry: %j', (entry, text) => {
    const err = codeOf(() => parseServerEntry(entry));
    expect(err.code).toBe('LAUNCHER_MCP_CONFIG_INVALID');
    expect(err.message).toContain(text);
  });

  it('recognises the substitution forms of Claude Code, shells and OpenCode ({env:…} and {file:…}), and nothing else', () => {
    for (const v of [
      '${A}',
      '${A:-b}',
      '$A',
      'x$A_B',
      '{env:A}',
      '{env:A?}',
      '{file:/etc/key}',
      'a{file:~/k}b',
    ])
      expect(hasEnvReference(v), v).toBe(true);
    for (const v of ['$', '$1', 'a$', '{env}', '{file}', 'price: 5$'])
      expect(hasEnvReference(v), v).toBe(false);
  });
});

describe('selectServer and loadServerEntry', () => {
  it('names the servers a file has when the one asked for is missing', () => {
    const err = codeOf(() => selectServer({ mcpServers: { github: { command: 'gh' } } }, 'zulip'));
    expect(err.code).toBe('LAUNCHER_MCP_CONFIG_INVALID');
    expect(err.message).toContain('has no server named "zulip" (it has "github")');
    expect(codeOf(() => selectServer([], 'zulip')).message).toContain('no "mcpServers"');
  });

  it('reads a file, and says which file is unreadable or not JSON', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'zulip-agent-mcp-'));
    try {
      const good = join(dir, '.mcp.json');
      await writeFile(good, JSON.stringify({ mcpServers: { zulip: { command: 'zulip-mcp' } } }));
      expect((await loadServerEntry(good, 'zulip')).transport).toBe('stdio');
      const bad = join(dir, 'bad.json');
      await writeFile(bad, '{ nope');
      await expect(loadServerEntry(bad, 'zulip')).rejects.toMatchObject({
        code: 'LAUNCHER_MCP_CONFIG_INVALID',
        message: `${bad} is not valid JSON.`,
      });
      await expect(loadServerEntry(join(dir, 'missing.json'), 'zulip')).rejects.toMatchObject({
        code: 'LAUNCHER_MCP_CONFIG_INVALID',
        message: expect.stringContaining('ENOENT'),
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('expandReferences', () => {
  it('expands as Claude Code does and fails closed on an unset variable, naming it, not a value', () => {
    const env = { KEY: 'k-123', EMPTY: '' };
    expect(expandReferences('${KEY}', env, 'env.X')).toBe('k-123');
    expect(expandReferences('Bearer $KEY!', env, 'env.X')).toBe('Bearer k-123!');
    expect(expandReferences('${NOPE:-fallback}', env, 'env.X')).toBe('fallback');
    expect(expandReferences('${EMPTY:-fallback}', env, 'env.X')).toBe('fallback');
    expect(expandReferences('plain', env, 'env.X')).toBe('plain');
    let caught: unknown;
    try {
      expandReferences('${KEY}${NOPE}', env, 'env.ZULIP_API_KEY');
    } catch (err) {
      caught = err;
    }
    expect(isLauncherError(caught, 'LAUNCHER_MCP_CONFIG_INVALID')).toBe(true);
    expect((caught as Error).message).toBe(
      "env.ZULIP_API_KEY refers to $NOPE, which is not set in the launcher's environment.",
    );
    expect((caught as Error).message).not.toContain('k-123');
  });
});
