import { Readable } from 'node:stream';
import { type Dispatcher, Pool } from 'undici';
import type { z } from 'zod';
import { errorCode, ZmcpError, type ZmcpErrorCode, ZulipApiError } from '../errors.js';
import type { Clock } from './clock.js';
import { Deadline } from './deadline.js';
import { encodeParams, type RequestParams } from './encode.js';
import { type Logger, redactSecrets, redactValue } from './logger.js';
import type { MultipartBody } from './multipart.js';
import { RatePacer } from './rate-pacer.js';
import { backoffDelay, parseRetryAfter, type RetryPolicy } from './retry.js';
import type { ZulipSite } from './site.js';

/** HTTP methods the Zulip API uses. */
export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** Per-call options every client method accepts. */
export interface CallOptions {
  /** This call's deadline, covering retries and rate-limit waits; overrides the client's default. */
  timeoutMs?: number | undefined;
  /** Aborts the call; composed with the deadline. */
  signal?: AbortSignal | undefined;
  /** Replaces the client's retry policy for this call; `false` for a single attempt. */
  retry?: Partial<RetryPolicy> | false | undefined;
}

/** One JSON API call, described for {@link Transport.request}. */
export interface ApiCall<T> {
  method: HttpMethod;
  /** Endpoint under `/api/v1`, starting with `/`, path parameters already encoded. */
  path: string;
  params?: RequestParams | undefined;
  schema: z.ZodType<T>;
  /** Whether a repeat is harmless, so 5xx and torn connections may be retried. Default: GET only. */
  idempotent?: boolean | undefined;
  /** Send the Authorization header (default true; GET /server_settings needs none). */
  auth?: boolean | undefined;
  /** Default deadline for this endpoint when the caller gives none (long polls need more). */
  defaultTimeoutMs?: number | undefined;
  /**
   * An allocation-free guard accepting only bodies `schema` accepts; when it passes, the body is
   * returned as is and zod is skipped (hot paths only).
   */
  fast?: ((body: unknown) => boolean) | undefined;
}

/** Settings of a {@link Transport}. */
export interface TransportOptions {
  site: ZulipSite;
  email: string;
  apiKey: string;
  readOnly: boolean;
  timeoutMs: number;
  uploadTimeoutMs: number;
  retry: RetryPolicy;
  logger: Logger;
  clock: Clock;
  random: () => number;
  userAgent: string;
  maxResponseBytes: number;
  pacing: boolean;
  dispatcher?: Dispatcher | undefined;
  connections: number;
}

/** A response whose headers arrived; the body is still to be read. */
interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
}

/** What the retry loop needs to know about a failure. */
type Retryable = 'always' | 'idempotent' | 'rate-limited' | 'never';

const retryKind = new WeakMap<Error, Retryable>();

function mark<E extends Error>(err: E, kind: Retryable): E {
  retryKind.set(err, kind);
  return err;
}

