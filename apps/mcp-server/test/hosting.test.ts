// zulip-mcp hosted for an organization (ZMCP_HTTP_AUTH=people), the whole server in-process over
// HTTP against a simulated realm with several people: each token reads as its person (a private
// stream one person is in and another is not; DMs), writes land as the identity the operator chose
// and say so, a session or handle minted for one token is refused for another, unauthenticated
// clients get the MCP authorization challenge, and the admin API issues and revokes tokens.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/index.js';
import { tokensMain } from '../src/tokens-command.js';
import { barrier } from './fake-tools.js';

const secretKey = Buffer.alloc(32, 3).toString('base64');
const adminToken = 'admin-token-0123456789abcdef';
let sim: ZulipSim;
const ids = { ann: 0, bo: 0, bot: 0 };
let stateDir = '';
let url = '';
let stop: () => Promise<number>;
const logs: Buffer[] = [];
const tokens = { ann: '', bo: '' };
/** Every non-GET request the realm answered, by user id: who wrote with which key. */
const writesBy = new Map<number, string[]>();
let env: Record<string, string> = {};
/** The server's clock for idle per-person services (ZMCP_TOKEN_IDLE_MS): advanced by hand. */
let clock = Date.now();
/** Every request the realm answered with each person's key, by user id. */
const requestsBy = new Map<number, string[]>();

async function issue(
  who: 'ann' | 'bo',
  writeAs: 'bot' | 'person' | 'none',
  extra: string[] = [],
): Promise<string> {
  const { email, apiKey } = sim.credentials(ids[who]);
  const stdin = new PassThrough();
  stdin.end(apiKey);
  const stdout = new PassThrough();
  let out = '';
  stdout.on('data', (c: Buffer) => {
    out += c.toString();
  });
  const code = await tokensMain(
    [
      'create',
      '--label',
      `${who}-${writeAs}`,
      '--email',
      email,
      '--api-key-stdin',
      '--write-as',
      writeAs,
      '--toolsets',
      'all',
      ...extra,
    ],
    env,
    { stdin, stdout, stderr: new PassThrough() },
  );
  expect(code).toBe(0);
  return out.trim();
}

beforeAll(async () => {
  sim = await startZulipSim({
    rateLimit: false,
    realmName: 'hosted',
    seed(realm) {
      ids.ann = realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' }).userId;
      ids.bo = realm.addUser({ fullName: 'Bo Chen', email: 'bo@example.test' }).userId;
      ids.bot = realm.addUser({ fullName: 'Helper Bot', email: 'helper@example.test', isBot: true }).userId;
      realm.addStream({ name: 'general', subscribers: [ids.ann, ids.bo, ids.bot] });
      realm.addStream({ name: 'ann-only', inviteOnly: true, subscribers: [ids.ann] });
    },
  });
  sim.realm.sendMessage({
    senderId: ids.ann,
    type: 'stream',
    stream: 'ann-only',
    topic: 'notes',
    content: 'plans only Ann sees',
  });
  sim.realm.sendMessage({ senderId: ids.bo, type: 'direct', to: [ids.ann], content: 'a DM from Bo to Ann' });
  sim.onRequest((r) => {
    if (r.userId !== null)
      requestsBy.set(r.userId, [...(requestsBy.get(r.userId) ?? []), `${r.method} ${r.path}`]);
    if (r.method === 'GET' || r.userId === null) return;
    writesBy.set(r.userId, [...(writesBy.get(r.userId) ?? []), `${r.method} ${r.path}`]);
  });
  stateDir = await mkdtemp(join(tmpdir(), 'zmcp-hosting-'));
  const bot = sim.credentials(ids.bot);
  env = {
    HOME: stateDir,
    ZULIP_STATE_DIR: stateDir,
    ZULIP_REALM: bot.site,
    ZULIP_EMAIL: bot.email,
    ZULIP_API_KEY: bot.apiKey,
    ZULIP_TOOLSETS: 'all',
    ZMCP_LOG_LEVEL: 'debug',
    ZMCP_HTTP_AUTH: 'people',
    ZULIP_SECRET_KEY: secretKey,
    ZMCP_ADMIN_TOKEN: adminToken,
    ZMCP_TOKEN_HELP: 'https://intranet.example.test/zulip-mcp',
    ZMCP_TOKEN_MAX_WAITS: '1',
    ZMCP_STATUS_PORT: '0',
  };
  tokens.ann = await issue('ann', 'bot');
  tokens.bo = await issue('bo', 'person');
  const shutdown = new AbortController();
  const ready = barrier<string>();
  const stderr = new PassThrough();
  stderr.on('data', (c: Buffer) => logs.push(c));
  const run = main(['--http', '--port', '0'], env, {
    stdout: new PassThrough(),
    stderr,
    shutdown: shutdown.signal,
    onReady: (info) => ready.resolve(info.transport === 'http' ? info.url : ''),
    now: () => clock,
  });
  url = await ready.promise;
  stop = () => {
    shutdown.abort();
    return run;
  };
});

