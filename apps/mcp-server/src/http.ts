import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server as NodeServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AuthInfo,
  createMcpHandler,
  InMemoryServerEventBus,
  isInitializeRequest,
  isLegacyRequest,
  type Server,
  type ServerEventBus,
  type ServerNotifier,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import { isLoopbackHost } from '@zmcp/core';
import { bearerTokenOf, isLoopbackHostHeader, type McpEra, tokenCheck } from '@zmcp/server-kit';
import { McpServerError } from './errors.js';
import { type Logger, silentLogger } from './logging.js';
import { nodeHandler } from './node-http.js';

/**
 * Why an HTTP session ended: idle too long, ended by the client (`DELETE`), closed at shutdown,
 * reclaimed (the least recently used idle session, to make room for a new one when the table is
 * full), or closed otherwise.
 */
export type SessionCloseReason = 'idle' | 'deleted' | 'shutdown' | 'reclaimed' | 'closed';

/** What `createServer` is told about the instance it builds. */
export interface HttpServerContext {
  /** `legacy`: the server of one 2025-era session; `modern`: the server of one 2026-era request. */
  era: McpEra;
  /** The caller's credentials (the bearer token) when the server checks one. */
  authInfo: AuthInfo | undefined;
}

/** A `subscriptions/listen` request a 2026-era client opened, as {@link HttpServerOptions.onListen} sees it. */
export interface HttpListen {
  /** The resource URIs the client asked to hear about. */
  resourceSubscriptions: readonly string[];
  authInfo: AuthInfo | undefined;
}

/** Options of {@link startHttpServer}. */
export interface HttpServerOptions {
  /** Address to listen on. */
  host: string;
  /** Port to listen on; 0 picks a free one. */
  port: number;
  /** Bearer token every request must carry; required when `host` is not loopback (or `verifyToken`). */
  token?: string | undefined;
  /**
   * Checks each presented bearer token instead of the one `token` (per-person tokens): the
   * caller's credentials, or why the token is refused (said in the 401). Called for every request
   * before anything else about it is looked at, so a revoked token is refused on its next request.
   */
  verifyToken?: ((token: string) => Promise<AuthInfo | { refused: string }>) | undefined;
  /** What 401 answers and the protected-resource metadata (RFC 9728) tell a client. */
  authorization?: AuthorizationInfo | undefined;
  /** Limits per caller (per token): requests per minute and concurrent long waits; beyond, 429. */
  limits?: CallerLimits | undefined;
  /** The admin API under `/admin/`, behind its own bearer token (checked in constant time). */
  admin?: HttpAdmin | undefined;
  /** Browser origins allowed to call; unset allows loopback origins only. */
  allowedOrigins?: readonly string[] | undefined;
  /**
   * Most concurrent 2025-era sessions. A new session beyond it takes the place of the least
   * recently used session with no request in flight; only when every session has one is it refused
   * with 503.
   */
  maxSessions: number;
  /**
   * The longest one request can take to be answered, in milliseconds (the tool deadline and its
   * grace): a 503's `Retry-After` says when the soonest busy session reaches it. Default 61 000.
   */
  requestTimeoutMs?: number | undefined;
  /** A session with no request in progress and none for this long is closed, in milliseconds. */
  sessionIdleMs: number;
  /**
   * Builds an MCP server instance: one per 2025-era session (`era: 'legacy'`), or one per
   * 2026-era request (`era: 'modern'`), which any process may serve.
   */
  createServer: (context: HttpServerContext) => Server | Promise<Server>;
  /** Releases what `createServer` built beside a session's server (an agent session, say), once the session ended. */
  releaseServer?: ((server: Server) => Promise<void>) | undefined;
  /**
   * The eras served: `both` (default: 2026-07-28 per request, the 2025 era in sessions) or
   * `legacy` (every request goes to the 2025 sessions; a 2026 client's `server/discover` gets 400,
   * and clients in `auto` fall back).
   */
  eras?: 'both' | 'legacy' | undefined;
  /**
   * The bus that carries resource updates to 2026-era `subscriptions/listen` streams; default an
   * in-memory one (this process only). Give every process the same shared bus to reach listeners
   * on other processes.
   */
  bus?: ServerEventBus | undefined;
  /**
   * Called when a 2026-era client opens `subscriptions/listen` for some resources, with a promise
   * that settles when its stream ends: the place to start what reports those resources' changes
   * (and publish them through {@link RunningHttpServer.notify}).
   */
  onListen?: ((listen: HttpListen, ended: Promise<void>) => void) | undefined;
  logger?: Logger | undefined;
  /** Largest request body, in bytes; a larger one gets 413 and the session carries on. Default 4 MiB (the bin passes the limit the upload settings need). */
  maxBodyBytes?: number | undefined;
  /**
   * Arms the idle timer of a session and returns its cancel function. Defaults to an
   * unref'd `setTimeout`; tests inject their own to expire sessions deterministically.
   */
  setIdleTimer?: ((onIdle: () => void, ms: number) => () => void) | undefined;
  /** Called after a session has ended and its server is closed. */
  onSessionClosed?: ((sessionId: string, reason: SessionCloseReason) => void) | undefined;
}

