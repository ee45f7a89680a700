import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const appDir = join(import.meta.dirname, '..');

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Builds the bin (without declarations) unless dist/cli.js is newer than every input of it, library sources included. */
export function setup(): void {
  const built = statSync(join(appDir, 'dist', 'cli.js'), { throwIfNoEntry: false })?.mtimeMs ?? 0;
  const inputs = [
    join(appDir, 'package.json'),
    join(appDir, 'tsup.config.ts'),
    join(appDir, '..', '..', 'tsup.base.ts'),
  ];
  // The bin bundles the workspace libraries from their sources.
  const packages = join(appDir, '..', '..', 'packages');
  const sources = [join(appDir, 'src'), ...readdirSync(packages).map((name) => join(packages, name, 'src'))];
  const newest = Math.max(...sources.map(newestSource), ...inputs.map((p) => statSync(p).mtimeMs));
  if (built > newest) return;
  // tsup is a root devDependency; its shim lives in the workspace root.
  execFileSync(join(appDir, '..', '..', 'node_modules', '.bin', 'tsup'), ['--config', 'tsup.cli.config.ts'], {
    cwd: appDir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}
