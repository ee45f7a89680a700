// Benchmarks of @zmcp/core against @zmcp/zulip-sim on loopback. Every figure is printed with a
// baseline measured in the same run and their ratio. Run: pnpm --filter @zmcp/core bench
import { performance } from 'node:perf_hooks';
import { startZulipSim } from '@zmcp/zulip-sim';
import { request } from 'undici';
import {
  createMessageLineFormatter,
  EventQueue,
  type Message,
  MessageSchema,
  narrow,
  normalizeMarkdown,
  ZulipClient,
} from '../src/index.js';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 0 ? ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2 : (sorted[mid] ?? 0);
}

function report(
  name: string,
  value: string,
  baselineName: string,
  baseline: string,
  ratio: number,
  target: string,
) {
  console.log(`${name}: ${value}`);
  console.log(`  baseline (${baselineName}): ${baseline}`);
  console.log(`  ratio: ${ratio.toFixed(3)}   target: ${target}`);
}

const sim = await startZulipSim({ rateLimit: false });
const bot = sim.realm.addUser({ fullName: 'Bench Bot', email: 'bench-bot@zulip.example', isBot: true });
const alice = sim.realm.addUser({ fullName: 'Alice', email: 'alice@zulip.example' });
sim.realm.addStream({ name: 'general', subscribers: [bot.userId, alice.userId] });
const creds = sim.credentials(bot.userId);
const client = new ZulipClient(creds);
const auth = `Basic ${Buffer.from(`${creds.email}:${creds.apiKey}`).toString('base64')}`;

for (let i = 0; i < 200; i++) {
  sim.realm.sendMessage({
    senderId: alice.userId,
    type: 'stream',
    stream: 'general',
    topic: `topic ${i % 7}`,
    content: `Message ${i}: **bold**, a [link](https://example.com/${i}) and \`code\`.`,
  });
}

// 1. Client overhead: 100 messages through core (validation included) vs a bare undici request.
{
  const terms = narrow().channel('general').build();
  const query = new URLSearchParams({
    anchor: 'newest',
    num_before: '100',
    num_after: '0',
    apply_markdown: 'false',
    narrow: JSON.stringify(terms),
  });
  const url = `${sim.url}/api/v1/messages?${query}`;
  const bare = async () => {
    const res = await request(url, { headers: { authorization: auth, accept: 'application/json' } });
    const body = (await res.body.json()) as { messages: unknown[] };
    if (body.messages.length !== 100) throw new Error('bare request returned the wrong count');
  };
  const core = async () => {
    const res = await client.getMessages({
      anchor: 'newest',
      numBefore: 100,
      narrow: terms,
      applyMarkdown: false,
    });
    if (res.messages.length !== 100) throw new Error('core returned the wrong count');
  };
  for (let i = 0; i < 50; i++) {
    await bare();
    await core();
  }
  const bareTimes: number[] = [];
  const coreTimes: number[] = [];
  const pairRatios: number[] = [];
  for (let i = 0; i < 600; i++) {
    // Back-to-back pairs, alternating who goes first, so load from elsewhere hits both alike.
    const order = i % 2 === 0 ? [bare, core] : [core, bare];
    const pair: number[] = [];
    for (const fn of order) {
      const t = performance.now();
      await fn();
      pair.push(performance.now() - t);
    }
    const [b, c] = i % 2 === 0 ? pair : [pair[1], pair[0]];
    bareTimes.push(b as number);
    coreTimes.push(c as number);
    pairRatios.push((c as number) / (b as number));
  }
  const c = median(coreTimes);
  const b = median(bareTimes);
  report(
    'client overhead, median latency of fetching 100 messages',
    `${c.toFixed(3)} ms`,
    'bare undici request + JSON parse',
    `${b.toFixed(3)} ms`,
    c / b,
    '<= 1.15',
  );
  console.log(`  median of per-pair ratios: ${median(pairRatios).toFixed(3)}`);
}

