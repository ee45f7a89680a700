import type { Readable, Writable } from 'node:stream';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { McplError } from '../errors.js';
import { isPlainObject } from '../json.js';
import { type McplLogger, silentMcplLogger } from '../logger.js';

/** The default cap on one line, in bytes; a longer line is skipped without being buffered. */
export const DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024;

/** Options of {@link NdjsonTransport}. */
export interface NdjsonTransportOptions {
  /** The longest line accepted, in bytes (default 4 MiB). Longer lines are dropped and logged. */
  maxLineBytes?: number | undefined;
  /** Where dropped lines are reported. */
  logger?: McplLogger | undefined;
  /** End the writable stream on close (default true; false for `process.stdout`). */
  endOnClose?: boolean | undefined;
}

const NEWLINE = 0x0a;

// What `send` returns when the stream took the line at once: no promise is made per line.
const SENT: Promise<void> = Promise.resolve();

type Id = string | number;

function isId(value: unknown): value is Id {
  return typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));
}

/** What one parsed line is: a message to deliver, a request to refuse, or nothing usable. */
type Classified =
  | { kind: 'message'; message: JSONRPCMessage }
  | { kind: 'invalid-request'; id: Id; why: string }
  | { kind: 'drop'; why: string };

/**
 * Reads one JSON value as JSON-RPC 2.0 and rebuilds it with only the members JSON-RPC defines,
 * so an extra top-level member cannot make the SDK ignore a request without answering it.
 */
function classify(value: unknown): Classified {
  if (!isPlainObject(value)) return { kind: 'drop', why: 'not a JSON object' };
  const { id, method, params } = value;
  const hasId = 'id' in value;
  if (typeof method === 'string') {
    const badParams = params !== undefined && !isPlainObject(params);
    if (value.jsonrpc !== '2.0' || badParams || (hasId && !isId(id))) {
      if (hasId && isId(id)) {
        return {
          kind: 'invalid-request',
          id,
          why: badParams ? 'params must be an object' : 'jsonrpc must be "2.0"',
        };
      }
      return { kind: 'drop', why: 'a malformed request or notification' };
    }
    const message: Record<string, unknown> = { jsonrpc: '2.0', method };
    if (hasId) message.id = id;
    if (params !== undefined) message.params = params;
    return { kind: 'message', message: message as JSONRPCMessage };
  }
  if (value.jsonrpc !== '2.0') return { kind: 'drop', why: 'jsonrpc is not "2.0"' };
  if ('result' in value) {
    if (!isId(id) || !isPlainObject(value.result)) return { kind: 'drop', why: 'a malformed result' };
    return { kind: 'message', message: { jsonrpc: '2.0', id, result: value.result } as JSONRPCMessage };
  }
  if ('error' in value) {
    const error = value.error;
    if (!isPlainObject(error) || !Number.isInteger(error.code) || typeof error.message !== 'string') {
      return { kind: 'drop', why: 'a malformed error object' };
    }
    if (hasId && !isId(id)) return { kind: 'drop', why: 'an error response without a usable id' };
    const body: Record<string, unknown> = { code: error.code, message: error.message };
    if (error.data !== undefined) body.data = error.data;
    const message: Record<string, unknown> = { jsonrpc: '2.0', error: body };
    if (hasId) message.id = id;
    return { kind: 'message', message: message as JSONRPCMessage };
  }
  return { kind: 'drop', why: 'neither a request, a notification nor a response' };
}

/**
 * One message as a line, its members in one fixed order (`jsonrpc`, `method`, `id`, `params`,
 * `result`, `error`) whatever order they were built in: the bytes on the wire do not depend on
 * how the SDK lays out its objects, and a 0.4 host's greeting is written as that host writes it.
 */
function line(message: JSONRPCMessage): string {
  const { jsonrpc, method, id, params, result, error, ...rest } = message as Record<string, unknown>;
  const ordered: Record<string, unknown> = { jsonrpc };
  if (method !== undefined) ordered.method = method;
  if (id !== undefined) ordered.id = id;
  if (params !== undefined) ordered.params = params;
  if (result !== undefined) ordered.result = result;
  if (error !== undefined) ordered.error = error;
  return `${JSON.stringify(Object.assign(ordered, rest))}\n`;
}

/**
 * Newline-delimited JSON-RPC over a pair of streams (stdio, a socket, a child process), hardened
 * against a hostile peer: a line that is not JSON, not JSON-RPC, or longer than `maxLineBytes`
 * is dropped with a log line and the connection carries on (a malformed request with a usable
 * id is answered `-32600`); framing is linear in the bytes read, whatever the line length.
 */
