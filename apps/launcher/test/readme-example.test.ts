// The README's embedding example, extracted from the README and run as it is, with a stub
// Claude Code and zulip-mcp on PATH.
import { execFile } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { appDir, readRecords, writeStubs, zulipMcpBin } from './world.js';

const run = promisify(execFile);

it('runs the README example', async () => {
  const readme = await readFile(join(appDir, 'README.md'), 'utf8');
  const marker = readme.indexOf('<!-- example:embed -->');
  const match = /```ts\n([\s\S]*?)```/.exec(readme.slice(marker));
  expect(marker).toBeGreaterThan(0);
  const code = match?.[1] as string;
  const bin = await mkdtemp(join(tmpdir(), 'zulip-agent-readme-bin-'));
  const records = await mkdtemp(join(tmpdir(), 'zulip-agent-readme-records-'));
  // Inside the package, so its imports resolve as they would for a user.
  const dir = await mkdtemp(join(appDir, '.readme-example-'));
  try {
    writeStubs(bin);
    symlinkSync(zulipMcpBin, join(bin, 'zulip-mcp'));
    const file = join(dir, 'example.ts');
    await writeFile(file, code);
    const { stdout } = await run(process.execPath, ['--conditions=@zmcp/source', '--import', 'tsx', file], {
      cwd: appDir,
      env: {
        ...process.env,
        PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`,
        STUB_MODE: 'quick',
        STUB_RECORD_DIR: records,
      },
      timeout: 60_000,
    });
    expect(stdout).toBe('done claude disk full\n');
    const [record] = readRecords(records);
    expect(record?.prompt).toContain('You are the on-call helper of ops.');
  } finally {
    await rm(dir, { recursive: true, force: true });
    await rm(bin, { recursive: true, force: true });
    await rm(records, { recursive: true, force: true });
  }
});
