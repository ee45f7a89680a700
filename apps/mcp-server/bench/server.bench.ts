// `pnpm --filter @zmcp/mcp-server bench`: the built zulip-mcp against zulip-sim, each figure
// as a ratio to a baseline measured in the same run.
//   1. cold start: spawn to the first tools/list answer, vs a minimal SDK stdio server with one tool;
//   2. fetch_history of 100 messages over stdio, vs the raw GET /messages of the same page;
//   3. text bytes each message line adds beyond the message body.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { escapeMsgText } from '@zmcp/core';
import { ToolHost } from '@zmcp/tools';
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
const verdict = (ratio: number, target: number) => (ratio <= target ? 'meets' : 'MISSES');

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
function coldStart(args: string[]): Promise<number> {
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
    send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  });
}

// 1. Cold start, alternating the two servers so load drifts hit both alike.
const ours: number[] = [];
const base: number[] = [];
for (let i = 0; i < 10; i++) {
  ours.push(await coldStart([bin]));
  base.push(await coldStart([minimal]));
}
const coldRatio = median(ours) / median(base);

// 2. fetch_history of 100 messages over stdio vs the raw GET /messages of the same page. The
// tool is called with raw JSON-RPC lines on the child's stdio, so what is timed is the server
// (and the pipe), not an SDK client's validation of the answer.
/** A raw JSON-RPC client on a spawned server's stdio. */
function rpcClient(args: string[]) {
  const child = spawn(process.execPath, args, { env, stdio: ['pipe', 'pipe', 'ignore'] });
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
  const rpc = (method: string, params?: unknown) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  const ready = rpc('initialize', {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: 'bench', version: '1' },
  }).then(() => {
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  });
  return { child, rpc, ready };
}

const { child: server, rpc, ready } = rpcClient([bin]);
await ready;
const auth = `Basic ${Buffer.from(`${creds.email}:${creds.apiKey}`).toString('base64')}`;
const narrow = JSON.stringify([
  { operator: 'channel', operand: 'bench' },
  { operator: 'topic', operand: 'load' },
]);
const rawUrl = `${creds.site}/api/v1/messages?anchor=newest&num_before=100&num_after=0&apply_markdown=false&narrow=${encodeURIComponent(narrow)}`;
const call = async () =>
  (
    await rpc('tools/call', {
      name: 'fetch_history',
      arguments: { stream: 'bench', topic: 'load', limit: 100 },
    })
  ).result as { content?: { type: string; text?: string }[]; structuredContent?: unknown };
const raw = async () => {
  const res = await request(rawUrl, { headers: { authorization: auth } });
  await res.body.json();
};
for (let i = 0; i < 10; i++) {
  await call();
  await raw();
}
const toolMs: number[] = [];
const rawMs: number[] = [];
for (let i = 0; i < 60; i++) {
  let t = performance.now();
  await call();
  toolMs.push(performance.now() - t);
  t = performance.now();
  await raw();
  rawMs.push(performance.now() - t);
}
const fetchRatio = median(toolMs) / median(rawMs);

// The floor: a minimal SDK stdio server answering with as many bytes, doing nothing else.
const firstAnswer = await call();
const answerBytes = Buffer.byteLength(JSON.stringify({ jsonrpc: '2.0', id: 1, result: firstAnswer }));
const floor = rpcClient([floorServer]);
await floor.ready;
const floorCall = () => floor.rpc('tools/call', { name: 'bytes', arguments: { n: answerBytes } });
for (let i = 0; i < 10; i++) await floorCall();
const floorMs: number[] = [];
for (let i = 0; i < 60; i++) {
  const t = performance.now();
  await floorCall();
  floorMs.push(performance.now() - t);
}
floor.child.kill();

// Where the time goes: the same tool call in this process, without a transport, and the size
// of the answer the stdio transport carries.
const services = await buildServices(parseConfig(env, []), silentLogger);
const host = new ToolHost(services.tools, { deadlineMs: 10_000 });
const inProcess = () => host.call('fetch_history', { stream: 'bench', topic: 'load', limit: 100 });
for (let i = 0; i < 10; i++) await inProcess();
const inProcessMs: number[] = [];
for (let i = 0; i < 60; i++) {
  const t = performance.now();
  await inProcess();
  inProcessMs.push(performance.now() - t);
}
await services.close();

// 3. Bytes per line beyond the body, from one fetch_history page.
const page = firstAnswer;
const text =
  ((page.content ?? []) as { type: string; text?: string }[]).find((b) => b.type === 'text')?.text ?? '';
const messages = (page.structuredContent as { messages?: { id: number; content: string }[] }).messages ?? [];
const encoder = new TextEncoder();
let overhead = 0;
let counted = 0;
for (const m of messages) {
  const line = text.split('\n').find((l) => l.includes(` id=${m.id}]`));
  if (line === undefined) continue;
  overhead += encoder.encode(line).length - encoder.encode(escapeMsgText(m.content)).length;
  counted++;
}
const perLine = counted === 0 ? Number.NaN : overhead / counted;
server.kill();
await sim.close();
await rm(stateDir, { recursive: true, force: true });

console.log('zulip-mcp bench (figures are medians; ratios against a baseline from this same run)');
console.log(
  `cold start to tools/list: ${fmt(median(ours))} vs minimal SDK server ${fmt(median(base))}: ratio ${coldRatio.toFixed(2)} (target <= 1.3, ${verdict(coldRatio, 1.3)})`,
);
console.log(
  `fetch_history 100 msgs over stdio: ${fmt(median(toolMs))} vs raw GET /messages ${fmt(median(rawMs))}: ratio ${fetchRatio.toFixed(2)} (target <= 1.3, ${verdict(fetchRatio, 1.3)})`,
);
console.log(
  `  of which the tool itself, in process: ${fmt(median(inProcessMs))} (ratio ${(median(inProcessMs) / median(rawMs)).toFixed(2)} to the raw GET); the answer on the wire is ${(answerBytes / 1024).toFixed(1)} KiB of JSON-RPC`,
);
console.log(
  `  floor: a minimal SDK stdio server answering ${(answerBytes / 1024).toFixed(1)} KiB and doing nothing else takes ${fmt(median(floorMs))}; with the GET that is a ratio of ${((median(floorMs) + median(rawMs)) / median(rawMs)).toFixed(2)} before any tool work`,
);
console.log(
  `text bytes per message line beyond the body: ${perLine.toFixed(1)} over ${counted} lines (target <= 80, ${verdict(perLine, 80)})`,
);