// 2. Event throughput through the queue iterator vs a bare long-poll loop over the same events.
{
  const rawQueue = async () => {
    const reg = await request(`${sim.url}/api/v1/register`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ event_types: '["message"]', apply_markdown: 'false' }).toString(),
    });
    return ((await reg.body.json()) as { queue_id: string }).queue_id;
  };
  const round = async (n: number) => {
    const queue = await EventQueue.open(client, { eventTypes: ['message'], applyMarkdown: false });
    const raw = await rawQueue();
    for (let i = 0; i < n; i++) {
      sim.realm.sendMessage({
        senderId: alice.userId,
        type: 'stream',
        stream: 'general',
        topic: 'load',
        content: `event ${i}`,
      });
    }
    // Both queues now hold the same n events; drain each and time it (closing is not timed).
    let t = performance.now();
    let seen = 0;
    let coreMs = 0;
    for await (const item of queue) {
      if (item.kind === 'event' && item.event.type === 'message') seen += 1;
      if (seen >= n) {
        coreMs = performance.now() - t;
        break;
      }
    }
    t = performance.now();
    let last = -1;
    let rawSeen = 0;
    while (rawSeen < n) {
      const res = await request(`${sim.url}/api/v1/events?queue_id=${raw}&last_event_id=${last}`, {
        headers: { authorization: auth },
      });
      const body = (await res.body.json()) as { events: { id: number; type: string }[] };
      for (const ev of body.events) {
        last = Math.max(last, ev.id);
        if (ev.type === 'message') rawSeen += 1;
      }
    }
    const rawMs = performance.now() - t;
    await request(`${sim.url}/api/v1/events`, {
      method: 'DELETE',
      headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: `queue_id=${raw}`,
    });
    return { core: n / (coreMs / 1000), raw: n / (rawMs / 1000) };
  };
  await round(2_000); // warm-up: JIT and the validation paths
  const N = 20_000;
  const rounds = [await round(N), await round(N), await round(N)];
  const coreRate = median(rounds.map((r) => r.core));
  const rawRate = median(rounds.map((r) => r.raw));
  report(
    `event throughput (${N} message events, median of 3 rounds)`,
    `${Math.round(coreRate)} events/s`,
    'bare GET /events loop, JSON parse only',
    `${Math.round(rawRate)} events/s`,
    coreRate / rawRate,
    '>= 20000 events/s',
  );
}

// 3. Formatter and normalization (the text half).
{
  const fetched = await client.getMessages({ anchor: 'newest', numBefore: 1000, applyMarkdown: false });
  const pool = fetched.messages;
  const messages: Message[] = Array.from({ length: 10_000 }, (_, i) => {
    const m = pool[i % pool.length] as Message;
    return MessageSchema.parse({ ...m, id: m.id + i * 100_000, flags: i % 10 === 0 ? ['mentioned'] : [] });
  });
  const format = createMessageLineFormatter({
    timeZone: 'Europe/Oslo',
    escape: true,
    selfUserId: bot.userId,
  });
  const naive = (m: Message) => `[${m.timestamp} id=${m.id}] ${m.sender_full_name}: ${m.content}`;
  const run = (fn: (m: Message) => string) => {
    let chars = 0;
    const start = performance.now();
    for (let r = 0; r < 5; r++) for (const m of messages) chars += fn(m).length;
    return { rate: (5 * messages.length) / ((performance.now() - start) / 1000), chars };
  };
  run(format);
  run(naive);
  const f = run(format);
  const n = run(naive);
  report(
    'formatter over 10,000 messages',
    `${Math.round(f.rate)} lines/s`,
    'a bare template string per message',
    `${Math.round(n.rate)} lines/s`,
    f.rate / n.rate,
    '(none set)',
  );

  const sample = [
    'Release notes for **v2**: see [the changelog](https://example.com/changes) and **[docs](https://example.com)**.',
    '| name | value |',
    '|------|-------|',
    '| a    | 1     |',
    '```ts',
    'const x = a * b; // **not bold**',
    '```',
    'Plain paragraph with *emphasis* and `inline **code**`.',
    '',
  ].join('\n');
  const text = sample.repeat(Math.ceil((4 * 1024 * 1024) / sample.length));
  const mb = Buffer.byteLength(text) / (1024 * 1024);
  const time = (fn: () => unknown) => {
    fn();
    const start = performance.now();
    for (let r = 0; r < 3; r++) fn();
    return (3 * mb) / ((performance.now() - start) / 1000);
  };
  const norm = time(() => normalizeMarkdown(text));
  const scan = time(() =>
    text
      .split('\n')
      .map((l) => l.replace(/\*\*/g, '**'))
      .join('\n'),
  );
  report(
    'markdown normalization',
    `${norm.toFixed(1)} MB/s`,
    'split lines + one regex replace per line + join',
    `${scan.toFixed(1)} MB/s`,
    norm / scan,
    '(none set)',
  );
}

await client.close();
await sim.close();
