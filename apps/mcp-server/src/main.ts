import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { AuthInfo, Server } from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import { type BinMain, defineMain, waitForAbort } from '@zmcp/cli';
import { type Credentials, errorCode, learnSecret } from '@zmcp/core';
import {
  addDeliveryPanel,
  addToolCallPanel,
  createMcpTasks,
  createToolServer,
  deliveryProgress,
  type FleetWatch,
  type McpEra,
  type McpTasks,
  openMcpHandles,
  runServer,
  sharedServerEventBus,
  type ToolCallObservation,
  watchFleet,
  watchQueueOwner,
} from '@zmcp/server-kit';
import { type ResourceChanges, ToolHost } from '@zmcp/tools';
import { z } from 'zod';
import { AuditLog } from './audit.js';
import { binName, type Config, helpText, parseConfig } from './config.js';
import { McpServerError } from './errors.js';
import {
  followSessionResources,
  HandleSessions,
  handleTools,
  isSessionTool,
  type SessionHandlePayload,
  sessionResourceTemplates,
} from './handle-sessions.js';
import { personServices } from './hosting.js';
import { type HttpListen, type RunningHttpServer, startHttpServer } from './http.js';
import type { Logger } from './logging.js';
import { loadRealmConfigs } from './realms.js';
import { type AgentSessionServices, buildServices, type Services } from './services.js';
import { type RealmsAdmin, realmsAdmin, tokenAdmin, tokenToolsets } from './token-admin.js';
import { parseExpiry, type TokenRefusal, TokenRegistry, tokenIdOf } from './tokens.js';
import { auditMain, tokensMain } from './tokens-command.js';
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
  /**
   * The clock idle per-person services are measured by (`ZMCP_TOKEN_IDLE_MS`). Default `Date.now`;
   * tests advance their own.
   */
  now?: (() => number) | undefined;
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
    observe?: ((call: ToolCallObservation) => void) | undefined;
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
    observe: extra.observe,
    ...(extra.channels === true && services.channels !== undefined
      ? { experimental: services.channels.experimental }
      : {}),
  });
}

async function serveStdioMain(
  config: Config,
  services: Services,
  logger: Logger,
  io: MainIo,
  observe: (call: ToolCallObservation) => void,
): Promise<void> {
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
      observe,
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
          observe,
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
  // The agent is going: a permission prompt still waiting is denied now, not at its timeout.
  await services.endApprovals();
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

/** What one caller's requests are served from: the process's own services, or one person's. */
interface Tenant {
  createServer(era: McpEra, authInfo: AuthInfo | undefined): Server;
  releaseServer(server: Server): Promise<void>;
  onListen(listen: HttpListen, ended: Promise<void>, notify: (uri: string) => void): void;
  close(): Promise<void>;
}

/** Serves `services` over HTTP, both eras: 2025-era sessions with their own cursors, 2026-era requests through handles. */
async function openTenant(
  config: Config,
  services: Services,
  logger: Logger,
  observe: (call: ToolCallObservation) => void,
): Promise<Tenant> {
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
  return {
    createServer(era, authInfo) {
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
          { era, observe },
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
        observe,
      });
    },
    async releaseServer(server) {
      await agents.get(server)?.close();
    },
    onListen(listen, ended, notify) {
      void followSessionResources(
        listen.resourceSubscriptions,
        sessions,
        listen.authInfo,
        notify,
        ended,
        logger,
      ).catch((err: unknown) => logger.warn('a listen stream could not follow its resources', { err }));
    },
    async close() {
      await tasks.close();
      await sessions.close();
      await listing.close();
    },
  };
}

/**
 * Per-person tokens (`ZMCP_HTTP_AUTH=people`): each request's token is checked against the state
 * store (so a revocation anywhere is seen on the next request), and each token is served by a
 * tenant of its own over the person's services, built once and kept while the token is good.
 */
