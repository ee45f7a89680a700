// channels/incoming round trips, server → host → server, one message per batch: MCPL (an
// McplServer session delivering to an McplHost, grant checked, per-item verdicts read) against
// the MCP SDK's own request round trip over the same transport (a minimal v2 SDK Server sending
// the same request, of the same bytes, to a v2 SDK Client that answers what the MCPL host
// answers). Target: an MCPL round trip takes at most 1.25× the SDK's; each row prints PASS or FAIL.
//
// Three transports: the SDK's in-memory pair (messages passed as objects); two NDJSON transports
// joined by streams in one process (every message written and read as a line); stdio between two
// processes (each side's server is its own process and times its rounds itself).
//
// Each contender is connected once and warmed up, then the two take turns in short blocks and
// the ratio is the median over the blocks: the machine is shared, and two blocks run a few
// hundred milliseconds apart see the same load. `BENCH_ROUNDS` sets the rounds per block
// (default 2000), `BENCH_BLOCKS` how many blocks each side runs (default 15).
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport, Server, type Transport } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { McplHost, NdjsonTransport, spawnStdioTransport } from '../src/index.js';
import { acceptAll, anyObject, benchMessage, benchServer, channel, GRANT } from './shared.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2000);
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 15);
const WARMUP = 5000;
/** An MCPL round trip may take at most this many times the SDK's own. */
const TARGET = 1.25;

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/** One side of a comparison, connected once: runs `count` rounds and says how long they took. */
interface Contender {
  rounds(count: number): Promise<number>;
  close(): Promise<void>;
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

/** The SDK's client answering `channels/incoming` as the MCPL host does: every message accepted. */
function sdkClient(): Client {
  const client = new Client({ name: 'sdk-floor', version: '1' }, { capabilities: {} });
  client.setRequestHandler('channels/incoming', { params: anyObject }, acceptAll);
  return client;
}

/** The SDK alone over the same kind of pair in this process: same request, same answer. */
async function sdkInProcess(pair: Pair): Promise<Contender> {
  const server = new Server({ name: 'sdk-floor', version: '1' }, { capabilities: {} });
  const client = sdkClient();
  const [clientSide, serverSide] = pair();
  await server.connect(serverSide);
  await client.connect(clientSide);
  let nextId = 0;
  return {
    async rounds(count) {
      const started = performance.now();
      for (let i = 0; i < count; i += 1) {
        await server.request(
          { method: 'channels/incoming', params: { messages: [benchMessage(nextId++)] } },
          anyObject,
          { timeout: 30_000 },
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
  const client = sdkClient();
  await client.connect(transport);
  const answer = z.object({ ms: z.number() });
  return {
    async rounds(count) {
      const result = await client.request({ method: 'bench/run', params: { rounds: count } }, answer, {
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

const microseconds = (ms: number) => (ms * 1000) / ROUNDS;
const fmt = (value: number) => value.toFixed(1).padStart(6);

type Row = { name: string; sdk: number; mcpl: number; ratio: number };

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
  const baseTimes: number[] = [];
  const ourTimes: number[] = [];
  for (let block = 0; block < BLOCKS; block += 1) {
    const b = microseconds(await base.rounds(ROUNDS));
    const m = microseconds(await ours.rounds(ROUNDS));
    baseTimes.push(b);
    ourTimes.push(m);
    ratios.push(m / b);
  }
  await ours.close();
  await base.close();
  return { name, sdk: median(baseTimes), mcpl: median(ourTimes), ratio: median(ratios) };
}

async function main(): Promise<void> {
  const rows = [
    await compare(
      'in-memory',
      () => sdkInProcess(objectPair),
      () => mcplInProcess(objectPair),
    ),
    await compare(
      'streams',
      () => sdkInProcess(streamPair),
      () => mcplInProcess(streamPair),
    ),
    await compare('stdio', sdkStdio, mcplStdio),
  ];
  console.log(
    `channels/incoming round trip, MCPL against the MCP SDK's own request round trip over the same transport: ${BLOCKS} alternating blocks of ${ROUNDS} rounds of one message a side, after ${WARMUP} to warm up; medians over the blocks`,
  );
  for (const row of rows) {
    const verdict = row.ratio <= TARGET ? 'PASS' : 'FAIL';
    console.log(
      `${row.name.padEnd(10)} mcpl ${fmt(row.mcpl)} µs   sdk ${fmt(row.sdk)} µs   ratio ${row.ratio.toFixed(2)}x   target <= ${TARGET.toFixed(2)}x   ${verdict}`,
    );
  }
}

await main();