afterAll(async () => {
  expect(await stop()).toBe(0);
  // Nothing secret in the server's whole log or the audit log.
  const log = Buffer.concat(logs).toString('utf8');
  const audit = await readFile(join(stateDir, 'audit.log'), 'utf8');
  for (const secret of [
    tokens.ann,
    tokens.bo,
    secretKey,
    adminToken,
    ...Object.values(ids).map((id) => sim.credentials(id).apiKey),
  ]) {
    expect(log).not.toContain(secret);
    expect(audit).not.toContain(secret);
  }
  await sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

async function connect(token: string, mode: 'legacy' | { pin: '2026-07-28' } = 'legacy') {
  const client = new Client({ name: 'hosting', version: '1' }, { versionNegotiation: { mode } });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return { client, transport };
}

function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  return (result.content as { type: string; text: string }[]).map((c) => c.text).join('\n');
}

describe('each token reads as its person', () => {
  it('shows a private stream to the person in it and not to another', async () => {
    const ann = await connect(tokens.ann);
    const bo = await connect(tokens.bo);
    const seen = await ann.client.callTool({ name: 'fetch_history', arguments: { stream: 'ann-only' } });
    expect(seen.isError).toBeFalsy();
    expect(textOf(seen)).toContain('plans only Ann sees');
    const refused = await bo.client.callTool({ name: 'fetch_history', arguments: { stream: 'ann-only' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).not.toContain('plans only Ann sees');
    await ann.client.close();
    await bo.client.close();
  });

  it('reads the person’s own DMs', async () => {
    const ann = await connect(tokens.ann, { pin: '2026-07-28' });
    const dms = await ann.client.callTool({ name: 'fetch_history', arguments: { dm: [ids.bo] } });
    expect(dms.isError).toBeFalsy();
    expect(textOf(dms)).toContain('a DM from Bo to Ann');
    await ann.client.close();
  });
});

describe('writes land as the chosen identity', () => {
  it('posts as the bot for a token that writes as the bot, and says so', async () => {
    const ann = await connect(tokens.ann);
    const instructions = ann.client.getInstructions() ?? '';
    expect(instructions).toContain(
      `You read as Ann Lee (user ${ids.ann}); everything you post, react or edit is done as Helper Bot (user ${ids.bot}), the organization’s bot.`,
    );
    expect(instructions).not.toContain('read-only');
    const sent = await ann.client.callTool({
      name: 'send_message',
      arguments: { stream: 'general', topic: 'hosting', content: 'from Ann’s agent' },
    });
    expect(sent.isError).toBeFalsy();
    const id = (sent.structuredContent as { message_id: number }).message_id;
    expect(sim.realm.message(id)?.senderId).toBe(ids.bot);
    expect(textOf(sent)).toContain(`Done as Helper Bot (user ${ids.bot}), the organization’s bot.`);
    expect(JSON.stringify(sent.structuredContent)).toContain('the organization’s bot');
    await ann.client.close();
  });

  it('posts as the person for a token that writes as the person, and says so', async () => {
    const bo = await connect(tokens.bo, { pin: '2026-07-28' });
    const sent = await bo.client.callTool({
      name: 'send_dm',
      arguments: { to: [ids.ann], content: 'from Bo’s agent' },
    });
    expect(sent.isError).toBeFalsy();
    const id = (sent.structuredContent as { message_id: number }).message_id;
    expect(sim.realm.message(id)?.senderId).toBe(ids.bo);
    expect(textOf(sent)).toContain(`Done as Bo Chen (user ${ids.bo}), yourself.`);
    await bo.client.close();
  });

  it('never sends anything but GET with the key of a person whose token writes as the bot', () => {
    expect(writesBy.get(ids.ann)).toBeUndefined();
    expect(writesBy.get(ids.bot)).toEqual(expect.arrayContaining(['POST /api/v1/messages']));
    expect(writesBy.get(ids.bo)).toEqual(expect.arrayContaining(['POST /api/v1/messages']));
  });

  it('serves no write to a token that writes as the person on a read-only server, nor a toolset the server does not serve', async () => {
    const shutdown = new AbortController();
    const ready = barrier<string>();
    const run = main(
      ['--http', '--port', '0'],
      { ...env, ZULIP_READ_ONLY: 'true', ZULIP_TOOLSETS: 'read,browse' },
      {
        stdout: new PassThrough(),
        stderr: new PassThrough(),
        shutdown: shutdown.signal,
        onReady: (info) => ready.resolve(info.transport === 'http' ? info.url : ''),
      },
    );
    const readOnlyUrl = await ready.promise;
    const before = writesBy.get(ids.bo)?.length ?? 0;
    const client = new Client({ name: 'ro', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(readOnlyUrl), {
        requestInit: { headers: { authorization: `Bearer ${tokens.bo}` } },
      }),
    );
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('fetch_history');
    expect(names.filter((n) => ['send_message', 'send_dm', 'add_reaction', 'reply'].includes(n))).toEqual([]);
    // Bo's token names every toolset; the server serves read and browse only.
    expect(names).toContain('list_users');
    expect(names.filter((n) => ['set_context', 'listen', 'start_monitoring'].includes(n))).toEqual([]);
    await expect(
      client.callTool({ name: 'send_dm', arguments: { to: [ids.ann], content: 'no' } }),
    ).rejects.toMatchObject({ code: -32602 });
    await client.close();
    shutdown.abort();
    expect(await run).toBe(0);
    expect(writesBy.get(ids.bo)?.length ?? 0).toBe(before);
  });

  it('audits each write with the token, the person and the target, never the content', async () => {
    const audit = (await readFile(join(stateDir, 'audit.log'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(audit).toContainEqual(
      expect.objectContaining({
        kind: 'tool',
        action: 'send_message',
        outcome: 'ok',
        token: expect.objectContaining({ label: 'ann-bot' }),
        userId: ids.ann,
        postedAs: { identity: 'bot', userId: ids.bot },
        target: { stream: 'general', topic: 'hosting' },
      }),
    );
    expect(audit).toContainEqual(
      expect.objectContaining({
        action: 'send_dm',
        postedAs: { identity: 'person', userId: ids.bo },
        target: { to: [ids.ann] },
      }),
    );
    expect(JSON.stringify(audit)).not.toContain('agent');
  });
});

describe('what one token opens is refused to another', () => {
  it('a 2025-era session id minted for one token is not found for another', async () => {
    const ann = await connect(tokens.ann);
    const sessionId = ann.transport.sessionId as string;
    expect(sessionId).toBeTruthy();
    const request = (token: string) =>
      fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': sessionId,
          'mcp-protocol-version': '2025-11-25',
          authorization: `Bearer ${token}`,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }),
      });
    const theirs = await request(tokens.bo);
    expect(theirs.status).toBe(404);
    await theirs.body?.cancel();
    const own = await request(tokens.ann);
    expect(own.status).toBe(200);
    await own.body?.cancel();
    await ann.client.close();
  });

  it('a 2026-era handle minted for one token is refused for another', async () => {
    const ann = await connect(tokens.ann, { pin: '2026-07-28' });
    const trigger = sim.realm.sendMessage({
      senderId: ids.ann,
      type: 'stream',
      stream: 'general',
      topic: 'handles',
      content: '@**Helper Bot** hi',
    });
    const bound = await ann.client.callTool({
      name: 'set_context',
      arguments: { stream: 'general', topic: 'handles', trigger_message_id: trigger },
    });
    expect(bound.isError).toBeFalsy();
    const session = (bound.structuredContent as { session: string }).session;
    const bo = await connect(tokens.bo, { pin: '2026-07-28' });
    const stolen = await bo.client.callTool({ name: 'reply', arguments: { content: 'hijack', session } });
    expect(stolen).toMatchObject({ isError: true, _meta: { 'zmcp/error': { code: 'TOOLS_NO_SESSION' } } });
    const own = await ann.client.callTool({ name: 'reply', arguments: { content: 'on it', session } });
    expect(own.isError).toBeFalsy();
    await ann.client.close();
    await bo.client.close();
  });
});

describe('per-token limits', () => {
  it('caps the long waits one token holds, however listen is called; another token has its own', async () => {
    const first = await connect(tokens.ann);
    const second = await connect(tokens.ann, { pin: '2026-07-28' });
    const bo = await connect(tokens.bo);
    const bind = async (client: Client, who: number, topic: string) => {
      const trigger = sim.realm.sendMessage({
        senderId: who,
        type: 'stream',
        stream: 'general',
        topic,
        content: '@**Helper Bot** wait',
      });
      const bound = await client.callTool({
        name: 'set_context',
        arguments: { stream: 'general', topic, trigger_message_id: trigger },
      });
      expect(bound.isError).toBeFalsy();
      return (bound.structuredContent as { session?: string }).session;
    };
    await bind(first.client, ids.ann, 'wait one');
    const handle = await bind(second.client, ids.ann, 'wait two');
    await bind(bo.client, ids.bo, 'wait bo');
    const waiting = first.client.callTool({ name: 'listen', arguments: { timeout_seconds: 60 } });
    // The first listen holds the slot once its wait has begun (the listening reaction is shown).
    await new Promise<void>((resolve) => {
      const off = sim.onRequest((r) => {
        if (r.method === 'POST' && r.path.endsWith('/reactions')) {
          off();
          resolve();
        }
      });
    });
    const refused = await second.client.callTool({
      name: 'listen',
      arguments: { timeout_seconds: 60, session: handle },
    });
    expect(refused).toMatchObject({ isError: true, _meta: { 'zmcp/error': { code: 'MCP_TOO_MANY_WAITS' } } });
    expect(textOf(refused)).toContain('already holds 1 long waits');
    // Bo's token is not held back by Ann's wait. (Bo's agent acts as Bo: Ann's message wakes it.)
    const boWaits = bo.client.callTool({ name: 'listen', arguments: { timeout_seconds: 60 } });
    for (const topic of ['wait one', 'wait bo']) {
      sim.realm.sendMessage({ senderId: ids.ann, type: 'stream', stream: 'general', topic, content: 'done' });
    }
    expect((await waiting).structuredContent).toMatchObject({ status: 'messages' });
    expect((await boWaits).structuredContent).toMatchObject({ status: 'messages' });
    // The slot is free again once the wait returned (something is waiting for it: it answers at once).
    sim.realm.sendMessage({
      senderId: ids.bo,
      type: 'stream',
      stream: 'general',
      topic: 'wait two',
      content: 'go',
    });
    const again = await second.client.callTool({
      name: 'listen',
      arguments: { timeout_seconds: 60, session: handle },
    });
    expect(again.structuredContent).toMatchObject({ status: 'messages' });
    for (const c of [first, second, bo]) await c.client.close();
  });
});

describe('MCP authorization', () => {
  it('answers 401 with a challenge naming the protected-resource metadata, which says where to get a token', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(res.status).toBe(401);
    const origin = new URL(url).origin;
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer realm="zulip-mcp", resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`,
    );
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
      'https://intranet.example.test/zulip-mcp',
    );
    const metadata = await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`);
    expect(await metadata.json()).toEqual({
      resource: url,
      resource_name: 'zulip-mcp',
      bearer_methods_supported: ['header'],
      resource_documentation: 'https://intranet.example.test/zulip-mcp',
      token_help: 'https://intranet.example.test/zulip-mcp',
    });
  });

  it('says invalid_token for a bad token', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer zmcp_0000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      },
      body: '{}',
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain(
      'error="invalid_token", error_description="the token is not valid"',
    );
  });
});

