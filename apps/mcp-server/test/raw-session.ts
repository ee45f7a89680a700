// An MCP session driven with hand-written JSON-RPC, in memory (where every request takes the
// SDK's own path) or on the server's stdio transport (where tools/call is served beside it).
import { PassThrough } from 'node:stream';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type JSONRPCMessage, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { BoundTool } from '@zmcp/tools';
import { createMcpServer, type McpSession } from '../src/index.js';
import { LineStdioTransport } from '../src/stdio.js';
import { StreamClientTransport } from './stdio-client.js';

export type Via = 'in memory' | 'on stdio';
type Id = string | number;

/** A connected pair of transports: the SDK's in-memory pair, or stdio framing over two streams. */
export function linkedTransports(via: Via): { client: Transport; server: Transport } {
  if (via === 'in memory') {
    const [client, server] = InMemoryTransport.createLinkedPair();
    return { client, server };
  }
  const toServer = new PassThrough();
  const toClient = new PassThrough();
  return {
    client: new StreamClientTransport(toClient, toServer),
    server: new LineStdioTransport(toServer, toClient, { maxMessageBytes: 1 << 20 }),
  };
}

/** What a session received: every message, responses and notifications alike. */
type Received = JSONRPCMessage & {
  id?: Id;
  method?: string;
  params?: unknown;
  result?: unknown;
  error?: unknown;
};

/** One raw MCP session, initialized: send messages, await what comes back. */
export class RawSession {
  static readonly #open: RawSession[] = [];
  /** Everything the server sent, in order. */
  readonly received: Received[] = [];
  /** The protocol errors the server reported. */
  readonly errors: Error[] = [];
  readonly #waiters: { match: (message: Received) => boolean; resolve: () => void }[] = [];

  private constructor(
    private readonly server: McpSession,
    private readonly transport: Transport,
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

  /** Opens and initializes a session serving `tools`. */
  static async open(tools: readonly BoundTool[], via: Via): Promise<RawSession> {
    const server = createMcpServer({ name: 'raw', version: '0', tools, deadlineMs: 10_000 });
    const { client, server: serverTransport } = linkedTransports(via);
    await server.connect(serverTransport);
    const session = new RawSession(server, client);
    server.onerror = (err) => session.errors.push(err);
    RawSession.#open.push(session);
    await client.start();
    session.request('init', 'initialize', {
      protocolVersion: LATEST_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'raw', version: '0' },
    });
    await session.responsesTo('init', 1);
    session.notify('notifications/initialized');
    return session;
  }

  /** Closes every session opened so far (for `afterEach`). */
  static async closeAll(): Promise<void> {
    for (const session of RawSession.#open.splice(0)) await session.close();
  }

  send(message: JSONRPCMessage): void {
    void this.transport.send(message);
  }

  request(id: Id, method: string, params?: Record<string, unknown>): void {
    this.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
  }

  notify(method: string, params?: Record<string, unknown>): void {
    this.send({ jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }) });
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
    return this.server.close();
  }
}
