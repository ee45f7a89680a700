// `pnpm --filter @zmcp/mcp-server bench`: the built zulip-mcp against zulip-sim, each figure
// as a ratio to a baseline measured in the same run, each target with a PASS/FAIL verdict.
//   1. cold start: spawn to the first tools/list answer, vs a minimal SDK v2 stdio server with one
//      tool, in each era (2025: initialize first; 2026-07-28: the request alone);
//   2. what the model reads of a 100-message fetch_history: bytes as text and as the JSON of the
//      structured result (Claude Code shows the latter);
//   3. tools/list of the default surface and of `all`: name+description+input schema, and whole;
//   4. fetch_history of 100 messages over stdio, in each era, vs the sum of its floors: the raw GET
//      of the same page plus a minimal SDK v2 stdio server answering the same bytes in that era;
//   5. the first tools/list round trip as an SDK v2 client sees it (validators compiled), vs a
//      minimal one-tool SDK server;
//   6. text bytes each message line adds beyond the message body.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { escapeMsgText } from '@zmcp/core';
import { DEFAULT_TOOLSETS, TOOLSETS, ToolHost } from '@zmcp/tools';
import { startZulipSim } from '@zmcp/zulip-sim';
import { request } from 'undici';
import { parseConfig } from '../src/config.js';
import { silentLogger } from '../src/logging.js';
import { buildServices } from '../src/services.js';

const bin = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const minimal = fileURLToPath(new URL('./minimal-server.mjs', import.meta.url));
const floorServer = fileURLToPath(new URL('./floor-server.mjs', import.meta.url));
if (!existsSync(bin)) {
  console.error('dist/cli.js is missing: run `pnpm build` first (the bench measures the built binary).');
  process.exit(1);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};
const fmt = (ms: number) => `${ms.toFixed(2)} ms`;
const verdict = (ratio: number, target: number) => (ratio <= target ? 'PASS' : 'FAIL');

/** The two protocol eras a client may open with. */
type Era = '2025' | '2026';
const ERAS: readonly Era[] = ['2025', '2026'];
/** The per-request envelope of a 2026-07-28 request. */
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
};
/** A request's params in `era`: the 2026 ones carry the envelope. */
const paramsIn = (era: Era, params: Record<string, unknown> = {}) =>
  era === '2026' ? { ...params, _meta: ENVELOPE } : params;

const BODIES = [
  'Deploy of build 4711 went out at noon; error rate flat.',
  'Can someone review the retry change? It touches the event queue.',
  'Rolling back: p99 latency doubled on the edge nodes.',
  'Tests are green on `main` again.',
  'Write-up: https://example.org/notes/ship-it — comments welcome.',
];

const sim = await startZulipSim({
  rateLimit: false,
  seed(realm) {
    const ann = realm.addUser({ fullName: 'Ann Lee', email: 'ann@bench.example' });
    const bot = realm.addUser({ fullName: 'Bench Bot', email: 'bench-bot@bench.example', isBot: true });
    realm.addStream({ name: 'bench', subscribers: [ann.userId, bot.userId] });
    for (let i = 0; i < 150; i++) {
      realm.sendMessage({
        senderId: ann.userId,
        type: 'stream',
        stream: 'bench',
        topic: 'load',
        content: BODIES[i % BODIES.length] as string,
      });
    }
  },
});
const creds = sim.credentials('bench-bot@bench.example');
const stateDir = await mkdtemp(join(tmpdir(), 'zmcp-bench-'));
const env = {
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '/tmp',
  ZULIP_STATE_DIR: stateDir,
  ZULIP_SITE: creds.site,
  ZULIP_EMAIL: creds.email,
  ZULIP_API_KEY: creds.apiKey,
  ZMCP_LOG_LEVEL: 'error',
  AGENT_TIMEZONE: 'UTC',
};

/**
 * Spawn to the first tools/list answer, speaking raw JSON-RPC on the child's stdio: what is
 * timed is the server's work, not a client's processing of the answer.
 */
function coldStart(args: string[], era: Era): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { env, stdio: ['pipe', 'pipe', 'ignore'] });
    let buffer = '';
    child.on('error', reject);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffer += chunk;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        const message = JSON.parse(line) as { id?: number; result?: { tools?: unknown[] } };
        if (message.id === 2 && message.result?.tools !== undefined) {
          const ms = performance.now() - started;
          child.kill();
          resolve(ms);
        }
      }
    });
    const send = (m: unknown) => child.stdin.write(`${JSON.stringify(m)}\n`);
    if (era === '2025') {
      send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: LATEST_PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: 'bench', version: '1' },
        },
      });
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    }
    send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: paramsIn(era) });
  });
}

// 1. Cold start, alternating the two servers so load drifts hit both alike.
const cold = new Map<Era, { ours: number; base: number }>();
for (const era of ERAS) {
  const ours: number[] = [];
  const base: number[] = [];
  for (let i = 0; i < 10; i++) {
    ours.push(await coldStart([bin], era));
    base.push(await coldStart([minimal], era));
  }
  cold.set(era, { ours: median(ours), base: median(base) });
}

