import type { Readable, Writable } from 'node:stream';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { type BinMain, defineMain, waitForAbort } from '@zmcp/cli';
import { runServer } from '@zmcp/server-kit';
import { binName, type Config, helpText, parseConfig } from './config.js';
import { startHttpServer } from './http.js';
import type { Logger } from './logging.js';
import { createMcpServer, type McpSession } from './register.js';
import { type AgentSessionServices, buildServices, type Services } from './services.js';
import { LineStdioTransport } from './stdio.js';
import { packageVersion } from './version.js';

/** Streams and hooks of one run of {@link main}; each defaults to the process's own. */
export interface MainIo {
  stdin?: Readable | undefined;
  stdout?: Writable | undefined;
  stderr?: Writable | undefined;
  /** Aborting it shuts the server down cleanly (the CLI aborts it on SIGINT/SIGTERM). */
  shutdown?: AbortSignal | undefined;
  /** Called once the server is serving; for HTTP, with the endpoint URL. */
  onReady?: ((info: { transport: 'stdio' } | { transport: 'http'; url: string }) => void) | undefined;
}

/** One MCP session's server: the shared catalog plus the tools, prompt and resources of its own agent session. */
function sessionServer(
  config: Config,
  services: Services,
  logger: Logger,
  transport: 'stdio' | 'http',
): { server: McpSession; agent: AgentSessionServices } {
  // The stdio session is the launcher's own and keeps ZULIP_SESSION_ID's cursors; each HTTP
  // session gets cursors of its own, so one client can neither consume nor stop another's.
  const agent = services.openSession(
    transport === 'stdio' ? { launched: true, cursors: 'durable' } : { launched: false, cursors: 'session' },
  );
  const server = createMcpServer({
    name: binName,
    version: packageVersion(),
    instructions: services.instructions,
    tools: [
      ...services.tools,
      ...agent.tools,
      ...(transport === 'stdio' ? (services.channels?.tools ?? []) : []),
    ],
    prompts: agent.prompts,
    resources: agent.resources,
    resourceTemplates: agent.resourceTemplates,
    resourceChanges: agent.resourceChanges,
    logger,
    deadlineMs: config.toolDeadlineMs,
    // Claude Code channels belong to the stdio session (configuration refuses them with --http).
    ...(transport === 'stdio' && services.channels !== undefined
      ? {
          experimental: services.channels.experimental,
          setup: (sdk: Server) => services.channels?.attach(sdk),
        }
      : {}),
  });
  return { server, agent };
}

async function serveStdio(config: Config, services: Services, logger: Logger, io: MainIo): Promise<void> {
  const stdin = io.stdin ?? process.stdin;
  const { server, agent } = sessionServer(config, services, logger, 'stdio');
  const transport = new LineStdioTransport(stdin, io.stdout ?? process.stdout, {
    maxMessageBytes: services.maxRequestBytes,
    onReceived: ({ method, id }) => logger.debug('received', { method, id }),
  });
  type Why = 'transport closed' | 'stdin ended' | 'shutdown requested';
  const ended = new Promise<Why>((resolve) => {
    server.onclose = () => resolve('transport closed');
    stdin.once('end', () => resolve('stdin ended'));
    void waitForAbort(io.shutdown).then(() => resolve('shutdown requested'));
  });
  server.onerror = (err) => logger.warn('MCP protocol error', { err });
  await server.connect(transport);
  logger.info('serving MCP on stdio', {
    readOnly: config.readOnly,
    maxRequestBytes: services.maxRequestBytes,
  });
  io.onReady?.({ transport: 'stdio' });
  const why = await ended;
  logger.info('shutting down', { why });
  // The client closed stdin after its last request: answer what was read first.
  if (why === 'stdin ended') await transport.drained(config.toolDeadlineMs + 1000);
  await server.close();
  await agent.close();
}

async function serveHttp(config: Config, services: Services, logger: Logger, io: MainIo): Promise<void> {
  const agents = new WeakMap<McpSession, AgentSessionServices>();
  const running = await startHttpServer({
    host: config.http.host,
    port: config.http.port,
    token: config.http.token,
    allowedOrigins: config.http.allowedOrigins,
    maxSessions: config.http.maxSessions,
    sessionIdleMs: config.http.sessionIdleMs,
    maxBodyBytes: services.maxRequestBytes,
    // The tool deadline and the grace a late handler gets (the server's default, 1 s).
    requestTimeoutMs: config.toolDeadlineMs + 1000,
    logger,
    createServer: () => {
      const { server, agent } = sessionServer(config, services, logger, 'http');
      agents.set(server, agent);
      return server;
    },
    releaseServer: async (server) => {
      await agents.get(server)?.close();
    },
  });
  io.onReady?.({ transport: 'http', url: running.url });
  await waitForAbort(io.shutdown);
  logger.info('shutting down', { why: 'shutdown requested', sessions: running.sessionCount() });
  await running.close();
}

/**
 * Runs the `zulip-mcp` command: parses `argv` and `env`, prints help or the version, or
 * builds the services and serves them on stdio (default) or Streamable HTTP (`--http`)
 * until the client goes away or `io.shutdown` fires, then closes everything. Resolves
 * with the exit code: 0 on a clean run, 1 when start-up fails, 2 on a bad configuration (a
 * bad variable or flag, missing or malformed credentials or zuliprc, credentials Zulip refuses,
 * a missing upload root).
 * Only help, the version and the JSON-RPC wire go to stdout; everything else to stderr.
 */
export const main: BinMain<MainIo> = defineMain({
  bin: binName,
  help: helpText,
  version: packageVersion,
  configure: (env, argv) => parseConfig(env, argv),
  run: serve,
});

/** Builds the services for a valid configuration and serves them until the end of the session. */
function serve(config: Config, io: MainIo): Promise<number> {
  return runServer({
    bin: binName,
    config,
    stderr: io.stderr ?? process.stderr,
    secrets: [config.http.token],
    demo: { realmName: 'zulip-mcp demo' },
    open: ({ config, logger, credentials }) => buildServices(config, logger, credentials),
    serve: async (services, { config, logger }) => {
      if (config.transport === 'http') await serveHttp(config, services, logger, io);
      else await serveStdio(config, services, logger, io);
    },
  });
}
