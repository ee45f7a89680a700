// A small simulated realm for the tests that run the whole server (main): Ann, a bot and
// #general, with the environment that points zulip-mcp at it.
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';

/** The realm, its people, and how to post and configure the server for it. */
export interface SmallRealm {
  sim: ZulipSim;
  annId: number;
  botId: number;
  /** Ann posts to #general, returning the message id. */
  post(content: string, topic?: string): number;
  /** Variables that serve this realm as the bot, state under `stateDir`. */
  env(stateDir: string, extra?: Record<string, string>): Record<string, string>;
}

/** Starts the realm; close it with `sim.close()`. */
export async function startSmallRealm(realmName = 'small'): Promise<SmallRealm> {
  let annId = 0;
  let botId = 0;
  const sim = await startZulipSim({
    rateLimit: false,
    realmName,
    seed(realm) {
      annId = realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' }).userId;
      botId = realm.addUser({ fullName: 'Helper Bot', email: 'helper@example.test', isBot: true }).userId;
      realm.addStream({ name: 'general', subscribers: [annId, botId] });
    },
  });
  return {
    sim,
    annId,
    botId,
    post: (content, topic = 't') =>
      sim.realm.sendMessage({ senderId: annId, type: 'stream', stream: 'general', topic, content }),
    env(stateDir, extra = {}) {
      const { site, email, apiKey } = sim.credentials(botId);
      return {
        HOME: stateDir,
        ZULIP_STATE_DIR: stateDir,
        ZULIP_REALM: site,
        ZULIP_EMAIL: email,
        ZULIP_API_KEY: apiKey,
        ZMCP_LOG_LEVEL: 'info',
        ZULIP_TOOLSETS: 'all',
        ...extra,
      };
    },
  };
}
