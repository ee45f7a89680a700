import { readFileSync } from 'node:fs';

const versions = new Map<string, string>();

/**
 * The `version` of the package.json at `manifest` (a bin passes
 * `new URL('../package.json', import.meta.url)`, one level above both `src/` and `dist/`),
 * read once; `0.0.0` when it has none.
 */
export function readPackageVersion(manifest: URL): string {
  const key = manifest.href;
  let version = versions.get(key);
  if (version === undefined) {
    const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { version?: unknown };
    version = typeof parsed.version === 'string' ? parsed.version : '0.0.0';
    versions.set(key, version);
  }
  return version;
}
