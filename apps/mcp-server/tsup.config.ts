import { defineConfig, type Options } from 'tsup';
import { packageBuild } from '../../tsup.base.js';

/**
 * The bin: one self-contained file with a shebang, the workspace libraries (from their sources)
 * and the npm dependencies bundled in, so a cold start loads one module instead of hundreds.
 * No declarations: the bin is not imported.
 */
export const cliBuild: Options = packageBuild({
  entry: ['src/cli.ts'],
  dts: false,
  // The library build below cleans dist/; this one only overwrites its own files.
  clean: false,
  // Everything but sharp, which must stay a package: it loads a native library (the base config
  // keeps optional dependencies external).
  noExternal: [/^(?!sharp(?:\/|$))/],
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

export default defineConfig([
  packageBuild({ entry: ['src/index.ts'], clean: ['!cli.js', '!cli.js.map'] }),
  cliBuild,
]);