/** A raw JSON-RPC client on a spawned server's stdio. */
function rpcClient(args: string[], era: Era, extraEnv: Record<string, string> = {}) {
  const child = spawn(process.execPath, args, {
    env: { ...env, ...extraEnv },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  child.stdout.setEncoding('utf8');
  const waiting = new Map<number, (message: Record<string, unknown>) => void>();
  let pending = '';
  child.stdout.on('data', (chunk: string) => {
    pending += chunk;
    for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
      const message = JSON.parse(pending.slice(0, nl)) as { id?: number };
      pending = pending.slice(nl + 1);
      if (message.id !== undefined) waiting.get(message.id)?.(message);
    }
  });
  let nextId = 1;
  const send = (method: string, params: Record<string, unknown>) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  const rpc = (method: string, params: Record<string, unknown> = {}) => send(method, paramsIn(era, params));
  const ready =
    era === '2026'
      ? send('server/discover', paramsIn(era)).then(() => undefined)
      : send('initialize', {
          protocolVersion: LATEST_PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: 'bench', version: '1' },
        }).then(() => {
          child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
        });
  return { child, rpc, ready };
}

interface ToolResult {
  content?: { type: string; text?: string }[];
  structuredContent?: Record<string, unknown>;
}

const auth = `Basic ${Buffer.from(`${creds.email}:${creds.apiKey}`).toString('base64')}`;
const narrow = JSON.stringify([
  { operator: 'channel', operand: 'bench' },
  { operator: 'topic', operand: 'load' },
]);
const rawUrl = `${creds.site}/api/v1/messages?anchor=newest&num_before=100&num_after=0&apply_markdown=false&narrow=${encodeURIComponent(narrow)}`;
const servers = new Map<Era, ReturnType<typeof rpcClient>>();
for (const era of ERAS) {
  const client = rpcClient([bin], era);
  await client.ready;
  servers.set(era, client);
}
const callIn = async (era: Era) =>
  (
    await (servers.get(era) as ReturnType<typeof rpcClient>).rpc('tools/call', {
      name: 'fetch_history',
      arguments: { stream: 'bench', topic: 'load', limit: 100 },
    })
  ).result as ToolResult;
const call = () => callIn('2025');
const raw = async () => {
  const res = await request(rawUrl, { headers: { authorization: auth } });
  await res.body.json();
};

// 2. What the model reads.
const page = await call();
const text = (page.content ?? []).find((b) => b.type === 'text')?.text ?? '';
const textBytes = Buffer.byteLength(text);
const jsonBytes = Buffer.byteLength(JSON.stringify(page.structuredContent));
const shownIds = (page.structuredContent?.ids ?? []) as number[];
const readRatio = jsonBytes / textBytes;

// 3. tools/list sizes, from the servers as a client lists them.
async function listSizes(toolsets: string): Promise<{ model: number; whole: number; count: number }> {
  const lister = rpcClient([bin], '2025', { ZULIP_TOOLSETS: toolsets });
  await lister.ready;
  const listed = (await lister.rpc('tools/list')).result as { tools: Record<string, unknown>[] };
  lister.child.kill();
  let model = 0;
  for (const t of listed.tools) {
    model += Buffer.byteLength(
      JSON.stringify({ name: t.name, description: t.description, inputSchema: t.inputSchema }),
    );
  }
  return { model, whole: Buffer.byteLength(JSON.stringify(listed)), count: listed.tools.length };
}
const defaults = await listSizes(DEFAULT_TOOLSETS.join(','));
const everything = await listSizes('all');

// 4. fetch_history over stdio vs its floors, in each era: the raw GET, and a minimal SDK v2 server
// answering the very same result (same bytes on the wire, the same era), measured alternately.
// The result as each era's server sends it (the 2026 one carries resultType and server info).
const pageFile = join(stateDir, 'page.json');
await writeFile(pageFile, JSON.stringify(page));
const floors = new Map<Era, ReturnType<typeof rpcClient>>();
for (const era of ERAS) {
  const floor = rpcClient([floorServer, pageFile], era);
  await floor.ready;
  floors.set(era, floor);
}
const floorCall = (era: Era) =>
  (floors.get(era) as ReturnType<typeof rpcClient>).rpc('tools/call', { name: 'page', arguments: {} });
// Every round measures all five, so drifts in the machine's load hit each alike.
const samples = new Map<string, number[]>();
const sample = async (key: string, work: () => Promise<unknown>) => {
  const t = performance.now();
  await work();
  const list = samples.get(key) ?? [];
  list.push(performance.now() - t);
  samples.set(key, list);
};
for (let i = 0; i < 50; i++) {
  for (const era of ERAS) {
    await callIn(era);
    await floorCall(era);
  }
  await raw();
}
for (let i = 0; i < 300; i++) {
  await sample('raw', raw);
  for (const era of ERAS) {
    await sample(`tool ${era}`, () => callIn(era));
    await sample(`floor ${era}`, () => floorCall(era));
  }
}
const fetched = new Map<Era, { tool: number; raw: number; floor: number; bytes: number }>();
for (const era of ERAS) {
  const answer = await floorCall(era);
  fetched.set(era, {
    tool: median(samples.get(`tool ${era}`) ?? []),
    raw: median(samples.get('raw') ?? []),
    floor: median(samples.get(`floor ${era}`) ?? []),
    bytes: Buffer.byteLength(JSON.stringify(answer)),
  });
}
for (const { child } of floors.values()) child.kill();

