import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { Server } from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import { type BinMain, defineMain, waitForAbort } from '@zmcp/cli';
import {
  createMcpTasks,
  createToolServer,
  type McpEra,
  type McpTasks,
  openMcpHandles,
  runServer,
  sharedServerEventBus,
} from '@zmcp/server-kit';
import { type ResourceChanges, ToolHost } from '@zmcp/tools';
import { binName, type Config, helpText, parseConfig } from './config.js';
import {
  followSessionResources,
  HandleSessions,
  handleTools,
  isSessionTool,
  type SessionHandlePayload,
  sessionResourceTemplates,
} from './handle-sessions.js';
import { type RunningHttpServer, startHttpServer } from './http.js';
import type { Logger } from './logging.js';
import { type AgentSessionServices, buildServices, type Services } from './services.js';
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

/** Tools whose wait becomes a task for a 2026-era client that supports tasks. */
const LONG_WAITS = ['listen'];
/** How long a 2026-era session handle stays valid. */
const HANDLE_TTL_SECONDS = 24 * 60 * 60;
/** Most 2026-era HTTP sessions one process keeps live (the rest stay in the state store). */
const MAX_LIVE_SESSIONS = 256;
/** What 2026-era HTTP callers are told beside the instructions: the session tools take a handle. */
const HANDLE_INSTRUCTIONS =
  'No session is kept between requests here: set_context (and start_monitoring) return a session handle; pass it as session to reply, listen, end_session and the other monitor tools.';

/**
 * The requests an instance is working on: the stdio transport must answer them before it closes
 * when the client ends its input (the SDK's own transport would abort them).
 */
class InFlight {
  #count = 0;
  #idle: (() => void)[] = [];

