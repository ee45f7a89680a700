// The zmcp Claude Code plugin (plugins/claude-code, listed by the repository's
// .claude-plugin/marketplace.json) with the real Claude Code CLI (2.1.332 from npm), against
// @zmcp/zulip-sim, the model played by a scripted stub of the Messages API on loopback. Slow: run
// by `pnpm test:e2e` only, after scripts/install-e2e-tools.sh.
//
// What it shows: the one install command the README gives installs the plugin from this
// repository, with its options; a headless session then starts the plugin's zulip server (its
// tools are offered to the model) and its hooks post "started" when the session starts and
// "finished" when it ends, into the bound topic, through zulip-mcp. Nothing left loopback.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type SimUser, startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AnthropicStub, startAnthropicStub } from '../../../test/support/anthropic-stub.js';
import { type ClaudeHome, claudeHome } from '../../../test/support/claude-code.js';

const appDir = join(import.meta.dirname, '..');
const repoDir = join(appDir, '..', '..');
const zulipMcpBin = join(appDir, 'dist', 'cli.js');

let sim: ZulipSim;
let stub: AnthropicStub;
let home: ClaudeHome;
let ann: SimUser;
let bot: SimUser;

beforeEach(async () => {
  sim = await startZulipSim({
    rateLimit: false,
    seed(realm) {
      ann = realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' });
      bot = realm.addUser({
        fullName: 'Helper Bot',
        email: 'helper-bot@example.test',
        isBot: true,
        botType: 1,
      });
      realm.addStream({ name: 'ops', subscribers: [ann.userId, bot.userId] });
    },
  });
  stub = await startAnthropicStub({ script: [() => ({ text: 'Nothing to do here.' })] });
  home = await claudeHome();
});

afterEach(async () => {
  await stub.close();
  await sim.close();
  await home.remove();
});

/** Runs `claude` with `args` in the home, to its end: exit code, stdout and stderr. */
function runClaude(
  args: readonly string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child: ChildProcessWithoutNullStreams = spawn(join(home.binDir, 'claude'), args, {
      env,
      cwd: home.workDir,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    child.stdin.end();
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The bot's messages in a topic of #ops, oldest first. */
function botSaid(topic: string): string[] {
  const out: string[] = [];
  for (let id = 1; id <= sim.realm.maxMessageId(); id++) {
    const m = sim.realm.message(id);
    if (m?.senderId === bot.userId && m.topic === topic) out.push(m.content);
  }
  return out;
}

describe('the Claude Code plugin', () => {
  it('installs with one command, serves the zulip tools, and posts started and finished into the bound topic', async () => {
    // zulip-mcp on PATH, as an install from npm (or `npm install -g` of a packed clone) puts it.
    const shim = join(home.binDir, 'zulip-mcp');
    await writeFile(
      shim,
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(zulipMcpBin)} "$@"\n`,
    );
    await chmod(shim, 0o755);
    const zuliprc = join(home.dir, 'zuliprc');
    await writeFile(zuliprc, sim.zuliprc(bot.userId), { mode: 0o600 });
    const env = home.env(stub.url, { ZULIP_STATE_DIR: join(home.dir, 'zmcp-state') });

    // The README's install line, with this clone as the marketplace and the options given.
    const installed = await runClaude(
      [
        'plugin',
        'install',
        'zulip',
        '--marketplace',
        repoDir,
        '--config',
        `ZULIP_RC_PATH=${zuliprc}`,
        '--config',
        'SESSION_STREAM=ops',
        '--config',
        'SESSION_TOPIC=agent status',
      ],
      env,
    );
    expect(installed.code, `${installed.stdout}\n${installed.stderr}`).toBe(0);

    const run = await runClaude(['-p', '--allowedTools', 'mcp__plugin_zulip_zulip', '--', 'Say hi.'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('Nothing to do here.');

    // The plugin's server was running: its tools were offered to the model.
    const first = stub.requests.find((r) => r.path === '/v1/messages' && r.turn === 0);
    expect(JSON.stringify(first?.body)).toMatch(/mcp__plugin_zulip_zulip__reply/);
    // The hooks posted the lifecycle into the bound topic, through zulip-mcp (the bot's account).
    const said = botSaid('agent status');
    expect(said).toHaveLength(2);
    expect(said[0]).toMatch(/^Claude Code session `[0-9a-f-]{8}` started\.$/);
    expect(said[1]).toMatch(/^Claude Code session `[0-9a-f-]{8}` finished\.$/);
    expect(said[1]?.slice(0, 30)).toBe(said[0]?.slice(0, 30));
    // The key stayed in the zuliprc: Claude Code's settings hold only its path.
    const settings = await readFile(join(home.dir, '.claude', 'settings.json'), 'utf8');
    expect(settings).not.toContain(sim.credentials(bot.userId).apiKey);
    expect(stub.outbound).toEqual([]);
  });
});
