import type { Readable, Writable } from 'node:stream';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';

/** Options of {@link LineStdioTransport}. */
export interface LineStdioTransportOptions {
  /** Largest JSON-RPC message accepted, in bytes (its newline excluded). */
  maxMessageBytes: number;
  /** Called with each request or notification read, before the server handles it. */
  onReceived?: ((message: { method: string; id: RequestId | undefined }) => void) | undefined;
}

/** JSON-RPC's code for a request the server will not take: here, one over the size limit. */
const INVALID_REQUEST = -32600;

// How much of an oversized line is kept to find its id: the SDK's clients write the id last,
// other clients often first, so the first and the last bytes are kept and nothing between.
const KEPT_ENDS = 512;

const leadingId =
  /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,16}|"(?:[^"\\]|\\.){0,200}")\s*[,}]/;
const trailingId = /[,{]\s*"id"\s*:\s*(-?\d{1,16}|"(?:[^"\\]|\\.){0,200}")\s*\}\s*$/;

/** The id of a request too large to parse, when its first or last bytes show it; else `null`. */
function idOf(head: string, tail: string): RequestId | null {
  const match = leadingId.exec(head) ?? trailingId.exec(tail);
  if (!match) return null;
  try {
    const id = JSON.parse(match[1] as string) as unknown;
    return typeof id === 'number' || typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

/** What one line holds: a message for the server, a request to refuse, or nothing usable. */
type Read = { message: JSONRPCMessage } | { refuse: RequestId; why: string } | { drop: string };

/** A JSON object: not null, not an array. */
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isRequestId = (value: unknown): value is RequestId =>
  typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));

/**
 * Reads one parsed line as JSON-RPC 2.0 and rebuilds it from the members JSON-RPC defines. The
 * SDK's schemas are strict: a request with one extra member fails them and is reported, never
 * answered, so its client waits out its timeout. Here it is served; a request that is malformed
 * but has an id is refused with that id.
 */
function read(value: unknown): Read {
  if (!isObject(value)) return { drop: 'not a JSON object' };
  const { id, method, params } = value;
  const hasId = 'id' in value;
  if (typeof method === 'string') {
    if (hasId && !isRequestId(id)) return { drop: 'a request whose id is neither a string nor a number' };
    const why =
      value.jsonrpc !== '2.0'
        ? 'jsonrpc must be "2.0"'
        : params !== undefined && !isObject(params)
          ? 'params must be an object'
          : undefined;
    if (why !== undefined)
      return hasId ? { refuse: id as RequestId, why } : { drop: `a notification: ${why}` };
    const message: Record<string, unknown> = { jsonrpc: '2.0', method };
    if (hasId) message.id = id;
    if (params !== undefined) message.params = params;
    return { message: message as JSONRPCMessage };
  }
  if (value.jsonrpc !== '2.0') return { drop: 'jsonrpc is not "2.0"' };
  if ('result' in value) {
    if (!isRequestId(id)) return { drop: 'a result without a usable id' };
    if (!isObject(value.result)) return { drop: 'a result that is not an object' };
    return { message: { jsonrpc: '2.0', id, result: value.result } as JSONRPCMessage };
  }
  if ('error' in value) {
    const error = value.error;
    if (!isObject(error) || !Number.isSafeInteger(error.code) || typeof error.message !== 'string') {
      return { drop: 'an error response whose error is not {code, message}' };
    }
    const body: Record<string, unknown> = { code: error.code, message: error.message };
    if (error.data !== undefined) body.data = error.data;
    // An error about a request whose id could not be read carries `id: null`; the SDK wants none.
    return {
      message: (isRequestId(id)
        ? { jsonrpc: '2.0', id, error: body }
        : { jsonrpc: '2.0', error: body }) as JSONRPCMessage,
    };
  }
  return { drop: 'neither a request, a notification nor a response' };
}

function mebibytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/**
 * MCP's stdio framing (one JSON-RPC message a line) as an SDK `Transport`, with what the SDK's
 * `StdioServerTransport` lacks: a message over `maxMessageBytes` is skipped up to its newline and
 * answered with a JSON-RPC error (`-32600`, with the request's id when its ends show it) while
 * the session carries on, instead of closing the transport; a request is read by the members
 * JSON-RPC defines, so one extra member does not leave it unanswered; a message is buffered as a list of
 * chunks and joined once; and the requests read but not yet answered are counted, so a client
 * that closes stdin after its last request still gets every answer ({@link drained}).
 */
