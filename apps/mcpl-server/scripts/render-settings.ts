// Rewrites the settings table of README.md from the configuration schema, so the README,
// `zulip-mcpl --help` and the schema never disagree. Run: pnpm --filter @zmcp/mcpl-server docs:settings
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { configMarkdownTable } from '../src/config.js';

const readmePath = join(import.meta.dirname, '..', 'README.md');
const start = '<!-- settings:start -->';
const end = '<!-- settings:end -->';
const readme = readFileSync(readmePath, 'utf8');
const from = readme.indexOf(start);
const to = readme.indexOf(end);
if (from < 0 || to < from) throw new Error(`README.md lacks the ${start} ... ${end} markers`);
writeFileSync(
  readmePath,
  `${readme.slice(0, from + start.length)}\n${configMarkdownTable()}\n${readme.slice(to)}`,
);
console.log('README.md settings table updated');
