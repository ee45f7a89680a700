// One hosted process fronting two Zulip organizations (ZMCP_REALMS_FILE): each realm has its own
// bot, policy and state; a token is issued on one realm and serves only that realm's person; writes
// land on that realm as its bot; tokens are listed with their realm and revoked wherever they are.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/index.js';
import { barrier } from './fake-tools.js';

interface Org {
  sim: ZulipSim;
  personId: number;
  botId: number;
}

async function org(name: string, person: string, stream: string): Promise<Org> {
  let personId = 0;
  let botId = 0;
  const sim = await startZulipSim({
    rateLimit: false,
    realmName: name,
    seed(realm) {
      personId = realm.addUser({
        fullName: person,
        email: `${person.split(' ')[0]?.toLowerCase()}@${name}.test`,
      }).userId;
      botId = realm.addUser({ fullName: `${name} bot`, email: `bot@${name}.test`, isBot: true }).userId;
      realm.addStream({ name: stream, inviteOnly: true, subscribers: [personId, botId] });
    },
  });
  sim.realm.sendMessage({
    senderId: personId,
    type: 'stream',
    stream,
    topic: 'hello',
    content: `news of ${name}`,
  });
  return { sim, personId, botId };
}

let acme: Org;
let globex: Org;
let dir = '';
let env: Record<string, string> = {};
let url = '';
let stop: () => Promise<number>;
const tokens = { ann: '', gus: '' };

async function zulipMcp(
  args: string[],
  stdin = '',
): Promise<{ code: number; stdout: string; stderr: string }> {
  const input = new PassThrough();
  input.end(stdin);
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  err.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const code = await main(args, env, { stdin: input, stdout: out, stderr: err });
  return { code, stdout, stderr };
}

beforeAll(async () => {
  acme = await org('acme', 'Ann Lee', 'acme-private');
  globex = await org('globex', 'Gus Hale', 'globex-private');
  dir = await mkdtemp(join(tmpdir(), 'zmcp-realms-'));
  const second = globex.sim.credentials(globex.botId);
  await writeFile(
    join(dir, 'globex.zuliprc'),
    `[api]\nemail=${second.email}\nkey=${second.apiKey}\nsite=${second.site}\n`,
    {
      mode: 0o600,
    },
  );
  await writeFile(
    join(dir, 'realms.json'),
    JSON.stringify([{ zuliprc: 'globex.zuliprc', privateStreams: '__ALL__', writeDms: false }]),
  );
  const first = acme.sim.credentials(acme.botId);
  env = {
    HOME: dir,
    ZULIP_STATE_DIR: join(dir, 'state'),
    ZULIP_REALM: first.site,
    ZULIP_EMAIL: first.email,
    ZULIP_API_KEY: first.apiKey,
    ZULIP_TOOLSETS: 'all',
    ZMCP_LOG_LEVEL: 'warn',
    ZMCP_HTTP_AUTH: 'people',
    ZULIP_SECRET_KEY: Buffer.alloc(32, 5).toString('base64'),
    ZMCP_REALMS_FILE: join(dir, 'realms.json'),
  };
  const ann = acme.sim.credentials(acme.personId);
  const gus = globex.sim.credentials(globex.personId);
  const issued = await zulipMcp(
    ['tokens', 'create', '--label', 'ann', '--email', ann.email, '--api-key-stdin'],
    ann.apiKey,
  );
  expect(issued.code).toBe(0);
  tokens.ann = issued.stdout.trim();
  const wrongRealm = await zulipMcp(
    ['tokens', 'create', '--label', 'gus', '--email', gus.email, '--api-key-stdin'],
    gus.apiKey,
  );
  // Gus is not a person of the primary realm: his key is refused there.
  expect(wrongRealm.code).toBe(2);
  const onGlobex = await zulipMcp(
    [
      'tokens',
      'create',
      '--label',
      'gus',
      '--email',
      gus.email,
      '--api-key-stdin',
      '--realm',
      `${gus.site}/`,
    ],
    gus.apiKey,
  );
  expect(onGlobex.code).toBe(0);
  tokens.gus = onGlobex.stdout.trim();
  const shutdown = new AbortController();
  const ready = barrier<string>();
  const run = main(['--http', '--port', '0'], env, {
    stdout: new PassThrough(),
    stderr: new PassThrough(),
    shutdown: shutdown.signal,
    onReady: (info) => ready.resolve(info.transport === 'http' ? info.url : ''),
  });
  url = await ready.promise;
  stop = () => {
    shutdown.abort();
    return run;
  };
});

afterAll(async () => {
  expect(await stop()).toBe(0);
  await acme.sim.close();
  await globex.sim.close();
  await rm(dir, { recursive: true, force: true });
});

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: 'realms', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  return (result.content as { text: string }[]).map((c) => c.text).join('\n');
}

