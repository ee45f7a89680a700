// channels/incoming round trips per second, server → host → server, one message per batch:
// over an in-memory pair and over stdio between two processes, each against a bare NDJSON echo
// of the same bytes measured in the same run. Prints the rates and their ratios (target ≥ 0.5×),
// and the floor under each: the SDK's Protocol alone, same request and answer, no MCPL.
// `BENCH_ROUNDS` sets the measured rounds (default 5000, after as many to warm up), `BENCH_PAIRS`
// how many alternating runs the medians are taken over (default 3).
import { spawn } from 'node:child_process';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { z } from 'zod';
import { McplHost, spawnStdioTransport } from '../src/index.js';
import { benchMessage, benchServer, channel, GRANT } from './shared.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5000);
const WARMUP = Math.max(1000, ROUNDS);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/** The request and answer lines the echo exchanges: what MCPL puts on the wire for one round. */
function requestLine(id: number): string {
  return `${JSON.stringify({ jsonrpc: '2.0', id, method: 'channels/incoming', params: { messages: [benchMessage(id)] } })}\n`;
}

/** Round trips of the bare echo: write a request line, read the answer line, parse it. */
async function echoRounds(
  toPeer: Writable,
  fromPeer: Readable,
  rounds: number,
  firstId = 0,
): Promise<number> {
  let buffer = '';
  let waiting: (() => void) | undefined;
  fromPeer.setEncoding('utf8');
  const onData = (chunk: string) => {
    buffer += chunk;
    if (buffer.includes('\n')) waiting?.();
  };
  fromPeer.on('data', onData);
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
  for (let i = 0; i < WARMUP; i += 1) await round(firstId + i);
  const started = performance.now();
  for (let i = 0; i < rounds; i += 1) await round(firstId + WARMUP + i);
  const ms = performance.now() - started;
  fromPeer.off('data', onData);
  return ms;
}

/** An in-process NDJSON echo over a pair of streams, doing what echo-peer.ts does. */
function inProcessEcho(): { toPeer: PassThrough; fromPeer: PassThrough } {
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
  return { toPeer, fromPeer };
}

async function mcplInMemory(rounds: number): Promise<number> {
  const { server, run } = benchServer();
  const [hostSide, serverSide] = InMemoryTransport.createLinkedPair();
  const sessionPromise = server.connect(serverSide);
  const host = await McplHost.connect(hostSide, { name: 'bench-host', version: '1' });
  const session = await sessionPromise;
  await host.setPolicy({ effectiveCapabilities: GRANT });
  await session.whenReady();
  await session.registerChannels([channel]);
  await run(session, WARMUP);
  const ms = await run(session, rounds);
  await host.close();
  return ms;
}

async function mcplStdio(rounds: number): Promise<number> {
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
  const timed = async (count: number) => {
    const result = await host.callTool('run', { rounds: count });
    const text = result.content[0]?.type === 'text' ? result.content[0].text : '{}';
    return (JSON.parse(text) as { ms: number }).ms;
  };
  await timed(WARMUP);
  const ms = await timed(rounds);
  await host.close();
  return ms;
}

async function echoStdio(rounds: number): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', here('./echo-peer.ts')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const ms = await echoRounds(child.stdin, child.stdout, rounds);
  child.stdin.end();
  await new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return ms;
}

/** The SDK alone, same params and answer, no MCPL: the floor under the in-memory figure. */
async function sdkInMemory(rounds: number): Promise<number> {
  const server = new Server({ name: 'floor', version: '1' }, { capabilities: {} });
  const client = new Client({ name: 'floor', version: '1' }, { capabilities: {} });
  client.fallbackRequestHandler = async (request) => {
    const messages = (request.params as { messages: { messageId: string }[] }).messages;
    return { results: messages.map((m) => ({ messageId: m.messageId, accepted: true })) };
  };
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  await client.connect(clientSide);
  const anyResult = z.unknown();
  const round = (i: number) =>
    server.request(
      { method: 'channels/incoming', params: { messages: [benchMessage(i)] } } as never,
      anyResult,
    );
  for (let i = 0; i < WARMUP; i += 1) await round(i);
  const started = performance.now();
  for (let i = 0; i < rounds; i += 1) await round(i);
  const ms = performance.now() - started;
  await client.close();
  return ms;
}