export class LineStdioTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;

  readonly #stdin: Readable;
  readonly #stdout: Writable;
  readonly #options: LineStdioTransportOptions;
  #chunks: Buffer[] = [];
  #size = 0;
  // While skipping an oversized line: its first and last bytes, and how long it is so far.
  #skipping: { head: Buffer; tail: Buffer; size: number } | undefined;
  #started = false;
  #closed = false;
  readonly #pending = new Set<string>();
  #onDrained: (() => void) | undefined;

  constructor(stdin: Readable, stdout: Writable, options: LineStdioTransportOptions) {
    this.#stdin = stdin;
    this.#stdout = stdout;
    this.#options = options;
  }

  readonly #onData = (chunk: Buffer) => {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(0x0a, start);
      const piece = chunk.subarray(start, newline < 0 ? chunk.length : newline);
      this.#take(piece);
      if (newline < 0) return;
      this.#endLine();
      start = newline + 1;
    }
  };

  readonly #onError = (error: Error) => {
    this.onerror?.(error);
  };

  async start(): Promise<void> {
    if (this.#started) throw new Error('LineStdioTransport already started');
    this.#started = true;
    this.#stdin.on('data', this.#onData);
    this.#stdin.on('error', this.#onError);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    await this.#write(serializeMessage(message));
    if (!('method' in message) && 'id' in message && message.id !== undefined) {
      this.#pending.delete(pendingKey(message.id));
      if (this.#pending.size === 0) this.#onDrained?.();
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stdin.off('data', this.#onData);
    this.#stdin.off('error', this.#onError);
    if (this.#stdin.listenerCount('data') === 0) this.#stdin.pause();
    this.#chunks = [];
    this.#size = 0;
    this.#skipping = undefined;
    this.onclose?.();
  }

  /**
   * Resolves once every request read so far has been answered, or after `limitMs` (a request
   * that is never answered, say a cancelled one, must not hold the exit forever).
   */
  drained(limitMs: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.#pending.size === 0) return resolve();
      const timer = setTimeout(resolve, limitMs);
      this.#onDrained = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  #take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.#skipping) {
      const skip = this.#skipping;
      skip.size += piece.length;
      skip.tail = lastBytes([skip.tail, piece]);
      return;
    }
    if (this.#size + piece.length > this.#options.maxMessageBytes) {
      // Over the limit: keep the ends (for the id) and let go of the rest now, not at the newline.
      this.#skipping = {
        head: firstBytes([...this.#chunks, piece]),
        tail: lastBytes([...this.#chunks, piece]),
        size: this.#size + piece.length,
      };
      this.#chunks = [];
      this.#size = 0;
      return;
    }
    // A copy: the stream may reuse the chunk's memory.
    this.#chunks.push(Buffer.from(piece));
    this.#size += piece.length;
  }

  #endLine(): void {
    if (this.#skipping) {
      const { head, tail, size } = this.#skipping;
      this.#skipping = undefined;
      this.#refuse(idOf(head.toString('utf8'), tail.toString('utf8')), size);
      return;
    }
    const line = Buffer.concat(this.#chunks, this.#size).toString('utf8').replace(/\r$/, '');
    this.#chunks = [];
    this.#size = 0;
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.onerror?.(new Error('dropped a line that is not JSON'));
      return;
    }
    const got = read(value);
    if ('drop' in got) {
      this.onerror?.(new Error(`dropped a line that is not JSON-RPC: ${got.drop}`));
      return;
    }
    if ('refuse' in got) {
      this.onerror?.(new Error(`refused an invalid request: ${got.why}`));
      this.#answerError(got.refuse, { code: INVALID_REQUEST, message: `Invalid request: ${got.why}` });
      return;
    }
    const message = got.message;
    if ('method' in message) {
      const id = 'id' in message ? message.id : undefined;
      if (id !== undefined) this.#pending.add(pendingKey(id));
      this.#options.onReceived?.({ method: message.method, id });
    }
    this.onmessage?.(message);
  }

  #refuse(id: RequestId | null, size: number): void {
    const limit = this.#options.maxMessageBytes;
    const message = `Request too large: ${size} bytes (${mebibytes(size)}), over the ${limit}-byte (${mebibytes(limit)}) limit of one message on this transport. It was not read; the session carries on. Attach large files from an upload root ({ "file": "<root>/<path>" }) instead of inline base64 data.`;
    this.onerror?.(new Error(`refused a ${size}-byte message over the ${limit}-byte limit`));
    this.#answerError(id, { code: INVALID_REQUEST, message, data: { bytes: size, limit } });
  }

  /** Answers a request the server never sees with an error object. */
  #answerError(id: RequestId | null, error: { code: number; message: string; data?: unknown }): void {
    const answer = { jsonrpc: '2.0', id, error };
    void this.#write(`${JSON.stringify(answer)}\n`).catch((err: unknown) => this.onerror?.(err as Error));
  }

  #write(text: string): Promise<void> {
    return new Promise((resolve) => {
      if (this.#stdout.write(text)) resolve();
      else this.#stdout.once('drain', resolve);
    });
  }
}

/** The first {@link KEPT_ENDS} bytes of the pieces, copied. */
function firstBytes(pieces: readonly Buffer[]): Buffer {
  const kept: Buffer[] = [];
  let size = 0;
  for (const piece of pieces) {
    if (size >= KEPT_ENDS) break;
    kept.push(piece.subarray(0, KEPT_ENDS - size));
    size += Math.min(piece.length, KEPT_ENDS - size);
  }
  return Buffer.concat(kept);
}

/** The last {@link KEPT_ENDS} bytes of the pieces, copied. */
function lastBytes(pieces: readonly Buffer[]): Buffer {
  const kept: Buffer[] = [];
  let size = 0;
  for (let i = pieces.length - 1; i >= 0 && size < KEPT_ENDS; i--) {
    const piece = pieces[i] as Buffer;
    const part = piece.subarray(Math.max(0, piece.length - (KEPT_ENDS - size)));
    kept.unshift(part);
    size += part.length;
  }
  return Buffer.concat(kept);
}

/** `1` and `"1"` are different ids. */
function pendingKey(id: RequestId): string {
  return `${typeof id}:${id}`;
}