function peopleAuth(
  config: Config,
  realms: readonly Services[],
  logger: Logger,
  observe: (call: ToolCallObservation) => void,
  now: () => number,
  leaseWait: ((tokenId: string) => Promise<(() => Promise<void>) | undefined>) | undefined,
) {
  const secretKey = config.http.secretKey as Buffer;
  const audit = new AuditLog({ path: config.http.auditLog, maxBytes: config.http.auditMaxBytes });
  // Each realm's tokens are kept under its own state account, bound to its bot.
  const served = realms.map((services) => {
    const registry = new TokenRegistry({
      store: services.state.store,
      account: services.state.account,
      secretKey,
    });
    return {
      services,
      registry,
      admin: tokenAdmin({ registry, config, site: services.account.site, audit, logger }),
    };
  });
  /** The token's grant in the realm that issued it, or why it is refused. */
  const check = async (token: string) => {
    for (const realm of served) {
      const grant = await realm.registry.check(token);
      if (grant !== 'unknown') return { realm, grant };
    }
    return { realm: undefined, grant: 'unknown' as const };
  };
  /** The person's key, decrypted: the logger (and the status page) learn it before anything can log it. */
  const learnt = (email: string, apiKey: string): string => {
    learnSecret(logger, apiKey);
    // As the person's requests carry it (HTTP Basic), as runServer does for the bot's key.
    learnSecret(logger, Buffer.from(`${email}:${apiKey}`).toString('base64'));
    return apiKey;
  };
  const tenants = new Map<string, Promise<Tenant>>();
  /**
   * When each token's services were last used, what holds them open now (a server of a session
   * or request, a listen stream), and the long waits they run: closed once idle for
   * ZMCP_TOKEN_IDLE_MS with nothing held.
   */
  const use = new Map<string, { label: string; last: number; held: number; waiting: () => number }>();
  const drop = (id: string) => {
    const gone = tenants.get(id);
    tenants.delete(id);
    use.delete(id);
    void gone?.then((t) => t.close()).catch(() => undefined);
  };
  const sweep = () => {
    const at = now();
    for (const [id, u] of use) {
      if (u.held > 0 || u.waiting() > 0 || at - u.last < config.http.tokenIdleMs) continue;
      logger.info('closed a token’s idle services', { token: u.label, idleMs: at - u.last });
      drop(id);
    }
  };
  // Quiet servers sweep too: every request sweeps as well, so a test's clock needs no timer.
  const sweeper = setInterval(sweep, Math.min(60_000, Math.max(1000, config.http.tokenIdleMs / 4)));
  sweeper.unref();
  const verifyToken = async (token: string): Promise<AuthInfo | { refused: string }> => {
    sweep();
    const { realm, grant } = await check(token);
    // A token the registry knows is a credential: never shown from now on, whatever logs it.
    if (grant !== 'malformed' && grant !== 'unknown') learnSecret(logger, token);
    if (typeof grant === 'string' || realm === undefined) {
      const id = tokenIdOf(token);
      if (id !== undefined) drop(id);
      return { refused: refusalText[typeof grant === 'string' ? grant : 'unknown'] };
    }
    const id = grant.info.id;
    let tenant = tenants.get(id);
    const used = use.get(id);
    if (used !== undefined) used.last = now();
    if (tenant === undefined) {
      const usage = { label: grant.info.label, last: now(), held: 0, waiting: () => 0 };
      use.set(id, usage);
      tenant = Promise.resolve()
        .then(() =>
          personServices({
            config,
            bot: realm.services,
            token: grant.info,
            apiKey: learnt(grant.info.email, grant.apiKey()),
            audit,
            waits: {
              max: config.http.maxWaitsPerToken,
              tools: LONG_WAITS,
              lease: leaseWait === undefined ? undefined : () => leaseWait(id),
            },
            logger,
          }),
        )
        .then((person) => {
          usage.waiting = person.waiting;
          return person;
        })
        .then((person) =>
          openTenant(config, person, logger, observe).then((t) => ({
            ...t,
            close: async () => {
              await t.close();
              await person.close();
            },
          })),
        );
      tenants.set(id, tenant);
      tenant.catch(() => {
        tenants.delete(id);
        use.delete(id);
      });
    }
    try {
      await tenant;
    } catch (err) {
      logger.warn('a token’s person could not be served', {
        token: grant.info.label,
        code: errorCode(err) ?? 'UNKNOWN',
      });
      const code = errorCode(err);
      return {
        refused:
          code === 'CORE_UNAUTHORIZED'
            ? 'Zulip no longer accepts the API key kept with this token; ask for a new token'
            : code === 'MCP_SECRET_KEY_MISMATCH'
              ? 'the server cannot read the key kept with this token; ask its operator'
              : code === 'CORE_CONFIG_INVALID'
                ? 'the server’s write allowlist names a stream this person cannot see; ask its operator'
                : 'the person’s account could not be opened; try again later',
      };
    }
    return { token, clientId: id, scopes: [...grant.info.toolsets] };
  };
  const tenantOf = (authInfo: AuthInfo | undefined): Promise<Tenant> => {
    const tenant = authInfo === undefined ? undefined : tenants.get(authInfo.clientId);
    if (tenant === undefined) throw new McpServerError('MCP_TOKEN_UNKNOWN', 'the token’s tenant is gone');
    return tenant;
  };
  const admin = realmsAdmin(served.map((r) => r.admin));
  return {
    verifyToken,
    tenantOf,
    admin,
    /** Marks the token's services in use until the returned function is called (idempotent). */
    hold(authInfo: AuthInfo | undefined): () => void {
      const u = authInfo === undefined ? undefined : use.get(authInfo.clientId);
      if (u === undefined) return () => undefined;
      u.held++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        u.held--;
        u.last = now();
      };
    },
    async close() {
      clearInterval(sweeper);
      await Promise.allSettled([...tenants.values()].map((t) => t.then((x) => x.close())));
      tenants.clear();
    },
  };
}

