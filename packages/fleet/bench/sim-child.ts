// A Zulip simulator in its own process for the fleet bench, so the engine's process holds only
// the engine and its store, and the realm works on the other core. The parent asks for messages
// in chunks; the child sends them and says when it has.
import { startZulipSim } from '@zmcp/zulip-sim';

type Request =
  | { t: 'setup'; streams: number }
  | { t: 'send'; count: number }
  | { t: 'counts' }
  | { t: 'stop' };

const sim = await startZulipSim({ rateLimit: false, requestLogSize: 0, heartbeatIntervalMs: 30_000 });
let streams: string[] = [];
let sender = 0;
let sent = 0;
// What the engines asked the realm: history pages, queue registrations, and the live queues.
const counts = { history: 0, registers: 0 };
sim.onRequest((r) => {
  if (r.method === 'GET' && r.path.endsWith('/messages')) counts.history += 1;
  if (r.method === 'POST' && r.path.endsWith('/register')) counts.registers += 1;
});

process.on('message', async (raw) => {
  const message = raw as Request;
  if (message.t === 'setup') {
    const bot = sim.realm.addUser({
      fullName: 'Bench Bot',
      email: 'bench-bot@zulip.example',
      isBot: true,
    }).userId;
    sender = sim.realm.addUser({ fullName: 'Ann Lee', email: 'ann@zulip.example' }).userId;
    streams = Array.from({ length: message.streams }, (_, i) => `stream-${i}`);
    for (const name of streams) sim.realm.addStream({ name, subscribers: [bot, sender] });
    process.send?.({ t: 'ready', credentials: sim.credentials(bot), streams });
  } else if (message.t === 'send') {
    for (let i = 0; i < message.count; i++) {
      sim.realm.sendMessage({
        senderId: sender,
        type: 'stream',
        stream: streams[sent % streams.length] as string,
        topic: `topic ${sent % 7}`,
        content: `Message ${sent}: **bold**, a [link](https://example.com/${sent}) and \`code\`.`,
      });
      sent += 1;
    }
    process.send?.({ t: 'sent', total: sent });
  } else if (message.t === 'counts') {
    process.send?.({ t: 'counts', ...counts, queues: sim.queues().length });
  } else if (message.t === 'stop') {
    await sim.close();
    process.exit(0);
  }
});
// The bench is gone (it failed or was killed): so is its realm.
process.on('disconnect', () => process.exit(0));
process.send?.({ t: 'up' });