/** What a client is told about getting a token (RFC 9728 metadata and the 401's challenge). */
export interface AuthorizationInfo {
  /** The MCP endpoint as clients dial it (`https://mcp.example.com/mcp`); default, from the request. */
  resourceUrl?: string | undefined;
  /** Where to get a token: a URL (the metadata's `resource_documentation`) or a sentence. */
  tokenHelp?: string | undefined;
}

/** Limits of {@link HttpServerOptions.limits}, per caller (`authInfo.clientId`). */
export interface CallerLimits {
  /** Requests per minute (a bucket of this many, refilled evenly). */
  perMinute: number;
  /** Long waits at once: calls of `waitTools` and `subscriptions/listen` streams. */
  maxWaits: number;
  /** Tool names that wait on purpose. Default `['listen']`. */
  waitTools?: readonly string[] | undefined;
  /**
   * Counts a long wait across the fleet too (with ZULIP_STATE_URL, a lease in its database):
   * resolves with its release, or `undefined` when the caller holds `maxWaits` on the fleet's
   * processes already. Unset: the count is this process's.
   */
  leaseWait?: ((caller: string) => Promise<(() => Promise<void>) | undefined>) | undefined;
}

/** The admin API of {@link HttpServerOptions.admin}. */
export interface HttpAdmin {
  token: string;
  /** Answers a request to `/admin/<path>` that carried the admin token; `body` is its parsed JSON (POST). */
  handle(request: Request, path: string, body: unknown): Promise<Response>;
}

/** A running Streamable HTTP server. */
export interface RunningHttpServer {
  /** The MCP endpoint, e.g. `http://127.0.0.1:3000/mcp`. */
  readonly url: string;
  /** The bound port (useful with port 0). */
  readonly port: number;
  /** Publishes resource and list changes to 2026-era `subscriptions/listen` streams (through the bus). */
  readonly notify: ServerNotifier;
  /** How many 2025-era sessions are open. */
  sessionCount(): number;
  /** Closes every session and aborts 2026-era requests in flight, then stops listening. */
  close(): Promise<void>;
}

interface Session {
  /** Empty until initialize has run. A bearer handle: never logged. */
  id: string;
  /** What the logs call the session instead: 1, 2, ... in the order sessions were created. */
  label: number;
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  /** POST and DELETE exchanges in progress. */
  active: number;
  /** When each exchange in progress started (`performance.now()`), oldest first. */
  inFlightSince: number[];
  /** Orders sessions by last use: the highest was used last. */
  lastUsed: number;
  /** The digest of the bearer token that created it: a request with another token never reaches it. */
  owner: string;
  /** Cancels the armed idle timer, if any. */
  cancelIdle: () => void;
  /** Why the session is ending, once it is. */
  closeReason: SessionCloseReason | undefined;
  finished: boolean;
}

const endpointPath = '/mcp';
const metadataPaths = new Set([
  '/.well-known/oauth-protected-resource',
  '/.well-known/oauth-protected-resource/mcp',
]);
const adminPrefix = '/admin/';

