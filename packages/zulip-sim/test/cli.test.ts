// The zulip-sim bin as a product: a realm from a seed file, zuliprc files for every account, the
// knobs, fault injection, and a recording replayed against a fresh realm.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseSeed, readSeed, SimError } from '../src/index.js';
import { Client } from './helpers.js';

const pkg = join(import.meta.dirname, '..');

const SEED_YAML = `# a small team
realm: { name: Acme, subdomain: acme }
server:
  zulipFeatureLevel: 512
users:
  - { name: Ann Lee, email: ann@acme.example, role: owner }
  - { name: Bo Chen, email: bo@acme.example }
bots:
  - { name: Helper, email: helper-bot@acme.example, owner: ann@acme.example }
folders:
  - { name: Teams }
channels:
  - { name: general, subscribers: everyone, folder: Teams }
  - { name: secret, private: true, subscribers: [ann@acme.example] }
  - { name: support, subscribers: everyone, canCreateTopic: role:administrators }
messages:
  - { from: ann@acme.example, channel: general, topic: hello, content: "hi @**Helper**", at: "2026-03-01T10:00:00Z" }
  - { from: bo@acme.example, to: [helper-bot@acme.example], content: ping, reactions: [{ by: helper-bot@acme.example, emoji: tada }] }
  - { from: ann@acme.example, channel: support, topic: faq, content: read me }
`;

let dir: string;
let children: ChildProcessWithoutNullStreams[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'zulip-sim-cli-'));
});
afterEach(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  children = [];
  await rm(dir, { recursive: true, force: true });
});

interface Running {
  child: ChildProcessWithoutNullStreams;
  stdout: string;
  stderr: () => string;
  url: string;
  exit: Promise<number | null>;
}

/** Starts the CLI from source and resolves once it says it is listening. */
async function start(args: string[]): Promise<Running> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions', '@zmcp/source', 'src/cli.ts', ...args],
    {
      cwd: pkg,
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      if (stderr.includes('Ctrl-C to stop')) resolve();
    });
    exit.then((code) => reject(new Error(`zulip-sim exited ${code}: ${stderr}`)));
  });
  const url = /at (http:\/\/[^ ]+) \(API/.exec(stderr)?.[1] as string;
  return { child, stdout, stderr: () => stderr, url, exit };
}

/** Runs the CLI to completion. */
async function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions', '@zmcp/source', 'src/cli.ts', ...args],
    {
      cwd: pkg,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  return { code, stdout, stderr };
}

function rc(text: string): { email: string; key: string; site: string } {
  const get = (k: string) => new RegExp(`^${k}=(.*)$`, 'm').exec(text)?.[1] as string;
  return { email: get('email'), key: get('key'), site: get('site') };
}

function client(url: string, account: { email: string; key: string }): Client {
  const c = new Client({ url } as never, account.email, account.key);
  c.userAgent = 'cli-test';
  return c;
}

