// The README's programmatic example runs as it is written.
import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const appDir = join(import.meta.dirname, '..');

describe('the README', () => {
  it('runs the programmatic example and prints what it says', async () => {
    const { readFile } = await import('node:fs/promises');
    const readme = await readFile(join(appDir, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Programmatic use'));
    const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    const printed = /```text\n([\s\S]*?)```/.exec(section)?.[1];
    expect(code).toBeDefined();
    const file = join(appDir, 'test', `.readme-${process.pid}.ts`);
    await writeFile(file, code as string);
    try {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', '--conditions', '@zmcp/source', file],
        { cwd: appDir, timeout: 30_000 },
      );
      const lines = stdout.trim().split('\n');
      const expected = (printed as string).trim().split('\n');
      expect(lines).toHaveLength(expected.length);
      // The time is the run's own: everything else is as printed.
      expect(lines[0]?.replace(/\[[^\]]* id=/, '[… id=')).toBe(expected[0]);
      expect(lines[1]).toBe(expected[1]);
    } finally {
      await rm(file, { force: true });
    }
  });
});
