import { readFileSync } from 'node:fs';
import type { Options } from 'tsup';

/** Optional dependencies of the package being built (tsup runs in its directory). */
function optionalDependencies(): string[] {
  const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as {
    optionalDependencies?: Record<string, string>;
  };
  return Object.keys(manifest.optionalDependencies ?? {});
}

/**
 * The one build configuration every package and app shares: the JavaScript. Declarations are
 * `tsc -p tsconfig.build.json` after it (see the root tsconfig.build.json): one compiler pass
 * over the package's own sources, its dependencies read from their built declarations.
 */
export function packageBuild(overrides: Options = {}): Options {
  return {
    entry: ['src/index.ts'],
    format: ['esm'],
    dts: false,
    sourcemap: true,
    clean: true,
    target: 'node20',
    // tsup keeps dependencies and peer dependencies external by itself, not optional ones (sharp).
    external: optionalDependencies(),
    ...overrides,
  };
}

/** `name` as a literal in a regular expression. */
function literal(name: string): string {
  return name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * An app's bin: one self-contained file with a shebang, the workspace libraries (from their
 * sources) and the npm dependencies bundled in, so a cold start loads one module. Optional
 * dependencies stay packages (sharp loads a native library). No declarations: the bin is not
 * imported.
 */
export function binBuild(): Options {
  const optional = optionalDependencies();
  return packageBuild({
    entry: ['src/cli.ts'],
    // The library build cleans dist/; this one only overwrites its own files.
    clean: false,
    noExternal: [
      optional.length === 0 ? /.*/ : new RegExp(`^(?!(?:${optional.map(literal).join('|')})(?:/|$))`),
    ],
    platform: 'node',
    // One file: the library build's clean spares only cli.js and its map.
    splitting: false,
    esbuildOptions(options) {
      options.conditions = ['@zmcp/source'];
    },
    // Bundled CommonJS dependencies call require(); an ES module has none of its own.
    banner: {
      js: "#!/usr/bin/env node\nimport { createRequire as __zmcpRequire } from 'node:module';\nconst require = __zmcpRequire(import.meta.url);",
    },
  });
}

/** An app's builds: its library entry (declarations follow by tsc) and its bin. */
export function appBuilds(): Options[] {
  return [packageBuild({ entry: ['src/index.ts'], clean: ['!cli.js', '!cli.js.map'] }), binBuild()];
}
