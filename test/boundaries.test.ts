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
  // The spine between the libraries and the apps (the state backend from fleet); the simulator only for --demo.
  '@zmcp/server-kit': [
    '@zmcp/core',
    '@zmcp/delivery',
    '@zmcp/tools',
    '@zmcp/uploads',
    '@zmcp/cli',
    '@zmcp/fleet',
    '@zmcp/zulip-sim',
  ],
  '@zmcp/fleet': ['@zmcp/core', '@zmcp/delivery'],
};
// Packages each workspace must never import: the protocol-agnostic libraries no MCP SDK at all.
const forbiddenExternal: Record<string, readonly RegExp[]> = {
  '@zmcp/core': [/^@modelcontextprotocol\//, /^chokidar$/],
  '@zmcp/uploads': [/^@modelcontextprotocol\//],
  '@zmcp/delivery': [/^@modelcontextprotocol\//],
  '@zmcp/tools': [/^@modelcontextprotocol\//],
  '@zmcp/zulip-sim': [/^@modelcontextprotocol\//],
  '@zmcp/cli': [/^@modelcontextprotocol\//],
  // On the MCP SDK v2 (@modelcontextprotocol/server, client): never the v1 package beside it.
  '@zmcp/mcpl': [/^@modelcontextprotocol\/sdk(\/|$)/],
  '@zmcp/server-kit': [/^@modelcontextprotocol\/sdk(\/|$)/],
  '@zmcp/mcp-server': [/^@modelcontextprotocol\/sdk(\/|$)/],
  '@zmcp/mcpl-server': [/^@modelcontextprotocol\/sdk(\/|$)/],
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

// What @zmcp/server-kit opens once, a bin does not open beside it: the one Zulip client (where
// read-only mode is enforced), the credentials, the realm facts and the access policy.
const spineServers = ['@zmcp/mcp-server', '@zmcp/mcpl-server', '@zmcp/launcher'];
const openedBySpine: readonly [RegExp, string][] = [
  [/\bnew ZulipClient\(/, 'a second Zulip client'],
  [/\bloadCredentials\(/, 'credentials read beside loadConfiguredCredentials'],
  [/\bloadRealmFacts\(/, 'realm facts read beside the runtime'],
  [/\bAccessPolicy\.resolve\(/, 'an access policy resolved beside the runtime'],
];

describe('bins stand on @zmcp/server-kit', () => {
  it.each(spineServers)('%s opens the Zulip runtime only through it', (name) => {
    const ws = all.find((w) => w.name === name);
    expect(ws, `${name} is in the workspace`).toBeDefined();
    expect(ws?.dependencies).toContain('@zmcp/server-kit');
    const found: string[] = [];
    for (const file of sourceFiles(join((ws as Workspace).dir, 'src'))) {
      const text = readFileSync(file, 'utf8');
      for (const [pattern, what] of openedBySpine)
        if (pattern.test(text)) found.push(`${relative(root, file)}: ${what}`);
    }
    expect(found).toEqual([]);
  });
});

// The MCP SDK is extended through its hooks (request handlers, onclose, onerror), never by
// replacing what its objects do: no server wraps a transport's onmessage, send or start, nor a
// server's connect or request path, and no JSON-RPC path runs beside the SDK's.
const sdkServers = ['@zmcp/server-kit', '@zmcp/mcp-server', '@zmcp/mcpl-server'];
const wrapsSdk: readonly [RegExp, string][] = [
  [/\.onmessage\s*=(?!=)/, 'a transport onmessage replaced'],
  [/\.(send|start|connect|request|notification)\s*=(?!=)/, 'an SDK method replaced'],
  [/\bserializeMessage\(|\bReadBuffer\b/, 'JSON-RPC framed by hand'],
];

describe('servers extend the MCP SDK through its hooks only', () => {
  it.each(sdkServers)('%s wraps no SDK object and frames no JSON-RPC itself', (name) => {
    const ws = all.find((w) => w.name === name) as Workspace;
    const found: string[] = [];
    for (const file of sourceFiles(join(ws.dir, 'src'))) {
      const text = readFileSync(file, 'utf8');
      for (const [pattern, what] of wrapsSdk)
        if (pattern.test(text)) found.push(`${relative(root, file)}: ${what}`);
    }
    expect(found).toEqual([]);
  });
});
