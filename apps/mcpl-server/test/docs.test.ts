// The settings are listed in four places: the schema, --help, .env.example and the README. They
// must name the same variables (every error code is in the README: the root test/errors.test.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configMarkdownTable, configSettings, configVariableNames, helpText } from '../src/config.js';

const appDir = join(import.meta.dirname, '..');
const readme = readFileSync(join(appDir, 'README.md'), 'utf8');

describe('configuration documentation', () => {
  const names = configVariableNames().sort();

  it('--help names every setting with its help line', () => {
    const help = helpText();
    for (const setting of configSettings()) {
      expect(help).toContain(setting.help);
      if (setting.flag !== undefined) expect(help).toContain(setting.flag);
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
    // Regenerate with: pnpm --filter @zmcp/mcpl-server docs:settings
    expect(readme.slice(start + '<!-- settings:start -->'.length, end).trim()).toBe(configMarkdownTable());
  });
});
