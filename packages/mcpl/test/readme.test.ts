// The README's examples run as they are written: every ```ts block is extracted (its info
// string names the file), written beside the package sources with the package's own import
// pointed at them, and `host.ts` is run as a process, which starts `server.ts`.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const packageDir = join(import.meta.dirname, '..');
const readme = readFileSync(join(packageDir, 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/```ts ([\w.-]+)\n([\s\S]*?)```/g)].map((m) => ({
  file: m[1] as string,
  code: m[2] as string,
}));
const expected = /It prints:\n\n```text\n([\s\S]*?)```/.exec(readme)?.[1];
const workDir = mkdtempSync(join(packageDir, '.readme-run-'));

afterAll(() => rmSync(workDir, { recursive: true, force: true }));

describe('README examples', () => {
  it('has a server and a host block, and every ts block is named', () => {
    expect(blocks.map((b) => b.file)).toEqual(['server.ts', 'host.ts']);
    expect([...readme.matchAll(/```ts\b/g)]).toHaveLength(blocks.length);
    expect(expected).toBeDefined();
  });

  it('runs the host against the server and prints what the README says', async () => {
    for (const block of blocks) {
      writeFileSync(
        join(workDir, block.file),
        block.code.replaceAll("from '@zmcp/mcpl'", "from '../src/index.js'"),
      );
    }
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'host.ts'], {
      cwd: workDir,
      timeout: 30_000,
    });
    expect(stdout).toBe(expected);
  });
});
