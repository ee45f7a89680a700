import { execFileSync } from 'node:child_process';
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';

// The stub agents start zulip-mcp as an agent would: the built bin of @zmcp/mcp-server.
const root = join(import.meta.dirname, '..', '..', '..');
const serverDir = realpathSync(join(import.meta.dirname, '..', 'node_modules', '@zmcp', 'mcp-server'));

function newest(dir: string): number {
  let time = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    time = Math.max(time, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return time;
}

/** Builds zulip-mcp (its bin only) unless dist/cli.js is newer than every input of it. */
export function setup(): void {
  const built = statSync(join(serverDir, 'dist', 'cli.js'), { throwIfNoEntry: false })?.mtimeMs ?? 0;
  const packages = join(root, 'packages');
  const inputs = [
    join(serverDir, 'src'),
    ...readdirSync(packages).map((name) => join(packages, name, 'src')),
  ].map(newest);
  const configs = ['package.json', 'tsup.config.ts', 'tsup.cli.config.ts'].map(
    (f) => statSync(join(serverDir, f)).mtimeMs,
  );
  if (built > Math.max(...inputs, ...configs, statSync(join(root, 'tsup.base.ts')).mtimeMs)) return;
  execFileSync(join(root, 'node_modules', '.bin', 'tsup'), ['--config', 'tsup.cli.config.ts'], {
    cwd: serverDir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}
