import { startZulipSim } from '@zmcp/zulip-sim';
import { expect, it } from 'vitest';
import { EventQueue, HistoryPager, narrow, ZulipClient } from '../src/index.js';

// The README's example, with `console.log` collected instead of printed.
it('runs the README example', async () => {
  const printed: unknown[] = [];
  const log = (...args: unknown[]) => printed.push(args);

  const sim = await startZulipSim();
  const bot = sim.realm.addUser({ fullName: 'Helper Bot', isBot: true });
  const alice = sim.realm.addUser({ fullName: 'Alice' });
  sim.realm.addStream({ name: 'general', subscribers: [bot.userId, alice.userId] });

  const client = new ZulipClient({ ...sim.credentials(bot.userId), timeoutMs: 10_000 });

  await client.sendMessage({ type: 'stream', to: 'general', topic: 'deploys', content: 'shipped **v2**' });
  const history = new HistoryPager(client, { narrow: narrow().channel('general').topic('deploys').build() });
  const { messages } = await history.newest(50);
  log(messages.map((m) => `${m.id} ${m.sender_full_name}: ${m.content}`));

  const queue = await EventQueue.open(client, { eventTypes: ['message'], applyMarkdown: false });
  sim.realm.sendMessage({
    senderId: alice.userId,
    type: 'stream',
    stream: 'general',
    topic: 'deploys',
    content: 'nice',
  });
  for await (const item of queue) {
    if (item.kind === 'gap') {
      await history.since(item.lastMessageId ?? 0, 1000);
    } else if (item.kind === 'event' && item.event.type === 'message') {
      log('live:', item.event.message.content);
      break;
    }
  }

  await client.close();
  await sim.close();

  expect(printed).toEqual([
    [[expect.stringMatching(/^\d+ Helper Bot: shipped \*\*v2\*\*$/)]],
    ['live:', 'nice'],
  ]);
  expect(queue.closed).toBe(true);
});
