import { execFile } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const packageDir = fileURLToPath(new URL('..', import.meta.url));

/** The first `ts` code block after `heading` in the README, as written there. */
async function example(heading: string): Promise<string> {
  const readme = await readFile(join(packageDir, 'README.md'), 'utf8');
  const at = readme.indexOf(heading);
  if (at === -1) throw new Error(`the README has no ${heading}`);
  const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(at));
  if (block === null) throw new Error(`no ts block after ${heading}`);
  return block[1] as string;
}

describe('the README', () => {
  it('runs the live-delivery example as written', async () => {
    const code = await example('### Live delivery');
    const file = join(packageDir, 'test', `.readme-live-${process.pid}.ts`);
    await writeFile(file, code);
    try {
      const { stdout } = await run(
        process.execPath,
        ['--import', 'tsx', '--conditions', '@zmcp/source', file],
        {
          cwd: packageDir,
          timeout: 20_000,
        },
      );
      const lines = stdout.trim().split('\n');
      expect(lines).toHaveLength(3);
      expect(lines[0]).toMatch(/^incoming: .*Ann Lee.*shipped v2 \[ 'chat:ambient', 'chat:from-human' \]$/);
      expect(lines[1]).toMatch(/^push: .*Ann Lee.*hi @\*\*Helper Bot\*\* \[/);
      expect(lines[1]).toContain("'chat:mention'");
      expect(lines[2]).toBe('1');
    } finally {
      await rm(file, { force: true });
    }
  });
});