describe('one process fronting two realms', () => {
  it('serves each token its own realm only', async () => {
    const ann = await connect(tokens.ann);
    const gus = await connect(tokens.gus);
    expect(
      textOf(await ann.callTool({ name: 'fetch_history', arguments: { stream: 'acme-private' } })),
    ).toContain('news of acme');
    expect(
      textOf(await gus.callTool({ name: 'fetch_history', arguments: { stream: 'globex-private' } })),
    ).toContain('news of globex');
    const across = await gus.callTool({ name: 'fetch_history', arguments: { stream: 'acme-private' } });
    expect(across.isError).toBe(true);
    expect(textOf(across)).not.toContain('news of acme');
    await Promise.all([ann.close(), gus.close()]);
  });

  it('writes on the token’s realm as that realm’s bot, under that realm’s policy', async () => {
    const gus = await connect(tokens.gus);
    const sent = await gus.callTool({
      name: 'send_message',
      arguments: { stream: 'globex-private', topic: 'status', content: 'from Gus’s agent' },
    });
    expect(sent.isError).toBeFalsy();
    const id = (sent.structuredContent as { message_id: number }).message_id;
    expect(globex.sim.realm.message(id)?.senderId).toBe(globex.botId);
    expect(textOf(sent)).toContain(`Done as globex bot (user ${globex.botId}), the organization’s bot.`);
    // The realms file says no DMs on globex; the primary realm's settings say nothing of it.
    const dm = await gus.callTool({ name: 'send_dm', arguments: { to: [globex.personId], content: 'x' } });
    expect(dm.isError).toBe(true);
    await gus.close();
    const audit = (await readFile(join(dir, 'state', 'audit.log'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(audit).toContainEqual(
      expect.objectContaining({ action: 'send_message', realm: globex.sim.credentials(globex.botId).site }),
    );
  });

  it('keeps each realm’s state apart, lists tokens with their realm and revokes across realms', async () => {
    const accounts = (await readdir(join(dir, 'state'), { withFileTypes: true })).filter((e) =>
      e.isDirectory(),
    );
    const names = accounts.map((a) => a.name);
    expect(names).toHaveLength(2);
    expect(names).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`@${acme.botId}$`)),
        expect.stringMatching(new RegExp(`@${globex.botId}$`)),
      ]),
    );
    expect(new Set(names.map((n) => n.split('@')[0])).size).toBe(2);
    const listed = await zulipMcp(['tokens', 'list']);
    expect(listed.stdout).toContain(`realm=${globex.sim.credentials(globex.botId).site}`);
    expect((await zulipMcp(['tokens', 'revoke', 'gus'])).code).toBe(0);
    const refused = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.gus}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('the token was revoked');
  });
});

describe('the realms file', () => {
  it('resolves each zuliprc against the file and overlays the realm’s policy', async () => {
    const file = join(dir, 'more-realms.json');
    await writeFile(file, JSON.stringify([{ zuliprc: 'x/bot.zuliprc', writeStreams: 'ops,42' }]));
    const { parseConfig } = await import('../src/index.js');
    const { loadRealmConfigs } = await import('../src/realms.js');
    const config = parseConfig(env, ['--http']);
    const [realm] = await loadRealmConfigs(file, config);
    expect(realm?.zulip).toMatchObject({
      rcPath: join(dir, 'x', 'bot.zuliprc'),
      site: undefined,
      apiKey: undefined,
    });
    expect(realm?.writeStreams).toEqual(['ops', 42]);
    expect(realm?.privateStreams).toBeUndefined();
    expect(realm?.toolsets).toEqual(config.toolsets);
  });

  it('refuses a file that is missing, not JSON, or of the wrong shape, naming it', async () => {
    const { loadRealmConfigs } = await import('../src/realms.js');
    const { parseConfig } = await import('../src/index.js');
    const config = parseConfig(env, ['--http']);
    const bad = join(dir, 'bad.json');
    await expect(loadRealmConfigs(join(dir, 'absent.json'), config)).rejects.toMatchObject({
      code: 'MCP_CONFIG_INVALID',
      message: expect.stringContaining('absent.json: cannot be read'),
    });
    await writeFile(bad, '{not json');
    await expect(loadRealmConfigs(bad, config)).rejects.toMatchObject({
      message: expect.stringContaining('is not JSON'),
    });
    await writeFile(bad, JSON.stringify([{ zuliprc: 'a', apiKey: 'nope' }]));
    await expect(loadRealmConfigs(bad, config)).rejects.toMatchObject({
      message: expect.stringContaining('expected a list of'),
    });
    // The server refuses to start on it, as on a bad variable (exit 2).
    const saved = env.ZMCP_REALMS_FILE as string;
    env.ZMCP_REALMS_FILE = bad;
    try {
      const run = await zulipMcp(['--http', '--port', '0']);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`ZMCP_REALMS_FILE: ${bad}: expected a list of`);
    } finally {
      env.ZMCP_REALMS_FILE = saved;
    }
  });
});
