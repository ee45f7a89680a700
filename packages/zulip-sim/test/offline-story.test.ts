// The README's "Test your Zulip bot offline" story runs as written: its JavaScript echo bot with
// zulip-js (as its own Node process, as a reader would run it) prints what the README shows, and
// the seed file of "Seed files" starts a realm. (Its Python example is not run: the `zulip` Python
// package is not installable here.)
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { readSeed, seedOptions, startZulipSim } from '../src/index.js';

const pkg = join(import.meta.dirname, '..');
const readme = readFileSync(join(pkg, 'README.md'), 'utf8');

/** The body of the first fenced block whose info string is `info`, and the text block printed after it. */
function block(info: string): { code: string; printed: string | undefined } {
  const start = readme.indexOf(`\`\`\`${info}\n`);
  if (start < 0) throw new Error(`README has no \`\`\`${info} block`);
  const bodyStart = start + info.length + 4;
  const end = readme.indexOf('\n```\n', bodyStart);
  const code = readme.slice(bodyStart, end + 1);
  const after = readme.slice(end + 5);
  const printed = /^\s*It prints:\s*```text\n([\s\S]*?)```/.exec(after)?.[1];
  return { code, printed };
}

describe('README: Test your Zulip bot offline', () => {
  it('runs the zulip-js echo bot example and prints what the README shows', async () => {
    const { code, printed } = block('js echo-bot.mjs');
    expect(printed).toBeDefined();
    const dir = await mkdtemp(join(pkg, '.readme-run-story-'));
    try {
      await writeFile(join(dir, 'echo-bot.mjs'), code);
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--conditions=@zmcp/source', '--import', 'tsx', 'echo-bot.mjs'],
        { cwd: dir, timeout: 30_000 },
      );
      expect(stdout).toBe(printed);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('starts a realm from the seed file of "Seed files"', async () => {
    const { code } = block('yaml');
    const seed = readSeed(code);
    const sim = await startZulipSim({ ...seedOptions(seed), heartbeatIntervalMs: 50 });
    try {
      expect(sim.zulipFeatureLevel).toBe(512);
      expect(sim.realm.users().map((u) => u.email)).toEqual([
        'ann@acme.example',
        'bo@acme.example',
        'echo-bot@acme.example',
      ]);
      expect(sim.credentials('bo@acme.example').apiKey).toBe('Xy7Qp2LmN8rT4vW6zA1bC3dE5fG7hJ9k');
      expect(sim.realm.stream('support')?.canCreateTopicGroup).toBe('role:moderators');
      expect(sim.realm.stream('general')?.folderId).toBe(1);
      expect(sim.realm.messageCount()).toBe(2);
    } finally {
      await sim.close();
    }
  });
});