export class NdjsonTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;

  readonly #readable: Readable;
  readonly #writable: Writable;
  readonly #maxLineBytes: number;
  readonly #logger: McplLogger;
  readonly #endOnClose: boolean;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #discarding = false;
  #started = false;
  #closed = false;

  constructor(readable: Readable, writable: Writable, options: NdjsonTransportOptions = {}) {
    this.#readable = readable;
    this.#writable = writable;
    this.#maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.#logger = options.logger ?? silentMcplLogger;
    this.#endOnClose = options.endOnClose ?? true;
  }

  /** True once the transport has closed, by either side. */
  get closed(): boolean {
    return this.#closed;
  }

  readonly #onData = (chunk: Buffer | string) => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    let start = 0;
    while (!this.#closed) {
      const end = bytes.indexOf(NEWLINE, start);
      if (end === -1) {
        this.#hold(bytes.subarray(start));
        return;
      }
      const piece = bytes.subarray(start, end);
      start = end + 1;
      if (this.#discarding) {
        this.#logger.warn('dropped a line longer than the limit', {
          bytes: this.#pendingBytes + piece.length,
          maxLineBytes: this.#maxLineBytes,
        });
        this.#discarding = false;
        this.#pendingBytes = 0;
        continue;
      }
      if (this.#pendingBytes + piece.length > this.#maxLineBytes) {
        this.#logger.warn('dropped a line longer than the limit', {
          bytes: this.#pendingBytes + piece.length,
          maxLineBytes: this.#maxLineBytes,
        });
        this.#pending = [];
        this.#pendingBytes = 0;
        continue;
      }
      const line = this.#pending.length === 0 ? piece : Buffer.concat([...this.#pending, piece]);
      this.#pending = [];
      this.#pendingBytes = 0;
      this.#line(line);
    }
  };

  #hold(rest: Buffer): void {
    if (rest.length === 0) return;
    if (this.#discarding) {
      this.#pendingBytes += rest.length;
      return;
    }
    if (this.#pendingBytes + rest.length > this.#maxLineBytes) {
      // Too long already: stop buffering and skip to the next newline.
      this.#discarding = true;
      this.#pending = [];
      this.#pendingBytes += rest.length;
      return;
    }
    // Copy: a chunk's memory may be reused by the stream once the handler returns.
    this.#pending.push(Buffer.from(rest));
    this.#pendingBytes += rest.length;
  }

  #line(line: Buffer): void {
    let text = line.toString('utf8');
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.#logger.warn('dropped a line that is not JSON', { bytes: line.length });
      return;
    }
    const classified = classify(value);
    if (classified.kind === 'drop') {
      this.#logger.warn('dropped a line that is not JSON-RPC', { why: classified.why });
      return;
    }
    if (classified.kind === 'invalid-request') {
      this.#logger.warn('answered an invalid request', { why: classified.why });
      this.send({
        jsonrpc: '2.0',
        id: classified.id,
        error: { code: -32600, message: `Invalid request: ${classified.why}` },
      } as JSONRPCMessage).catch(() => {});
      return;
    }
    try {
      this.onmessage?.(classified.message);
    } catch (err) {
      this.onerror?.(err instanceof Error ? err : new Error(String(err)));
    }
  }

  readonly #onEnd = () => {
    void this.close();
  };

  readonly #onError = (err: Error) => {
    this.#logger.warn('the stream failed; closing', { error: err.message });
    this.onerror?.(err);
    void this.close();
  };

  /** Starts reading. */
  async start(): Promise<void> {
    if (this.#started) throw new McplError('MCPL_TRANSPORT', 'the transport is already started');
    this.#started = true;
    this.#readable.on('data', this.#onData);
    this.#readable.on('end', this.#onEnd);
    this.#readable.on('close', this.#onEnd);
    this.#readable.on('error', this.#onError);
    this.#writable.on('error', this.#onError);
    this.#readable.resume();
  }

  /**
   * Writes one message as a line; resolves once the stream has taken it (after `drain` when
   * the stream is full).
   *
   * @throws McplError `MCPL_CLOSED` when the transport is closed.
   */
  send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed || this.#writable.destroyed || this.#writable.writableEnded) {
      return Promise.reject(new McplError('MCPL_CLOSED', 'the transport is closed'));
    }
    if (this.#writable.write(line(message))) return SENT;
    return new Promise<void>((resolve) => this.#writable.once('drain', resolve));
  }

  /** Stops reading, ends the writable (unless told not to) and reports the close once. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#readable.off('data', this.#onData);
    this.#readable.off('end', this.#onEnd);
    this.#readable.off('close', this.#onEnd);
    this.#readable.off('error', this.#onError);
    this.#writable.off('error', this.#onError);
    // Errors after close (EPIPE on a dead peer) have nowhere useful to go.
    this.#writable.on('error', () => {});
    this.#readable.on('error', () => {});
    this.#pending = [];
    if (this.#endOnClose && !this.#writable.writableEnded) this.#writable.end();
    if (this.#endOnClose) this.#readable.destroy();
    else this.#readable.pause();
    this.onclose?.();
  }
}
