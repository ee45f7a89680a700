// `pnpm --filter @zmcp/mcp-server bench:channels`: wake latency of a Claude Code channel event,
// from a mention posted in zulip-sim to `notifications/claude/channel` reaching a client over
// zulip-mcp's stdio framing, against a bare long-poll client (GET /events on a registered queue)
// in the same run. Prints both medians and their ratio. `BENCH_ROUNDS` sets the rounds (default 60).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ZulipClient } from '@zmcp/core';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { z } from 'zod';
import { main } from '../src/main.js';

/** A client transport over the server's stdio streams, framed as stdio is: one JSON message a line. */
class StreamClientTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  readonly #buffer = new ReadBuffer();

  constructor(
    private readonly readable: PassThrough,
    private readonly writable: PassThrough,
  ) {}

  async start(): Promise<void> {
    this.readable.on('data', (chunk: Buffer) => {
      this.#buffer.append(chunk);
      for (let message = this.#buffer.readMessage(); message !== null; message = this.#buffer.readMessage()) {
        this.onmessage?.(message);
      }
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.writable.write(serializeMessage(message));
  }

  async close(): Promise<void> {
    this.writable.end();
    this.onclose?.();
  }
}

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 60);
const WARMUP = 5;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

/** Spins the event loop (no timers) until a queue of `userId` matching `which` is blocked in a poll. */
async function polling(sim: ZulipSim, userId: number, which: (narrowed: boolean) => boolean): Promise<void> {
  const ready = () => sim.queues(userId).some((q) => q.polling && which(q.narrow.length > 0));
  while (!ready()) await new Promise((resolve) => setImmediate(resolve));
}

const sim = await startZulipSim({ rateLimit: false });
const bot = sim.realm.addUser({ fullName: 'Bench Bot', email: 'bench-bot@example.test', isBot: true }).userId;
const ann = sim.realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' }).userId;
sim.realm.addStream({ name: 'general', subscribers: [ann, bot] });
// The baseline's stream: the bot is not subscribed, so only the bare queue (narrowed to it) hears it.
sim.realm.addStream({ name: 'bare', subscribers: [ann] });
const post = (stream: string, content: string) =>
  sim.realm.sendMessage({ senderId: ann, type: 'stream', stream, topic: 'bench', content });

const stateDir = await mkdtemp(join(tmpdir(), 'zmcp-channels-bench-'));
const creds = sim.credentials(bot);
const stdin = new PassThrough();
const stdout = new PassThrough();
const shutdown = new AbortController();
let ready!: () => void;
const serving = new Promise<void>((resolve) => {
  ready = resolve;
});
const exited = main(
  [],
  {
    HOME: stateDir,
    ZULIP_STATE_DIR: stateDir,
    ZULIP_SITE: creds.site,
    ZULIP_EMAIL: creds.email,
    ZULIP_API_KEY: creds.apiKey,
    ZMCP_LOG_LEVEL: 'silent',
    ZULIP_CLAUDE_CHANNELS: 'on',
    ZULIP_CHANNEL_USERS: String(ann),
  },
  { stdin, stdout, stderr: new PassThrough(), shutdown: shutdown.signal, onReady: () => ready() },
);
await serving;

// The client side, as Claude Code has it: a handler for the channel event.
const client = new Client({ name: 'claude-code', version: 'bench' });
let waitingFor = '';
let arrivedAt = 0;
let arrived: (() => void) | undefined;
client.setNotificationHandler(
  z.object({
    method: z.literal('notifications/claude/channel'),
    params: z.object({ content: z.string(), meta: z.record(z.string(), z.string()).optional() }),
  }),
  ({ params }) => {
    if (params.meta?.message_id !== waitingFor) return;
    arrivedAt = performance.now();
    arrived?.();
  },
);
await client.connect(new StreamClientTransport(stdout, stdin));

const bare = new ZulipClient(creds);
const registration = await bare.register({ eventTypes: ['message'], narrow: [['channel', 'bare']] });
let lastEventId = registration.last_event_id;

const channelTimes: number[] = [];
const bareTimes: number[] = [];
for (let round = 0; round < WARMUP + ROUNDS; round++) {
  const measured = round >= WARMUP;

  const poll = bare.getEvents({ queueId: registration.queue_id, lastEventId }, { timeoutMs: 60_000 });
  await polling(sim, bot, (narrowed) => narrowed);
  const bareStart = performance.now();
  post('bare', `bare ${round}`);
  const events = await poll;
  const bareEnd = performance.now();
  for (const e of events.events) lastEventId = Math.max(lastEventId, e.id);
  if (measured) bareTimes.push(bareEnd - bareStart);

  await polling(sim, bot, (narrowed) => !narrowed);
  const heard = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const start = performance.now();
  waitingFor = String(post('general', `@**Bench Bot** ping ${round}`));
  await heard;
  if (measured) channelTimes.push(arrivedAt - start);
}

const bareMedian = median(bareTimes);
const channelMedian = median(channelTimes);
process.stdout.write(
  [
    `Claude Code channel wake latency over ${ROUNDS} rounds (${WARMUP} warm-up rounds each side), zulip-sim on loopback, stdio framing in process`,
    `  bare long-poll (GET /events)                   median ${bareMedian.toFixed(3)} ms   p90 ${quantile(bareTimes, 0.9).toFixed(3)} ms`,
    `  zulip-mcp to notifications/claude/channel      median ${channelMedian.toFixed(3)} ms   p90 ${quantile(channelTimes, 0.9).toFixed(3)} ms`,
    `  ratio channel event / bare                     ${(channelMedian / bareMedian).toFixed(2)} (target <= 1.5)`,
    '',
  ].join('\n'),
);

await bare.deleteQueue(registration.queue_id).catch(() => undefined);
await bare.close();
await client.close();
shutdown.abort();
await exited;
await sim.close();
await rm(stateDir, { recursive: true, force: true });
