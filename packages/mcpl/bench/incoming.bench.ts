// channels/incoming round trips per second, server → host → server, one message per batch:
// in one process over the SDK's in-memory pair (messages passed as objects) and over a pair of
// NDJSON streams (the same bytes the echo reads), and over stdio between two processes; each
// against a bare NDJSON echo of the same bytes measured in the same run. Prints the rates and
// their ratios (target ≥ 0.5×), and the floor under each: the SDK's Protocol alone, same request
// and answer, no MCPL.
//
// Each contender is connected once and warmed up, then the baseline and the measured side take
// turns in short blocks and the ratio is the median over the blocks: the machine is shared, and
// two blocks run a few hundred milliseconds apart see the same load. `BENCH_ROUNDS` sets the
// rounds per block (default 2000), `BENCH_BLOCKS` how many blocks each side runs (default 15).
import { type ChildProcess, spawn } from 'node:child_process';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { z } from 'zod';
import { McplHost, NdjsonTransport, spawnStdioTransport } from '../src/index.js';
import { benchMessage, benchServer, channel, GRANT } from './shared.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2000);
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 15);
const WARMUP = 5000;

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/** One side of a comparison, connected once: runs `count` rounds and says how long they took. */
interface Contender {
  rounds(count: number): Promise<number>;
  close(): Promise<void>;
}

/** The request line the echo is sent: what MCPL puts on the wire for one round. */
function requestLine(id: number): string {
  return `${JSON.stringify({ jsonrpc: '2.0', id, method: 'channels/incoming', params: { messages: [benchMessage(id)] } })}\n`;
}

/** The bare echo's client: write a request line, read the answer line, parse and check it. */
function echoClient(toPeer: Writable, fromPeer: Readable, close: () => Promise<void>): Contender {
  let buffer = '';
  let waiting: (() => void) | undefined;
  let nextId = 0;
  fromPeer.setEncoding('utf8');
  fromPeer.on('data', (chunk: string) => {
    buffer += chunk;
    if (buffer.includes('\n')) waiting?.();
  });
  const round = async (id: number) => {
    toPeer.write(requestLine(id));
    while (!buffer.includes('\n')) await new Promise<void>((resolve) => (waiting = resolve));
    const end = buffer.indexOf('\n');
    const answer = JSON.parse(buffer.slice(0, end)) as {
      id: number;
      result: { results: { accepted: boolean }[] };
    };
    buffer = buffer.slice(end + 1);
    if (answer.id !== id || answer.result.results[0]?.accepted !== true) throw new Error('echo mismatch');
  };
  return {
    async rounds(count) {
      const started = performance.now();
      for (let i = 0; i < count; i += 1) await round(nextId++);
      return performance.now() - started;
    },
    close,
  };
}

/** The echo in this process, over a pair of streams, doing what echo-peer.ts does. */
async function echoInMemory(): Promise<Contender> {
  const toPeer = new PassThrough();
  const fromPeer = new PassThrough();
  let buffer = '';
  toPeer.setEncoding('utf8');
  toPeer.on('data', (chunk: string) => {
    buffer += chunk;
    let end = buffer.indexOf('\n');
    while (end !== -1) {
      const request = JSON.parse(buffer.slice(0, end)) as {
        id: number;
        params: { messages: { messageId: string }[] };
      };
      buffer = buffer.slice(end + 1);
      const results = request.params.messages.map((m) => ({ messageId: m.messageId, accepted: true }));
      fromPeer.write(`${JSON.stringify({ jsonrpc: '2.0', id: request.id, result: { results } })}\n`);
      end = buffer.indexOf('\n');
    }
  });
  return echoClient(toPeer, fromPeer, async () => {
    toPeer.end();
  });
}

/** The echo as its own process (echo-peer.ts) over its stdio. */
async function echoStdio(): Promise<Contender> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', here('./echo-peer.ts')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const { stdin, stdout } = child as ChildProcess & { stdin: Writable; stdout: Readable };
  return echoClient(stdin, stdout, async () => {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    stdin.end();
    await exited;
  });
}

type Pair = () => [Transport, Transport];

const objectPair: Pair = () => InMemoryTransport.createLinkedPair();

/** Two NDJSON transports joined by streams in this process: every message is written and read as a line. */
const streamPair: Pair = () => {
  const down = new PassThrough();
  const up = new PassThrough();
  return [new NdjsonTransport(up, down), new NdjsonTransport(down, up)];
};

async function mcplInProcess(pair: Pair): Promise<Contender> {
  const { server, run } = benchServer();
  const [hostSide, serverSide] = pair();
  const sessionPromise = server.connect(serverSide);
  const host = await McplHost.connect(hostSide, { name: 'bench-host', version: '1' });
  const session = await sessionPromise;
  await host.setPolicy({ effectiveCapabilities: GRANT });
  await session.whenReady();
  await session.registerChannels([channel]);
  return { rounds: (count) => run(session, count), close: () => host.close() };
}

