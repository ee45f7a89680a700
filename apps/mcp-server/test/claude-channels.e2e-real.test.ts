// Claude Code channels with the real Claude Code CLI (2.1.332 from npm): zulip-mcp with
// ZULIP_CLAUDE_CHANNELS=on, started by an interactive session (channels are read only there, so
// it runs in a pseudo-terminal) against @zmcp/zulip-sim, with the model played by a scripted stub
// of the Messages API on loopback. Slow: run by `pnpm test:e2e` only, after
// scripts/install-e2e-tools.sh.
//
// What it shows: Claude Code connects in the 2025 era (zulip-mcp does not offer 2026-07-28 with
// channels on: Claude Code's channel gate skips a modern-era connection); a mention reaches the
// model as a <channel> event; channel_reply lands in the
// topic once the permission relay's DM is answered with a ✅ by an allowed person (a "no" from
// someone else changes nothing); a `no <id>` reply denies the next call. Nothing left loopback.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type SimMessage,
  type SimRequestRecord,
  type SimUser,
  startZulipSim,
  type ZulipSim,
} from '@zmcp/zulip-sim';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type AnthropicStub,
  type HandedResult,
  type ModelRequest,
  requestShape,
  startAnthropicStub,
} from '../../../test/support/anthropic-stub.js';
import {
  CHANNEL_ROLLOUT_FLAGS,
  type ClaudeHome,
  claudeHome,
  fileLine,
  startInTerminal,
  type TerminalSession,
} from '../../../test/support/claude-code.js';

const zulipMcpBin = join(import.meta.dirname, '..', 'dist', 'cli.js');

let sim: ZulipSim;
let stub: AnthropicStub;
let home: ClaudeHome;
let session: TerminalSession | undefined;
let ann: SimUser;
let bo: SimUser;
let bot: SimUser;

beforeEach(async () => {
  sim = await startZulipSim({
    rateLimit: false,
    seed(realm) {
      ann = realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' });
      bo = realm.addUser({ fullName: 'Bo Chen', email: 'bo@example.test' });
      bot = realm.addUser({
        fullName: 'Helper Bot',
        email: 'helper-bot@example.test',
        isBot: true,
        botType: 1,
      });
      realm.addStream({ name: 'ops', subscribers: [ann.userId, bo.userId, bot.userId] });
    },
  });
  stub = await startAnthropicStub({});
  home = await claudeHome();
});

afterEach(async () => {
  await session?.kill();
  session = undefined;
  await stub.close();
  await sim.close();
  await home.remove();
});

/** The first request to the simulator (already answered, or from now on) that matches. */
function request(match: (r: SimRequestRecord) => boolean): Promise<SimRequestRecord> {
  const seen = sim.requests.find(match);
  if (seen !== undefined) return Promise.resolve(seen);
  return new Promise((resolve) => {
    const off = sim.onRequest((r) => {
      if (!match(r)) return;
      off();
      resolve(r);
    });
  });
}

/** Every message of the realm, oldest first. */
function messages(): SimMessage[] {
  const out: SimMessage[] = [];
  for (let id = 1; id <= sim.realm.maxMessageId(); id++) {
    const m = sim.realm.message(id);
    if (m !== undefined) out.push(m);
  }
  return out;
}

/** The first value `check` finds, looked for now and again after every request the realm answers. */
function until<T>(check: () => T | undefined): Promise<T> {
  const now = check();
  if (now !== undefined) return Promise.resolve(now);
  return new Promise((resolve) => {
    const off = sim.onRequest(() => {
      const found = check();
      if (found === undefined) return;
      off();
      resolve(found);
    });
  });
}

/** The first permission prompt the bot DMs to Ann after message `after`, and its request id. */
async function permissionPrompt(after: number): Promise<{ messageId: number; requestId: string }> {
  const prompt = await until(() =>
    messages().find(
      (m) =>
        m.id > after &&
        m.senderId === bot.userId &&
        m.type === 'direct' &&
        m.recipientIds?.includes(ann.userId) === true &&
        /^🔐 \*\*[a-km-z]{5}\*\* Claude Code asks to use `mcp__zulip__channel_reply`/.test(m.content),
    ),
  );
  const requestId = /^🔐 \*\*([a-km-z]{5})\*\*/.exec(prompt.content)?.[1];
  expect(requestId, prompt.content).toBeDefined();
  return { messageId: prompt.id, requestId: requestId as string };
}

/** A tool result as the model got it: Claude Code hands over JSON.stringify(structuredContent). */
function parsed(result: HandedResult): Record<string, unknown> & { text: string } {
  expect(result.isError, result.text).toBe(false);
  const value = JSON.parse(result.text) as Record<string, unknown> & { text: string };
  expect(JSON.stringify(value)).toBe(result.text);
  return value;
}