/** The SDK alone between two processes, over the same NDJSON transport MCPL uses: the stdio floor. */
async function sdkStdio(rounds: number): Promise<number> {
  const transport = await spawnStdioTransport({
    command: process.execPath,
    args: ['--import', 'tsx', here('./sdk-floor-peer.ts')],
  });
  const client = new Client({ name: 'floor', version: '1' }, { capabilities: {} });
  client.fallbackRequestHandler = async (request) => {
    const messages = (request.params as { messages: { messageId: string }[] }).messages;
    return { results: messages.map((m) => ({ messageId: m.messageId, accepted: true })) };
  };
  await client.connect(transport);
  const answer = z.object({ ms: z.number() });
  const timed = async (count: number) =>
    (
      await client.request({ method: 'run', params: { rounds: count } } as never, answer, {
        timeout: 120_000,
      })
    ).ms;
  await timed(WARMUP);
  const ms = await timed(rounds);
  await client.close();
  return ms;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const perSecond = (ms: number) => ROUNDS / (ms / 1000);
const fmt = (value: number) => Math.round(value).toLocaleString('en').padStart(8);

/**
 * Alternates the baseline and the measured side `PAIRS` times and reports medians: the
 * machine is shared, and a ratio from adjacent runs survives load that drifts between them.
 */
async function compare(name: string, baseline: () => Promise<number>, measured: () => Promise<number>) {
  const ratios: number[] = [];
  const base: number[] = [];
  const ours: number[] = [];
  for (let pair = 0; pair < PAIRS; pair += 1) {
    const b = perSecond(await baseline());
    const m = perSecond(await measured());
    base.push(b);
    ours.push(m);
    ratios.push(m / b);
  }
  return { name, base: median(base), ours: median(ours), ratio: median(ratios) };
}

async function main(): Promise<void> {
  const memoryEcho = inProcessEcho();
  let echoId = 0;
  const echoMemory = async () => {
    echoId += 1;
    return echoRounds(memoryEcho.toPeer, memoryEcho.fromPeer, ROUNDS, echoId * 1_000_000);
  };
  const rows = [
    await compare('in-memory', echoMemory, () => mcplInMemory(ROUNDS)),
    await compare(
      'stdio',
      () => echoStdio(ROUNDS),
      () => mcplStdio(ROUNDS),
    ),
  ];
  const floors = [
    await compare('in-memory', echoMemory, () => sdkInMemory(ROUNDS)),
    await compare(
      'stdio',
      () => echoStdio(ROUNDS),
      () => sdkStdio(ROUNDS),
    ),
  ];
  console.log(
    `channels/incoming round trips per second: ${ROUNDS} rounds of one message after ${WARMUP} to warm up, median of ${PAIRS} alternating runs`,
  );
  for (const row of rows) {
    const verdict = row.ratio >= 0.5 ? 'meets the 0.5x target' : 'BELOW the 0.5x target';
    console.log(
      `${row.name.padEnd(10)} mcpl ${fmt(row.ours)}/s   bare NDJSON echo ${fmt(row.base)}/s   ratio ${row.ratio.toFixed(2)}x (${verdict})`,
    );
  }
  for (const [index, floor] of floors.entries()) {
    const row = rows[index] as { ratio: number };
    console.log(
      `sdk floor  ${floor.name.padEnd(9)} the SDK alone, same request, no MCPL: ${fmt(floor.ours)}/s = ${floor.ratio.toFixed(2)}x its echo; MCPL runs at ${(row.ratio / floor.ratio).toFixed(2)}x of it`,
    );
  }
}

await main();