async function mcplStdio(): Promise<Contender> {
  const transport = await spawnStdioTransport({
    command: process.execPath,
    args: ['--import', 'tsx', here('./server-peer.ts')],
  });
  const host = await McplHost.connect(transport, {
    name: 'bench-host',
    version: '1',
    requestTimeoutMs: 120_000,
  });
  const registered = new Promise<void>((resolve) => host.on('channels', () => resolve()));
  await host.setPolicy({ effectiveCapabilities: GRANT });
  await registered;
  return {
    async rounds(count) {
      const result = await host.callTool('run', { rounds: count });
      const text = result.content[0]?.type === 'text' ? result.content[0].text : '{}';
      return (JSON.parse(text) as { ms: number }).ms;
    },
    close: () => host.close(),
  };
}

/** Answers `channels/incoming` the way the MCPL host does, on the SDK's client alone. */
function floorClient(): Client {
  const client = new Client({ name: 'floor', version: '1' }, { capabilities: {} });
  client.fallbackRequestHandler = async (request) => {
    const messages = (request.params as { messages: { messageId: string }[] }).messages;
    return { results: messages.map((m) => ({ messageId: m.messageId, accepted: true })) };
  };
  return client;
}

/** The SDK alone over the same kind of pair in this process, same request and answer, no MCPL. */
async function sdkInProcess(pair: Pair): Promise<Contender> {
  const server = new Server({ name: 'floor', version: '1' }, { capabilities: {} });
  const client = floorClient();
  const [clientSide, serverSide] = pair();
  await server.connect(serverSide);
  await client.connect(clientSide);
  const anyResult = z.unknown();
  let nextId = 0;
  return {
    async rounds(count) {
      const started = performance.now();
      for (let i = 0; i < count; i += 1) {
        await server.request(
          { method: 'channels/incoming', params: { messages: [benchMessage(nextId++)] } } as never,
          anyResult,
        );
      }
      return performance.now() - started;
    },
    close: () => client.close(),
  };
}

/** The SDK alone between two processes (sdk-floor-peer.ts), over the NDJSON transport MCPL uses. */
async function sdkStdio(): Promise<Contender> {
  const transport = await spawnStdioTransport({
    command: process.execPath,
    args: ['--import', 'tsx', here('./sdk-floor-peer.ts')],
  });
  const client = floorClient();
  await client.connect(transport);
  const answer = z.object({ ms: z.number() });
  return {
    async rounds(count) {
      const result = await client.request({ method: 'run', params: { rounds: count } } as never, answer, {
        timeout: 120_000,
      });
      return result.ms;
    },
    close: () => client.close(),
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const perSecond = (ms: number) => ROUNDS / (ms / 1000);
const fmt = (value: number) => Math.round(value).toLocaleString('en').padStart(8);

type Row = { name: string; base: number; ours: number; ratio: number };

/** Warms both sides up, then alternates blocks of rounds and takes the medians over the blocks. */
async function compare(
  name: string,
  baseline: () => Promise<Contender>,
  measured: () => Promise<Contender>,
): Promise<Row> {
  const base = await baseline();
  const ours = await measured();
  await base.rounds(WARMUP);
  await ours.rounds(WARMUP);
  const ratios: number[] = [];
  const baseRates: number[] = [];
  const ourRates: number[] = [];
  for (let block = 0; block < BLOCKS; block += 1) {
    const b = perSecond(await base.rounds(ROUNDS));
    const m = perSecond(await ours.rounds(ROUNDS));
    baseRates.push(b);
    ourRates.push(m);
    ratios.push(m / b);
  }
  await ours.close();
  await base.close();
  return { name, base: median(baseRates), ours: median(ourRates), ratio: median(ratios) };
}

async function main(): Promise<void> {
  const rows = [
    await compare('in-memory', echoInMemory, () => mcplInProcess(objectPair)),
    await compare('streams', echoInMemory, () => mcplInProcess(streamPair)),
    await compare('stdio', echoStdio, mcplStdio),
  ];
  const floors = [
    await compare('in-memory', echoInMemory, () => sdkInProcess(objectPair)),
    await compare('streams', echoInMemory, () => sdkInProcess(streamPair)),
    await compare('stdio', echoStdio, sdkStdio),
  ];
  console.log(
    `channels/incoming round trips per second: ${BLOCKS} alternating blocks of ${ROUNDS} rounds of one message a side, after ${WARMUP} to warm up; medians over the blocks`,
  );
  for (const row of rows) {
    const verdict = row.ratio >= 0.5 ? 'meets the 0.5x target' : 'BELOW the 0.5x target';
    console.log(
      `${row.name.padEnd(10)} mcpl ${fmt(row.ours)}/s   bare NDJSON echo ${fmt(row.base)}/s   ratio ${row.ratio.toFixed(2)}x (${verdict})`,
    );
  }
  for (const [index, floor] of floors.entries()) {
    const row = rows[index] as Row;
    console.log(
      `sdk floor  ${floor.name.padEnd(9)} the SDK alone, same request, no MCPL: ${fmt(floor.ours)}/s = ${floor.ratio.toFixed(2)}x its echo; MCPL runs at ${(row.ratio / floor.ratio).toFixed(2)}x of it`,
    );
  }
}

await main();