describe('Claude Code channels with the real Claude Code', () => {
  it('pushes a mention to the model, relays the permission prompt to Zulip, and channel_reply lands in the topic', async () => {
    const mcpConfig = join(home.dir, 'mcp.json');
    const credentials = sim.credentials(bot.userId);
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
              ZULIP_CLAUDE_CHANNELS: 'on',
              ZULIP_CHANNEL_USERS: 'ann@example.test',
              ZULIP_CHANNEL_PERMISSION_RELAY: 'on',
              ZULIP_PRIVATE_STREAMS: '__ALL__',
            },
          },
        },
      }),
    );
    await home.writeInteractiveConfig(CHANNEL_ROLLOUT_FLAGS);
    const debugFile = join(home.dir, 'claude-debug.txt');
    session = startInTerminal(
      'claude',
      [
        '--dangerously-load-development-channels',
        'server:zulip',
        '--mcp-config',
        mcpConfig,
        '--strict-mcp-config',
        // Every tool call asks (no auto mode's own judgement), so the relay has a prompt to carry.
        '--permission-mode',
        'manual',
        '--debug-file',
        debugFile,
      ],
      {
        env: home.env(stub.url, { CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF: '1' }),
        cwd: home.workDir,
      },
    );

    // The development-channels warning, accepted as a developer does; then the channel registers.
    await session.waitFor(/I am using this for local development/);
    session.type('\r');
    await fileLine(debugFile, /MCP server "zulip": Channel notifications registered/);
    // Claude Code probed server/discover, was not offered 2026-07-28, and fell back to 2025-11-25.
    await fileLine(
      debugFile,
      /MCP server "zulip": Connection established with capabilities: .*"protocolEra":"legacy","negotiatedProtocolVersion":"2025-11-25"/,
    );
    // zulip-mcp's delivery queue (message events) is in place before anyone posts.
    await request(
      (r) =>
        r.method === 'POST' &&
        r.path.endsWith('/register') &&
        r.userId === bot.userId &&
        String(r.params.event_types ?? '').includes('"message"'),
    );

    const ops = sim.realm.stream('ops')?.streamId as number;
    const mention = sim.realm.sendMessage({
      senderId: ann.userId,
      type: 'stream',
      stream: 'ops',
      topic: 'deploy',
      content: '@**Helper Bot** is web-7 deployed?',
    });

    // The mention reaches an idle session as a channel event, and wakes the model.
    let r: ModelRequest = await stub.next();
    // What Claude Code 2.1.332 sends when a channel event wakes an interactive session, as recorded
    // (update with `pnpm test:e2e -u`).
    await expect(`${JSON.stringify(requestShape(r.record), null, 2)}\n`).toMatchFileSnapshot(
      '../../../test/fixtures/claude-code-2.1.332/channel-first-request.json',
    );
    const event = r.userTexts.find((t) => t.startsWith('<channel ')) ?? '';
    const chatId = `stream:${ops}/deploy`;
    expect(event).toContain(
      `<channel source="zulip" chat_id="${chatId}" message_id="${mention}" sender_id="${ann.userId}" sender="Ann Lee"`,
    );
    expect(event).toMatch(
      new RegExp(
        `\\n\\[[^\\]]+ id=${mention}\\] \\[#ops > deploy\\] Ann Lee \\(mention\\): @\\*\\*Helper Bot\\*\\* is web-7 deployed\\?\\n</channel>$`,
      ),
    );
    // The zulip tools are deferred, and this first request of the session names none of them:
    // the model finds the reply tool with ToolSearch.
    expect(r.toolNames).not.toContain('mcp__zulip__channel_reply');
    r = await r.answer({ toolCalls: [{ name: 'ToolSearch', input: { query: 'zulip channel reply' } }] });
    expect(r.toolNames).toContain('mcp__zulip__channel_reply');

    // channel_reply needs a permission: the relay DMs Ann with the request id.
    const afterFirst = r.answer({
      toolCalls: [
        { name: 'mcp__zulip__channel_reply', input: { chat_id: chatId, text: 'web-7 is deployed.' } },
      ],
    });
    const first = await permissionPrompt(mention);
    // Bo is not on ZULIP_CHANNEL_USERS: his "no" is ignored, and Ann's ✅ (after it) allows.
    sim.realm.sendMessage({
      senderId: bo.userId,
      type: 'direct',
      to: [bot.userId],
      content: `no ${first.requestId}`,
    });
    sim.realm.addReaction(ann.userId, first.messageId, 'check');
    r = await afterFirst;
    const sent = parsed(r.result('mcp__zulip__channel_reply'));
    const sentIds = sent.message_ids as number[];
    expect(sentIds).toHaveLength(1);
    expect(sim.realm.message(sentIds[0] as number)).toMatchObject({
      senderId: bot.userId,
      streamId: ops,
      topic: 'deploy',
      content: 'web-7 is deployed.',
    });

    // A second call, denied from Zulip by Ann's `no <id>`: the model is told, nothing is posted.
    const beforeSecond = sim.realm.maxMessageId();
    const afterSecond = r.answer({
      toolCalls: [
        { name: 'mcp__zulip__channel_reply', input: { chat_id: chatId, text: 'Deploying web-8 too.' } },
      ],
    });
    const second = await permissionPrompt(beforeSecond);
    expect(second.requestId).not.toBe(first.requestId);
    sim.realm.sendMessage({
      senderId: ann.userId,
      type: 'direct',
      to: [bot.userId],
      content: `no ${second.requestId}`,
    });
    r = await afterSecond;
    const denied = r.results.find((x) => x.name === 'mcp__zulip__channel_reply');
    expect(denied?.isError).toBe(true);
    expect(denied?.text).toContain('Denied via channel zulip');
    const topic = messages()
      .filter((m) => m.topic === 'deploy')
      .map((m) => m.content);
    expect(topic).toEqual(['@**Helper Bot** is web-7 deployed?', 'web-7 is deployed.']);

    // The model ends its turn; the session is left with /exit.
    void r.answer({ text: 'web-7 is deployed; web-8 was not approved.' }).catch(() => undefined);
    await session.waitFor(/web-8 was not approved/);
    session.type('/exit\r');
    expect(await session.exited).toBe(0);
    session = undefined;

    expect(stub.outbound).toEqual([]);
    expect(stub.problems).toEqual([]);
  });
});