// Where the time goes: the same tool call in this process, without a transport.
const services = await buildServices(parseConfig(env, []), silentLogger);
const host = new ToolHost(services.tools, { deadlineMs: 10_000 });
const inProcess = () => host.call('fetch_history', { stream: 'bench', topic: 'load', limit: 100 });
for (let i = 0; i < 10; i++) await inProcess();
const inProcessMs: number[] = [];
for (let i = 0; i < 300; i++) {
  const t = performance.now();
  await inProcess();
  inProcessMs.push(performance.now() - t);
}
await services.close();

// 5. The first tools/list as an SDK client sees it: the round trip plus compiling a validator for
// every output schema, against a minimal one-tool SDK server (a fresh client each round).
async function firstList(args: string[], toolsets?: string): Promise<number> {
  const client = new Client({ name: 'bench', version: '1' }, { versionNegotiation: { mode: 'legacy' } });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args,
      env: { ...env, ...(toolsets === undefined ? {} : { ZULIP_TOOLSETS: toolsets }) },
      stderr: 'ignore',
    }),
  );
  const t = performance.now();
  await client.listTools();
  const ms = performance.now() - t;
  await client.close();
  return ms;
}
const listOurs: number[] = [];
const listBase: number[] = [];
for (let i = 0; i < 8; i++) {
  listOurs.push(await firstList([bin]));
  listBase.push(await firstList([minimal]));
}
const listRatio = median(listOurs) / median(listBase);

// 6. Bytes per line beyond the body, from one fetch_history page.
const encoder = new TextEncoder();
let overhead = 0;
let counted = 0;
for (const id of shownIds) {
  const line = text.split('\n').find((l) => l.includes(` id=${id}]`));
  const body = sim.realm.message(id)?.content;
  if (line === undefined || body === undefined) continue;
  overhead += encoder.encode(line).length - encoder.encode(escapeMsgText(body)).length;
  counted++;
}
const perLine = counted === 0 ? Number.NaN : overhead / counted;
for (const { child } of servers.values()) child.kill();
await sim.close();
await rm(stateDir, { recursive: true, force: true });

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
console.log('zulip-mcp bench (figures are medians; ratios against a baseline from this same run)');
for (const [era, { ours, base }] of cold) {
  const ratio = ours / base;
  console.log(
    `cold start to tools/list, ${era} era: ${fmt(ours)} vs minimal SDK v2 server ${fmt(base)}: ratio ${ratio.toFixed(2)} (target <= 1.3, ${verdict(ratio, 1.3)})`,
  );
}
console.log(
  `what the model reads of fetch_history(100), ${shownIds.length} messages shown: text ${kib(textBytes)}, JSON of the structured result ${kib(jsonBytes)}: ratio ${readRatio.toFixed(3)} (target <= 1.15, ${verdict(readRatio, 1.15)})`,
);
console.log(
  `tools/list, default toolsets (${defaults.count} tools): name+description+input schema ${kib(defaults.model)} (target <= 16 KiB, ${verdict(defaults.model / 1024, 16)}); whole ${kib(defaults.whole)} (target <= 24 KiB, ${verdict(defaults.whole / 1024, 24)})`,
);
console.log(
  `tools/list, all toolsets (${everything.count} tools): name+description+input schema ${kib(everything.model)}; whole ${kib(everything.whole)}`,
);
for (const [era, f] of fetched) {
  const floors = f.raw + f.floor;
  const ratio = f.tool / floors;
  console.log(
    `fetch_history 100 msgs over stdio, ${era} era: ${fmt(f.tool)} vs its floors ${fmt(floors)} (raw GET ${fmt(f.raw)} + minimal SDK v2 server answering the same ${kib(f.bytes)} ${fmt(f.floor)}): ratio ${ratio.toFixed(2)} (target <= 1.15, ${verdict(ratio, 1.15)})`,
  );
}
console.log(`  of which the tool itself, in process: ${fmt(median(inProcessMs))}`);
console.log(
  `first tools/list round trip in an SDK client (validators compiled): ${fmt(median(listOurs))} vs minimal one-tool server ${fmt(median(listBase))}: ratio ${listRatio.toFixed(2)} (target <= 2, ${verdict(listRatio, 2)})`,
);
console.log(
  `text bytes per message line beyond the body: ${perLine.toFixed(1)} over ${counted} lines (target <= 80, ${verdict(perLine, 80)})`,
);
console.log(`(all toolsets: ${TOOLSETS.join(', ')})`);
