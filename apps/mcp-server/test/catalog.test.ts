// Every tool of the catalog through the real SDK Client, against zulip-sim's demo realm, over
// the three transports a user meets: in-memory (2025 era), the built binary on stdio (the v2 client
// pinned to 2026-07-28), and Streamable HTTP (a 2025-era session).
// For each tool: its success path, bad input naming the field; for reads of closed scopes a
// permission denial; in read-only mode the write tools are gone and the realm is unchanged.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { type DemoRealmInfo, seedDemoRealm, startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { startHttpServer } from '../src/http.js';
import { silentLogger } from '../src/logging.js';
import { createMcpServer } from '../src/server.js';
import { buildServices, type Services } from '../src/services.js';

const bin = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const appDir = fileURLToPath(new URL('..', import.meta.url));

let sim: ZulipSim;
let demo: DemoRealmInfo;
let env: Record<string, string>;
let stateDir: string;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'zmcp-catalog-'));
  sim = await startZulipSim({
    rateLimit: false,
    seed(realm) {
      demo = seedDemoRealm(realm);
    },
  });
  const creds = sim.credentials(demo.botId);
  env = {
    HOME: '/nonexistent',
    ZULIP_SITE: creds.site,
    ZULIP_EMAIL: creds.email,
    ZULIP_API_KEY: creds.apiKey,
    ZULIP_STATE_DIR: stateDir,
    ZULIP_TOOLSETS: 'all',
    AGENT_TIMEZONE: 'UTC',
  };
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

async function services(extra: Record<string, string> = {}): Promise<Services> {
  const built = await buildServices(parseConfig({ ...env, ...extra }, []), silentLogger);
  closers.push(() => built.close());
  return built;
}

function serverFor(built: Services) {
  const agent = built.openSession({ launched: false, cursors: 'durable' });
  closers.push(() => agent.close());
  return createMcpServer({
    name: 'zulip-mcp',
    version: 'test',
    tools: [...built.tools, ...agent.tools],
    prompts: agent.prompts,
    deadlineMs: 20_000,
  });
}

type Kind = 'in-memory' | 'stdio' | 'http';

async function connect(kind: Kind, extra: Record<string, string> = {}): Promise<Client> {
  const client = new Client(
    { name: 'catalog-test', version: '1' },
    { versionNegotiation: { mode: kind === 'stdio' ? { pin: '2026-07-28' } : 'legacy' } },
  );
  if (kind === 'in-memory') {
    const server = serverFor(await services(extra));
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(b);
    await client.connect(a);
  } else if (kind === 'stdio') {
    await client.connect(
      new StdioClientTransport({
        command: bin,
        args: [],
        cwd: appDir,
        env: {
          ...env,
          ...extra,
          PATH: process.env.PATH ?? '',
          ZMCP_LOG_LEVEL: 'error',
        },
        stderr: 'ignore',
      }),
    );
  } else {
    const built = await services(extra);
    const http = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      token: undefined,
      allowedOrigins: undefined,
      maxSessions: 4,
      sessionIdleMs: 60_000,
      logger: silentLogger,
      createServer: () => serverFor(built),
    });
    closers.push(() => http.close());
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
  }
  closers.push(() => client.close());
  return client;
}

interface CallOutcome {
  isError: boolean;
  text: string;
  structured: Record<string, unknown> | undefined;
  images: number;
  /** The stable code of a failure, from `_meta`. */
  code: string | undefined;
}

