// The server as a client meets it: the app's services built from environment variables, one
// MCP session (shared tools, the session's own tools, prompt and resources, the instructions)
// served to a real SDK Client over the in-memory transport.
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import type { ZulipSim } from '@zmcp/zulip-sim';
import { parseConfig } from '../../src/config.js';
import { silentLogger } from '../../src/logging.js';
import { createMcpServer } from '../../src/server.js';
import { buildServices } from '../../src/services.js';

/** A connected client and how to take it all down. */
export interface Connected {
  client: Client;
  /** The `instructions` of the `initialize` answer. */
  instructions: string | undefined;
  close(): Promise<void>;
}

/** The variables that serve `sim` as the user `botId`, state under `stateDir`. */
export function envFor(sim: ZulipSim, botId: number, stateDir: string): Record<string, string> {
  const creds = sim.credentials(botId);
  return {
    HOME: stateDir,
    ZULIP_SITE: creds.site,
    ZULIP_EMAIL: creds.email,
    ZULIP_API_KEY: creds.apiKey,
    ZULIP_STATE_DIR: stateDir,
    AGENT_TIMEZONE: 'UTC',
  };
}

/**
 * Builds the server from `env` as `main` does for one session and connects a client to it.
 * @throws whatever building the services throws (a configuration the server refuses).
 */
export async function connect(env: Record<string, string>): Promise<Connected> {
  const services = await buildServices(parseConfig(env, []), silentLogger);
  const agent = services.openSession({ launched: false, cursors: 'session' });
  const server = createMcpServer({
    name: 'zulip-mcp',
    version: 'test',
    instructions: services.instructions,
    tools: [...services.tools, ...agent.tools],
    prompts: agent.prompts,
    resources: agent.resources,
    resourceTemplates: agent.resourceTemplates,
    resourceChanges: agent.resourceChanges,
    deadlineMs: 20_000,
  });
  const client = new Client({ name: 'adversarial-test', version: '1' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(b);
  await client.connect(a);
  return {
    client,
    instructions: client.getInstructions(),
    async close() {
      await client.close();
      await agent.close();
      await services.close();
    },
  };
}
