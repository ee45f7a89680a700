import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineProject, type UserWorkspaceConfig } from 'vitest/config';

const setupFile = fileURLToPath(new URL('./test/setup/fail-on-console.ts', import.meta.url));
const postgresSetup = fileURLToPath(new URL('./test/setup/postgres.ts', import.meta.url));

/**
 * The slow end-to-end tests that run real agent CLIs (`pnpm test:e2e`, vitest.e2e.config.ts):
 * never part of `pnpm test`.
 */
export const REAL_E2E_TESTS = '**/*.e2e-real.test.ts';

/** Vitest settings shared by every package: tests run on sources via the `@zmcp/source` condition. */
export function packageProject(
  dir: string,
  options: {
    name?: string;
    include?: string[];
    exclude?: string[];
    /** The tests need PostgreSQL: a throwaway cluster is started once per run (test/setup/postgres.ts). */
    postgres?: boolean;
    /** The project's own global set-up files, run after the PostgreSQL one. */
    globalSetup?: string[];
  } = {},
): UserWorkspaceConfig {
  return defineProject({
    resolve: { conditions: ['@zmcp/source'] },
    ssr: { resolve: { conditions: ['@zmcp/source'] } },
    test: {
      name: options.name ?? basename(dir),
      root: dir,
      include: options.include ?? ['src/**/*.test.ts', 'test/**/*.test.ts'],
      exclude: options.exclude ?? [...configDefaults.exclude, REAL_E2E_TESTS],
      environment: 'node',
      // Test files share a worker's module graph instead of importing everything afresh for each
      // file (half the suite's CPU time). So a test leaves no global state behind: timers, env,
      // console and mocks are restored (restoreMocks below, afterEach in the files that need it).
      isolate: false,
      setupFiles: [setupFile],
      globalSetup: [...(options.postgres ? [postgresSetup] : []), ...(options.globalSetup ?? [])],
      clearMocks: true,
      restoreMocks: true,
      testTimeout: 20_000,
      hookTimeout: 20_000,
    },
  });
}
