// `pnpm test:e2e`: the slow end-to-end runs with real agent CLIs (files named *.e2e-real.test.ts,
// which `pnpm test` never runs). The CLIs are installed beforehand by scripts/install-e2e-tools.sh;
// the model is played by a scripted stub of its API on loopback (test/support/anthropic-stub.ts).
import { join } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';
import { packageProject, REAL_E2E_TESTS } from './vitest.shared.js';

function e2eProject(app: string) {
  const dir = join(import.meta.dirname, 'apps', app);
  const project = packageProject(dir, {
    name: `${app}-e2e`,
    include: [REAL_E2E_TESTS],
    exclude: configDefaults.exclude,
  });
  return {
    ...project,
    test: {
      ...project.test,
      // Both apps' tests start the built zulip-mcp: its global set-up builds it when stale.
      globalSetup: [join(dir, 'test', 'global-setup.ts')],
      // A real CLI starting, its MCP server, several model turns: seconds, not milliseconds.
      testTimeout: 120_000,
      hookTimeout: 60_000,
    },
  };
}

export default defineConfig({
  test: {
    projects: [e2eProject('launcher'), e2eProject('mcp-server')],
    // Two cores are shared: one real CLI at a time.
    fileParallelism: false,
  },
});
