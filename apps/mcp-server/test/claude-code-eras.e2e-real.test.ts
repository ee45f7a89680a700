// Which protocol era the real Claude Code CLI (2.1.332 from npm) speaks with zulip-mcp: it probes
// server/discover first. Without channels zulip-mcp offers 2026-07-28 and Claude Code takes it;
// with ZULIP_CLAUDE_CHANNELS=on (see claude-channels.e2e-real.test.ts) it is not offered and Claude
// Code falls back to 2025-11-25, where its channel gate lets events through. Headless (`-p`), the
// model played by a scripted stub of the Messages API on loopback. Slow: `pnpm test:e2e` only.
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AnthropicStub, startAnthropicStub } from '../../../test/support/anthropic-stub.js';
import { type ClaudeHome, claudeHome } from '../../../test/support/claude-code.js';

const run = promisify(execFile);
const zulipMcpBin = join(import.meta.dirname, '..', 'dist', 'cli.js');

let sim: ZulipSim;
let stub: AnthropicStub;
let home: ClaudeHome;
let botId = 0;

beforeEach(async () => {
  sim = await startZulipSim({
    rateLimit: false,
    seed(realm) {
      const ann = realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' });
      botId = realm.addUser({ fullName: 'Helper Bot', email: 'helper-bot@example.test', isBot: true }).userId;
      realm.addStream({ name: 'ops', subscribers: [ann.userId, botId] });
    },
  });
  stub = await startAnthropicStub({
    script: [
      () => ({ toolCalls: [{ name: 'mcp__zulip__list_streams', input: {} }] }),
      () => ({ text: 'Listed.' }),
    ],
  });
  home = await claudeHome();
});

afterEach(async () => {
  await stub.close();
  await sim.close();
  await home.remove();
});

describe('Claude Code and zulip-mcp without channels', () => {
  it('negotiates 2026-07-28 (server/discover) and calls a tool in it', async () => {
    const mcpConfig = join(home.dir, 'mcp.json');
    const credentials = sim.credentials(botId);
    await writeFile(
      mcpConfig,
      JSON.stringify({
        mcpServers: {
          zulip: {
            command: process.execPath,
            args: [zulipMcpBin],
            env: {
              ZULIP_SITE: credentials.site,
              ZULIP_EMAIL: credentials.email,
              ZULIP_API_KEY: credentials.apiKey,
              ZULIP_STATE_DIR: join(home.dir, 'mcp-state'),
            },
          },
        },
      }),
    );
    const debugFile = join(home.dir, 'claude-debug.txt');
    const { stdout } = await run(
      'claude',
      [
        '-p',
        '--mcp-config',
        mcpConfig,
        '--strict-mcp-config',
        '--debug-file',
        debugFile,
        '--allowedTools',
        'mcp__zulip',
        '--',
        'Which streams are there?',
      ],
      { env: home.env(stub.url), cwd: home.workDir, timeout: 90_000 },
    );
    expect(stdout).toContain('Listed.');
    const debug = await readFile(debugFile, 'utf8');
    expect(debug).toMatch(
      /MCP server "zulip": Connection established with capabilities: .*"protocolEra":"modern","negotiatedProtocolVersion":"2026-07-28"/,
    );
    const listed = (await stub.turn(1)).results.find((r) => r.name === 'mcp__zulip__list_streams');
    expect(listed?.isError).toBe(false);
    expect(listed?.text).toContain('#ops');
    expect(stub.outbound).toEqual([]);
    expect(stub.problems).toEqual([]);
  });
});
