import { readPackageVersion } from '@zmcp/cli';

/** The version of `@zmcp/mcp-server`, read once from its package.json (one level above both `src/` and `dist/`). */
export function packageVersion(): string {
  return readPackageVersion(new URL('../package.json', import.meta.url));
}