const refusalText: Readonly<Record<TokenRefusal, string>> = {
  malformed: 'the token is not valid',
  unknown: 'the token is not valid',
  revoked: 'the token was revoked',
  expired: 'the token has expired',
};

async function serveHttp(
  config: Config,
  realms: readonly Services[],
  logger: Logger,
  io: MainIo,
  observe: (call: ToolCallObservation) => void,
  fleet: FleetWatch['process'],
): Promise<void> {
  const services = realms[0] as Services;
  // With ZULIP_STATE_URL a token's long waits are counted on every process of the fleet: a lease
  // each in its database, released when the wait ends, and no longer counted once the process
  // holding it is gone.
  const leaseWait =
    fleet === undefined
      ? undefined
      : (tokenId: string) => fleet.lease(`waits/${tokenId}`, config.http.maxWaitsPerToken);
  const people =
    config.http.auth === 'people'
      ? peopleAuth(config, realms, logger, observe, io.now ?? Date.now, leaseWait)
      : undefined;
  const own = people === undefined ? await openTenant(config, services, logger, observe) : undefined;
  const tenantOf = (authInfo: AuthInfo | undefined): Promise<Tenant> | Tenant =>
    own ?? (people as NonNullable<typeof people>).tenantOf(authInfo);
  const owners = new WeakMap<Server, { tenant: Tenant; release: () => void }>();
  const { broadcast } = services.state.backend;
  let running: RunningHttpServer | undefined;
  running = await startHttpServer({
    host: config.http.host,
    port: config.http.port,
    token: config.http.token,
    verifyToken: people?.verifyToken,
    authorization: { resourceUrl: config.http.publicUrl, tokenHelp: config.http.tokenHelp },
    limits:
      people === undefined
        ? undefined
        : {
            perMinute: config.http.rateLimitPerMinute,
            maxWaits: config.http.maxWaitsPerToken,
            leaseWait,
            // The waiting tools are counted where they run (a task outlives its request): the
            // router counts the subscriptions/listen streams.
            waitTools: [],
          },
    admin:
      people === undefined || config.http.adminToken === undefined
        ? undefined
        : {
            token: config.http.adminToken,
            handle: (request, path, body) => adminApi(people.admin, request, path, body),
          },
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
    createServer: async ({ era, authInfo }) => {
      const tenant = await tenantOf(authInfo);
      const server = tenant.createServer(era, authInfo);
      owners.set(server, { tenant, release: people?.hold(authInfo) ?? (() => undefined) });
      return server;
    },
    releaseServer: async (server) => {
      const owner = owners.get(server);
      owner?.release();
      await owner?.tenant.releaseServer(server);
    },
    onListen: (listen, ended) => {
      const release = people?.hold(listen.authInfo);
      if (release !== undefined) void ended.finally(release);
      void Promise.resolve(tenantOf(listen.authInfo))
        .then((tenant) => tenant.onListen(listen, ended, (uri) => running?.notify.resourceUpdated(uri)))
        .catch((err: unknown) => logger.warn('a listen stream could not follow its resources', { err }));
    },
  });
  io.onReady?.({ transport: 'http', url: running.url });
  await waitForAbort(io.shutdown);
  logger.info('shutting down', { why: 'shutdown requested', sessions: running.sessionCount() });
  await running.close();
  await own?.close();
  await people?.close();
}

