// Wake latency of `listen`: from a message posted in a simulated realm to the tool call
// returning, against a bare long-poll client (GET /events on a registered queue) in the same
// run. Prints both medians and their ratio. `BENCH_ROUNDS` sets the measured rounds (default 60).

import { performance } from 'node:perf_hooks';
import { AccessPolicy, ZulipClient } from '@zmcp/core';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { median, quantile, untilPolling } from '../../../test/support/wake-bench.js';
import {
  createAgentSession,
  createToolServices,
  loadRealmFacts,
  sessionCatalog,
  ToolHost,
} from '../src/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 60);
const WARMUP = 5;

/** Until a queue of `userId` narrowed to `topic` is blocked in a poll. */
function polling(sim: ZulipSim, userId: number, topic: string): Promise<void> {
  return untilPolling(sim, userId, (q) =>
    q.narrow.some(([op, operand]) => op === 'topic' && operand === topic),
  );
}

async function main(): Promise<void> {
  let ids: { ann: number; bot: number } | undefined;
  const sim = await startZulipSim({
    rateLimit: false,
    seed(realm) {
      const ann = realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' });
      const bot = realm.addUser({
        fullName: 'Bench Bot',
        email: 'bench-bot@example.test',
        isBot: true,
        botType: 1,
      });
      realm.addStream({ name: 'general', subscribers: [ann.userId, bot.userId] });
      ids = { ann: ann.userId, bot: bot.userId };
    },
  });
  if (ids === undefined) throw new Error('realm not seeded');
  const { ann, bot } = ids;
  const post = (topic: string, content: string) =>
    sim.realm.sendMessage({ senderId: ann, type: 'stream', stream: 'general', topic, content });

  // The session under test.
  const client = new ZulipClient({ ...sim.credentials(bot), readOnly: false });
  const facts = await loadRealmFacts(client, { readOnly: false });
  const services = createToolServices({
    client,
    policy: new AccessPolicy({ readOnly: false }),
    site: sim.url,
    identity: facts.identity,
    maxMessageLength: facts.maxMessageLength ?? 10_000,
    maxFileBytes: facts.maxFileBytes ?? 1_000_000,
  });
  const session = createAgentSession(services, { listenEmoji: 'eyes' });
  const host = new ToolHost(sessionCatalog(services, session).tools, { deadlineMs: 60_000 });
  const call = (name: string, args: unknown) => host.call(name, args);
  const trigger = post('bench-listen', '@**Bench Bot** hello');
  const bound = await call('set_context', {
    stream: 'general',
    topic: 'bench-listen',
    trigger_message_id: trigger,
  });
  if (bound.isError === true) throw new Error(bound.text);

  // The baseline: a bare long-poll client on its own queue.
  const bare = new ZulipClient({ ...sim.credentials(bot), readOnly: false });
  const registration = await bare.register({
    eventTypes: ['message'],
    narrow: [
      ['channel', 'general'],
      ['topic', 'bench-bare'],
    ],
  });
  let lastEventId = registration.last_event_id;

  const listenTimes: number[] = [];
  const bareTimes: number[] = [];
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    const measured = round >= WARMUP;

    const poll = bare.getEvents({ queueId: registration.queue_id, lastEventId }, { timeoutMs: 60_000 });
    await polling(sim, bot, 'bench-bare');
    const bareStart = performance.now();
    post('bench-bare', `bare ${round}`);
    const events = await poll;
    const bareEnd = performance.now();
    for (const e of events.events) lastEventId = Math.max(lastEventId, e.id);
    if (measured) bareTimes.push(bareEnd - bareStart);

    const listening = call('listen', { timeout_seconds: 60 });
    await polling(sim, bot, 'bench-listen');
    const listenStart = performance.now();
    post('bench-listen', `listen ${round}`);
    const result = await listening;
    const listenEnd = performance.now();
    if (result.isError === true || (result.structured as { status?: unknown }).status !== 'messages') {
      throw new Error(`listen did not wake on the message: ${result.text}`);
    }
    if (measured) listenTimes.push(listenEnd - listenStart);
    // Clean-up (indicator, queue, typing) runs after the result; let it finish outside the timing.
    await session.settled();
  }

  const bareMedian = median(bareTimes);
  const listenMedian = median(listenTimes);
  const lines = [
    `listen wake latency over ${ROUNDS} rounds (${WARMUP} warm-up rounds each side), zulip-sim on loopback`,
    `  bare long-poll (GET /events)   median ${bareMedian.toFixed(3)} ms   p90 ${quantile(bareTimes, 0.9).toFixed(3)} ms`,
    `  listen tool                    median ${listenMedian.toFixed(3)} ms   p90 ${quantile(listenTimes, 0.9).toFixed(3)} ms`,
    `  ratio listen / bare            ${(listenMedian / bareMedian).toFixed(2)} (target <= 1.5)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);

  await bare.deleteQueue(registration.queue_id).catch(() => undefined);
  await session.close();
  await bare.close();
  await client.close();
  await sim.close();
}

await main();
