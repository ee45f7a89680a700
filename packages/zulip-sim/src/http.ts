import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ApiError, badRequest } from './errors.js';
import type { FaultPlan, FaultSet } from './faults.js';
import {
  type ApiContext,
  RawJson,
  RawReply,
  ROUTES,
  serverSettings,
  UPLOAD_FORBIDDEN,
  UPLOAD_NOT_FOUND,
} from './handlers.js';
import type { UserRecord } from './model.js';
import { type Params, parseParams } from './params.js';
import { EMOJI_PNG } from './png.js';
import type { QueueManager } from './queues.js';
import type { RateDecision, RateLimiter } from './rate-limit.js';
import { REALM_ID, type Realm } from './realm.js';
import type { SimLogger, SimRequestRecord } from './types.js';

export interface FrontDeps {
  realm: Realm;
  queues: QueueManager;
  faults: FaultSet;
  limiter(): RateLimiter | null;
  site(): string;
  record(request: SimRequestRecord, response: () => unknown): void;
  /** Whether anyone keeps or listens to the request log (snapshots are skipped otherwise). */
  recording(): boolean;
  logger: SimLogger;
}

interface Outgoing {
  status: number;
  contentType: string;
  headers: Record<string, string>;
  body: Buffer;
}

const UNAUTHORIZED_HEADERS = { 'WWW-Authenticate': 'Basic realm="zulip"' };

function json(status: number, body: unknown, headers: Record<string, string> = {}): Outgoing {
  return { status, contentType: 'application/json', headers, body: Buffer.from(JSON.stringify(body)) };
}

function errorReply(error: ApiError, headers: Record<string, string> = {}): Outgoing {
  const extra = error.status === 401 ? UNAUTHORIZED_HEADERS : {};
  return json(error.status, error.body(), { ...extra, ...headers });
}

function unauthorized(msg: string): ApiError {
  return new ApiError(401, 'UNAUTHORIZED', msg);
}