describe('the admin API', () => {
  const admin = (path: string, init: RequestInit = {}, token = adminToken) =>
    fetch(new URL(`/admin/${path}`, url), {
      ...init,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    });

  it('issues, lists and revokes tokens behind its own token; a revoked token is refused at once', async () => {
    expect((await admin('tokens', {}, tokens.ann)).status).toBe(401);
    const ann = sim.credentials(ids.ann);
    const created = await admin('tokens', {
      method: 'POST',
      body: JSON.stringify({
        label: 'ann-admin',
        email: ann.email,
        apiKey: ann.apiKey,
        writeAs: 'none',
        expires: '1d',
      }),
    });
    expect(created.status).toBe(201);
    const { token, info } = (await created.json()) as {
      token: string;
      info: { id: string; writeAs: string };
    };
    expect(info.writeAs).toBe('none');
    const listed = (await (await admin('tokens')).json()) as { tokens: { label: string }[] };
    expect(listed.tokens.map((t) => t.label)).toEqual(['ann-bot', 'bo-person', 'ann-admin']);
    expect(JSON.stringify(listed)).not.toContain(ann.apiKey);

    const reader = await connect(token);
    const names = (await reader.client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('fetch_history');
    expect(names).not.toContain('send_message');
    expect((await admin(`tokens/${info.id}`, { method: 'DELETE' })).status).toBe(200);
    await expect(reader.client.listTools()).rejects.toThrow();
    const after = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: '{}',
    });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toContain('the token was revoked');
    await reader.client.close().catch(() => undefined);
    const audit = await readFile(join(stateDir, 'audit.log'), 'utf8');
    expect(audit).toContain('"action":"token.revoke","outcome":"ok","via":"http"');
  });
});

