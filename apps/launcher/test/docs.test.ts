// The settings are listed in four places: the schema, --help, .env.example and the README.
// They must name the same variables; the README's table is generated from the schema.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configMarkdownTable } from '../src/config.js';
import { configSettings, configVariableNames, helpText } from '../src/index.js';

const appDir = join(import.meta.dirname, '..');
const variablePattern = /\b(?:ZULIP|ZMCP)_[A-Z0-9_]+\b/g;
const readme = readFileSync(join(appDir, 'README.md'), 'utf8');

function namesIn(text: string): string[] {
  return [...new Set(text.match(variablePattern) ?? [])].sort();
}

describe('configuration documentation', () => {
  const names = configVariableNames().sort();

  it('--help names exactly the schema’s variables, with every flag and help line', () => {
    const help = helpText();
    expect(namesIn(help)).toEqual(names);
    for (const setting of configSettings()) {
      if (setting.flag) expect(help).toContain(setting.flag);
      expect(help).toContain(setting.help);
    }
  });

  it('.env.example assigns exactly the schema’s variables, each once', () => {
    const example = readFileSync(join(appDir, '.env.example'), 'utf8');
    const assigned = [...example.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1] as string);
    expect([...assigned].sort()).toEqual(names);
    expect(new Set(assigned).size).toBe(assigned.length);
  });

  it('the README carries the generated settings table', () => {
    const start = readme.indexOf('<!-- settings:start -->');
    const end = readme.indexOf('<!-- settings:end -->');
    expect(start).toBeGreaterThan(0);
    // Regenerate with: pnpm --filter @zmcp/launcher docs:settings
    expect(readme.slice(start + '<!-- settings:start -->'.length, end).trim()).toBe(configMarkdownTable());
  });

  it('the public surface is what it was decided to be', async () => {
    const api = await import('../src/index.js');
    expect(Object.keys(api).sort()).toEqual([
      'LauncherError',
      'SERVER_NAME',
      'backendNames',
      'buildInvocation',
      'configSettings',
      'configVariableNames',
      'createLauncher',
      'createLogger',
      'helpText',
      'isLauncherError',
      'loadServerEntry',
      'main',
      'parseConfig',
      'parseServerEntry',
      'selectServer',
      'silentLogger',
    ]);
  });

  it('the README lists every export', async () => {
    const api = await import('../src/index.js');
    for (const name of Object.keys(api)) expect(readme, name).toContain(`\`${name}`);
  });
});
