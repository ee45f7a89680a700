// Resources, resource templates, subscriptions and prompts through a real SDK client, against
// the services the app builds for a simulated realm.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import type { PromptDefinition } from '@zmcp/tools';
import { type SimUser, startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseConfig } from '../src/config.js';
import { silentLogger } from '../src/logging.js';
import { createMcpServer } from '../src/server.js';
import { buildServices, type Services } from '../src/services.js';

const SUMMARY = 'zulip://unread/summary';
const STATUS = 'zulip://monitoring/status';
const GENERAL = 'zulip://channel/general/unread';

let sim: ZulipSim;
let ann: SimUser;
let bot: SimUser;
let stateDir: string;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  sim = await startZulipSim({
    rateLimit: false,
    seed(r) {
      ann = r.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' });
      bot = r.addUser({ fullName: 'Helper Bot', email: 'helper-bot@example.test', isBot: true, botType: 1 });
      r.addStream({ name: 'general', subscribers: [ann.userId, bot.userId] });
      r.addStream({ name: 'dev ops', subscribers: [ann.userId] });
    },
  });
  stateDir = await mkdtemp(join(tmpdir(), 'zmcp-resources-'));
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

afterAll(async () => {
  await sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

function post(stream: string, content: string): number {
  return sim.realm.sendMessage({ senderId: ann.userId, type: 'stream', stream, topic: 'chat', content });
}

async function services(env: Record<string, string> = {}): Promise<Services> {
  const credentials = sim.credentials(bot.userId);
  const config = parseConfig(
    {
      ZULIP_SITE: credentials.site,
      ZULIP_EMAIL: credentials.email,
      ZULIP_API_KEY: credentials.apiKey,
      ZULIP_STATE_DIR: stateDir,
      ZULIP_SESSION_ID: 'app-test',
      ZULIP_TOOLSETS: 'all',
      AGENT_TIMEZONE: 'UTC',
      HOME: stateDir,
      ...env,
    },
    [],
  );
  const built = await buildServices(config, silentLogger);
  closers.push(() => built.close());
  return built;
}

/** A client session, with the resource-updated notifications it receives. */
async function connect(built: Services, extra: { prompts?: PromptDefinition[]; readOnly?: boolean } = {}) {
  // Like a stdio session: the durable cursors of ZULIP_SESSION_ID.
  const agent = built.openSession({ launched: false, cursors: 'durable' });
  closers.push(() => agent.close());
  const server = createMcpServer({
    name: 'zulip-mcp-test',
    version: '0.0.0',
    tools: [
      ...built.tools,
      ...agent.tools.filter(
        (t) => !['set_context', 'reply', 'listen', 'end_session'].includes(t.definition.name),
      ),
    ],
    resources: agent.resources,
    resourceTemplates: agent.resourceTemplates,
    resourceChanges: agent.resourceChanges,
    prompts: extra.prompts,
    deadlineMs: 10_000,
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  const client = new Client({ name: 'test-client', version: '0.0.0' });
  const updates: string[] = [];
  const waiting: { test: (uri: string) => boolean; resolve: () => void }[] = [];
  client.setNotificationHandler('notifications/resources/updated', (n) => {
    updates.push(n.params.uri);
    for (const w of [...waiting]) {
      if (w.test(n.params.uri)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve();
      }
    }
  });
  await client.connect(clientTransport);
  closers.push(async () => {
    await client.close();
    await server.close();
  });
  return {
    client,
    updates,
    /** Resolves on the next update of `uri` (from now on). */
    nextUpdate(uri: string): Promise<void> {
      return new Promise((resolve) => waiting.push({ test: (u) => u === uri, resolve }));
    },
  };
}

async function readText(client: Client, uri: string): Promise<string> {
  const result = await client.readResource({ uri });
  const [first] = result.contents;
  if (first === undefined || !('text' in first)) throw new Error(`no text in ${uri}`);
  expect(first.uri).toBe(uri);
  return first.text;
}

async function status(client: Client) {
  return JSON.parse(await readText(client, STATUS)) as {
    streams: { stream: string; cursor: number | null }[];
    live_updates: { running: boolean; state: string; detail: string | null };
    read_only: boolean;
  };
}

/** Waits, on status notifications, until live updates run (the event queue is registered). */
async function untilLive(session: Awaited<ReturnType<typeof connect>>): Promise<void> {
  for (;;) {
    const changed = session.nextUpdate(STATUS);
    if ((await status(session.client)).live_updates.running) return;
    await changed;
  }
}

describe('resources', () => {
  it('are advertised with subscribe and listChanged, listed, and read', async () => {
    const built = await services();
    const { client } = await connect(built);
    expect(client.getServerCapabilities()?.resources).toEqual({ subscribe: true, listChanged: false });
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toEqual(
      expect.arrayContaining([
        'start_monitoring',
        'stop_monitoring',
        'get_monitored_channels',
        'get_unread_messages',
      ]),
    );
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates).toEqual([
      expect.objectContaining({ uriTemplate: 'zulip://channel/{stream}/unread', mimeType: 'text/plain' }),
    ]);

    post('general', 'before monitoring');
    const started = await client.callTool({
      name: 'start_monitoring',
      arguments: { streams: ['general', 'dev ops'] },
    });
    expect(started.isError).toBeFalsy();
    const { resources } = await client.listResources();
    expect(resources.map((r) => [r.uri, r.mimeType])).toEqual([
      [SUMMARY, 'text/plain'],
      [STATUS, 'application/json'],
      ['zulip://channel/dev%20ops/unread', 'text/plain'],
      [GENERAL, 'text/plain'],
    ]);

    const id = post('dev ops', 'a new thing');
    expect(await readText(client, SUMMARY)).toBe(
      `1 unread in 2 monitored streams (get_unread_messages reads them).\n#dev ops: 1 unread, newest id=${id}\n#general: 0 unread`,
    );
    const s = await status(client);
    expect(s.streams.map((x) => x.stream)).toEqual(['dev ops', 'general']);
    expect(s.live_updates).toMatchObject({ running: false, state: 'idle' });
    const channel = await readText(client, 'zulip://channel/dev%20ops/unread');
    expect(channel.split('\n')[1]).toMatch(
      new RegExp(`id=${id}\\] \\[#dev ops > chat\\] Ann Lee: a new thing$`),
    );
    // Reading moved no cursor.
    expect(await readText(client, SUMMARY)).toContain('#dev ops: 1 unread');

    // Not found: -32602 on every revision (the SDK answers 2025 clients so too; -32002 is the 2025 code they still accept).
    await expect(client.readResource({ uri: 'zulip://channel/random/unread' })).rejects.toMatchObject({
      code: -32602,
    });
    await expect(client.readResource({ uri: 'zulip://channel/%E0%A4%A/unread' })).rejects.toMatchObject({
      code: -32602,
    });
    await client.callTool({ name: 'get_unread_messages', arguments: {} });
  });

  it('notify a subscribed session when a human posts, and stop after it unsubscribes', async () => {
    const built = await services();
    const session = await connect(built);
    const { client } = session;
    await client.callTool({ name: 'start_monitoring', arguments: { streams: ['general'] } });
    await client.subscribeResource({ uri: STATUS });
    await untilLive(session);
    expect(sim.queues(bot.userId)).toHaveLength(1);
    await client.subscribeResource({ uri: SUMMARY });
    await client.subscribeResource({ uri: GENERAL });

    const summaryUpdated = session.nextUpdate(SUMMARY);
    post('general', 'hello, bot');
    await summaryUpdated;
    expect(await readText(client, SUMMARY)).toContain('#general: 1 unread');

    await client.unsubscribeResource({ uri: SUMMARY });
    const seen = session.updates.length;
    const channelUpdated = session.nextUpdate(GENERAL);
    post('general', 'hello again');
    await channelUpdated;
    // The summary notification would have come before the channel's: none came.
    expect(session.updates.slice(seen)).toEqual([GENERAL]);

    await client.unsubscribeResource({ uri: GENERAL });
    await client.unsubscribeResource({ uri: STATUS });
    expect(sim.queues(bot.userId)).toEqual([]);
    await client.callTool({ name: 'get_unread_messages', arguments: {} });
  });

  it('notify only the sessions subscribed to a URI, and release a session’s subscription when it closes', async () => {
    const built = await services();
    const a = await connect(built);
    const b = await connect(built);
    await a.client.subscribeResource({ uri: STATUS });
    await untilLive(a);
    // Each session holds an event queue of its own while it has a subscription.
    await b.client.subscribeResource({ uri: GENERAL });
    await b.client.subscribeResource({ uri: STATUS });
    await untilLive(b);
    await b.client.unsubscribeResource({ uri: STATUS });
    expect(sim.queues(bot.userId)).toHaveLength(2);
    await a.client.subscribeResource({ uri: SUMMARY });
    const seenByB = b.updates.length;
    const both = Promise.all([a.nextUpdate(SUMMARY), b.nextUpdate(GENERAL)]);
    post('general', 'for both');
    await both;
    expect(a.updates).not.toContain(GENERAL);
    expect(b.updates.slice(seenByB)).toEqual([GENERAL]);

    let deletes = 0;
    const deleted = new Promise<void>((resolve) => {
      const off = sim.onRequest((r) => {
        if (r.method === 'DELETE' && r.path.endsWith('/events') && ++deletes === 2) {
          off();
          resolve();
        }
      });
    });
    await a.client.close();
    await b.client.close();
    await deleted;
    expect(sim.queues(bot.userId)).toEqual([]);
  });

  it('refuse a subscription to an unknown resource', async () => {
    const { client } = await connect(await services());
    await expect(client.subscribeResource({ uri: 'zulip://nothing/here' })).rejects.toMatchObject({
      code: -32602,
    });
  });

  it('read fine in read-only mode, where live updates are off and say why', async () => {
    const built = await services({ ZULIP_READ_ONLY: 'true', ZULIP_SESSION_ID: 'read-only' });
    const session = await connect(built, { readOnly: true });
    const { client } = session;
    await client.callTool({ name: 'start_monitoring', arguments: { streams: ['general'] } });
    const id = post('general', 'polled');
    await client.subscribeResource({ uri: SUMMARY });
    const s = await status(client);
    expect(s.read_only).toBe(true);
    expect(s.live_updates).toMatchObject({ running: false, state: 'unavailable' });
    expect(s.live_updates.detail).toMatch(/read-only/i);
    expect(sim.queues(bot.userId)).toEqual([]);
    expect(await readText(client, SUMMARY)).toContain(`#general: 1 unread, newest id=${id}`);
    expect(await readText(client, GENERAL)).toContain(`id=${id}]`);
    const unread = await client.callTool({
      name: 'get_unread_messages',
      arguments: { mark_read_in_zulip: true },
    });
    expect(unread.isError).toBe(true);
  });

  it('keep cursors across a restart of the services', async () => {
    const first = await connect(await services({ ZULIP_SESSION_ID: 'restart' }));
    await first.client.callTool({ name: 'start_monitoring', arguments: { streams: ['general'] } });
    const seen = post('general', 'before the restart');
    const r1 = await first.client.callTool({ name: 'get_unread_messages', arguments: {} });
    expect((r1.structuredContent as { ids: number[] }).ids).toEqual([seen]);
    const later = post('general', 'after the restart');
    const second = await connect(await services({ ZULIP_SESSION_ID: 'restart' }));
    const r2 = await second.client.callTool({ name: 'get_unread_messages', arguments: {} });
    expect((r2.structuredContent as { ids: number[] }).ids).toEqual([later]);
  });
});

describe('prompts', () => {
  const greet: PromptDefinition = {
    name: 'catch_up',
    title: 'Catch up on a stream',
    description: 'Asks the model to summarize what is unread in a stream.',
    argsSchema: z.object({ stream: z.string().describe('Stream name') }),
    render: (args) => ({
      description: 'Catch up',
      messages: [
        { role: 'user', text: `Summarize what is unread in #${(args as { stream: string }).stream}.` },
      ],
    }),
  };

  it('are listed with their arguments and rendered', async () => {
    const { client } = await connect(await services(), { prompts: [greet] });
    const { prompts } = await client.listPrompts();
    expect(prompts).toEqual([
      expect.objectContaining({
        name: 'catch_up',
        title: 'Catch up on a stream',
        arguments: [expect.objectContaining({ name: 'stream', required: true })],
      }),
    ]);
    const got = await client.getPrompt({ name: 'catch_up', arguments: { stream: 'general' } });
    expect(got).toEqual({
      description: 'Catch up',
      messages: [{ role: 'user', content: { type: 'text', text: 'Summarize what is unread in #general.' } }],
    });
  });
});
