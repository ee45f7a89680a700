// An MCP session driven with hand-written JSON-RPC: in memory over a plain `connect` (2025), or on
// the SDK's stdio transport served by `serveStdio` in either era (a 2026 request carries the
// per-request `_meta` envelope; no initialize).
import { PassThrough } from 'node:stream';
import {
  type JSONRPCMessage,
  ReadBuffer,
  serializeMessage,
  type Transport,
} from '@modelcontextprotocol/client';
import { InMemoryTransport, LATEST_PROTOCOL_VERSION, type Server } from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import type { BoundTool } from '@zmcp/tools';
import { createMcpServer } from '../src/index.js';

export type Via = 'in memory' | 'on stdio, 2025' | 'on stdio, 2026';
type Id = string | number;

/** A client transport over a pair of streams, framed as stdio is: one JSON message a line. */
export class StreamClientTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  readonly #buffer = new ReadBuffer();

  constructor(
    private readonly readable: NodeJS.ReadableStream,
    private readonly writable: NodeJS.WritableStream,
  ) {}

  async start(): Promise<void> {
    this.readable.on('data', (chunk: Buffer) => {
      this.#buffer.append(chunk);
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.#buffer.readMessage();
        } catch (err) {
          this.onerror?.(err as Error);
          continue;
        }
        if (message === null) break;
        this.onmessage?.(message);
      }
    });
    this.readable.once('end', () => this.onclose?.());
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.writable.write(serializeMessage(message));
  }

  /** Writes raw bytes, as a misbehaving client might. */
  writeRaw(text: string): void {
    this.writable.write(text);
  }

  async close(): Promise<void> {
    this.writable.end();
  }
}

/** What a session received: every message, responses and notifications alike. */
type Received = JSONRPCMessage & {
  id?: Id;
  method?: string;
  params?: unknown;
  result?: unknown;
  error?: unknown;
};

/** The per-request envelope of a 2026-era request. */
const envelope = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
};

/** One raw MCP session, opened: send messages, await what comes back. */
export class RawSession {
  static readonly #open: RawSession[] = [];
  /** Everything the server sent, in order. */
  readonly received: Received[] = [];
  readonly #waiters: { match: (message: Received) => boolean; resolve: () => void }[] = [];

  private constructor(
    private readonly closeServer: () => Promise<void>,
    private readonly transport: Transport,
    private readonly modern: boolean,
    /** The protocol errors the server reported. */
    readonly errors: Error[],
  ) {
    transport.onmessage = (message) => {
      this.received.push(message as Received);
      for (const waiter of [...this.#waiters]) {
        if (!waiter.match(message as Received)) continue;
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    };
  }

  /** Opens a session serving `tools` (initialized in the 2025 era). */
  static async open(tools: readonly BoundTool[], via: Via): Promise<RawSession> {
    const errors: Error[] = [];
    const build = (era: 'legacy' | 'modern'): Server => {
      const server = createMcpServer({ name: 'raw', version: '0', era, tools, deadlineMs: 10_000 });
      server.onerror = (err) => errors.push(err);
      return server;
    };
    let session: RawSession;
    if (via === 'in memory') {
      const [client, serverSide] = InMemoryTransport.createLinkedPair();
      const server = build('legacy');
      await server.connect(serverSide);
      session = new RawSession(() => server.close(), client, false, errors);
    } else {
      const toServer = new PassThrough();
      const toClient = new PassThrough();
      const handle = serveStdio((ctx) => build(ctx.era), {
        transport: new StdioServerTransport(toServer, toClient),
        onerror: (err) => errors.push(err),
      });
      session = new RawSession(
        () => handle.close(),
        new StreamClientTransport(toClient, toServer),
        via === 'on stdio, 2026',
        errors,
      );
    }
    RawSession.#open.push(session);
    await session.transport.start();
    if (!session.modern) {
      session.request('init', 'initialize', {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'raw', version: '0' },
      });
      await session.responsesTo('init', 1);
      session.notify('notifications/initialized');
    }
    return session;
  }

  /** Closes every session opened so far (for `afterEach`). */
  static async closeAll(): Promise<void> {
    for (const session of RawSession.#open.splice(0)) await session.close();
  }

  send(message: JSONRPCMessage): void {
    void this.transport.send(message);
  }

  /** A request; in the 2026 era its params carry the per-request envelope. */
  request(id: Id, method: string, params?: Record<string, unknown>): void {
    const withEnvelope = this.modern
      ? { ...params, _meta: { ...envelope, ...(params?._meta as object) } }
      : params;
    this.send({
      jsonrpc: '2.0',
      id,
      method,
      ...(withEnvelope === undefined ? {} : { params: withEnvelope }),
    });
  }

  notify(method: string, params?: Record<string, unknown>): void {
    this.send({ jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }) } as JSONRPCMessage);
  }

  call(id: Id, name: string, args: Record<string, unknown>): void {
    this.request(id, 'tools/call', { name, arguments: args });
  }

  /** Resolves once `count` responses carry this id (number 1 and string "1" differ). */
  async responsesTo(id: Id, count: number): Promise<Received[]> {
    const matching = () => this.received.filter((m) => m.id === id && m.method === undefined);
    if (matching().length < count) {
      await new Promise<void>((resolve) =>
        this.#waiters.push({ match: () => matching().length >= count, resolve }),
      );
    }
    return matching();
  }

  /** Resolves with the first message, received or to come, that matches. */
  async next(match: (message: Received) => boolean): Promise<Received> {
    const seen = this.received.find(match);
    if (seen !== undefined) return seen;
    await new Promise<void>((resolve) => this.#waiters.push({ match, resolve }));
    return this.received.find(match) as Received;
  }

  /** Closes the server's side, and with it the transport. */
  close(): Promise<void> {
    return this.closeServer();
  }
}
