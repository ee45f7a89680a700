/** A simulated, seeded Zulip realm on loopback, and the demo bot's credentials in it. */
export interface DemoRealm {
  site: string;
  email: string;
  /** Not a secret: the realm lives and dies with the process. */
  apiKey: string;
  messageCount: number;
  close(): Promise<void>;
}

/**
 * Starts `@zmcp/zulip-sim` on a free loopback port with its demo data (people, public and private
 * streams, a few hundred messages, DMs, reactions, an image). The simulator is loaded only when asked.
 *
 * @throws SimError `SIM_LISTEN_FAILED` when no loopback port can be opened.
 */
export async function startDemoRealm(): Promise<DemoRealm> {
  const { startDemoSim } = await import('@zmcp/zulip-sim');
  const { sim, demo } = await startDemoSim({ realmName: 'zulip-mcpl demo' });
  const { site, email, apiKey } = sim.credentials(demo.botId);
  return { site, email, apiKey, messageCount: demo.messageCount, close: () => sim.close() };
}