/** The admin API: `GET tokens`, `POST tokens` (a token request), `DELETE tokens/<id or label>`. */
async function adminApi(
  admin: RealmsAdmin,
  request: Request,
  path: string,
  body: unknown,
): Promise<Response> {
  const fail = (status: number, err: unknown) =>
    Response.json(
      { error: errorCode(err) ?? 'failed', message: err instanceof Error ? err.message : 'failed' },
      { status },
    );
  try {
    if (path === 'tokens' && request.method === 'GET') return Response.json({ tokens: await admin.list() });
    if (path === 'tokens' && request.method === 'POST') {
      const parsed = AdminCreateSchema.safeParse(body);
      if (!parsed.success) {
        throw new McpServerError(
          'MCP_TOKEN_INVALID',
          `expected { label, email, apiKey, expires?, toolsets?, writeAs? }: ${parsed.error.issues[0]?.path.join('.') ?? ''} ${parsed.error.issues[0]?.message ?? ''}`,
        );
      }
      const expiresAt = parseExpiry(parsed.data.expires ?? '90d', Date.now());
      if (expiresAt === undefined) {
        throw new McpServerError('MCP_TOKEN_INVALID', 'expires takes never, a duration (90d, 12h) or a date');
      }
      const created = await admin.create(
        {
          label: parsed.data.label,
          email: parsed.data.email,
          apiKey: parsed.data.apiKey,
          expiresAt,
          toolsets: tokenToolsets(parsed.data.toolsets),
          writeAs: parsed.data.writeAs ?? 'bot',
          realm: parsed.data.realm,
        },
        'http',
      );
      return Response.json(created, { status: 201 });
    }
    if (path.startsWith('tokens/') && request.method === 'DELETE') {
      return Response.json({
        revoked: await admin.revoke(decodeURIComponent(path.slice('tokens/'.length)), 'http'),
      });
    }
    return Response.json(
      { error: 'not_found', message: 'GET/POST /admin/tokens, DELETE /admin/tokens/<id>' },
      { status: 404 },
    );
  } catch (err) {
    const code = errorCode(err);
    if (code === 'MCP_TOKEN_INVALID') return fail(400, err);
    if (code === 'MCP_TOKEN_UNKNOWN') return fail(404, err);
    return fail(500, new Error('the operation failed; the server log says why'));
  }
}

const AdminCreateSchema = z.object({
  label: z.string(),
  email: z.string(),
  apiKey: z.string().regex(/^[\x21-\x7e]{8,200}$/),
  expires: z.string().optional(),
  toolsets: z.string().optional(),
  writeAs: z.enum(['bot', 'person', 'none']).optional(),
  realm: z.string().optional(),
});

/**
 * Runs the `zulip-mcp` command: parses `argv` and `env`, prints help or the version, or
 * builds the services and serves them on stdio (default) or Streamable HTTP (`--http`)
 * until the client goes away or `io.shutdown` fires, then closes everything. Resolves
 * with the exit code: 0 on a clean run, 1 when start-up fails, 2 on a bad configuration (a
 * bad variable or flag, missing or malformed credentials or zuliprc, credentials Zulip refuses,
 * a missing upload root).
 * Only help, the version and the JSON-RPC wire go to stdout; everything else to stderr.
 * `zulip-mcp tokens <create|list|revoke>` and `zulip-mcp audit` are the operator's commands of a
 * server hosted for an organization (ZMCP_HTTP_AUTH=people): the new token is the only thing
 * printed on stdout; the person's API key is read from `io.stdin` or a file.
 */
