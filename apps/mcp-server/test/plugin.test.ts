// The Claude Code plugin (plugins/claude-code) stays in step with zulip-mcp: what it runs, what it
// configures, and that nothing of an event or a setting reaches a command line. The plugin itself
// runs in the real Claude Code in claude-plugin.e2e-real.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configVariableNames } from '../src/index.js';

const repoDir = join(import.meta.dirname, '..', '..', '..');
const pluginDir = join(repoDir, 'plugins', 'claude-code');
const json = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;

interface HookCommand {
  type: string;
  command: string;
  args?: string[];
}

describe('the Claude Code plugin', () => {
  const manifest = json(join(pluginDir, '.claude-plugin', 'plugin.json')) as {
    name: string;
    userConfig: Record<string, { sensitive?: boolean }>;
    mcpServers: Record<string, { command: string; args?: string[]; env: Record<string, string> }>;
  };
  const hooks = json(join(pluginDir, 'hooks', 'hooks.json')) as {
    hooks: Record<string, { matcher?: string; hooks: HookCommand[] }[]>;
  };

  it('is listed by the repository’s marketplace under its own name', () => {
    const marketplace = json(join(repoDir, '.claude-plugin', 'marketplace.json')) as {
      plugins: { name: string; source: string }[];
    };
    expect(marketplace.plugins).toEqual([
      expect.objectContaining({ name: manifest.name, source: './plugins/claude-code' }),
    ]);
  });

  it('runs zulip-mcp, configured only with settings zulip-mcp reads, taken from the plugin’s options', () => {
    const names = new Set(configVariableNames());
    expect(Object.keys(manifest.mcpServers)).toEqual(['zulip']);
    const server = manifest.mcpServers.zulip as {
      command: string;
      args?: string[];
      env: Record<string, string>;
    };
    expect(server.command).toBe('zulip-mcp');
    expect(server.args ?? []).toEqual([]);
    for (const [name, value] of Object.entries(server.env)) {
      expect(names.has(name), name).toBe(true);
      expect(value).toBe(`\${user_config.${name}}`);
    }
    // Each option is a setting of the same name: the hook reads it as CLAUDE_PLUGIN_OPTION_<name>.
    for (const key of Object.keys(manifest.userConfig)) expect(names.has(key), key).toBe(true);
    expect(Object.keys(manifest.userConfig).sort()).toEqual(Object.keys(server.env).sort());
  });

  it('hooks the lifecycle events with zulip-mcp hook, in exec form: no shell, no substituted value', () => {
    expect(Object.keys(hooks.hooks).sort()).toEqual([
      'Notification',
      'SessionEnd',
      'SessionStart',
      'StopFailure',
    ]);
    for (const [event, groups] of Object.entries(hooks.hooks)) {
      for (const group of groups) {
        for (const hook of group.hooks) {
          expect(hook, event).toMatchObject({ type: 'command', command: 'zulip-mcp', args: ['hook'] });
        }
      }
    }
    expect(hooks.hooks.Notification?.[0]?.matcher).toBe('permission_prompt');
    expect(JSON.stringify(hooks)).not.toMatch(/\$\{|\$[A-Z]/);
  });
});