describe('zulip-sim --seed', () => {
  it('starts the seeded realm and prints a zuliprc for every account, or writes them to a folder', async () => {
    const seedFile = join(dir, 'team.yaml');
    await writeFile(seedFile, SEED_YAML);
    const rcDir = join(dir, 'rc');
    const one = join(dir, 'bo.zuliprc');
    const sim = await start([
      '--seed',
      seedFile,
      '--zuliprc-dir',
      rcDir,
      '--zuliprc',
      one,
      '--account',
      'bo@acme.example',
    ]);
    const blocks = sim.stdout.split(/\n(?=# )/);
    expect(blocks.map((b) => b.split('\n')[0])).toEqual([
      '# Ann Lee <ann@acme.example> (human)',
      '# Bo Chen <bo@acme.example> (human)',
      '# Helper <helper-bot@acme.example> (bot)',
    ]);
    expect((await readdir(rcDir)).sort()).toEqual([
      'ann@acme.example.zuliprc',
      'bo@acme.example.zuliprc',
      'helper-bot@acme.example.zuliprc',
    ]);
    expect(await readFile(one, 'utf8')).toBe((blocks[1] as string).replace(/^# .*\n/, ''));
    const bot = rc(await readFile(join(rcDir, 'helper-bot@acme.example.zuliprc'), 'utf8'));
    expect(bot.site).toBe(sim.url);
    const helper = client(sim.url, bot);
    const me = await helper.get('/users/me');
    expect([me.body.full_name, me.body.is_bot, me.body.bot_owner_id]).toEqual(['Helper', true, 8]);
    const settings = (await (await fetch(`${sim.url}/api/v1/server_settings`)).json()) as Record<
      string,
      unknown
    >;
    expect([settings.zulip_feature_level, settings.realm_name]).toEqual([512, 'Acme']);
    const { body } = await helper.register({ fetch_event_types: ['subscription', 'channel_folders'] });
    expect(body.subscriptions.map((s: { name: string }) => s.name)).toEqual(['general', 'support']);
    expect(body.channel_folders.map((f: { name: string }) => f.name)).toEqual(['Teams']);
    const mentioned = await helper.get('/messages', {
      anchor: 'date',
      anchor_date: '2026-03-01',
      num_after: 5,
    });
    expect(mentioned.body.messages[0].flags).toContain('mentioned');
    const bo = client(sim.url, rc(blocks[1] as string));
    const refused = await bo.post('/messages', { type: 'stream', to: 'support', topic: 'new', content: 'x' });
    expect(refused.body.msg).toBe('You do not have permission to create new topics in this channel.');
    sim.child.kill('SIGTERM');
    expect(await sim.exit).toBe(0);
  });

  it('takes the heartbeat, queue timeout, rate limit, feature level and fault knobs', async () => {
    const seedFile = join(dir, 'team.yaml');
    await writeFile(seedFile, SEED_YAML);
    const sim = await start([
      '--seed',
      seedFile,
      '--feature-level',
      '421',
      '--heartbeat-ms',
      '50',
      '--rate-limit',
      '1000/60000',
      '--fault',
      '{"method":"POST","path":"/messages","status":503,"times":1}',
    ]);
    const ann = client(sim.url, rc(sim.stdout.split(/\n(?=# )/)[0] as string));
    const settings = (await (await fetch(`${sim.url}/api/v1/server_settings`)).json()) as Record<
      string,
      unknown
    >;
    expect(settings.zulip_feature_level).toBe(421);
    const { queueId } = await ann.register({ event_types: ['message'] });
    const poll = await ann.poll(queueId, -1);
    expect(poll.body.events.map((e: { type: string }) => e.type)).toEqual(['heartbeat']);
    const first = await ann.post('/messages', { type: 'stream', to: 'general', topic: 't', content: 'x' });
    expect(first.status).toBe(503);
    expect(first.text).toContain('<center><h1>503 Service Unavailable</h1></center>');
    const second = await ann.post('/messages', { type: 'stream', to: 'general', topic: 't', content: 'x' });
    expect([second.status, second.headers.get('x-ratelimit-limit')]).toEqual([200, '1000']);
    sim.child.kill('SIGTERM');
    expect(await sim.exit).toBe(0);
  });

  it('refuses a bad seed file with the field it did not like', async () => {
    const bad = join(dir, 'bad.yaml');
    await writeFile(
      bad,
      'users:\n  - { name: Ann, email: ann@acme.example }\n  - { name: Bo, email: not-an-email }\n',
    );
    const r = await run(['--seed', bad]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('zulip-sim: seed.users[1].email: must be an email address\n');
    await writeFile(bad, 'users: [ { name: Ann\n');
    const broken = await run(['--seed', bad]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/^zulip-sim: seed: is not valid YAML at line \d+: /);
    const usage = await run(['--rate-limit', 'lots']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--rate-limit must be REQUESTS/WINDOW_MS or off, got lots');
  });
});

describe('zulip-sim --record and replay', () => {
  it('records the requests served without API keys, and replays them against a fresh realm', async () => {
    const seedFile = join(dir, 'team.json');
    const seed = readSeed(SEED_YAML);
    seed.users = (seed.users ?? []).map((u, i) => (i === 0 ? { ...u, apiKey: 'A'.repeat(32) } : u));
    await writeFile(seedFile, JSON.stringify(seed));
    const recording = join(dir, 'scenario.jsonl');
    const sim = await start([
      '--seed',
      seedFile,
      '--record',
      recording,
      '--fault',
      '{"path":"/users/me","status":500,"times":1}',
    ]);
    const [annRc, , botRc] = sim.stdout.split(/\n(?=# )/) as [string, string, string];
    const ann = client(sim.url, rc(annRc));
    const bot = client(sim.url, rc(botRc));
    const { queueId } = await bot.register({ event_types: ['message', 'reaction'] });
    const poll = bot.poll(queueId, -1);
    const sent = await ann.post('/messages', {
      type: 'stream',
      to: 'general',
      topic: 'deploys',
      content: 'shipped @**Helper**',
    });
    expect((await poll).body.events[0].message.id).toBe(sent.body.id);
    await bot.post(`/messages/${sent.body.id}/reactions`, { emoji_name: 'tada' });
    await ann.get('/messages', {
      anchor: 'newest',
      num_before: 10,
      narrow: [{ operator: 'mentions', operand: 'helper-bot@acme.example' }],
    });
    const form = new FormData();
    form.set('file', new Blob([Buffer.from('report body')], { type: 'text/plain' }), 'report.txt');
    const upload = await fetch(`${sim.url}/api/v1/user_uploads`, {
      method: 'POST',
      headers: { authorization: ann.authorization },
      body: form,
    });
    expect(upload.status).toBe(200);
    expect((await ann.get('/users/me')).status).toBe(500);
    await ann.get('/users/me');
    await bot.events(queueId, 0);
    sim.child.kill('SIGTERM');
    expect(await sim.exit).toBe(0);

    const text = await readFile(recording, 'utf8');
    expect(text).not.toContain('A'.repeat(32));
    expect(text).not.toContain(rc(botRc).key);
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({
      type: 'header',
      format: 'zulip-sim-recording',
      zulipFeatureLevel: 512,
      site: sim.url,
    });
    expect(lines.slice(1).map((l) => `${l.method} ${l.path.replace(/\d+/g, 'N')} ${l.status}`)).toEqual([
      'POST /api/vN/register 200',
      'POST /api/vN/messages 200',
      'GET /api/vN/events 200',
      'POST /api/vN/messages/N/reactions 200',
      'GET /api/vN/messages 200',
      'POST /api/vN/user_uploads 200',
      'GET /api/vN/users/me 500',
      'GET /api/vN/users/me 200',
      'GET /api/vN/events 200',
    ]);
    expect(lines[2].user).toBe('ann@acme.example');

    const replayed = await run(['replay', recording]);
    expect(replayed.stdout).toBe(
      'replayed 8 of 9 requests (1 answered by injected faults skipped): 8 matched, 0 differed\n',
    );
    expect(replayed.code).toBe(0);

    // A recording whose answer the realm no longer gives is reported, with where it differs.
    lines[5].response.messages[0].content = '<p>something else</p>';
    await writeFile(recording, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const differs = await run(['replay', recording]);
    expect(differs.code).toBe(1);
    expect(differs.stdout).toContain('7 matched, 1 differed');
    expect(differs.stdout).toContain('#4 GET /api/v1/messages: differs at .body.messages[0].content');
  });
});

describe('seed validation', () => {
  const fieldOf = (input: unknown): unknown => {
    try {
      parseSeed(input);
      return undefined;
    } catch (error) {
      expect(error).toBeInstanceOf(SimError);
      expect((error as SimError).code).toBe('SIM_BAD_SEED');
      return (error as SimError).details?.field;
    }
  };

  it('names the field of every kind of mistake', () => {
    expect(fieldOf([])).toBe('seed');
    expect(fieldOf({ people: [] })).toBe('seed.people');
    expect(fieldOf({ users: [{}] })).toBe('seed.users[0].name');
    expect(fieldOf({ users: [{ name: 'A', role: 'boss' }] })).toBe('seed.users[0].role');
    expect(fieldOf({ users: [{ name: 'A', apiKey: 'short' }] })).toBe('seed.users[0].apiKey');
    expect(fieldOf({ bots: [{ name: 'B', owner: 'nobody@x.example' }] })).toBe('seed.bots[0].owner');
    expect(fieldOf({ channels: [{ name: 'c', folder: 'missing' }] })).toBe('seed.channels[0].folder');
    expect(fieldOf({ channels: [{ name: 'c', canCreateTopic: 'role:kings' }] })).toBe(
      'seed.channels[0].canCreateTopic',
    );
    expect(fieldOf({ messages: [{ from: 'a@x.example', content: 'x' }] })).toBe('seed.messages[0]');
    expect(
      fieldOf({ messages: [{ from: 'a@x.example', content: 'x', to: ['b@x.example'], at: 'soon' }] }),
    ).toBe('seed.messages[0].at');
    expect(fieldOf({ server: { zulipFeatureLevel: 600 } })).toBe('seed.server.zulipFeatureLevel');
    expect(fieldOf({ faults: [{ status: 404 }] })).toBe('seed.faults[0].status');
    expect(
      fieldOf({
        users: [
          { name: 'A', email: 'a@x.example' },
          { name: 'B', email: 'A@x.example' },
        ],
      }),
    ).toBe('seed.users[1].email');
  });

  it('names the seeded item the realm refused', async () => {
    const { startZulipSim, seedOptions } = await import('../src/index.js');
    const seed = parseSeed({
      users: [{ name: 'Ann', email: 'ann@x.example' }],
      messages: [{ from: 'ann@x.example', channel: 'nowhere', topic: 't', content: 'x' }],
    });
    const err = await startZulipSim(seedOptions(seed)).catch((e: unknown) => e);
    expect((err as SimError).code).toBe('SIM_BAD_SEED');
    expect((err as SimError).details?.field).toBe('seed.messages[0]');
    expect((err as SimError).message).toContain("Channel 'nowhere' does not exist");
  });
});
