// pnpm --filter @zmcp/zulip-sim bench
// Stores 100k messages, then measures: programmatic and HTTP sends per second, the median
// time of a 1000-message GET /messages narrowed to a stream and topic, and resident memory.
// Every figure is printed against its target and against baselines measured in this run.
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startZulipSim } from '../src/index.js';

// A full collection before reading RSS, so the figure is what the store holds, not garbage.
setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

const STORED = 100_000;
const HTTP_SENDS = 20_000;
const CONCURRENCY = 32;
const FETCHES = 60;

function runClient(job: Record<string, unknown>): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', new URL('./load-client.ts', import.meta.url).pathname, JSON.stringify(job)],
      { maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`load client failed: ${stderr || error.message}`));
        else resolve(JSON.parse(stdout.trim().split('\n').at(-1) as string) as Record<string, number>);
      },
    );
  });
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const mib = (bytes: number) => bytes / 1024 / 1024;

// Baseline 1: a bare node:http server answering a fixed JSON body.
const echo = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"result":"success","msg":""}');
  });
});
await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
const echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;

const sim = await startZulipSim({ rateLimit: false, requestLogSize: 0 });
const { realm } = sim;
const users = Array.from({ length: 8 }, (_, i) => realm.addUser({ fullName: `Bench User ${i + 1}` }));
const bot = realm.addUser({ fullName: 'Bench Bot', isBot: true });
const members = [...users.map((u) => u.userId), bot.userId];
realm.addStream({ name: 'bench', subscribers: members });
realm.addStream({ name: 'other', subscribers: members.slice(0, 4) });

gc();
const rssBefore = process.memoryUsage().rss;
const loadStart = performance.now();
for (let i = 0; i < STORED; i++) {
  const sender = users[i % users.length] as (typeof users)[number];
  const content =
    i % 10 === 0
      ? `@**Bench User ${(i % 8) + 1}** please look at item ${i}`
      : i % 20 === 1
        ? `see https://example.org/items/${i} for **details**`
        : `message ${i}: the quick brown fox jumps over the lazy dog`;
  realm.sendMessage({
    senderId: sender.userId,
    type: 'stream',
    stream: i % 5 === 4 ? 'other' : 'bench',
    topic: `topic ${i % 80}`,
    content,
    client: 'ZulipPython',
  });
}
const loadSeconds = (performance.now() - loadStart) / 1000;
const programmaticRate = STORED / loadSeconds;

const c = sim.credentials(bot.userId);
const authorization = `Basic ${Buffer.from(`${c.email}:${c.apiKey}`).toString('base64')}`;
const base = { url: sim.url, authorization, concurrency: CONCURRENCY };

const echoRun = await runClient({
  ...base,
  url: echoUrl,
  path: '/',
  method: 'GET',
  mode: 'throughput',
  total: HTTP_SENDS,
});
const settingsRun = await runClient({
  ...base,
  path: '/api/v1/server_settings',
  method: 'GET',
  mode: 'throughput',
  total: HTTP_SENDS,
});
const sendRun = await runClient({
  ...base,
  path: '/api/v1/messages',
  method: 'POST',
  mode: 'throughput',
  total: HTTP_SENDS,
  send: { stream: 'bench', topicPrefix: 'http ', mention: '@**Bench User 2**' },
});

