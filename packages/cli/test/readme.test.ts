import { execFile } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const packageDir = fileURLToPath(new URL('..', import.meta.url));

/** The first block of `lang` after `heading` in the README, as written there. */
async function block(heading: string, lang: string): Promise<string> {
  const readme = await readFile(join(packageDir, 'README.md'), 'utf8');
  const at = readme.indexOf(heading);
  if (at === -1) throw new Error(`the README has no ${heading}`);
  const found = new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(readme.slice(at));
  if (found === null) throw new Error(`no ${lang} block after ${heading}`);
  return found[1] as string;
}

describe('the README', () => {
  it('runs the usage example as written, and prints what it says', async () => {
    const file = join(packageDir, 'test', `.readme-usage-${process.pid}.ts`);
    await writeFile(file, await block('## Usage', 'ts'));
    let stdout: string;
    try {
      ({ stdout } = await run(process.execPath, ['--import', 'tsx', '--conditions', '@zmcp/source', file], {
        cwd: packageDir,
        timeout: 20_000,
      }));
    } finally {
      await rm(file, { force: true });
    }
    const lines = stdout.split('\n');
    expect(lines.slice(0, 2)).toEqual(['hello, Ann', 'hello, Ann']);
    expect(lines[2]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z info greeted token=\[REDACTED\]$/);
    expect(lines[3]).toBe('0');
    // The report the README shows, as printed, then the exit code.
    const report = (await block('## Usage', 'text')).trimEnd().split('\n');
    expect(lines.slice(4, 4 + report.length)).toEqual(report);
    expect(lines[4 + report.length]).toBe('2');
    const help = lines.slice(5 + report.length);
    expect(help[0]).toBe('greeter: says hello.');
    expect(help).toContain('Usage: greeter [options]');
    expect(help.at(-2)).toBe('true');
    expect(stdout).not.toContain('ghp-0123456789abcdef');
  });
});
