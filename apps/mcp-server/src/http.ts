import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { isLoopbackHost } from '@zmcp/core';
import { McpServerError } from './errors.js';
import { type Logger, silentLogger } from './logging.js';
import type { McpSession } from './register.js';

/**
 * Why an HTTP session ended: idle too long, ended by the client (`DELETE`), closed at shutdown,
 * reclaimed (the least recently used idle session, to make room for a new one when the table is
 * full), or closed otherwise.
 */
export type SessionCloseReason = 'idle' | 'deleted' | 'shutdown' | 'reclaimed' | 'closed';

/** Options of {@link startHttpServer}. */
export interface HttpServerOptions {
  /** Address to listen on. */
  host: string;
  /** Port to listen on; 0 picks a free one. */
  port: number;
  /** Bearer token every request must carry; required when `host` is not loopback. */
  token?: string | undefined;
  /** Browser origins allowed to call; unset allows loopback origins only. */
  allowedOrigins?: readonly string[] | undefined;
  /**
   * Most concurrent sessions. A new session beyond it takes the place of the least recently used
   * session with no request in flight; only when every session has one is it refused with 503.
   */
  maxSessions: number;
  /**
   * The longest one request can take to be answered, in milliseconds (the tool deadline and its
   * grace): a 503's `Retry-After` says when the soonest busy session reaches it. Default 61 000.
   */
  requestTimeoutMs?: number | undefined;
  /** A session with no request in progress and none for this long is closed, in milliseconds. */
  sessionIdleMs: number;
  /** Builds the MCP server of a new session. */
  createServer: () => McpSession;
  /** Releases what `createServer` built beside the server (an agent session, say), once the session ended. */
  releaseServer?: ((server: McpSession) => Promise<void>) | undefined;
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

/** A running Streamable HTTP server. */
export interface RunningHttpServer {
  /** The MCP endpoint, e.g. `http://127.0.0.1:3000/mcp`. */
  readonly url: string;
  /** The bound port (useful with port 0). */
  readonly port: number;
  /** How many sessions are open. */
  sessionCount(): number;
  /** Closes every session, then stops listening. */
  close(): Promise<void>;
}

interface Session {
  /** Empty until initialize has run. A bearer handle: never logged. */
  id: string;
  /** What the logs call the session instead: 1, 2, ... in the order sessions were created. */
  label: number;
  transport: StreamableHTTPServerTransport;
  server: McpSession;
  /** POST and DELETE exchanges in progress. */
  active: number;
  /** When each exchange in progress started (`performance.now()`), oldest first. */
  inFlightSince: number[];
  /** Orders sessions by last use: the highest was used last. */
  lastUsed: number;
  /** Cancels the armed idle timer, if any. */
  cancelIdle: () => void;
  /** Why the session is ending, once it is. */
  closeReason: SessionCloseReason | undefined;
  finished: boolean;
}

const endpointPath = '/mcp';

function sendJsonRpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
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
function hostnameOf(hostHeader: string): string | undefined {
  // Only a host and a port: no user info, path or anything else a URL parser would read past.
  if (!/^[A-Za-z0-9.:[\]-]+$/.test(hostHeader)) return undefined;
  try {
    return new URL(`http://${hostHeader}/`).hostname;
  } catch {
    return undefined;
  }
}

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new BodyTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // Stop buffering; the 413 goes out with `connection: close`, which ends the upload.
        req.off('data', onData);
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * Serves MCP over Streamable HTTP at `/mcp`: one MCP session (and one server from
 * `createServer`) per client, keyed by the `Mcp-Session-Id` header. Requests are checked
 * in order: path (404), `Host` when bound to loopback (403, DNS-rebinding protection),
 * `Origin` against the allow-list (403; requests without one pass), bearer token in
 * constant time (401 with `WWW-Authenticate: Bearer`). A new session beyond `maxSessions`
 * takes the place of the least recently used session with no request in flight (closed as
 * `reclaimed`; a session is busy from the moment a request for it arrives, body still on its
 * way, until the response ends, and a busy one is never evicted); only when every session has
 * a request in flight is it refused with 503, a JSON-RPC error and a `Retry-After` of when
 * the soonest busy session's requests reach `requestTimeoutMs`. A session with no request in
 * progress for `sessionIdleMs` is closed; `DELETE` ends one at once. Session ids are never logged.
 *
 * @throws McpServerError `MCP_HTTP_TOKEN_REQUIRED` when `host` is not loopback and no
 * token is set; `MCP_HTTP_LISTEN_FAILED` when the address cannot be bound.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const logger = options.logger ?? silentLogger;
  const loopback = isLoopbackHost(options.host);
  if (!loopback && options.token === undefined) {
    throw new McpServerError(
      'MCP_HTTP_TOKEN_REQUIRED',
      `Refusing to serve HTTP on ${options.host} without a bearer token: set ZMCP_HTTP_TOKEN, or listen on 127.0.0.1.`,
    );
  }
  const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
  const expectedToken = options.token === undefined ? undefined : digest(options.token);
  const allowedOrigins = options.allowedOrigins ? new Set(options.allowedOrigins) : undefined;
  const sessions = new Map<string, Session>();
  // Sessions being created: counted against the bound until initialize has run.
  const reserved = new Set<Session>();
  let shuttingDown = false;
  let created = 0;
  let uses = 0;
  const requestTimeoutMs = options.requestTimeoutMs ?? 61_000;

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

