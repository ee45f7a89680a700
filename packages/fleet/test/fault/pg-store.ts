// The fault schedule's store module (`ChildConfig.store`) for PostgreSQL: the engine's child opens
// the fleet's backend, and takes its events from the bot's shared event queue.
import type { ZulipClient } from '@zmcp/core';
import { stateAccount } from '@zmcp/delivery';
import { openStateBackend } from '@zmcp/fleet';

export async function openFaultStore(options: Record<string, unknown>) {
  const backend = await openStateBackend({
    url: options.url as string,
    schema: options.schema as string,
    lockHeartbeatMs: 200,
    lockHeartbeatTimeoutMs: 2_000,
    events: { electionIntervalMs: 100, pollIntervalMs: 200, heartbeatMs: 200 },
  });
  return {
    store: backend.store,
    events: (client: ZulipClient) =>
      backend.events?.source(client, stateAccount({ site: client.site, userId: options.botId as number })),
  };
}
