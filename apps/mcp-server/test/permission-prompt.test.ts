// permission_prompt, Claude Code's --permission-prompt-tool, as zulip-agent serves it: the launched
// session posts the request in its conversation, and only an admitted person's ✅ answers it, with
// the JSON Claude Code 2.1.332 parses ({ behavior, updatedInput } or { behavior, message }).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { type SimUser, startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { silentLogger } from '../src/logging.js';
import { createMcpServer } from '../src/server.js';
import { buildServices } from '../src/services.js';

let sim: ZulipSim;
let ann: SimUser;
let bo: SimUser;
let bot: SimUser;
let env: Record<string, string>;
let stateDir: string;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'zmcp-permission-'));
  sim = await startZulipSim({
    rateLimit: false,
    seed(realm) {
      ann = realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' });
      bo = realm.addUser({ fullName: 'Bo Chen', email: 'bo@example.test' });
      bot = realm.addUser({ fullName: 'Helper Bot', email: 'bot@example.test', isBot: true, botType: 1 });
      realm.addStream({ name: 'ops', subscribers: [ann.userId, bo.userId, bot.userId] });
    },
  });
  const creds = sim.credentials(bot.userId);
  env = {
    HOME: '/nonexistent',
    ZULIP_SITE: creds.site,
    ZULIP_EMAIL: creds.email,
    ZULIP_API_KEY: creds.apiKey,
    ZULIP_STATE_DIR: stateDir,
    ZULIP_ALLOWED_USERS: String(ann.userId),
  };
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

async function connect(extra: Record<string, string>): Promise<Client> {
  const built = await buildServices(parseConfig({ ...env, ...extra }, []), silentLogger);
  closers.push(() => built.close());
  const agent = built.openSession({ launched: true, cursors: 'session' });
  closers.push(() => agent.close());
  const server = createMcpServer({
    name: 'zulip-mcp',
    version: 'test',
    tools: [...built.tools, ...agent.tools],
    prompts: agent.prompts,
    deadlineMs: 20_000,
  });
  const client = new Client({ name: 'permission-test', version: '1' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(b);
  await client.connect(a);
  closers.push(() => client.close());
  return client;
}

/** Resolves with the id and content of the next message the bot posts. */
function nextBotMessage(): Promise<{ id: number; content: string }> {
  return new Promise((resolve) => {
    const off = sim.onRequest(
      (r) => {
        if (r.method !== 'POST' || r.path !== '/api/v1/messages' || r.userId !== bot.userId) return;
        off();
        resolve({ id: (r.response as { id: number }).id, content: String(r.params.content) });
      },
      { responses: true },
    );
  });
}

/** Resolves once the bot has an event queue for reactions in a long poll. */
async function answersHeard(): Promise<void> {
  while (!sim.queues(bot.userId).some((q) => q.polling && q.eventTypes?.includes('reaction')))
    await new Promise((resolve) => setImmediate(resolve));
}

describe('permission_prompt', () => {
  it('is not served unless ZULIP_PERMISSION_PROMPT is on', async () => {
    const client = await connect({});
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).not.toContain('permission_prompt');
  });

  it('asks in the launched conversation; a ✅ from outside the gate changes nothing, an admitted one allows', async () => {
    const trigger = sim.realm.sendMessage({
      senderId: ann.userId,
      type: 'stream',
      stream: 'ops',
      topic: 'release',
      content: '@**Helper Bot** tag the release',
    });
    const client = await connect({ ZULIP_PERMISSION_PROMPT: 'on', TRIGGER_MESSAGE_ID: String(trigger) });
    const listed = (await client.listTools()).tools.find((t) => t.name === 'permission_prompt');
    expect(listed?.inputSchema.required).toEqual(['tool_name']);
    // Claude Code reads the first text block, and refuses a result handed as structured JSON.
    expect(listed?.outputSchema).toBeUndefined();
    const prompted = nextBotMessage();
    const input = { command: 'git tag v1.2 && git push --tags', description: 'Tag' };
    const call = client.callTool({
      name: 'permission_prompt',
      arguments: { tool_name: 'Bash', input, tool_use_id: 'toolu_01ABC' },
    });
    const prompt = await prompted;
    const stored = sim.realm.message(prompt.id);
    expect(stored).toMatchObject({ streamId: sim.realm.stream('ops')?.streamId, topic: 'release' });
    expect(prompt.content).toContain('`Bash`: `git tag v1.2 && git push --tags`');
    await answersHeard();
    sim.realm.addReaction(bo.userId, prompt.id, 'check');
    sim.realm.addReaction(ann.userId, prompt.id, 'check');
    const result = await call;
    const text = (result.content as { type: string; text: string }[])[0]?.text ?? '';
    expect(JSON.parse(text)).toEqual({ behavior: 'allow', updatedInput: input });
    expect(result.content).toHaveLength(1);
    expect(result.structuredContent).toBeUndefined();
    // The prompt now says who decided (Ann, whose ✅ came after Bo's).
    await new Promise<void>((resolve) => {
      const check = () =>
        sim.realm.message(prompt.id)?.content.includes(`Allowed by @_**|${ann.userId}**`)
          ? resolve()
          : setImmediate(check);
      check();
    });
  });
});
