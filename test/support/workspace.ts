// The workspace's packages and apps, read from their manifests, for the root tests.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const root = join(import.meta.dirname, '..', '..');

export interface WorkspacePackage {
  /** `@zmcp/core`. */
  name: string;
  /** `core`: the name without its scope. */
  short: string;
  dir: string;
  /** The file `exports["."]` resolves to under the `@zmcp/source` condition. */
  source: string;
}

/** Every package of `packages/*` and `apps/*`. */
export function workspacePackages(): WorkspacePackage[] {
  const found: WorkspacePackage[] = [];
  for (const group of ['packages', 'apps']) {
    for (const folder of readdirSync(join(root, group))) {
      const dir = join(root, group, folder);
      if (!existsSync(join(dir, 'package.json'))) continue;
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name: string;
        exports?: { '.'?: { '@zmcp/source'?: string } };
      };
      const source = manifest.exports?.['.']?.['@zmcp/source'];
      if (source === undefined) throw new Error(`${manifest.name}: exports["."] has no @zmcp/source entry`);
      found.push({
        name: manifest.name,
        short: manifest.name.replace(/^@zmcp\//, ''),
        dir,
        source: join(dir, source),
      });
    }
  }
  return found;
}

/** Imports a package's entry from its sources, as `@zmcp/<name>` resolves under the @zmcp/source condition. */
export async function importEntry(pkg: WorkspacePackage): Promise<Record<string, unknown>> {
  return (await import(pathToFileURL(pkg.source).href)) as Record<string, unknown>;
}