describe('a person’s key and token, learnt at runtime', () => {
  it('are redacted in a log line, an error, the status page and the metrics', async () => {
    const ann = sim.credentials(ids.ann);
    // A client whose name carries the token and the key (the page and a metric label show client names).
    const client = new Client(
      { name: `agent ${tokens.ann} ${ann.apiKey}`, version: '1' },
      { versionNegotiation: { mode: 'legacy' } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: `Bearer ${tokens.ann}` } },
      }),
    );
    const before = Buffer.concat(logs).length;
    // Tool arguments are logged at debug: the key and token in a message body.
    const sent = await client.callTool({
      name: 'send_message',
      arguments: { stream: 'general', topic: 'keys', content: `my key ${ann.apiKey} token ${tokens.ann}` },
    });
    expect(sent.isError).toBeFalsy();
    // An error: a tool named after the key (an unknown tool, reported and counted by its name).
    await client.callTool({ name: `tool_${ann.apiKey}`, arguments: {} }).catch(() => undefined);
    await client.close();
    const log = Buffer.concat(logs).subarray(before).toString('utf8');
    expect(log).toMatch(/tool call started .*my key \[REDACTED\] token \[REDACTED\]/);
    expect(log).not.toContain(ann.apiKey);
    expect(log).not.toContain(tokens.ann);

    const statusUrl = /status page url=(\S+)/.exec(Buffer.concat(logs).toString('utf8'))?.[1] as string;
    const page = await (await fetch(statusUrl)).text();
    const panels = await (await fetch(new URL('/panels', statusUrl))).text();
    const metrics = await (await fetch(new URL('/metrics', statusUrl))).text();
    for (const text of [page, panels, metrics]) {
      expect(text).not.toContain(ann.apiKey);
      expect(text).not.toContain(tokens.ann);
    }
    expect(page).toContain('agent [REDACTED]');
    expect(metrics).toMatch(/client="agent \[REDACTED\]/);
  });
});

