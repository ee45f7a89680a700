/** A simulated, seeded Zulip realm on loopback, and the demo bot's credentials in it. */
export interface DemoRealm {
  /** Base URL of the realm, e.g. `http://127.0.0.1:40123`. */
  site: string;
  /** The demo bot's email. */
  email: string;
  /** The demo bot's API key (not a secret: the realm lives and dies with the process). */
  apiKey: string;
  /** How many messages the demo history holds. */
  messageCount: number;
  /** Stops the realm. */
  close(): Promise<void>;
}

/**
 * Starts `@zmcp/zulip-sim` on a free loopback port with its demo data (people, public and
 * private streams, a few hundred messages, DMs, reactions, an upload) and returns the
 * demo bot's credentials. The simulator is loaded only when asked for.
 *
 * @throws SimError `SIM_LISTEN_FAILED` when no loopback port can be opened.
 */
export async function startDemoRealm(): Promise<DemoRealm> {
  const { seedDemoRealm, startZulipSim } = await import('@zmcp/zulip-sim');
  let botId: number | undefined;
  let messageCount = 0;
  const sim = await startZulipSim({
    realmName: 'zulip-mcp demo',
    seed(realm) {
      const info = seedDemoRealm(realm);
      botId = info.botId;
      messageCount = info.messageCount;
    },
  });
  if (botId === undefined) {
    await sim.close();
    throw new Error('the demo realm was not seeded');
  }
  const { site, email, apiKey } = sim.credentials(botId);
  return { site, email, apiKey, messageCount, close: () => sim.close() };
}