/** The page budget every call's output must fit, whichever rendering a client shows. */
const PAGE_BUDGET = 16_384;

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallOutcome> {
  const result = await client.callTool({ name, arguments: args });
  const blocks = (result.content ?? []) as { type: string; text?: string }[];
  const text = blocks.find((b) => b.type === 'text')?.text ?? '';
  const structured = result.structuredContent as Record<string, unknown> | undefined;
  // One rendering: a client that shows JSON.stringify(structuredContent) reads the same text first.
  if (structured !== undefined) {
    expect(structured.text, `${name}: structuredContent.text is the text`).toBe(text);
    expect(Object.keys(structured)[0]).toBe('text');
    expect(
      Buffer.byteLength(JSON.stringify(structured)),
      `${name}: JSON within the page budget`,
    ).toBeLessThanOrEqual(PAGE_BUDGET);
  }
  if (blocks.every((b) => b.type !== 'image'))
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(PAGE_BUDGET);
  const meta = result._meta as { 'zmcp/error'?: { code?: string } } | undefined;
  if (result.isError === true)
    expect(meta?.['zmcp/error']?.code, `${name}: error code`).toMatch(/^[A-Z]+_[A-Z0-9_]+$/);
  return {
    isError: result.isError === true,
    text,
    structured,
    images: blocks.filter((b) => b.type === 'image').length,
    code: meta?.['zmcp/error']?.code,
  };
}

/** Ids each run needs: a message in #engineering > deploys, and messages the bot sent itself. */
interface Fixture {
  anyId: number;
  imageUrl: string;
  /** The transport, so each one posts text of its own (the same text twice is refused: send once). */
  kind: string;
  ownId(): Promise<number>;
}

interface Row {
  ok: (f: Fixture) => Promise<Record<string, unknown>> | Record<string, unknown>;
  /** A check of the success result beyond "not an error". */
  check?: (out: CallOutcome) => void;
  /** Arguments the input schema refuses, and the field the failure must name; none for a tool without arguments. */
  bad?: { args: Record<string, unknown>; field: string };
  /** Arguments that reach a scope the default policy keeps closed. */
  denied?: Record<string, unknown>;
  /** The refusal is reported per item inside a successful result (subscribe), not as an error. */
  deniedInResult?: boolean;
}

