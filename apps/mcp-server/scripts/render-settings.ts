// Rewrites the settings table of README.md from the configuration schema, so the README,
// `zulip-mcp --help` and the schema never disagree. Run: pnpm --filter @zmcp/mcp-server docs:settings
import { join } from 'node:path';
import { writeReadmeTable } from '@zmcp/cli';
import { configMarkdownTable } from '../src/config.js';

writeReadmeTable(join(import.meta.dirname, '..', 'README.md'), configMarkdownTable());
console.log('README.md settings table updated');