const topicSize = realm.stream('bench') ? await topicCount('topic 0') : 0;
async function topicCount(topic: string): Promise<number> {
  const narrow = JSON.stringify([
    { operator: 'channel', operand: 'bench' },
    { operator: 'topic', operand: topic },
  ]);
  const res = await fetch(
    `${sim.url}/api/v1/messages?anchor=newest&num_before=1000&narrow=${encodeURIComponent(narrow)}`,
    {
      headers: { authorization },
    },
  );
  const body = (await res.json()) as { messages: unknown[] };
  return body.messages.length;
}
const fetchPath = `/api/v1/messages?anchor=newest&num_before=1000&num_after=0&narrow=${encodeURIComponent(
  JSON.stringify([
    { operator: 'channel', operand: 'bench' },
    { operator: 'topic', operand: 'topic 0' },
  ]),
)}`;
const serverSide: number[] = [];
const stopObserving = sim.onRequest((r) => {
  if (r.method === 'GET' && r.path === '/api/v1/messages') serverSide.push(r.durationMs);
});
const fetchRun = await runClient({
  ...base,
  path: fetchPath,
  method: 'GET',
  mode: 'latency',
  total: FETCHES,
  concurrency: 1,
});
stopObserving();
// The client's first requests are its warm-up; the median is over the measured ones.
const measured = serverSide.slice(-FETCHES).sort((a, b) => a - b);
const serverMedian = measured[Math.floor(measured.length / 2)] as number;
const settingsLatency = await runClient({
  ...base,
  path: '/api/v1/server_settings',
  method: 'GET',
  mode: 'latency',
  total: FETCHES,
  concurrency: 1,
});

gc();
const { rss, heapUsed } = process.memoryUsage();
const stored = realm.messageCount();
await sim.close();
await new Promise<void>((r) => echo.close(() => r()));

const rows: [string, string, string, string][] = [
  [
    'HTTP sends/s (keep-alive, 32 in flight)',
    fmt(sendRun.perSecond as number),
    `${fmt((sendRun.perSecond as number) / 5000, 2)}x of 5,000`,
    `${fmt(((sendRun.perSecond as number) / (echoRun.perSecond as number)) * 100, 1)}% of bare node:http (${fmt(echoRun.perSecond as number)}/s), ${fmt(((sendRun.perSecond as number) / (settingsRun.perSecond as number)) * 100, 1)}% of GET /server_settings (${fmt(settingsRun.perSecond as number)}/s)`,
  ],
  [
    'programmatic sends/s (realm.sendMessage)',
    fmt(programmaticRate),
    `${fmt(programmaticRate / 5000, 2)}x of 5,000`,
    `${fmt(programmaticRate / (echoRun.perSecond as number), 2)}x the bare node:http request rate`,
  ],
  [
    `GET /messages, ${topicSize} msgs, stream+topic (median)`,
    `${fmt(fetchRun.medianMs as number, 2)} ms`,
    `${fmt(20 / (fetchRun.medianMs as number), 2)}x under 20 ms`,
    `${fmt((fetchRun.medianMs as number) / (settingsLatency.medianMs as number), 1)}x a GET /server_settings round trip (${fmt(settingsLatency.medianMs as number, 2)} ms); p95 ${fmt(fetchRun.p95Ms as number, 2)} ms; ${fmt(mib(fetchRun.bytes as number), 2)} MiB body; ${fmt(serverMedian, 2)} ms median inside the server`,
  ],
  [
    `resident memory, ${fmt(stored)} messages stored`,
    `${fmt(mib(rss), 1)} MiB`,
    `${fmt(200 / mib(rss), 2)}x under 200 MiB`,
    `${fmt(mib(rss - rssBefore), 1)} MiB grown while storing (${fmt(mib(rssBefore), 1)} MiB before; JS heap ${fmt(mib(heapUsed), 1)} MiB after a full GC)`,
  ],
];
const errors = (sendRun.errors as number) + (fetchRun.errors as number) + (settingsRun.errors as number);
const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]?.length ?? 0)));
process.stdout.write(
  `\n@zmcp/zulip-sim bench (Node ${process.version}, ${STORED.toLocaleString('en-US')} messages stored first)\n\n`,
);
for (const r of rows) {
  process.stdout.write(
    `${r[0].padEnd(widths[0] as number)}  ${r[1].padStart(widths[1] as number)}  ${r[2].padEnd(widths[2] as number)}  ${r[3]}\n`,
  );
}
process.stdout.write(`\nnon-200 answers during the run: ${errors}\n`);