  readonly track = <T>(work: Promise<T>): Promise<T> => {
    this.#count++;
    const done = () => {
      // The SDK writes the answer once the handler's promise settles: let that happen first.
      setImmediate(() => {
        this.#count--;
        if (this.#count === 0) for (const wake of this.#idle.splice(0)) wake();
      });
    };
    work.then(done, done);
    return work;
  };

  /**
   * Resolves once nothing is in flight, or after `limitMs` (a call never answered must not hold the
   * exit). The lines read before are handed to their instance first: the entry does that within a
   * turn of the event loop (its factory and connect do no I/O), and a request handed over is in
   * flight from then on.
   */
  async drained(limitMs: number): Promise<void> {
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    if (this.#count === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, limitMs);
      timer.unref();
      this.#idle.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/**
 * A transport error as one log line: a message the SDK's JSON-RPC schema refused (it drops it,
 * unanswered) is named by its first issue, not dumped whole.
 */
function describeProtocolError(err: Error): string {
  const issues = (err as { issues?: { path?: unknown[]; message?: string; errors?: unknown[][] }[] }).issues;
  if (!Array.isArray(issues) || issues.length === 0) return err.message;
  const first = issues[0] as {
    path?: unknown[];
    message?: string;
    errors?: { path?: unknown[]; message?: string }[][];
  };
  // A union's own message says nothing: its first branch's first issue does.
  const inner = first.errors?.[0]?.[0] ?? first;
  const where = (inner.path ?? []).map(String).join('.') || '(message)';
  return `dropped a message that is not valid JSON-RPC: ${where}: ${inner.message ?? 'invalid'}`;
}

/** Runs `fn` when `server` closes, after the close hook it already has (its own clean-up). */
function onClosed(server: Server, fn: () => void): void {
  const previous = server.onclose;
  server.onclose = () => {
    previous?.();
    fn();
  };
}

/** The tools of one session's instances: the shared catalog, its session's, and the channels'. */
function sessionHost(
  config: Config,
  services: Services,
  agent: AgentSessionServices,
  logger: Logger,
  channels: boolean,
) {
  return new ToolHost(
    [...services.tools, ...agent.tools, ...(channels ? (services.channels?.tools ?? []) : [])],
    { deadlineMs: config.toolDeadlineMs, logger },
  );
}

/** One instance over a session's host: both eras, its prompt and resources. */
function sessionServer(
  config: Config,
  services: Services,
  agent: AgentSessionServices,
  host: ToolHost,
  logger: Logger,
  extra: {
    era: McpEra;
    tasks?: McpTasks | undefined;
    track?: (<T>(work: Promise<T>) => Promise<T>) | undefined;
    channels?: boolean | undefined;
  },
): Server {
  return createToolServer({
    name: binName,
    version: packageVersion(),
    era: extra.era,
    instructions: services.instructions,
    host,
    logger,
    deadlineMs: config.toolDeadlineMs,
    prompts: agent.prompts,
    resources: agent.resources,
    resourceTemplates: agent.resourceTemplates,
    resourceChanges: agent.resourceChanges,
    // 2026 era: the entry answers subscriptions/listen itself, so changes are followed for the
    // connection's life, which runs the monitor's event queue; only where the monitor is served.
    liveResourceUpdates: config.toolsets.includes('monitor'),
    tasks: extra.tasks,
    track: extra.track,
    ...(extra.channels === true && services.channels !== undefined
      ? { experimental: services.channels.experimental }
      : {}),
  });
}

async function serveStdioMain(config: Config, services: Services, logger: Logger, io: MainIo): Promise<void> {
  const stdin = io.stdin ?? process.stdin;
  // The stdio session is the launcher's own and keeps ZULIP_SESSION_ID's cursors.
  const agent = services.openSession({ launched: true, cursors: 'durable' });
  const channels = services.channels;
  // One host for the connection, whichever instance of it answers (both eras, probe included).
  const host = sessionHost(config, services, agent, logger, channels !== undefined);
  const inFlight = new InFlight();
  const tasks =
    channels === undefined
      ? createMcpTasks({
          store: services.state.store,
          account: services.state.account,
          tools: LONG_WAITS,
          // One caller: whoever holds the pipe.
          principal: () => 'stdio',
          logger,
        })
      : undefined;
  // The SDK's transport reads this, not stdin: at the end of stdin the requests in flight are
  // answered first, and only then does the transport see its input end.
  const input = new PassThrough();
  stdin.pipe(input, { end: false });
  const transport = new StdioServerTransport(input, io.stdout ?? process.stdout, {
    maxBufferSize: services.maxRequestBytes,
  });
  type Why = 'transport closed' | 'stdin ended' | 'shutdown requested';
  let done!: (why: Why) => void;
  const ended = new Promise<Why>((resolve) => {
    done = resolve;
  });
  stdin.once('end', () => done('stdin ended'));
  void waitForAbort(io.shutdown).then(() => done('shutdown requested'));
  // The entry and the instance both hear of a transport error: log each once, in one line.
  const reported = new WeakSet<Error>();
  const onerror = (err: Error) => {
    if (reported.has(err)) return;
    reported.add(err);
    logger.warn('MCP protocol error', { err: describeProtocolError(err) });
  };

  let close: () => Promise<void>;
  if (channels !== undefined) {
    // Claude Code registers channels only on a 2025-era connection, and it probes with
    // server/discover: served without serveStdio, that probe is answered -32601 and it falls back.
    const server = sessionServer(config, services, agent, host, logger, {
      era: 'legacy',
      track: inFlight.track,
      channels: true,
    });
    channels.attach(server);
    onClosed(server, () => done('transport closed'));
    server.onerror = onerror;
    await server.connect(transport);
    close = () => server.close();
  } else {
    // Both eras: the opening exchange picks one instance for the connection. A discarded probe
    // instance is replaced at once; the connection is over when no instance is left.
    let live = 0;
    const handle = serveStdio(
      (ctx) => {
        live++;
        logger.debug('protocol era chosen', { era: ctx.era === 'modern' ? '2026-07-28' : '2025' });
        const server = sessionServer(config, services, agent, host, logger, {
          era: ctx.era,
          tasks,
          track: inFlight.track,
        });
        server.onerror = onerror;
        onClosed(server, () => {
          live--;
          setImmediate(() => {
            if (live === 0) done('transport closed');
          });
        });
        return server;
      },
      { transport, onerror },
    );
    close = () => handle.close();
  }
  logger.info('serving MCP on stdio', {
    readOnly: config.readOnly,
    maxRequestBytes: services.maxRequestBytes,
    eras: channels === undefined ? '2026-07-28,2025' : '2025',
  });
  io.onReady?.({ transport: 'stdio' });
  const why = await ended;
  logger.info('shutting down', { why });
  // The client closed stdin after its last request: answer what was read first.
  if (why === 'stdin ended') await inFlight.drained(config.toolDeadlineMs + 1000);
  stdin.unpipe(input);
  input.end();
  await close();
  // Nothing reads stdin any more: a stdin still open (shutdown asked for) must not hold the exit.
  stdin.pause();
  await tasks?.close();
  await agent.close();
}

/** The resource updates of a per-request instance: none of its own (they go through the handler's bus). */
const noChanges: ResourceChanges = { subscribe: () => () => {} };

async function serveHttp(config: Config, services: Services, logger: Logger, io: MainIo): Promise<void> {
  const agents = new WeakMap<Server, AgentSessionServices>();
  const { store, account } = services.state;
  const handles = await openMcpHandles<SessionHandlePayload>({
    store,
    account,
    ttlSeconds: HANDLE_TTL_SECONDS,
  });
  const sessions = new HandleSessions({
    services,
    store,
    account,
    handles,
    logger,
    maxLive: MAX_LIVE_SESSIONS,
    idleMs: config.http.sessionIdleMs,
  });
  const tasks = createMcpTasks({ store, account, tools: LONG_WAITS, principal: handles.principal, logger });
  // What every 2026-era request lists: the prompt, and the session tools in their handle-taking
  // form (the same for every caller; bound per caller, converted once).
  const listing = services.openSession({ launched: false, cursors: 'session' });
  const perCaller = new Map<
    string,
    { host: ToolHost; templates: ReturnType<typeof sessionResourceTemplates> }
  >();
  const modernFor = (authInfo: Parameters<typeof handles.principal>[0]) => {
    const key = handles.principal(authInfo);
    let found = perCaller.get(key);
    if (found === undefined) {
      const sessionDefinitions = listing.tools.map((t) => t.definition).filter((d) => isSessionTool(d.name));
      const host = new ToolHost([...services.tools, ...handleTools(sessionDefinitions, sessions, authInfo)], {
        deadlineMs: config.toolDeadlineMs,
        logger,
      });
      found = { host, templates: sessionResourceTemplates(listing, sessions, authInfo) };
      perCaller.set(key, found);
    }
    return found;
  };
  let running: RunningHttpServer | undefined;
  const { broadcast } = services.state.backend;
  running = await startHttpServer({
    host: config.http.host,
    port: config.http.port,
    token: config.http.token,
    allowedOrigins: config.http.allowedOrigins,
    maxSessions: config.http.maxSessions,
    sessionIdleMs: config.http.sessionIdleMs,
    maxBodyBytes: services.maxRequestBytes,
    // The tool deadline and the grace a late handler gets (the server's default, 1 s).
    requestTimeoutMs: config.toolDeadlineMs + 1000,
    // With ZULIP_STATE_URL, a change any process sees reaches the listen streams of every process.
    bus:
      broadcast === undefined
        ? undefined
        : sharedServerEventBus(broadcast, `mcp-listen/${services.state.account}`, (err) =>
            logger.debug('a listen event went out without its params', { err }),
          ),
    logger,
    createServer: ({ era, authInfo }) => {
      if (era === 'legacy') {
        // Each 2025-era session gets cursors of its own, so one client can neither consume nor
        // stop another's.
        const agent = services.openSession({ launched: false, cursors: 'session' });
        const server = sessionServer(
          config,
          services,
          agent,
          sessionHost(config, services, agent, logger, false),
          logger,
          {
            era,
          },
        );
        agents.set(server, agent);
        return server;
      }
      const { host, templates } = modernFor(authInfo);
      return createToolServer({
        name: binName,
        version: packageVersion(),
        era,
        instructions: `${services.instructions}\n${HANDLE_INSTRUCTIONS}`,
        host,
        // One request per instance: a request id names nothing beyond it.
        dedupByRequestId: false,
        logger,
        deadlineMs: config.toolDeadlineMs,
        prompts: listing.prompts,
        resourceTemplates: templates,
        resourceChanges: noChanges,
        tasks,
      });
    },
    releaseServer: async (server) => {
      await agents.get(server)?.close();
    },
    onListen: (listen, ended) => {
      void followSessionResources(
        listen.resourceSubscriptions,
        sessions,
        listen.authInfo,
        (uri) => running?.notify.resourceUpdated(uri),
        ended,
        logger,
      ).catch((err: unknown) => logger.warn('a listen stream could not follow its resources', { err }));
    },
  });
  io.onReady?.({ transport: 'http', url: running.url });
  await waitForAbort(io.shutdown);
  logger.info('shutting down', { why: 'shutdown requested', sessions: running.sessionCount() });
  await running.close();
  await tasks.close();
  await sessions.close();
  await listing.close();
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
      else await serveStdioMain(config, services, logger, io);
    },
  });
}
