import type { Options } from 'tsup';

/** The one build configuration every package and app shares. */
export function packageBuild(overrides: Options = {}): Options {
  return {
    entry: ['src/index.ts'],
    format: ['esm'],
    dts: true,
    sourcemap: true,
    clean: true,
    target: 'node20',
    ...overrides,
  };
}