  const newSession = (): Session => {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        session.id = id;
        reserved.delete(session);
        sessions.set(id, session);
        logger.info('session opened', { session: session.label, open: sessions.size });
      },
      onsessionclosed: () => {
        session.closeReason ??= 'deleted';
      },
    });
    const server = options.createServer();
    const session: Session = {
      id: '',
      label: ++created,
      transport,
      server,
      active: 0,
      inFlightSince: [],
      lastUsed: 0,
      cancelIdle: () => {},
      closeReason: undefined,
      finished: false,
    };
    server.onclose = () => finish(session);
    server.onerror = (err) => logger.debug('MCP transport error', { session: session.label, err });
    return session;
  };

  /**
   * Counts a request as in flight on `session` from now until its response ends (the standalone
   * GET stream only listens, so it does not keep a session alive), and marks the session used.
   */
  const track = (session: Session, method: string, res: ServerResponse): void => {
    const counts = method !== 'GET';
    const started = performance.now();
    session.lastUsed = ++uses;
    if (counts) {
      session.active++;
      session.inFlightSince.push(started);
    }
    scheduleIdle(session);
    res.on('close', () => {
      if (counts) {
        session.active--;
        session.inFlightSince.splice(session.inFlightSince.indexOf(started), 1);
      }
      session.lastUsed = ++uses;
      scheduleIdle(session);
    });
  };

  const authorized = (req: IncomingMessage): boolean => {
    if (expectedToken === undefined) return true;
    const header = req.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    // Both sides are hashed first, so the comparison is constant-time and length-blind.
    return match !== null && timingSafeEqual(digest(match[1] as string), expectedToken);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== endpointPath) {
      sendJsonRpcError(res, 404, -32000, `Not found: the MCP endpoint is ${endpointPath}`);
      return;
    }
    if (loopback) {
      const hostHeader = req.headers.host;
      const hostname = hostHeader === undefined ? undefined : hostnameOf(hostHeader);
      if (hostname === undefined || !isLoopbackHost(hostname)) {
        sendJsonRpcError(res, 403, -32000, 'Forbidden: Host header is not a loopback name');
        return;
      }
    }
    const origin = req.headers.origin;
    if (origin !== undefined) {
      const allowed = allowedOrigins ? allowedOrigins.has(origin) : isLoopbackOrigin(origin);
      if (!allowed) {
        logger.warn('refused a request from a disallowed origin', { origin });
        sendJsonRpcError(res, 403, -32000, 'Forbidden: origin not allowed');
        return;
      }
    }
    if (!authorized(req)) {
      const presented = req.headers.authorization !== undefined;
      sendJsonRpcError(res, 401, -32000, 'Unauthorized: a valid bearer token is required', {
        'www-authenticate': presented
          ? 'Bearer realm="zulip-mcp", error="invalid_token"'
          : 'Bearer realm="zulip-mcp"',
      });
      return;
    }
    if (shuttingDown) {
      sendJsonRpcError(res, 503, -32000, 'Server is shutting down');
      return;
    }

    const method = req.method ?? 'GET';
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') {
      sendJsonRpcError(res, 405, -32000, 'Method not allowed', { allow: 'GET, POST, DELETE' });
      return;
    }

    // A session is busy from the moment a request for it arrives, before its body is read: a
    // session whose body is still on its way must not be reclaimed for a new one.
    const sessionHeader = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
    let session: Session | undefined;
    if (sessionId !== undefined) {
      session = sessions.get(sessionId);
      if (!session) {
        sendJsonRpcError(res, 404, -32001, 'Session not found');
        return;
      }
      track(session, method, res);
    }

    let body: unknown;
    if (method === 'POST') {
      try {
        body = JSON.parse(await readBody(req, maxBodyBytes));
      } catch (err) {
        if (err instanceof BodyTooLarge)
          sendJsonRpcError(
            res,
            413,
            -32600,
            `Request too large: over the ${maxBodyBytes}-byte (${(maxBodyBytes / 1048576).toFixed(1)} MiB) limit of one message on this transport. It was not read; the session carries on. Attach large files from an upload root ({ "file": "<root>/<path>" }) instead of inline base64 data.`,
            {
              connection: 'close',
            },
          );
        else sendJsonRpcError(res, 400, -32700, 'Parse error: invalid JSON');
        return;
      }
    }

    if (session === undefined) {
      const initializing =
        method === 'POST' &&
        (Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body));
      if (!initializing) {
        sendJsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
        return;
      }
      if (sessions.size + reserved.size >= options.maxSessions && !reclaimIdle()) {
        const retryAfter = retryAfterSeconds();
        logger.warn('refused a new session: every session has a request in flight', {
          open: sessions.size,
          max: options.maxSessions,
          retryAfter,
        });
        sendJsonRpcError(
          res,
          503,
          -32000,
          `Too many sessions (at most ${options.maxSessions}), each with a request in flight; retry in ${retryAfter} s`,
          { 'retry-after': String(retryAfter) },
        );
        return;
      }
      session = newSession();
      reserved.add(session);
      await session.server.connect(session.transport);
      track(session, method, res);
    } else if (session.closeReason !== undefined) {
      // Ended (DELETE, idle, shutdown) while this request's body was arriving.
      sendJsonRpcError(res, 404, -32001, 'Session not found');
      return;
    }

    const current = session;
    try {
      await current.transport.handleRequest(req, res, body);
    } finally {
      if (reserved.has(current)) {
        // initialize did not create a session (malformed, or refused): drop it.
        void closeSession(current, 'closed');
      }
    }
  };

  const httpServer: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.error('HTTP request failed', { err });
      sendJsonRpcError(res, 500, -32603, 'Internal error');
    });
  });

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
  if (expectedToken === undefined && !isLoopbackHost(address.address)) {
    await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    throw new McpServerError(
      'MCP_HTTP_TOKEN_REQUIRED',
      `Refusing to serve HTTP on ${address.address} (${options.host}) without a bearer token: set ZMCP_HTTP_TOKEN, or listen on 127.0.0.1.`,
    );
  }
  const hostForUrl = address.address.includes(':') ? `[${address.address}]` : address.address;
  const url = `http://${hostForUrl}:${address.port}${endpointPath}`;
  logger.info('listening', { url, auth: expectedToken ? 'bearer' : 'none' });

  let closed: Promise<void> | undefined;
  return {
    url,
    port: address.port,
    sessionCount: () => sessions.size,
    close() {
      closed ??= (async () => {
        shuttingDown = true;
        const stopped = new Promise<void>((resolve) => httpServer.close(() => resolve()));
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
