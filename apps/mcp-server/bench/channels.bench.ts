// `pnpm --filter @zmcp/mcp-server bench:channels`: wake latency of a Claude Code channel event,
// from a mention posted in zulip-sim to `notifications/claude/channel` reaching a client over
// zulip-mcp's stdio framing, against a bare long-poll client (GET /events on a registered queue)
// in the same run. Prints both medians and their ratio. `BENCH_ROUNDS` sets the rounds (default 60).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import {
  Client,
  type JSONRPCMessage,
  ReadBuffer,
  serializeMessage,
  type Transport,
} from '@modelcontextprotocol/client';
import { ZulipClient } from '@zmcp/core';
import { startZulipSim } from '@zmcp/zulip-sim';
import { z } from 'zod';
import { alternateWithBare, arrivalClock, wakeRealm, wakeReport } from '../../../test/support/wake-bench.js';
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

const realm = wakeRealm(await startZulipSim({ rateLimit: false }));
const { sim, ann } = realm;
const stateDir = await mkdtemp(join(tmpdir(), 'zmcp-channels-bench-'));
const creds = sim.credentials(realm.bot);
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

// The client side, as Claude Code has it: it probes server/discover, falls back to the 2025
// handshake (channels are served only there), and handles the channel event.
const client = new Client(
  { name: 'claude-code', version: 'bench' },
  { versionNegotiation: { mode: 'auto' } },
);
const clock = arrivalClock();
client.setNotificationHandler(
  'notifications/claude/channel',
  { params: z.looseObject({ content: z.string(), meta: z.record(z.string(), z.string()).optional() }) },
  (params) => clock.heard(params.meta?.message_id ?? ''),
);
await client.connect(new StreamClientTransport(stdout, stdin));

const times = await alternateWithBare(realm, {
  bare: new ZulipClient(creds),
  rounds: ROUNDS,
  warmup: WARMUP,
  measured: (round) => clock.time(() => realm.post('general', `@**Bench Bot** ping ${round}`)),
});
process.stdout.write(
  wakeReport(
    `Claude Code channel wake latency over ${ROUNDS} rounds (${WARMUP} warm-up rounds each side), zulip-sim on loopback, stdio framing in process`,
    {
      bare: 'bare long-poll (GET /events)',
      measured: 'zulip-mcp to notifications/claude/channel',
      ratio: 'ratio channel event / bare',
    },
    times,
    1.5,
  ),
);

await client.close();
shutdown.abort();
await exited;
await sim.close();
await rm(stateDir, { recursive: true, force: true });
