/** A simulated, seeded Zulip realm for `--demo`, and the people and bot in it. */
export interface DemoRealm {
  site: string;
  /** The demo bot (not a secret: the realm lives and dies with the process). */
  bot: { userId: number; email: string; apiKey: string; fullName: string };
  /** The demo's people, who may all call the bot. */
  people: readonly number[];
  /** Posts the scripted first mention, from one of the people in #general; returns its id. */
  mention(): number;
  close(): Promise<void>;
}

/**
 * Starts `@zmcp/zulip-sim` on a free loopback port with its demo data. The simulator is loaded
 * only when asked for.
 *
 * @throws SimError `SIM_LISTEN_FAILED` when no loopback port can be opened.
 */
export async function startDemoRealm(): Promise<DemoRealm> {
  const { startDemoSim } = await import('@zmcp/zulip-sim');
  const { sim, demo: seeded } = await startDemoSim({ realmName: 'zulip-agent demo' });
  const botUser = sim.realm.user(seeded.botId);
  if (botUser === undefined) {
    await sim.close();
    throw new Error('the demo realm has no bot');
  }
  const { site, email, apiKey } = sim.credentials(seeded.botId);
  const people = Object.values(seeded.users);
  return {
    site,
    bot: { userId: seeded.botId, email, apiKey, fullName: botUser.fullName },
    people,
    mention: () =>
      sim.realm.sendMessage({
        senderId: people[0] as number,
        type: 'stream',
        stream: 'general',
        topic: 'zulip-agent demo',
        content: `@**${botUser.fullName}** could you summarise what this stream talked about recently?`,
      }),
    close: () => sim.close(),
  };
}
