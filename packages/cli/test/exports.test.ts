import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import * as api from '../src/index.js';

// The recorded surface is test/public-surface/cli.txt (the root test); here, the README names it.
it('the README lists every export', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const exportsSection = readme.slice(readme.indexOf('## Exports'), readme.indexOf('## Error codes'));
  for (const name of Object.keys(api)) expect(exportsSection, name).toMatch(new RegExp(`\`${name}\\b`));
});