function jsonRpcError(
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
  data?: Record<string, unknown>,
): Response {
  return Response.json(
    { jsonrpc: '2.0', error: { code, message, ...(data === undefined ? {} : { data }) }, id: null },
    { status, headers },
  );
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/**
 * Whether a request opens a long wait: a waiting tool call or a `subscriptions/listen`. A 2025-era
 * session's standalone GET stream is not one (every client opens one; the session bound governs them).
 */
function isLongWait(method: string, body: unknown, waitTools: readonly string[]): boolean {
  if (method !== 'POST') return false;
  const one = (m: unknown): boolean => {
    if (typeof m !== 'object' || m === null) return false;
    const { method: rpc, params } = m as { method?: unknown; params?: { name?: unknown } };
    if (rpc === 'subscriptions/listen') return true;
    return rpc === 'tools/call' && typeof params?.name === 'string' && waitTools.includes(params.name);
  };
  return Array.isArray(body) ? body.some(one) : one(body);
}

function isLoopbackOrigin(origin: string): boolean {
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.hostname);
  } catch {
    return false;
  }
}

/** The host of a `Host` header ("[::1]:3000" → "[::1]"), or `undefined` when it is malformed. */
class BodyTooLarge extends Error {}

/** Reads a request body up to `limit` bytes; past it the read stops and {@link BodyTooLarge} is thrown. */
async function readBody(request: Request, limit: number): Promise<string> {
  const declared = Number(request.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) throw new BodyTooLarge();
  if (request.body === null) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw new BodyTooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/** The resource URIs of a `subscriptions/listen` request body, or `undefined` for any other body. */
function listenedResources(body: unknown): readonly string[] | undefined {
  if (
    typeof body !== 'object' ||
    body === null ||
    (body as { method?: unknown }).method !== 'subscriptions/listen'
  )
    return undefined;
  const uris = (body as { params?: { notifications?: { resourceSubscriptions?: unknown } } }).params
    ?.notifications?.resourceSubscriptions;
  return Array.isArray(uris) ? uris.filter((u): u is string => typeof u === 'string') : [];
}

/**
 * Serves MCP over Streamable HTTP at `/mcp`, both protocol eras. A web-standard router (mounted on
 * `node:http`) checks every request in order, before a byte of its body is read: path (404),
 * `Host` when bound to loopback (403, DNS-rebinding protection), `Origin` against the allow-list
 * (403; requests without one pass), bearer token (401 with a `WWW-Authenticate: Bearer` challenge
 * naming the protected-resource metadata, RFC 9728, served unauthenticated at
 * `/.well-known/oauth-protected-resource[/mcp]`): the one `token` in constant time, or each
 * person's token through `verifyToken`, before any session or handle is looked at; then the
 * caller's rate limit (429 `MCP_RATE_LIMITED` with `Retry-After`); then the body, up to
 * `maxBodyBytes` (413), and the caller's long waits (429 `MCP_TOO_MANY_WAITS`). A session is bound
 * to the token that created it: another token's request for it gets the 404 of an unknown session.
 * `/admin/` goes to `admin.handle` behind the admin token. A 2026-era request (a
 * POST carrying the per-request `_meta` envelope, no session header) goes to the SDK's
 * `createMcpHandler` (strict: it refuses 2025-era traffic), which builds one server per request
 * with no server-side session, so any process can serve it. Everything else is the 2025 era, in
 * sessions keyed by the `Mcp-Session-Id` header, each with its own server from `createServer`: a
 * new session beyond `maxSessions` takes the place of the least recently used session with no
 * request in flight (closed as `reclaimed`; a session is busy from the moment a request for it
 * arrives, body still on its way, until the response ends, and a busy one is never evicted); only
 * when every session has a request in flight is it refused with 503, a JSON-RPC error and a
 * `Retry-After` of when the soonest busy session's requests reach `requestTimeoutMs`. A session
 * with no request in progress for `sessionIdleMs` is closed; `DELETE` ends one at once; an unknown
 * session id gets 404. Session ids are never logged.
 *
 * @throws McpServerError `MCP_HTTP_TOKEN_REQUIRED` when `host` is not loopback and no
 * token is set; `MCP_HTTP_LISTEN_FAILED` when the address cannot be bound.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const logger = options.logger ?? silentLogger;
  const loopback = isLoopbackHost(options.host);
  if (!loopback && options.token === undefined && options.verifyToken === undefined) {
    throw new McpServerError(
      'MCP_HTTP_TOKEN_REQUIRED',
      `Refusing to serve HTTP on ${options.host} without a bearer token: set ZMCP_HTTP_TOKEN, or listen on 127.0.0.1.`,
    );
  }
  const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
  // server-kit's one bearer check: constant-time and length-blind.
  const tokenMatches = options.token === undefined ? undefined : tokenCheck(options.token);
  const authRequired = tokenMatches !== undefined || options.verifyToken !== undefined;
  const adminMatches = options.admin === undefined ? undefined : tokenCheck(options.admin.token);
  // Per caller: a bucket of requests (refilled evenly over a minute) and the long waits open.
  const buckets = new Map<string, { tokens: number; at: number }>();
  const waits = new Map<string, number>();
  const waitTools = options.limits?.waitTools ?? ['listen'];
  // Behind a proxy the metadata is asked for at the public path of the endpoint too.
  const publicPath =
    options.authorization?.resourceUrl === undefined
      ? undefined
      : new URL(options.authorization.resourceUrl).pathname.replace(/\/+$/, '');
  const servedMetadata = new Set(metadataPaths);
  if (publicPath !== undefined && publicPath !== '')
    servedMetadata.add(`/.well-known/oauth-protected-resource${publicPath}`);
  const allowedOrigins = options.allowedOrigins ? new Set(options.allowedOrigins) : undefined;
  const sessions = new Map<string, Session>();
  // Sessions being created: counted against the bound until initialize has run.
  const reserved = new Set<Session>();
  // Sessions whose server is still being built: counted too.
  let building = 0;
  let shuttingDown = false;
  let created = 0;
  let uses = 0;
  const requestTimeoutMs = options.requestTimeoutMs ?? 61_000;
  const bus =
    options.bus ?? new InMemoryServerEventBus((err) => logger.debug('a listen stream failed', { err }));
  const modern =
    options.eras === 'legacy'
      ? undefined
      : createMcpHandler((ctx) => options.createServer({ era: 'modern', authInfo: ctx.authInfo }), {
          legacy: 'reject',
          bus,
          maxRequestBodySize: maxBodyBytes,
          onerror: (err) => logger.debug('a 2026-era request failed', { err }),
        });

  /**
   * Makes room for a new session in a full table: closes the least recently used session that
   * has no request in flight and returns true, or returns false when every session is busy.
   */
  const reclaimIdle = (): boolean => {
    let victim: Session | undefined;
    for (const candidate of sessions.values()) {
      if (candidate.active > 0 || candidate.closeReason) continue;
      if (victim === undefined || candidate.lastUsed < victim.lastUsed) victim = candidate;
    }
    if (victim === undefined) return false;
    // Out of the table at once, so the new session fits; its client's next request gets 404.
    sessions.delete(victim.id);
    void closeSession(victim, 'reclaimed');
    return true;
  };

  /** Seconds until the soonest busy session's requests all reach their deadline: when one is sure to be reclaimable. */
  const retryAfterSeconds = (): number => {
    const now = performance.now();
    let soonest = requestTimeoutMs;
    for (const busy of [...sessions.values(), ...reserved]) {
      // Idle once its last-started request is answered, at the latest by that one's deadline.
      const newest = busy.inFlightSince[busy.inFlightSince.length - 1];
      if (newest === undefined) continue;
      soonest = Math.min(soonest, newest + requestTimeoutMs - now);
    }
    return Math.max(1, Math.ceil(soonest / 1000));
  };

  const setIdleTimer =
    options.setIdleTimer ??
    ((onIdle: () => void, ms: number) => {
      const timer = setTimeout(onIdle, ms);
      timer.unref();
      return () => clearTimeout(timer);
    });

  const scheduleIdle = (session: Session) => {
    session.cancelIdle();
    session.cancelIdle = () => {};
    if (session.active > 0 || session.closeReason) return;
    session.cancelIdle = setIdleTimer(() => {
      if (session.active === 0 && !session.closeReason) void closeSession(session, 'idle');
    }, options.sessionIdleMs);
  };

  // Session servers still being closed and released; shutdown waits for them.
  const releasing = new Set<Promise<void>>();

  // Runs once per session, however it ended: the transport closing (DELETE, our own
  // close) reaches here through the server's onclose.
  const finish = (session: Session): void => {
    if (session.finished) return;
    session.finished = true;
    session.cancelIdle();
    if (sessions.get(session.id) === session) sessions.delete(session.id);
    reserved.delete(session);
    const released = session.server
      .close()
      .then(() => options.releaseServer?.(session.server))
      .catch((err: unknown) => logger.debug('error closing a session server', { err }))
      .finally(() => releasing.delete(released));
    releasing.add(released);
    if (session.id !== '') {
      const reason = session.closeReason ?? 'closed';
      logger.info('session closed', { session: session.label, reason, open: sessions.size });
      options.onSessionClosed?.(session.id, reason);
    }
  };

  const closeSession = async (session: Session, reason: SessionCloseReason): Promise<void> => {
    session.closeReason ??= reason;
    try {
      await session.transport.close();
      await session.server.close();
    } catch (err) {
      logger.debug('error closing a session', { session: session.label, err });
    }
    finish(session);
  };

  const newSession = async (authInfo: AuthInfo | undefined): Promise<Session> => {
    const label = ++created;
    let session: Session | undefined;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        if (session === undefined) return;
        session.id = id;
        reserved.delete(session);
        sessions.set(id, session);
        logger.info('session opened', { session: session.label, open: sessions.size });
      },
      onsessionclosed: () => {
        if (session !== undefined) session.closeReason ??= 'deleted';
      },
      maxRequestBodySize: maxBodyBytes,
    });
    const server = await options.createServer({ era: 'legacy', authInfo });
    session = {
      id: '',
      label,
      transport,
      server,
      active: 0,
      inFlightSince: [],
      lastUsed: 0,
      owner: authInfo === undefined ? '' : digest(authInfo.token).toString('hex'),
      cancelIdle: () => {},
      closeReason: undefined,
      finished: false,
    };
    const current = session;
    // The server's own close hook (it releases its resource subscriptions) runs first.
    const closed = server.onclose;
    server.onclose = () => {
      closed?.();
      finish(current);
    };
    server.onerror = (err) => logger.debug('MCP transport error', { session: label, err });
    return session;
  };

  /**
   * Counts a request as in flight on `session` from now until its response ends (the standalone
   * GET stream only listens, so it does not keep a session alive), and marks the session used.
   */
  const track = (session: Session, method: string, ended: Promise<void>): void => {
    const counts = method !== 'GET';
    const started = performance.now();
    session.lastUsed = ++uses;
    if (counts) {
      session.active++;
      session.inFlightSince.push(started);
    }
    scheduleIdle(session);
    void ended.then(() => {
      if (counts) {
        session.active--;
        session.inFlightSince.splice(session.inFlightSince.indexOf(started), 1);
      }
      session.lastUsed = ++uses;
      scheduleIdle(session);
    });
  };

  /** The presented bearer token, or undefined. */
  const bearerOf = (request: Request): string | undefined =>
    bearerTokenOf(request.headers.get('authorization'));

  /**
   * The one bearer check: the caller's credentials when the token is good (the one token, compared
   * in constant time, or `verifyToken`'s answer), `{ refused }` when it is not; `undefined` when
   * the server asks for none.
   */
  const authenticate = async (request: Request): Promise<AuthInfo | undefined | { refused: string }> => {
    if (!authRequired) return undefined;
    const presented = bearerOf(request);
    if (presented === undefined) return { refused: 'a bearer token is required' };
    if (options.verifyToken !== undefined) return options.verifyToken(presented);
    if (!(tokenMatches as (presented: string) => boolean)(presented))
      return { refused: 'the token is not valid' };
    return { token: presented, clientId: 'zulip-mcp', scopes: [] };
  };

  /** The URL of the protected-resource metadata of the endpoint a request reached. */
  const resourceOf = (request: Request): { resource: string; metadata: string } => {
    const configured = options.authorization?.resourceUrl;
    const base = configured === undefined ? undefined : new URL(configured);
    const origin = base?.origin ?? `http://${request.headers.get('host') ?? new URL(request.url).host}`;
    const resource = base?.href ?? `${origin}${endpointPath}`;
    const path = base === undefined ? endpointPath : base.pathname.replace(/\/+$/, '');
    return {
      resource,
      metadata: `${origin}/.well-known/oauth-protected-resource${path === '/' ? '' : path}`,
    };
  };

  const unauthorized = (request: Request, why: string): Response => {
    const { metadata } = resourceOf(request);
    const presented = request.headers.get('authorization') !== null;
    const help = options.authorization?.tokenHelp;
    const quoted = (text: string) => text.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, "'");
    const challenge = [
      'Bearer realm="zulip-mcp"',
      `resource_metadata="${quoted(metadata)}"`,
      ...(presented ? ['error="invalid_token"', `error_description="${quoted(why)}"`] : []),
    ].join(', ');
    return jsonRpcError(
      401,
      -32000,
      `Unauthorized: ${why}. ${help === undefined ? 'Ask the server’s operator for a token (zulip-mcp tokens create).' : `Get a token: ${help}`}`,
      { 'www-authenticate': challenge },
    );
  };

  /** Takes one request from the caller's bucket; the seconds until one is free when it is empty. */
  const takeRequest = (caller: string): number | undefined => {
    const limits = options.limits;
    if (limits === undefined) return undefined;
    const now = performance.now();
    const bucket = buckets.get(caller) ?? { tokens: limits.perMinute, at: now };
    bucket.tokens = Math.min(
      limits.perMinute,
      bucket.tokens + ((now - bucket.at) / 60_000) * limits.perMinute,
    );
    bucket.at = now;
    buckets.set(caller, bucket);
    if (bucket.tokens < 1) return Math.max(1, Math.ceil(((1 - bucket.tokens) * 60) / limits.perMinute));
    bucket.tokens -= 1;
    return undefined;
  };

  /** Counts a long wait for the caller until the response ends; false when the caller has as many as allowed. */
  const takeWait = async (caller: string, ended: Promise<void>): Promise<boolean> => {
    const limits = options.limits;
    if (limits === undefined) return true;
    const open = waits.get(caller) ?? 0;
    if (open >= limits.maxWaits) return false;
    waits.set(caller, open + 1);
    const untake = () => {
      const left = (waits.get(caller) ?? 1) - 1;
      if (left <= 0) waits.delete(caller);
      else waits.set(caller, left);
    };
    let release: (() => Promise<void>) | undefined;
    if (limits.leaseWait !== undefined) {
      try {
        release = await limits.leaseWait(caller);
      } catch (err) {
        untake();
        throw err;
      }
      if (release === undefined) {
        untake();
        return false;
      }
    }
    void ended.then(() => {
      untake();
      return release?.();
    });
    return true;
  };

  /** The admin API: its own bearer token, checked in constant time before the body is read. */
  const routeAdmin = async (request: Request, path: string): Promise<Response> => {
    if (options.admin === undefined || adminMatches === undefined) {
      return jsonRpcError(404, -32000, `Not found: the MCP endpoint is ${endpointPath}`);
    }
    const presented = bearerOf(request);
    if (presented === undefined || !adminMatches(presented)) {
      return Response.json(
        { error: 'unauthorized', message: 'the admin API needs the admin token (ZMCP_ADMIN_TOKEN)' },
        { status: 401, headers: { 'www-authenticate': 'Bearer realm="zulip-mcp-admin"' } },
      );
    }
    let body: unknown;
    if (request.method === 'POST') {
      try {
        body = JSON.parse(await readBody(request, 64 * 1024));
      } catch {
        return Response.json(
          { error: 'bad_request', message: 'the body is not JSON (or over 64 KiB)' },
          { status: 400 },
        );
      }
    }
    return options.admin.handle(request, path, body);
  };

  const route = async (request: Request, ended: Promise<void>): Promise<Response> => {
    const url = new URL(request.url);
    const metadataRequest = authRequired && servedMetadata.has(url.pathname) && request.method === 'GET';
    const adminRequest = url.pathname.startsWith(adminPrefix);
    if (url.pathname !== endpointPath && !metadataRequest && !adminRequest) {
      return jsonRpcError(404, -32000, `Not found: the MCP endpoint is ${endpointPath}`);
    }
    if (loopback) {
      if (!isLoopbackHostHeader(request.headers.get('host'))) {
        return jsonRpcError(403, -32000, 'Forbidden: Host header is not a loopback name');
      }
    }
    const origin = request.headers.get('origin');
    if (origin !== null) {
      const allowed = allowedOrigins ? allowedOrigins.has(origin) : isLoopbackOrigin(origin);
      if (!allowed) {
        logger.warn('refused a request from a disallowed origin', { origin });
        return jsonRpcError(403, -32000, 'Forbidden: origin not allowed');
      }
    }
    if (metadataRequest) {
      // RFC 9728: where this resource is and how tokens are presented; no authorization server is
      // named, since tokens are issued by the operator (said in resource_documentation).
      const help = options.authorization?.tokenHelp;
      return Response.json({
        resource: resourceOf(request).resource,
        resource_name: 'zulip-mcp',
        bearer_methods_supported: ['header'],
        ...(help !== undefined && /^https?:\/\//.test(help) ? { resource_documentation: help } : {}),
        ...(help !== undefined ? { token_help: help } : {}),
      });
    }
    if (adminRequest) return routeAdmin(request, url.pathname.slice(adminPrefix.length));
    const authInfo = await authenticate(request);
    if (authInfo !== undefined && 'refused' in authInfo) return unauthorized(request, authInfo.refused);
    if (shuttingDown) return jsonRpcError(503, -32000, 'Server is shutting down');
    const caller = authInfo?.clientId ?? 'anyone';
    const wait = takeRequest(caller);
    if (wait !== undefined) {
      return jsonRpcError(
        429,
        -32000,
        `MCP_RATE_LIMITED: this token made more than ${options.limits?.perMinute} requests in a minute; retry in ${wait} s`,
        { 'retry-after': String(wait) },
        { code: 'MCP_RATE_LIMITED', retryAfter: wait },
      );
    }

    const method = request.method;
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') {
      return jsonRpcError(405, -32000, 'Method not allowed', { allow: 'GET, POST, DELETE' });
    }

    // A session is busy from the moment a request for it arrives, before its body is read: a
    // session whose body is still on its way must not be reclaimed for a new one.
    const sessionId = request.headers.get('mcp-session-id');
    let session: Session | undefined;
    if (sessionId !== null) {
      session = sessions.get(sessionId);
      // A session another token made is not found for this one: the same answer as an unknown id.
      const owner = authInfo === undefined ? '' : digest(authInfo.token).toString('hex');
      if (!session || session.owner !== owner) return jsonRpcError(404, -32001, 'Session not found');
      track(session, method, ended);
    }

    let body: unknown;
    if (method === 'POST') {
      try {
        body = JSON.parse(await readBody(request, maxBodyBytes));
      } catch (err) {
        if (err instanceof BodyTooLarge)
          return jsonRpcError(
            413,
            -32600,
            `Request too large: over the ${maxBodyBytes}-byte (${(maxBodyBytes / 1048576).toFixed(1)} MiB) limit of one message on this transport. It was not read; the session carries on. Attach large files from an upload root ({ "file": "<root>/<path>" }) instead of inline base64 data.`,
            { connection: 'close' },
          );
        return jsonRpcError(400, -32700, 'Parse error: invalid JSON');
      }
    }

    if (options.limits !== undefined && isLongWait(method, body, waitTools)) {
      if (!(await takeWait(caller, ended))) {
        return jsonRpcError(
          429,
          -32000,
          `MCP_TOO_MANY_WAITS: this token holds ${options.limits.maxWaits} long waits (listen, subscriptions/listen) already; let one end first`,
          { 'retry-after': '1' },
          { code: 'MCP_TOO_MANY_WAITS', maxWaits: options.limits.maxWaits },
        );
      }
    }

    // 2026-07-28: one request, one server, no session; any process serves it.
    if (session === undefined && modern !== undefined && method === 'POST') {
      if (!(await isLegacyRequest(request, body, { maxRequestBodySize: maxBodyBytes }))) {
        const listened = listenedResources(body);
        if (listened !== undefined && listened.length > 0)
          options.onListen?.({ resourceSubscriptions: listened, authInfo }, ended);
        return modern.fetch(request, { ...(authInfo === undefined ? {} : { authInfo }), parsedBody: body });
      }
    }

    if (session === undefined) {
      const initializing =
        method === 'POST' &&
        (Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body));
      if (!initializing) return jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      if (sessions.size + reserved.size + building >= options.maxSessions && !reclaimIdle()) {
        const retryAfter = retryAfterSeconds();
        logger.warn('refused a new session: every session has a request in flight', {
          open: sessions.size,
          max: options.maxSessions,
          retryAfter,
        });
        return jsonRpcError(
          503,
          -32000,
          `Too many sessions (at most ${options.maxSessions}), each with a request in flight; retry in ${retryAfter} s`,
          { 'retry-after': String(retryAfter) },
        );
      }
      building++;
      try {
        session = await newSession(authInfo);
      } finally {
        building--;
      }
      reserved.add(session);
      await session.server.connect(session.transport);
      track(session, method, ended);
    } else if (session.closeReason !== undefined) {
      // Ended (DELETE, idle, shutdown) while this request's body was arriving.
      return jsonRpcError(404, -32001, 'Session not found');
    }

    const current = session;
    try {
      return await current.transport.handleRequest(request, {
        ...(body === undefined ? {} : { parsedBody: body }),
        ...(authInfo === undefined ? {} : { authInfo }),
      });
    } finally {
      if (reserved.has(current)) {
        // initialize did not create a session (malformed, or refused): drop it.
        void closeSession(current, 'closed');
      }
    }
  };

  const httpServer: NodeServer = createServer(
    nodeHandler(route, (err) => logger.error('HTTP request failed', { err })),
  );

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) =>
      reject(
        new McpServerError('MCP_HTTP_LISTEN_FAILED', `Cannot listen on ${options.host}:${options.port}`, {
          cause: err,
        }),
      );
    httpServer.once('error', onError);
    httpServer.listen(options.port, options.host, () => {
      httpServer.off('error', onError);
      resolve();
    });
  });
  httpServer.on('error', (err) => logger.error('HTTP server error', { err }));

  const address = httpServer.address() as AddressInfo;
  // A name can resolve beyond loopback (a hosts-file entry, say): judge the address actually bound.
  if (!authRequired && !isLoopbackHost(address.address)) {
    await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    await modern?.close();
    throw new McpServerError(
      'MCP_HTTP_TOKEN_REQUIRED',
      `Refusing to serve HTTP on ${address.address} (${options.host}) without a bearer token: set ZMCP_HTTP_TOKEN, or listen on 127.0.0.1.`,
    );
  }
  const hostForUrl = address.address.includes(':') ? `[${address.address}]` : address.address;
  const url = `http://${hostForUrl}:${address.port}${endpointPath}`;
  logger.info('listening', {
    url,
    auth: options.verifyToken !== undefined ? 'per-person tokens' : tokenMatches ? 'bearer' : 'none',
    eras: modern === undefined ? '2025' : '2026-07-28,2025',
  });

  let closed: Promise<void> | undefined;
  return {
    url,
    port: address.port,
    notify: {
      toolsChanged: () => bus.publish({ kind: 'tools_list_changed' }),
      promptsChanged: () => bus.publish({ kind: 'prompts_list_changed' }),
      resourcesChanged: () => bus.publish({ kind: 'resources_list_changed' }),
      resourceUpdated: (uri) => bus.publish({ kind: 'resource_updated', uri }),
    },
    sessionCount: () => sessions.size,
    close() {
      closed ??= (async () => {
        shuttingDown = true;
        const stopped = new Promise<void>((resolve) => httpServer.close(() => resolve()));
        await modern?.close();
        await Promise.all([...sessions.values(), ...reserved].map((s) => closeSession(s, 'shutdown')));
        await Promise.all([...releasing]);
        httpServer.closeAllConnections();
        await stopped;
        logger.info('HTTP server stopped');
      })();
      return closed;
    },
  };
}