const base64 = (text: string) => Buffer.from(text).toString('base64');
const lineOf = /^\[\S+ id=\d+\] \[/m;

const rows: Record<string, Row> = {
  fetch_history: {
    ok: () => ({ stream: 'engineering', topic: 'deploys', limit: 5 }),
    check: (out) => expect(out.text).toMatch(lineOf),
    bad: { args: { stream: 'engineering', limit: 0 }, field: 'limit' },
    denied: { stream: 'ops' },
  },
  fetch_around: {
    ok: (f) => ({ message_id: f.anyId, before: 2, after: 2 }),
    check: (out) => expect(out.text).toMatch(lineOf),
    bad: { args: { message_id: 'x' }, field: 'message_id' },
  },
  get_channel_history: {
    ok: () => ({ stream: 'engineering', when: 'last 7 days', limit: 5 }),
    bad: { args: { stream: 'engineering', limit: 10_000 }, field: 'limit' },
    denied: { stream: 'ops', when: 'today' },
  },
  search_messages: {
    ok: () => ({ query: 'runbook' }),
    bad: { args: { query: 'x'.repeat(1000) }, field: 'query' },
    denied: { stream: 'ops', query: 'x' },
  },
  get_message: {
    ok: (f) => ({ message_id: f.anyId }),
    check: (out) =>
      expect(out.structured).toMatchObject({ message_id: expect.any(Number), sender_id: expect.any(Number) }),
    bad: { args: {}, field: 'message_id' },
  },
  get_message_link: {
    ok: (f) => ({ message_id: f.anyId }),
    check: (out) => expect(out.text).toContain('/near/'),
    bad: { args: { message_id: -1 }, field: 'message_id' },
  },
  list_streams: {
    ok: () => ({}),
    check: (out) => expect(out.text).toContain('engineering'),
    bad: { args: { limit: -1 }, field: 'limit' },
  },
  get_stream_topics: {
    ok: () => ({ stream: 'engineering' }),
    check: (out) => expect(out.text).toContain('deploys'),
    bad: { args: { stream: 42.5 }, field: 'stream' },
    denied: { stream: 'ops' },
  },
  list_stream_members: {
    ok: () => ({ stream: 'engineering' }),
    check: (out) => expect(out.text).toContain('Ann Lee'),
    bad: { args: { stream: 'engineering', include_bots: 'yes' }, field: 'include_bots' },
    denied: { stream: 'ops' },
  },
  list_users: {
    ok: () => ({}),
    check: (out) => expect(out.text).toContain('Bo Chen'),
    bad: { args: { include_bots: 3 }, field: 'include_bots' },
  },
  find_user: {
    ok: () => ({ query: 'Ann' }),
    check: (out) => expect(out.text).toContain('ann@zulip.example'),
    bad: { args: {}, field: 'query' },
  },
  get_user_profile: {
    ok: () => ({ user: 'ann@zulip.example' }),
    check: (out) => expect(out.text).toContain('Team'),
    bad: { args: { user: 12.5 }, field: 'user' },
  },
  list_emojis: {
    ok: () => ({}),
    check: (out) => expect(out.text).toContain('shipit'),
    bad: { args: { limit: 'many' }, field: 'limit' },
  },
  fetch_attachment: {
    ok: (f) => ({ path: f.imageUrl }),
    check: (out) => expect(out.images).toBe(1),
    bad: { args: {}, field: 'path' },
  },
  list_attachments: {
    ok: () => ({}),
    check: (out) => expect(out.structured).toMatchObject({ attachments: expect.any(Array) }),
    bad: { args: { limit: 'all' }, field: 'limit' },
  },
  remind_me: {
    ok: (f) => ({ message_id: f.anyId, when: 'in 2 hours', note: 'look again' }),
    check: (out) => expect(out.text).toMatch(/^Reminder \d+ set for /),
    bad: { args: { message_id: 1, when: 'someday' }, field: 'when' },
  },
  list_reminders: {
    ok: () => ({}),
    check: (out) => expect(out.text).toMatch(/reminders? pending/),
    bad: { args: { limit: 0 }, field: 'limit' },
  },
  cancel_reminder: {
    ok: (f) => ({
      reminder_id: sim.realm.addReminder(demo.botId, f.anyId, Math.floor(Date.now() / 1000) + 3600)
        .reminderId,
    }),
    check: (out) => expect(out.text).toMatch(/^Reminder \d+ cancelled\.$/),
    bad: { args: { reminder_id: 'next' }, field: 'reminder_id' },
  },
  send_message: {
    ok: (f) => ({
      stream: 'general',
      topic: 'catalog test',
      content: `Hello from the catalog test (${f.kind})`,
    }),
    bad: { args: { stream: 'general', topic: 'x', content: 42 }, field: 'content' },
    denied: { stream: 'ops', topic: 'x', content: 'no' },
  },
  send_dm: {
    ok: (f) => ({ to: ['Bo Chen'], content: `A direct hello (${f.kind})` }),
    bad: { args: { to: 'Bo Chen', content: 'x' }, field: 'to' },
  },
  upload_file: {
    ok: () => ({ attachment: { data: base64('hello'), name: 'hello.txt' } }),
    check: (out) => expect(out.text).toContain('/user_uploads/'),
    bad: { args: { attachment: { data: '!!!', name: 'x.txt' } }, field: 'attachment' },
  },
  edit_message: {
    ok: async (f) => ({ message_id: await f.ownId(), content: 'Edited by the catalog test' }),
    bad: { args: { message_id: 1, propagate_mode: 'sideways' }, field: 'propagate_mode' },
  },
  delete_message: {
    ok: async (f) => ({ message_id: await f.ownId() }),
    bad: { args: { message_id: 'one' }, field: 'message_id' },
  },
  add_reaction: {
    ok: (f) => ({ message_id: f.anyId, emoji: 'tada' }),
    bad: { args: { message_id: 1 }, field: 'emoji' },
  },
  remove_reaction: {
    ok: (f) => ({ message_id: f.anyId, emoji: 'tada' }),
    bad: { args: { message_id: 1, emoji: 'tada', reaction_type: 'made_up' }, field: 'reaction_type' },
  },
  resolve_topic: {
    ok: () => ({ stream: 'general', topic: 'catalog test' }),
    bad: { args: { stream: 'general' }, field: 'topic' },
    denied: { stream: 'ops', topic: 'on-call' },
  },
  mark_read: {
    ok: (f) => ({ message_ids: [f.anyId] }),
    bad: { args: { message_ids: 'all' }, field: 'message_ids' },
  },
  subscribe: {
    ok: () => ({ streams: ['design'] }),
    bad: { args: { streams: [] }, field: 'streams' },
    denied: { streams: ['ops'] },
    deniedInResult: true,
  },
  unsubscribe: {
    ok: () => ({ streams: ['design'] }),
    bad: { args: { streams: 'design' }, field: 'streams' },
  },
  start_monitoring: {
    ok: (f) => ({ streams: ['engineering'], since_message_id: f.anyId - 1 }),
    check: (out) => expect(out.text).toContain('engineering'),
    bad: { args: { streams: ['engineering'], since_message_id: 'recent' }, field: 'since_message_id' },
    denied: { streams: ['ops'] },
  },
  get_monitored_channels: {
    ok: () => ({}),
    check: (out) => expect(out.text).toContain('engineering'),
    bad: { args: { limit: 0 }, field: 'limit' },
  },
  get_unread_messages: {
    ok: () => ({}),
    check: (out) => expect(out.text).toMatch(lineOf),
    bad: { args: { limit: 'all' }, field: 'limit' },
  },
  set_context: {
    ok: () => ({ stream: 'engineering', topic: 'deploys' }),
    check: (out) => expect(out.text).toMatch(lineOf),
    bad: { args: { stream: 'engineering' }, field: 'topic' },
    denied: { stream: 'ops', topic: 'on-call' },
  },
  reply: {
    ok: (f) => ({ content: `On it, reading the deploy log now (${f.kind}).` }),
    bad: { args: { content: 5 }, field: 'content' },
  },
  listen: {
    ok: () => ({ timeout_seconds: 1 }),
    bad: { args: { timeout_seconds: 0 }, field: 'timeout_seconds' },
  },
  end_session: {
    ok: () => ({}),
  },
  stop_monitoring: {
    ok: () => ({ streams: ['engineering'] }),
    bad: { args: { streams: [42] }, field: 'streams' },
  },
};

async function fixtureFor(client: Client, kind: string): Promise<Fixture> {
  let sent = 0;
  const history = await call(client, 'fetch_history', { stream: 'engineering', topic: 'deploys', limit: 20 });
  const ids = (history.structured?.ids ?? []) as number[];
  // A person's message: the bot's own replies (earlier runs post some) never count as unread.
  const anyId = ids.filter((id) => sim.realm.message(id)?.senderId !== demo.botId).at(-1);
  if (anyId === undefined) throw new Error('the demo realm has no #engineering > deploys history');
  return {
    anyId,
    imageUrl: sim.realm.uploads()[0]?.url as string,
    kind,
    async ownId() {
      sent += 1;
      const out = await call(client, 'send_message', {
        stream: 'general',
        topic: 'catalog test',
        content: `a message to change (${kind} ${sent})`,
      });
      expect(out.isError, out.text).toBe(false);
      return (out.structured as { message_id: number }).message_id;
    },
  };
}

for (const kind of ['in-memory', 'stdio', 'http'] as const) {
  describe(`every tool over ${kind}`, () => {
    let client: Client;
    let fixture: Fixture;
    beforeAll(async () => {
      client = await connect(kind);
      fixture = await fixtureFor(client, kind);
    });

    it('lists exactly the tools this test covers, each with annotations and an output schema', async () => {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(Object.keys(rows).sort());
      const readme = readFileSync(join(appDir, 'README.md'), 'utf8');
      for (const tool of tools) {
        expect(tool.annotations, tool.name).toMatchObject({ readOnlyHint: expect.any(Boolean) });
        expect(tool.outputSchema, tool.name).toBeDefined();
        expect(readme, `README documents ${tool.name}`).toContain(`\`${tool.name}\``);
      }
    });

    for (const [name, row] of Object.entries(rows)) {
      it(`${name}: succeeds, and refuses bad input naming the field`, async () => {
        const out = await call(client, name, await row.ok(fixture));
        expect(out.isError, out.text).toBe(false);
        expect(out.text.length).toBeGreaterThan(0);
        row.check?.(out);
        if (row.bad !== undefined) {
          const bad = await call(client, name, row.bad.args);
          expect(bad.isError).toBe(true);
          expect(bad.code).toMatch(name === 'upload_file' ? /^UPLOAD_/ : /^TOOLS_INVALID_INPUT$/);
          expect(bad.text).toContain(row.bad.field);
        }
      });
      if (row.denied !== undefined) {
        const denied = row.denied;
        it(`${name}: refuses a scope the access policy keeps closed`, async () => {
          const out = await call(client, name, denied);
          expect(out.isError, out.text).toBe(row.deniedInResult !== true);
          expect(out.text).toMatch(/not allowed|may not read|ZULIP_PRIVATE_STREAMS|ZULIP_WRITE_STREAMS/);
        });
      }
    }
  });
}

describe('DM reads', () => {
  it('need ZULIP_PRIVATE_STREAMS=__ALL__', async () => {
    const ann = sim.realm.user('ann@zulip.example');
    if (ann === undefined) throw new Error('the demo realm has no Ann');
    sim.realm.sendMessage({
      senderId: ann.userId,
      type: 'direct',
      to: [demo.botId],
      content: 'Are you there?',
    });
    const closed = await connect('in-memory');
    const denied = await call(closed, 'fetch_history', { dm: ['Ann Lee'] });
    expect(denied.isError).toBe(true);
    expect(denied.text).toContain('ZULIP_PRIVATE_STREAMS');
    const open = await connect('in-memory', { ZULIP_PRIVATE_STREAMS: '__ALL__' });
    const allowed = await call(open, 'fetch_history', { dm: ['Ann Lee'] });
    expect(allowed.isError, allowed.text).toBe(false);
    expect(allowed.text).toContain('[DM] Ann Lee: Are you there?');
  });
});

const WRITE_TOOLS = [
  'remind_me',
  'cancel_reminder',
  'reply',
  'listen',
  'send_message',
  'send_dm',
  'upload_file',
  'edit_message',
  'delete_message',
  'add_reaction',
  'remove_reaction',
  'resolve_topic',
  'mark_read',
  'subscribe',
  'unsubscribe',
];

describe('toolsets', () => {
  it('serve read, write and session by default, and everything with all', async () => {
    const lean = await connect('in-memory', { ZULIP_TOOLSETS: '' });
    const names = (await lean.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(
      [
        'fetch_history',
        'fetch_around',
        'search_messages',
        'get_message',
        'list_streams',
        'get_stream_topics',
        'find_user',
        'fetch_attachment',
        'send_message',
        'send_dm',
        'edit_message',
        'add_reaction',
        'set_context',
        'reply',
        'listen',
        'end_session',
      ].sort(),
    );
    await expect(lean.callTool({ name: 'list_users', arguments: {} })).rejects.toMatchObject({
      code: -32602,
    });
    const all = await connect('in-memory', { ZULIP_TOOLSETS: 'all' });
    expect((await all.listTools()).tools.map((t) => t.name).sort()).toEqual(Object.keys(rows).sort());
  });
});

describe('read-only mode', () => {
  it('hides every write tool, refuses a call to one, and leaves the realm unchanged', async () => {
    const client = await connect('in-memory', { ZULIP_READ_ONLY: 'true' });
    const { tools } = await client.listTools();
    const expected = Object.keys(rows).filter((name) => !WRITE_TOOLS.includes(name));
    expect(tools.map((t) => t.name).sort()).toEqual(expected.sort());
    const before = sim.realm.messageCount();
    await expect(
      client.callTool({ name: 'send_message', arguments: { stream: 'general', topic: 't', content: 'x' } }),
    ).rejects.toMatchObject({ code: -32602 });
    expect(sim.realm.messageCount()).toBe(before);
  });
});
