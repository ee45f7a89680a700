import { type CallToolResult, Client } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { AccessPolicy, ZulipClient } from '@zmcp/core';
import {
  type AgentSession,
  createAgentSession,
  createCatalog,
  createToolServices,
  loadRealmFacts,
  sessionCatalog,
} from '@zmcp/tools';
import { type SimUser, startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMcpServer } from '../src/server.js';

// The agent-as-teammate loop through the real SDK client, against a simulated realm: a 2026-era
// connection (the v2 client pinned to 2026-07-28, served by serveStdio), where the session lives
// with the connection as it does on stdio.

interface World {
  sim: ZulipSim;
  ann: SimUser;
  bo: SimUser;
  bot: SimUser;
  client: Client;
  session: AgentSession;
}

let world: World | undefined;
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  world = undefined;
});

async function start(deadlineMs = 10_000): Promise<World> {
  let people: { ann: SimUser; bo: SimUser; bot: SimUser } | undefined;
  const sim = await startZulipSim({
    rateLimit: false,
    seed(realm) {
      const ann = realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' });
      const bo = realm.addUser({ fullName: 'Bo Chen', email: 'bo@example.test' });
      const bot = realm.addUser({
        fullName: 'Helper Bot',
        email: 'helper-bot@example.test',
        isBot: true,
        botType: 1,
      });
      realm.addStream({ name: 'general', subscribers: [ann.userId, bo.userId, bot.userId] });
      realm.addRealmEmoji({ name: 'robot_ear', authorId: ann.userId });
      people = { ann, bo, bot };
    },
  });
  closers.push(() => sim.close());
  if (people === undefined) throw new Error('realm not seeded');
  const zulip = new ZulipClient({ ...sim.credentials(people.bot.userId), readOnly: false });
  closers.push(() => zulip.close());
  const facts = await loadRealmFacts(zulip, { readOnly: false });
  const services = createToolServices({
    client: zulip,
    policy: new AccessPolicy({ readOnly: false }),
    site: sim.url,
    identity: facts.identity,
    maxMessageLength: facts.maxMessageLength ?? 10_000,
    maxFileBytes: facts.maxFileBytes ?? 1_000_000,
  });
  const session = createAgentSession(services, { progressIntervalMs: 10 });
  closers.push(() => session.close());
  const teammate = sessionCatalog(services, session);
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const handle = serveStdio(
    (ctx) =>
      createMcpServer({
        name: 'zulip-mcp-test',
        version: '0.0.0',
        era: ctx.era,
        tools: [...createCatalog(services), ...teammate.tools],
        prompts: teammate.prompts,
        deadlineMs,
      }),
    { transport: serverTransport },
  );
  const client = new Client(
    { name: 'test-client', version: '0.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(clientTransport);
  closers.push(async () => {
    await client.close();
    await handle.close();
  });
  world = { sim, ...people, client, session };
  return world;
}

function post(w: World, sender: SimUser, topic: string, content: string): number {
  return w.sim.realm.sendMessage({
    senderId: sender.userId,
    type: 'stream',
    stream: 'general',
    topic,
    content,
  });
}

function structured(result: unknown): Record<string, unknown> {
  const r = result as CallToolResult;
  if (r.isError === true) throw new Error(`tool failed: ${JSON.stringify(r.content)}`);
  return r.structuredContent as Record<string, unknown>;
}

function textOf(result: unknown): string {
  return (result as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : '')).join('');
}

/** Waits until the bot's event queue for `topic` is blocked in a long poll (checked each turn of the event loop). */
async function polling(w: World, topic: string): Promise<void> {
  const ready = () =>
    w.sim
      .queues(w.bot.userId)
      .some((q) => q.polling && q.narrow.some(([op, operand]) => op === 'topic' && operand === topic));
  while (!ready()) await new Promise((resolve) => setImmediate(resolve));
}

describe('the teammate loop over MCP', () => {
  beforeEach(async () => {
    await start();
  });

  it('lists the session tools beside the catalog, and serves the teammate prompt', async () => {
    const w = world as World;
    const { tools } = await w.client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of ['set_context', 'reply', 'listen', 'end_session', 'send_message', 'fetch_history']) {
      expect(byName.has(name), name).toBe(true);
    }
    expect(byName.get('set_context')?.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: true });
    expect(byName.get('listen')?.inputSchema.properties).toHaveProperty('timeout_seconds');
    const prompt = await w.client.getPrompt({
      name: 'zulip_teammate',
      arguments: { stream: 'general', topic: 'incident', trigger_message_id: '7' },
    });
    const text = prompt.messages.map((m) => (m.content.type === 'text' ? m.content.text : '')).join('');
    expect(text).toContain('set_context(stream="general", topic="incident", trigger_message_id=7)');
    expect(text).toContain(':stop:');
  });

  it('mention → set_context → reply with what arrived → listen wakes → dismissal ends it', async () => {
    const w = world as World;
    const trigger = post(w, w.ann, 'incident', '@**Helper Bot** the checkout page is down, can you look?');

    const context = await w.client.callTool({
      name: 'set_context',
      arguments: { stream: 'general', topic: 'incident', trigger_message_id: trigger },
    });
    expect(structured(context)).toMatchObject({
      trigger_message_id: trigger,
      last_seen_id: trigger,
    });
    expect(textOf(context)).toContain(`→ [`);

    // Someone adds detail while the agent works on its answer.
    const detail = post(w, w.bo, 'incident', 'it started after the 10:40 deploy');
    const reply = await w.client.callTool({ name: 'reply', arguments: { content: 'Looking at it now.' } });
    const receipt = structured(reply);
    const replyId = receipt.message_id as number;
    expect(w.sim.realm.message(replyId)).toMatchObject({ topic: 'incident', content: 'Looking at it now.' });
    expect(receipt.arrived_ids).toEqual([detail]);
    expect(textOf(reply)).toContain('it started after the 10:40 deploy');

    // listen waits, reporting progress, until a follow-up arrives.
    const progress: { progress: number; total?: number | undefined }[] = [];
    let progressed!: () => void;
    const twice = new Promise<void>((resolve) => {
      progressed = resolve;
    });
    const listening = w.client.callTool(
      { name: 'listen', arguments: { timeout_seconds: 60 } },
      {
        onprogress: (p) => {
          progress.push(p);
          if (progress.length === 2) progressed();
        },
      },
    );
    await polling(w, 'incident');
    await twice;
    // The realm's custom robot_ear marks the listening agent.
    expect(w.sim.realm.message(replyId)?.reactions.map((r) => [r.emojiName, r.reactionType])).toEqual([
      ['robot_ear', 'realm_emoji'],
    ]);
    const follow = post(w, w.ann, 'incident', 'rolling back fixed it, thanks');
    const woke = structured(await listening);
    expect(woke).toMatchObject({ status: 'messages', last_seen_id: follow });
    expect(woke.ids).toEqual([follow]);
    expect(progress[0]).toMatchObject({ total: 60 });
    expect(progress[1]?.progress ?? 0).toBeGreaterThan(progress[0]?.progress ?? 0);
    await w.session.settled();
    expect(w.sim.realm.message(replyId)?.reactions).toEqual([]);

    // Ann dismisses the bot with 🛑 on its reply, while it is not listening.
    w.sim.realm.addReaction(w.ann.userId, replyId, 'stop');
    const ended = await w.client.callTool({ name: 'listen', arguments: { timeout_seconds: 60 } });
    expect(structured(ended)).toMatchObject({
      status: 'dismissed',
      dismissed_by: w.ann.userId,
    });
    expect(textOf(ended)).toContain('which dismisses you');
    const count = w.sim.realm.messageCount();
    const refused = (await w.client.callTool({
      name: 'reply',
      arguments: { content: 'one more thing' },
    })) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('is over');
    expect(w.sim.realm.messageCount()).toBe(count);
  });

  it('a dismiss reaction during listen ends it through the event queue', async () => {
    const w = world as World;
    const trigger = post(w, w.ann, 'quick', '@**Helper Bot** ping');
    structured(
      await w.client.callTool({
        name: 'set_context',
        arguments: { stream: 'general', topic: 'quick', trigger_message_id: trigger },
      }),
    );
    const replyId = structured(await w.client.callTool({ name: 'reply', arguments: { content: 'pong' } }))
      .message_id as number;
    const listening = w.client.callTool({ name: 'listen', arguments: { timeout_seconds: 60 } });
    await polling(w, 'quick');
    w.sim.realm.addReaction(w.bo.userId, replyId, 'stop');
    expect(structured(await listening)).toMatchObject({ status: 'dismissed' });
  });
});

describe('the shared deadline', () => {
  it('does not cut a listen short: listen runs to its own timeout_seconds', async () => {
    const w = await start(400);
    const trigger = post(w, w.ann, 'slow', '@**Helper Bot** wait for me');
    structured(
      await w.client.callTool({
        name: 'set_context',
        arguments: { stream: 'general', topic: 'slow', trigger_message_id: trigger },
      }),
    );
    const started = performance.now();
    const result = await w.client.callTool({ name: 'listen', arguments: { timeout_seconds: 1 } });
    expect(structured(result)).toMatchObject({ status: 'timeout' });
    expect(textOf(result)).not.toContain('deadline ended the wait');
    // The shared deadline is 400 ms; the listen waited out its own second.
    expect(performance.now() - started).toBeGreaterThanOrEqual(1000);
    await w.session.settled();
    expect(w.sim.queues(w.bot.userId)).toEqual([]);
    expect(w.sim.realm.message(trigger)?.reactions).toEqual([]);
  });
});
