import { startZulipSim, type ZulipSim, type ZulipSimOptions } from '@zmcp/zulip-sim';
import { ZulipClient, type ZulipClientOptions } from '../../src/client/zulip-client.js';

/** A simulator with a bot, two humans, a public and a private stream, and a client for the bot. */
export interface SimRealmFixture {
  sim: ZulipSim;
  bot: { userId: number; email: string };
  alice: { userId: number; email: string };
  bob: { userId: number; email: string };
  general: { streamId: number };
  secret: { streamId: number };
  client: ZulipClient;
  clientFor(userId: number, overrides?: Partial<ZulipClientOptions>): ZulipClient;
  close(): Promise<void>;
}

export async function startSimRealm(
  options: ZulipSimOptions = {},
  clientOptions: Partial<ZulipClientOptions> = {},
): Promise<SimRealmFixture> {
  const sim = await startZulipSim({ rateLimit: false, ...options });
  const bot = sim.realm.addUser({ fullName: 'Helper Bot', email: 'helper-bot@zulip.example', isBot: true });
  const alice = sim.realm.addUser({ fullName: 'Alice', email: 'alice@zulip.example' });
  const bob = sim.realm.addUser({ fullName: 'Bob', email: 'bob@zulip.example' });
  const general = sim.realm.addStream({
    name: 'general',
    subscribers: [bot.userId, alice.userId, bob.userId],
  });
  const secret = sim.realm.addStream({
    name: 'secret',
    inviteOnly: true,
    subscribers: [bot.userId, alice.userId],
  });
  const clients: ZulipClient[] = [];
  const clientFor = (userId: number, overrides: Partial<ZulipClientOptions> = {}) => {
    const c = new ZulipClient({
      ...sim.credentials(userId),
      retry: { baseDelayMs: 5, maxDelayMs: 50 },
      ...clientOptions,
      ...overrides,
    });
    clients.push(c);
    return c;
  };
  const client = clientFor(bot.userId);
  return {
    sim,
    bot: { userId: bot.userId, email: bot.email },
    alice: { userId: alice.userId, email: alice.email },
    bob: { userId: bob.userId, email: bob.email },
    general: { streamId: general.streamId },
    secret: { streamId: secret.streamId },
    client,
    clientFor,
    close: async () => {
      await Promise.all(clients.map((c) => c.close()));
      await sim.close();
    },
  };
}