// Errors raised before the request could have reached Zulip: safe to repeat any call.
const connectCodes = new Set([
  'ECONNREFUSED',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);
// Errors after the request may have been sent: repeat only idempotent calls.
const tornCodes = new Set([
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_INFO',
]);

function errorCodes(err: unknown): string[] {
  const codes: string[] = [];
  let cur: unknown = err;
  for (let depth = 0; depth < 5 && typeof cur === 'object' && cur !== null; depth++) {
    const code = errorCode(cur);
    if (code !== undefined) codes.push(code);
    cur = (cur as { cause?: unknown }).cause;
  }
  return codes;
}

function headerValue(headers: RawResponse['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const MAX_MSG = 300;

/**
 * Zulip's refusal of a new topic under `can_create_topic_group` (FL441). Zulip gives it no code
 * of its own (`BAD_REQUEST`), so the message is what tells it apart; bots get it in English.
 */
const TOPIC_CREATION_DENIED = /^You do not have permission to create new topics in this channel\.?$/;

/**
 * The one HTTP path to a realm: every request of a client goes through {@link Transport.request},
 * {@link Transport.upload} or {@link Transport.download}, which enforce read-only mode, the
 * deadline, retries, rate-limit pacing and the error mapping. Internal to the package.
 */
export class Transport {
  readonly site: ZulipSite;
  readonly email: string;
  readonly readOnly: boolean;
  readonly #opts: TransportOptions;
  readonly #authHeader: string;
  readonly #secrets: readonly string[];
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #pacer: RatePacer;
  readonly #live = new Set<Deadline>();
  #closed = false;

  constructor(options: TransportOptions) {
    this.#opts = options;
    this.site = options.site;
    this.email = options.email;
    this.readOnly = options.readOnly;
    const encoded = Buffer.from(`${options.email}:${options.apiKey}`, 'utf8').toString('base64');
    this.#authHeader = `Basic ${encoded}`;
    this.#secrets = [options.apiKey, encoded];
    this.#pacer = new RatePacer(options.clock);
    if (options.dispatcher !== undefined) {
      this.#dispatcher = options.dispatcher;
      this.#ownsDispatcher = false;
    } else {
      this.#dispatcher = new Pool(options.site.origin, {
        connections: options.connections,
        keepAliveTimeout: 30_000,
        keepAliveMaxTimeout: 120_000,
        pipelining: 1,
      });
      this.#ownsDispatcher = true;
    }
  }

  /** Removes every credential from a piece of text before it goes into an error or a log line. */
  redact(text: string): string {
    return redactSecrets(text, this.#secrets);
  }

  /**
   * Ends calls in flight with `CORE_CLOSED`, then closes the pool (when the transport created it);
   * later calls fail with `CORE_CLOSED` before sending anything.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const deadline of [...this.#live]) deadline.fire('closed', new Error('the client was closed'));
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The one gate every request passes before anything is sent: closed clients and read-only mode. */
  #admit(method: HttpMethod, label: string): void {
    if (this.#closed) throw new ZmcpError('CORE_CLOSED', `The Zulip client is closed; ${label} was not sent`);
    if (this.readOnly && method !== 'GET') {
      this.#opts.logger.warn('read-only mode refused a request', { method, label });
      throw new ZmcpError('CORE_READ_ONLY', `Read-only mode refused ${label}; nothing was sent`, {
        details: { method },
      });
    }
  }

  /** Sends one JSON API call and returns its validated body. */
  async request<T>(call: ApiCall<T>, options: CallOptions = {}): Promise<T> {
    const label = `${call.method} ${call.path}`;
    this.#admit(call.method, label);
    const idempotent = call.idempotent ?? call.method === 'GET';
    const query = encodeParams(call.params);
    const isGet = call.method === 'GET';
    const path = `${this.site.basePath}/api/v1${call.path}${isGet && query !== '' ? `?${query}` : ''}`;
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': this.#opts.userAgent,
    };
    if (call.auth !== false) headers.authorization = this.#authHeader;
    let body: string | undefined;
    if (!isGet) {
      body = query;
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    return this.#withRetries(
      label,
      idempotent,
      options,
      call.defaultTimeoutMs ?? this.#opts.timeoutMs,
      async (deadline) => {
        const res = await this.#dispatch(label, deadline, {
          method: call.method,
          path,
          headers,
          body,
          idempotent,
        });
        const text = await this.#readText(label, res, deadline);
        return this.#interpret(label, res, text, call.schema, call.fast);
      },
    );
  }

  /**
   * Sends one streamed multipart upload. Never retried: the body is consumed as it is sent.
   * The Content-Length is exact, so the file is never buffered.
   */
  async upload<T>(
    path: string,
    body: MultipartBody,
    schema: z.ZodType<T>,
    options: Omit<CallOptions, 'retry'> = {},
  ): Promise<T> {
    const label = `POST ${path}`;
    this.#admit('POST', label);
    let bodyError: unknown;
    const source = body.chunks;
    async function* guarded(): AsyncGenerator<Uint8Array> {
      try {
        yield* source;
      } catch (err) {
        bodyError = err;
        throw err;
      }
    }
    return this.#withRetries(
      label,
      false,
      { ...options, retry: false },
      this.#opts.uploadTimeoutMs,
      async (deadline) => {
        let res: RawResponse;
        try {
          res = await this.#dispatch(label, deadline, {
            method: 'POST',
            path: `${this.site.basePath}/api/v1${path}`,
            headers: {
              accept: 'application/json',
              'user-agent': this.#opts.userAgent,
              authorization: this.#authHeader,
              'content-type': body.contentType,
              'content-length': String(body.contentLength),
            },
            body: Readable.from(guarded(), { objectMode: false }),
            idempotent: false,
          });
        } catch (err) {
          if (bodyError instanceof ZmcpError) throw mark(bodyError, 'never');
          throw err;
        }
        const text = await this.#readText(label, res, deadline);
        return this.#interpret(label, res, text, schema);
      },
    );
  }

  /**
   * Fetches raw bytes from a realm URL with auth, following redirects only while `allow` accepts
   * the target, and stopping at `maxBytes`.
   */
  async download(
    url: URL,
    allow: (target: URL) => boolean,
    maxBytes: number,
    options: CallOptions = {},
  ): Promise<{ bytes: Uint8Array; contentType: string | undefined; url: URL }> {
    const label = `GET ${url.pathname}`;
    this.#admit('GET', label);
    return this.#withRetries(label, true, options, this.#opts.uploadTimeoutMs, async (deadline) => {
      let target = url;
      for (let hop = 0; ; hop++) {
        const res = await this.#dispatch(label, deadline, {
          method: 'GET',
          path: `${target.pathname}${target.search}`,
          headers: { 'user-agent': this.#opts.userAgent, authorization: this.#authHeader, accept: '*/*' },
          body: undefined,
          idempotent: true,
        });
        if (res.status >= 300 && res.status < 400) {
          discard(res.body);
          const location = headerValue(res.headers, 'location');
          let next: URL | undefined;
          try {
            next = location === undefined ? undefined : new URL(location, target);
          } catch {
            next = undefined;
          }
          if (next === undefined || hop >= 4 || !allow(next)) {
            throw mark(
              new ZmcpError(
                'CORE_BAD_RESPONSE',
                `${label} redirected ${next === undefined ? 'nowhere readable' : `to ${next.origin}${next.pathname}`}, outside the realm's uploads; not followed`,
                { details: { status: res.status, location: next?.origin } },
              ),
              'never',
            );
          }
          target = next;
          continue;
        }
        if (res.status < 200 || res.status >= 300) {
          const text = await this.#readText(label, res, deadline).catch(() => '');
          throw this.#httpError(label, res, text, true);
        }
        const declared = Number(headerValue(res.headers, 'content-length'));
        if (Number.isFinite(declared) && declared > maxBytes) {
          discard(res.body);
          throw mark(tooLarge(label, maxBytes, declared), 'never');
        }
        const bytes = await this.#readBytes(label, res, deadline, maxBytes, true);
        return { bytes, contentType: headerValue(res.headers, 'content-type'), url: target };
      }
    });
  }

  async #withRetries<T>(
    label: string,
    idempotent: boolean,
    options: CallOptions,
    defaultTimeoutMs: number,
    attempt: (deadline: Deadline) => Promise<T>,
  ): Promise<T> {
    const policy: RetryPolicy =
      options.retry === false
        ? { ...this.#opts.retry, maxAttempts: 1, maxRateLimitWaits: 0 }
        : { ...this.#opts.retry, ...options.retry };
    const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
    if (!(timeoutMs > 0) || !Number.isFinite(timeoutMs)) {
      throw new ZmcpError('CORE_INVALID_ARGUMENT', `timeoutMs must be a positive number of milliseconds`, {
        details: { timeoutMs },
      });
    }
    const deadline = new Deadline(timeoutMs, options.signal, this.#live);
    const log = this.#opts.logger;
    let failures = 0;
    let rateWaits = 0;
    try {
      while (true) {
        await this.#pace(label, deadline);
        try {
          return await attempt(deadline);
        } catch (raw) {
          const err = this.#normalize(label, raw, deadline);
          const kind = retryKind.get(err) ?? 'never';
          if (kind === 'rate-limited') {
            const waitMs =
              err instanceof ZulipApiError && err.retryAfter !== undefined ? err.retryAfter * 1000 : 1000;
            this.#pacer.block(waitMs);
            if (rateWaits >= policy.maxRateLimitWaits || waitMs > policy.maxRetryAfterMs) throw err;
            if (waitMs >= deadline.remaining()) throw err;
            rateWaits += 1;
            log.warn('rate limited; waiting as Zulip asked', { label, waitMs, wait: rateWaits });
            continue;
          }
          const may = kind === 'always' || (kind === 'idempotent' && idempotent);
          failures += 1;
          if (!may || failures >= policy.maxAttempts) throw err;
          const delay = backoffDelay(failures, policy, this.#opts.random);
          if (delay >= deadline.remaining()) throw err;
          log.debug('retrying after a transient failure', {
            label,
            code: err.code,
            attempt: failures,
            delay,
          });
          try {
            await this.#opts.clock.sleep(delay, deadline.signal);
          } catch (sleepErr) {
            throw this.#normalize(label, sleepErr, deadline);
          }
        }
      }
    } finally {
      deadline.dispose();
    }
  }

  /** Waits as the rate-limit state asks, or fails at once when the wait would outlast the deadline. */
  async #pace(label: string, deadline: Deadline): Promise<void> {
    if (!this.#opts.pacing) return;
    for (let round = 0; round < 8; round++) {
      const decision = this.#pacer.reserve();
      if (decision.waitMs <= 0) return;
      if (decision.waitMs >= deadline.remaining()) {
        // Pacing is a courtesy: when there is no time for it, try anyway and let Zulip decide.
        if (decision.reason === 'low' || decision.reason === 'empty') return;
        throw new ZmcpError(
          'CORE_RATE_LIMITED',
          `${label} was not sent: Zulip's rate limit holds requests for another ${Math.ceil(decision.waitMs)} ms, beyond the call's deadline`,
          { details: { retryAfterMs: Math.ceil(decision.waitMs) } },
        );
      }
      this.#opts.logger.debug('pacing before a request', { label, ...decision });
      try {
        await this.#opts.clock.sleep(decision.waitMs, deadline.signal);
      } catch (err) {
        throw this.#normalize(label, err, deadline);
      }
      // A 'low' wait already holds this request's place in the bucket; empty or blocked re-checks.
      if (decision.reason === 'low') return;
    }
  }

  async #dispatch(
    label: string,
    deadline: Deadline,
    req: {
      method: HttpMethod;
      path: string;
      headers: Record<string, string>;
      body: string | Readable | undefined;
      idempotent: boolean;
    },
  ): Promise<RawResponse> {
    try {
      const res = await this.#dispatcher.request({
        origin: this.site.origin,
        path: req.path,
        method: req.method,
        headers: req.headers,
        body: req.body ?? null,
        idempotent: req.idempotent,
        signal: deadline.emitter,
        // The deadline governs; undici's own 300 s timers must not cut a long poll short.
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      if (this.#opts.pacing) this.#pacer.observe(res.headers);
      return { status: res.statusCode, headers: res.headers, body: res.body };
    } catch (err) {
      throw this.#normalize(label, err, deadline);
    }
  }

  async #readText(label: string, res: RawResponse, deadline: Deadline): Promise<string> {
    const declared = Number(headerValue(res.headers, 'content-length'));
    if (Number.isSafeInteger(declared) && declared <= this.#opts.maxResponseBytes) {
      // undici enforces the declared length, so the cap holds without counting chunk by chunk.
      try {
        return await res.body.text();
      } catch (err) {
        throw this.#normalize(label, err, deadline);
      }
    }
    const bytes = await this.#readBytes(label, res, deadline, this.#opts.maxResponseBytes, false);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  }

  async #readBytes(
    label: string,
    res: RawResponse,
    deadline: Deadline,
    maxBytes: number,
    isDownload: boolean,
  ): Promise<Uint8Array> {
    const chunks: Buffer[] = [];
    let total = 0;
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        total += chunk.byteLength;
        if (total > maxBytes) {
          discard(res.body);
          throw mark(
            isDownload
              ? tooLarge(label, maxBytes, undefined)
              : new ZmcpError(
                  'CORE_BAD_RESPONSE',
                  `${label}: the response is larger than ${maxBytes} bytes`,
                  {
                    details: { maxBytes },
                  },
                ),
            'never',
          );
        }
        chunks.push(chunk);
      }
    } catch (err) {
      throw this.#normalize(label, err, deadline);
    }
    return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, total);
  }

  #interpret<T>(
    label: string,
    res: RawResponse,
    text: string,
    schema: z.ZodType<T>,
    fast?: (body: unknown) => boolean,
  ): T {
    if (res.status < 200 || res.status >= 300) throw this.#httpError(label, res, text, false);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (cause) {
      throw mark(
        new ZmcpError('CORE_BAD_RESPONSE', `${label}: Zulip's answer is not valid JSON`, {
          cause,
          details: { status: res.status, reason: 'unparseable', length: text.length },
        }),
        'idempotent',
      );
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new ZmcpError('CORE_BAD_RESPONSE', `${label}: Zulip's answer is not a JSON object`, {
        details: { status: res.status, reason: 'not-an-object' },
      });
    }
    const result = (parsed as { result?: unknown }).result;
    if (result === 'error') throw this.#httpError(label, { ...res, status: 400 }, text, false, parsed);
    if (fast?.(parsed)) return parsed as T;
    const checked = schema.safeParse(parsed);
    if (!checked.success) {
      const first = checked.error.issues[0];
      const where = first === undefined ? '' : ` (${first.path.join('.') || 'body'}: ${first.message})`;
      throw new ZmcpError(
        'CORE_BAD_RESPONSE',
        `${label}: Zulip's answer is missing or mistyping a field${where}`,
        {
          cause: checked.error,
          details: { status: res.status, reason: 'schema' },
        },
      );
    }
    return checked.data;
  }

  #httpError(
    label: string,
    res: RawResponse,
    text: string,
    isDownload: boolean,
    parsedBody?: unknown,
  ): ZmcpError {
    let body: Record<string, unknown> | undefined;
    if (parsedBody !== undefined) body = parsedBody as Record<string, unknown>;
    else if (!isDownload) {
      try {
        const p: unknown = JSON.parse(text);
        if (typeof p === 'object' && p !== null && !Array.isArray(p)) body = p as Record<string, unknown>;
      } catch {
        body = undefined;
      }
    }
    const zulipCode = typeof body?.code === 'string' ? body.code : undefined;
    const rawMsg = typeof body?.msg === 'string' ? body.msg : '';
    const msg = this.redact(rawMsg).slice(0, MAX_MSG);
    const status = res.status;
    const nowMs = this.#opts.clock.now();
    const retryAfterMs =
      parseRetryAfter(headerValue(res.headers, 'retry-after'), nowMs) ??
      parseRetryAfter(body?.['retry-after'], nowMs);
    let code: ZmcpErrorCode;
    let kind: Retryable = 'never';
    if (status === 401) code = 'CORE_UNAUTHORIZED';
    else if (status === 429) {
      code = 'CORE_RATE_LIMITED';
      kind = 'rate-limited';
    } else if (status >= 500) {
      code = 'CORE_SERVER_ERROR';
      kind = 'idempotent';
    } else if (status === 404 || (isDownload && status === 403) || zulipCode === 'STREAM_DOES_NOT_EXIST') {
      code = 'CORE_NOT_FOUND';
    } else if (status >= 400) {
      code = TOPIC_CREATION_DENIED.test(rawMsg) ? 'CORE_TOPIC_CREATION_DENIED' : 'CORE_BAD_REQUEST';
    } else code = 'CORE_BAD_RESPONSE';
    const extra: Record<string, unknown> = {};
    if (body !== undefined) {
      for (const [k, v] of Object.entries(body)) if (k !== 'result' && k !== 'msg') extra[k] = v;
    }
    const what =
      code === 'CORE_UNAUTHORIZED'
        ? `Zulip rejected the credentials of ${this.email}`
        : code === 'CORE_RATE_LIMITED'
          ? `Zulip's rate limit refused ${label}`
          : code === 'CORE_TOPIC_CREATION_DENIED'
            ? `Zulip refused ${label}: the channel's can_create_topic_group setting does not let this account start a new topic`
            : `Zulip refused ${label}`;
    const err = new ZulipApiError(
      code,
      `${what} (HTTP ${status}${zulipCode === undefined ? '' : ` ${zulipCode}`})${msg === '' ? '' : `: ${msg}`}`,
      {
        status,
        zulipCode,
        retryAfter: retryAfterMs === undefined ? undefined : retryAfterMs / 1000,
        body: redactValue(extra, this.#secrets) as Record<string, unknown>,
        details: retryAfterMs === undefined ? { status } : { status, retryAfterMs: Math.ceil(retryAfterMs) },
      },
    );
    return mark(err, kind);
  }

  /** Turns anything thrown during an attempt into a `ZmcpError`, marked with how it may be retried. */
  #normalize(label: string, err: unknown, deadline: Deadline): ZmcpError {
    const fired = deadline.reason();
    if (fired === 'closed') {
      return new ZmcpError('CORE_CLOSED', `${label} was cut short: the Zulip client was closed`, {
        cause: err,
      });
    }
    if (fired === 'timeout') {
      return new ZmcpError('CORE_TIMEOUT', `${label}: no answer within ${deadline.timeoutMs} ms`, {
        cause: err,
        details: { timeoutMs: deadline.timeoutMs },
      });
    }
    if (fired === 'aborted') {
      return new ZmcpError('CORE_ABORTED', `${label} was aborted by the caller`, { cause: err });
    }
    if (err instanceof ZmcpError) return err;
    const codes = errorCodes(err);
    const connect = codes.some((c) => connectCodes.has(c));
    const detail =
      codes.find((c) => tornCodes.has(c) || connectCodes.has(c)) ??
      codes[0] ??
      (err instanceof Error ? err.name : 'unknown');
    const message = connect
      ? `${label}: could not connect to ${this.site.origin} (${detail})`
      : `${label}: the connection to ${this.site.origin} failed (${detail})`;
    const wrapped = new ZmcpError('CORE_NETWORK', message, {
      cause: err,
      details: { errorCode: detail, phase: connect ? 'connect' : 'exchange' },
    });
    // A torn exchange may or may not have reached Zulip; anything unrecognised is treated the same.
    return mark(wrapped, connect ? 'always' : 'idempotent');
  }
}

/** Drops a response body we will not read; its abort must not surface as an unhandled error. */
function discard(body: RawResponse['body']): void {
  body.on('error', () => {});
  body.destroy();
}

function tooLarge(label: string, maxBytes: number, declared: number | undefined): ZmcpError {
  return new ZmcpError(
    'CORE_TOO_LARGE',
    `${label}: the file is larger than the cap of ${maxBytes} bytes${declared === undefined ? '' : ` (${declared} declared)`}`,
    { details: { maxBytes, ...(declared === undefined ? {} : { declared }) } },
  );
}
