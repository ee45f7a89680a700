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