export const main: BinMain<MainIo> = (argv, env, io = {}) => {
  if (argv[0] === 'tokens') return tokensMain(argv.slice(1), env, io);
  if (argv[0] === 'audit') return auditMain(argv.slice(1), env, io);
  return serverMain(argv, env, io);
};

/**
 * The services of every realm the server fronts: the configured one first, then those of
 * `ZMCP_REALMS_FILE`, each on its own bot account, policy and state account.
 */
async function openRealms(
  config: Config,
  logger: Logger,
  credentials: Credentials,
  progress: ReturnType<typeof deliveryProgress>,
): Promise<{ realms: Services[]; close(): Promise<void> }> {
  const realms = [await buildServices(config, logger, credentials, progress)];
  const close = async () => {
    await Promise.allSettled(realms.map((r) => r.close()));
  };
  try {
    if (config.http.realmsFile !== undefined) {
      for (const realmConfig of await loadRealmConfigs(config.http.realmsFile, config)) {
        const opened = await buildServices(realmConfig, logger);
        realms.push(opened);
        if (realms.some((r) => r !== opened && r.state.account === opened.state.account)) {
          throw new McpServerError(
            'MCP_CONFIG_INVALID',
            `ZMCP_REALMS_FILE: ${config.http.realmsFile}: ${opened.account.site} (bot ${opened.account.email}) is listed twice`,
          );
        }
      }
      logger.info('fronting several realms', { realms: realms.map((r) => r.account.site).join(',') });
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { realms, close };
}

/** The server itself: `zulip-mcp [--http]`. */
const serverMain: BinMain<MainIo> = defineMain({
  bin: binName,
  help: helpText,
  version: packageVersion,
  configure: (env, argv) => parseConfig(env, argv),
  run: (config, io, env) => serve(config, io, env.ZULIP_SECRET_KEY),
});

/** Builds the services for a valid configuration and serves them until the end of the session. */
function serve(config: Config, io: MainIo, secretKeyText: string | undefined): Promise<number> {
  return runServer({
    bin: binName,
    config,
    stderr: io.stderr ?? process.stderr,
    secrets: [
      config.http.token,
      config.http.adminToken,
      config.http.secretKey?.toString('base64'),
      secretKeyText,
    ],
    version: packageVersion(),
    demo: { realmName: 'zulip-mcp demo' },
    open: ({ config, logger, credentials, console }) =>
      openRealms(config, logger, credentials, deliveryProgress(console)),
    configurationProblem: (err) =>
      errorCode(err) === 'MCP_CONFIG_INVALID' ? (err as Error).message : undefined,
    serve: async ({ realms }, { config, logger, console }) => {
      // Every tool call of every instance, either era, either transport, observed once.
      const observe = addToolCallPanel(console);
      const first = realms[0] as Services;
      const channels = first.channels;
      // With ZULIP_STATE_URL the bot's event queue may be owned by another process of the fleet.
      const queueOwner =
        channels === undefined
          ? undefined
          : watchQueueOwner({ backend: first.state.backend, account: first.state.account });
      if (channels !== undefined) {
        addDeliveryPanel(console, {
          snapshot: () => channels.snapshot(),
          owner: queueOwner?.label,
          idleText: 'Claude Code channels start delivering once the client has initialized.',
        });
      }
      // With ZULIP_STATE_URL: this process in the fleet's registry, the fleet on the process panel.
      const fleet = await watchFleet(console, {
        backend: first.state.backend,
        bin: binName,
        queues: realms.map((r) => ({ account: r.state.account, bot: r.account.email })),
      });
      try {
        if (config.transport === 'http') await serveHttp(config, realms, logger, io, observe, fleet.process);
        else await serveStdioMain(config, first, logger, io, observe);
      } finally {
        queueOwner?.close();
        await fleet.close();
      }
    },
  });
}