const CLIENT_PATTERN = /^(?<name>[^/ ]*[^0-9/(]*)(\/(?<version>[^/ ]*))?([ /].*)?$/;

/** The client name Zulip derives from the User-Agent product token. */
export function clientName(userAgent: string | undefined): string {
  if (!userAgent) return 'Unspecified';
  const name = CLIENT_PATTERN.exec(userAgent)?.groups?.name?.trim();
  return name || 'Unspecified';
}

/** The HTTP side of the simulator: one node:http server, every socket tracked for restarts. */
export class HttpFront {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly deps: FrontDeps;
  port = 0;

  constructor(deps: FrontDeps) {
    this.deps = deps;
  }

  listen(host: string, port: number): Promise<number> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        this.deps.logger.error?.('zulip-sim: request failed', error);
        if (!res.headersSent && !res.destroyed) res.destroy();
      });
    });
    server.keepAliveTimeout = 5_000;
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        this.port = (server.address() as AddressInfo).port;
        resolve(this.port);
      });
    });
  }

  close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return Promise.resolve();
    return new Promise((resolve) => {
      server.close(() => resolve());
      for (const socket of this.sockets) socket.destroy();
      this.sockets.clear();
      server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const time = Date.now();
    const started = performance.now();
    const method = (req.method ?? 'GET').toUpperCase();
    const url = new URL(req.url ?? '/', 'http://sim.invalid');
    const path = url.pathname;
    const closeListeners: (() => void)[] = [];
    res.on('close', () => {
      if (!res.writableFinished) for (const listener of closeListeners) listener();
    });
    const meta: { params: Params | null; user: UserRecord | null } = { params: null, user: null };

    const plan = this.deps.faults.plan(method, path);
    if (plan && plan.latencyMs > 0) await new Promise((r) => setTimeout(r, plan.latencyMs));
    let out: Outgoing;
    if (plan?.status !== undefined) {
      await drain(req);
      out = faultReply(plan);
    } else {
      const body = await readBody(req);
      out = await this.dispatch(method, url, req, body, meta, (l) => closeListeners.push(l));
    }
    if (res.destroyed) return;
    this.write(res, out, plan);
    if (this.deps.recording()) {
      this.deps.record(
        {
          method,
          path,
          params: meta.params?.snapshot() ?? {},
          userId: meta.user?.id ?? null,
          status: out.status,
          time,
          durationMs: performance.now() - started,
          ...(req.headers['user-agent'] === undefined ? {} : { userAgent: req.headers['user-agent'] }),
          ...(plan && (plan.status !== undefined || plan.dropConnection || plan.truncateBody)
            ? { fault: true as const }
            : {}),
        },
        () => jsonBody(out),
      );
    }
  }

  private write(res: ServerResponse, out: Outgoing, plan: FaultPlan | undefined): void {
    const headers: Record<string, string | number> = { ...out.headers, 'Content-Type': out.contentType };
    if (plan?.truncateBody) {
      const cut = out.body.subarray(0, Math.max(1, Math.floor(out.body.length / 2)));
      res.writeHead(out.status, { ...headers, 'Content-Length': cut.length });
      res.end(cut);
      return;
    }
    res.writeHead(out.status, { ...headers, 'Content-Length': out.body.length });
    if (plan?.dropConnection) {
      const socket = res.socket;
      res.write(out.body.subarray(0, Math.floor(out.body.length / 2)), () => socket?.destroy());
      return;
    }
    res.end(out.body);
  }

  private async dispatch(
    method: string,
    url: URL,
    req: IncomingMessage,
    body: Buffer,
    meta: { params: Params | null; user: UserRecord | null },
    onClose: (listener: () => void) => void,
  ): Promise<Outgoing> {
    const path = url.pathname;
    if (path === '/api/v1' || path.startsWith('/api/v1/')) {
      return this.api(method, path.slice('/api/v1'.length), url, req, body, meta, onClose);
    }
    if (path.startsWith('/user_uploads/')) return this.download(path, url, req);
    if (path.startsWith('/user_avatars/')) {
      return { status: 200, contentType: 'image/png', headers: {}, body: EMOJI_PNG };
    }
    return {
      status: 404,
      contentType: 'text/html; charset=utf-8',
      headers: {},
      body: Buffer.from('<p>Page not found.</p>'),
    };
  }

  private async api(
    method: string,
    apiPath: string,
    url: URL,
    req: IncomingMessage,
    body: Buffer,
    meta: { params: Params | null; user: UserRecord | null },
    onClose: (listener: () => void) => void,
  ): Promise<Outgoing> {
    const { realm } = this.deps;
    if (apiPath === '/server_settings') {
      if (method !== 'GET' && method !== 'POST') return methodNotAllowed('GET');
      return json(200, serverSettings(realm, this.deps.site()));
    }
    // Reminders fall due by the realm's clock, which may be driven by hand: any request delivers them.
    if (realm.reminders.size > 0) realm.deliverDueReminders();
    const candidates = ROUTES.filter(
      (r) => r.pattern.test(apiPath) && (r.minLevel === undefined || realm.has(r.minLevel)),
    );
    if (candidates.length === 0) return json(404, { result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' });
    const route = candidates.find((r) => r.method === method);
    if (!route) return methodNotAllowed(candidates.map((r) => r.method).join(','));
    const match = (route.pattern.exec(apiPath) as RegExpExecArray).slice(1);

    let user: UserRecord;
    try {
      user = this.authenticate(req.headers.authorization);
    } catch (error) {
      if (error instanceof ApiError) return errorReply(error);
      throw error;
    }
    meta.user = user;
    let rate: RateDecision | null = null;
    const limiter = this.deps.limiter();
    if (limiter) {
      rate = limiter.check(user.id);
      if (!rate.allowed) {
        return json(
          429,
          {
            result: 'error',
            msg: 'API usage exceeded rate limit',
            code: 'RATE_LIMIT_HIT',
            'retry-after': rate.retryAfter,
          },
          { 'Retry-After': String(rate.retryAfter), ...rateHeaders(rate) },
        );
      }
    }
    const headers = rate ? rateHeaders(rate) : {};
    try {
      const params = parseParams(url.searchParams, req.headers['content-type'], body);
      meta.params = params;
      const client = params.raw('client') ?? clientName(req.headers['user-agent']);
      const ctx: ApiContext = {
        realm,
        queues: this.deps.queues,
        user,
        params,
        match,
        client,
        site: this.deps.site(),
        onClose,
      };
      const result = await route.handler(ctx);
      if (result instanceof RawReply) {
        return {
          status: result.status,
          contentType: result.contentType,
          headers: { ...headers, ...result.headers },
          body: result.body,
        };
      }
      return {
        status: 200,
        contentType: 'application/json',
        headers,
        body: successBody(result, params.unused()),
      };
    } catch (error) {
      if (error instanceof ApiError) return errorReply(error, headers);
      this.deps.logger.error?.(`zulip-sim: ${method} ${apiPath} failed`, error);
      return json(500, { result: 'error', msg: 'Internal server error', code: 'BAD_REQUEST' }, headers);
    }
  }

  /** Basic auth exactly as Zulip checks it on /api/v1. */
  private authenticate(header: string | undefined): UserRecord {
    if (!header) throw unauthorized('Not logged in: API authentication or user session required');
    const space = header.indexOf(' ');
    const scheme = space < 0 ? header : header.slice(0, space);
    if (scheme.toLowerCase() !== 'basic')
      throw badRequest('This endpoint requires HTTP basic authentication.');
    const decoded = Buffer.from(header.slice(space + 1).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw unauthorized('Invalid authorization header for basic auth');
    const email = decoded.slice(0, colon);
    const key = decoded.slice(colon + 1);
    if (!/^[A-Za-z0-9]{32}$/.test(key)) throw unauthorized('Malformed API key');
    const user = this.deps.realm.userByKey(key);
    if (!user || user.deliveryEmail.toLowerCase() !== email.toLowerCase())
      throw unauthorized('Invalid API key');
    if (!user.isActive) throw unauthorized('Account is deactivated');
    return user;
  }

  private download(path: string, url: URL, req: IncomingMessage): Outgoing {
    const { realm } = this.deps;
    const raw = (r: RawReply): Outgoing => ({
      status: r.status,
      contentType: r.contentType,
      headers: r.headers,
      body: r.body,
    });
    const temporary = /^\/user_uploads\/temporary\/([^/]+)\/[^/]+$/.exec(path);
    if (temporary) {
      const record = realm.resolveTemporaryUrl(temporary[1] as string);
      return record ? fileReply(record.bytes, record.contentType, record.filename) : raw(UPLOAD_NOT_FOUND());
    }
    const m = /^\/user_uploads\/(\d+)\/(.+)$/.exec(path);
    if (!m || Number(m[1]) !== REALM_ID) return raw(UPLOAD_NOT_FOUND());
    let user: UserRecord | undefined;
    const apiKey = url.searchParams.get('api_key');
    if (req.headers.authorization) {
      try {
        user = this.authenticate(req.headers.authorization);
      } catch (error) {
        if (error instanceof ApiError) return errorReply(error);
        throw error;
      }
    } else if (apiKey) {
      user = realm.userByKey(apiKey);
      if (!user?.isActive) return errorReply(unauthorized('Invalid API key'));
    }
    let pathId: string;
    try {
      pathId = `${m[1]}/${decodeURIComponent(m[2] as string)}`;
    } catch {
      return raw(UPLOAD_NOT_FOUND());
    }
    const record = realm.uploads.get(pathId);
    if (!record) return raw(UPLOAD_NOT_FOUND());
    if (!user || !realm.canReadUpload(user, record)) return raw(UPLOAD_FORBIDDEN());
    return fileReply(record.bytes, record.contentType, record.filename);
  }
}

/** The parsed JSON of an answer, or undefined for other content. */
function jsonBody(out: Outgoing): unknown {
  if (!out.contentType.startsWith('application/json')) return undefined;
  try {
    return JSON.parse(out.body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function fileReply(bytes: Buffer, contentType: string, filename: string): Outgoing {
  const inline = /^(image\/(png|jpeg|gif|webp)|application\/pdf|text\/plain|video\/|audio\/)/.test(
    contentType,
  );
  return {
    status: 200,
    contentType,
    headers: {
      'Content-Disposition': `${inline ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(filename)}`,
      'Cache-Control': 'private, immutable',
    },
    body: bytes,
  };
}

/** `{"result":"success","msg":"",...}` with pre-serialized parts spliced in as they are. */
function successBody(result: Record<string, unknown>, ignored: string[]): Buffer {
  let text = '{"result":"success","msg":""';
  const chunks: Buffer[] = [];
  for (const [key, value] of Object.entries(result)) {
    if (value === undefined) continue;
    if (value instanceof RawJson) {
      chunks.push(Buffer.from(`${text},${JSON.stringify(key)}:`), ...value.chunks);
      text = '';
    } else {
      text += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
    }
  }
  if (ignored.length > 0) text += `,"ignored_parameters_unsupported":${JSON.stringify(ignored)}`;
  chunks.push(Buffer.from(`${text}}`));
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
}

function rateHeaders(rate: RateDecision): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(rate.limit),
    'X-RateLimit-Remaining': String(rate.remaining),
    'X-RateLimit-Reset': String(rate.reset),
  };
}

function methodNotAllowed(allowed: string): Outgoing {
  return json(405, {
    result: 'error',
    msg: 'Method Not Allowed',
    code: 'BAD_REQUEST',
    allowed_methods: allowed,
  });
}

function faultReply(plan: FaultPlan): Outgoing {
  const status = plan.status as number;
  if (status === 429) {
    const after = plan.retryAfter ?? 1;
    return json(
      429,
      { result: 'error', msg: 'API usage exceeded rate limit', code: 'RATE_LIMIT_HIT', 'retry-after': after },
      { 'Retry-After': String(after) },
    );
  }
  if (status === 500)
    return json(500, { result: 'error', msg: 'Internal server error', code: 'BAD_REQUEST' });
  const reason: Record<number, string> = {
    502: 'Bad Gateway',
    503: 'Service Unavailable',
    504: 'Gateway Time-out',
  };
  const text = reason[status] ?? 'Error';
  const headers: Record<string, string> =
    plan.retryAfter !== undefined ? { 'Retry-After': String(plan.retryAfter) } : {};
  return {
    status,
    contentType: 'text/html',
    headers,
    body: Buffer.from(
      `<html>\r\n<head><title>${status} ${text}</title></head>\r\n<body>\r\n<center><h1>${status} ${text}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n`,
    ),
  };
}

const MAX_BODY_BYTES = 128 * 1024 * 1024;

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.destroy();
        reject(new Error('request body too large'));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function drain(req: IncomingMessage): Promise<void> {
  return readBody(req).then(
    () => undefined,
    () => undefined,
  );
}
