import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// The arrows of DESIGN.md: which workspace packages each library may depend on.
// Apps may depend on any library; nothing may depend on an app.
const allowed: Record<string, readonly string[]> = {
  '@zmcp/zulip-sim': [],
  '@zmcp/core': [],
  '@zmcp/uploads': ['@zmcp/core'],
  '@zmcp/delivery': ['@zmcp/core'],
  '@zmcp/mcpl': [],
  '@zmcp/tools': ['@zmcp/core', '@zmcp/delivery', '@zmcp/uploads'],
  '@zmcp/cli': ['@zmcp/core'],
  '@zmcp/fleet': ['@zmcp/core', '@zmcp/delivery'],
};
// Libraries that must stay protocol-agnostic, and the packages they must never import.
const forbiddenExternal: Record<string, readonly RegExp[]> = {
  '@zmcp/core': [/^@modelcontextprotocol\//, /^chokidar$/],
  '@zmcp/uploads': [/^@modelcontextprotocol\//],
  '@zmcp/delivery': [/^@modelcontextprotocol\//],
  '@zmcp/tools': [/^@modelcontextprotocol\//],
  '@zmcp/zulip-sim': [/^@modelcontextprotocol\//],
  '@zmcp/cli': [/^@modelcontextprotocol\//],
  '@zmcp/fleet': [/^@modelcontextprotocol\//],
};

const root = join(import.meta.dirname, '..');

interface Workspace {
  name: string;
  dir: string;
  kind: 'package' | 'app';
  dependencies: string[];
  devDependencies: string[];
}

function workspaces(): Workspace[] {
  const found: Workspace[] = [];
  for (const [folder, kind] of [
    ['packages', 'package'],
    ['apps', 'app'],
  ] as const) {
    for (const entry of readdirSync(join(root, folder))) {
      const dir = join(root, folder, entry);
      const manifest = join(dir, 'package.json');
      if (!statSync(dir).isDirectory()) continue;
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as {
        name: string;
        dependencies?: Record<string, string>;
        optionalDependencies?: Record<string, string>;
        devDependencies?: Record<string, string>;
        peerDependencies?: Record<string, string>;
      };
      const dependencies = Object.keys({
        ...pkg.dependencies,
        ...pkg.optionalDependencies,
        ...pkg.peerDependencies,
      });
      found.push({
        name: pkg.name,
        dir,
        kind,
        dependencies,
        devDependencies: Object.keys({ ...pkg.devDependencies }),
      });
    }
  }
  return found;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (/\.ts$/.test(entry.name) && !/\.test\.ts$/.test(entry.name)) out.push(path);
  }
  return out;
}

const importPattern = /(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(importPattern)].map((m) => (m[1] ?? m[2]) as string);
}

const all = workspaces();
const appNames = new Set(all.filter((w) => w.kind === 'app').map((w) => w.name));

describe('package boundaries (DESIGN.md arrows point down)', () => {
  it('finds the workspace', () => {
    expect(all.map((w) => w.name)).toContain('@zmcp/zulip-sim');
  });

  for (const ws of all) {
    describe(ws.name, () => {
      it('declares only dependencies its layer allows', () => {
        const internal = ws.dependencies.filter((d) => d.startsWith('@zmcp/'));
        for (const dep of internal) expect(appNames.has(dep), `${ws.name} depends on app ${dep}`).toBe(false);
        if (ws.kind === 'package') {
          const rule = allowed[ws.name];
          expect(rule, `${ws.name} has no row in the boundaries table`).toBeDefined();
          for (const dep of internal) expect(rule, `${ws.name} -> ${dep}`).toContain(dep);
          // Tests may stand on the simulator; nothing else internal is a dev-only dependency.
          const devInternal = ws.devDependencies.filter((d) => d.startsWith('@zmcp/'));
          for (const dep of devInternal) expect([...(rule ?? []), '@zmcp/zulip-sim']).toContain(dep);
        }
      });

      it('imports nothing against the arrows', () => {
        const srcDir = join(ws.dir, 'src');
        const files = statSync(srcDir, { throwIfNoEntry: false }) ? sourceFiles(srcDir) : [];
        const bad: string[] = [];
        for (const file of files) {
          for (const spec of importsOf(file)) {
            const where = `${relative(root, file)} imports ${spec}`;
            if (spec.startsWith('.')) {
              // Relative imports must stay inside the package's own src.
              const target = join(file, '..', spec);
              if (!target.startsWith(srcDir)) bad.push(where);
              continue;
            }
            if (spec.startsWith('node:')) continue;
            const pkgName = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
            if (pkgName === ws.name) {
              bad.push(`${where} (self import)`);
              continue;
            }
            if (!ws.dependencies.includes(pkgName as string)) bad.push(`${where} (undeclared)`);
            if (spec !== pkgName && pkgName?.startsWith('@zmcp/')) bad.push(`${where} (deep import)`);
            for (const re of forbiddenExternal[ws.name] ?? [])
              if (re.test(spec)) bad.push(`${where} (forbidden)`);
          }
        }
        expect(bad).toEqual([]);
      });
    });
  }
});
