// The public surface of every package, recorded: its entry (what `@zmcp/<name>` resolves to
// under the @zmcp/source condition) imported, each export listed with its kind, and compared
// with test/public-surface/<package>.txt. Adding or removing an export changes that file, so the
// change is an API decision visible in review. After a deliberate change, rewrite the files with
//   pnpm exec vitest run --project workspace test/public-surface.test.ts -u
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importEntry, root, workspacePackages } from './support/workspace.js';

/** Names the entry exports as types only: `export type { A, B as C }` and `export { type D }`. */
function typeOnlyNames(text: string): string[] {
  const names: string[] = [];
  for (const m of text.matchAll(/export\s+(type\s+)?\{([^}]*)\}/g)) {
    for (const raw of (m[2] as string).split(',')) {
      const spec = raw.replace(/\/\/.*$/gm, '').trim();
      if (spec === '') continue;
      const typeOnly = m[1] !== undefined || spec.startsWith('type ');
      const name = spec
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)
        .at(-1) as string;
      if (typeOnly) names.push(name);
    }
  }
  return names;
}

function kindOf(value: unknown): string {
  if (typeof value === 'function')
    return /^class\b/.test(Function.prototype.toString.call(value)) ? 'class' : 'function';
  if (typeof value === 'object' && value !== null && '_zod' in value) return 'schema';
  if (typeof value === 'object' && value !== null) return 'object';
  return `const ${typeof value}`;
}

describe.each(workspacePackages())('$name', (pkg) => {
  const { name, short, dir, source } = pkg;
  const text = readFileSync(source, 'utf8');

  it('names every export explicitly (no export *)', () => {
    expect(text).not.toMatch(/export\s+\*/);
  });

  it('exports what test/public-surface records', async () => {
    const module = await importEntry(pkg);
    const lines = Object.keys(module).map((key) => `${key}: ${kindOf(module[key])}`);
    const values = new Set(Object.keys(module));
    for (const type of typeOnlyNames(text)) if (!values.has(type)) lines.push(`${type}: type`);
    lines.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const file = join(root, 'test', 'public-surface', `${short}.txt`);
    const header = `# The public surface of ${name} (${source.slice(dir.length + 1)}): one export a line, with its kind.`;
    await expect(`${header}\n${lines.join('\n')}\n`).toMatchFileSnapshot(file);
  });
});
