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
  const { startDemoSim } = await import('@zmcp/zulip-sim');
  const { sim, demo } = await startDemoSim({ realmName: 'zulip-mcp demo' });
  const { site, email, apiKey } = sim.credentials(demo.botId);
  return { site, email, apiKey, messageCount: demo.messageCount, close: () => sim.close() };
}
