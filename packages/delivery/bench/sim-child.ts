// A Zulip simulator in its own process for the delivery bench, so the engine's process holds
// only the engine (its RSS is the engine's) and the realm's work runs on the other core.
// The parent asks for messages in chunks; the child sends them and says when it has.
import { startZulipSim } from '@zmcp/zulip-sim';

type Request = { t: 'setup'; streams: number } | { t: 'send'; count: number } | { t: 'stop' };

const sim = await startZulipSim({ rateLimit: false, requestLogSize: 0, heartbeatIntervalMs: 30_000 });
let streams: string[] = [];
let sender = 0;
let sent = 0;

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
    let last = 0;
    for (let i = 0; i < message.count; i++) {
      last = sim.realm.sendMessage({
        senderId: sender,
        type: 'stream',
        stream: streams[sent % streams.length] as string,
        topic: `topic ${sent % 7}`,
        content: `Message ${sent}: **bold**, a [link](https://example.com/${sent}) and \`code\`.`,
      });
      sent += 1;
    }
    process.send?.({ t: 'sent', last, total: sent });
  } else if (message.t === 'stop') {
    await sim.close();
    process.exit(0);
  }
});
process.send?.({ t: 'up' });