describe('idle per-person services (ZMCP_TOKEN_IDLE_MS)', () => {
  const closedLine = 'closed a token’s idle services token=ann-none';
  const log = () => Buffer.concat(logs).toString('utf8');
  /** One whole request by Bo (a session opened, used and ended): every request sweeps idle services. */
  const byBo = async () => {
    const bo = await connect(tokens.bo);
    await bo.client.listTools();
    await bo.transport.terminateSession();
    await bo.client.close();
  };

  it('are kept while a session holds them, closed once idle, and opened again on the next request', async () => {
    const annRequests = () => requestsBy.get(ids.ann)?.length ?? 0;
    // A token of its own, which no other test holds a session of.
    const token = await issue('ann', 'none');
    const ann = await connect(token);
    await ann.client.listTools();
    // Long past the idle time, but Ann's session is open: her services stay.
    clock += 31 * 60_000;
    await byBo();
    expect(log()).not.toContain(closedLine);
    await ann.transport.terminateSession();
    await ann.client.close();
    // Idle now: the next request by anyone closes them (the session's release lands within a request or two).
    clock += 31 * 60_000;
    for (let i = 0; i < 10 && !log().includes(closedLine); i++) await byBo();
    expect(log()).toContain(closedLine);
    // Ann's next request opens her services again, with her key.
    const before = annRequests();
    const again = await connect(token);
    const listed = await again.client.callTool({ name: 'list_streams', arguments: {} });
    expect(listed.isError).toBeFalsy();
    expect(annRequests()).toBeGreaterThan(before);
    await again.transport.terminateSession();
    await again.client.close();
  });
});
