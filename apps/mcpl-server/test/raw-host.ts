import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** One JSON-RPC message as the raw host reads it. */
export interface Wire {
  jsonrpc: '2.0';
  id?: string | number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

/**
 * A host written from the spec and INTEROP.md rather than from `@zmcp/mcpl`'s host role: it
 * writes JSON-RPC messages itself and answers the server's requests with whatever a test says,
 * so it can speak the 0.4 dialects (no policy, `{}` or `{registered}` answers) that the library's
 * host, which enforces the 0.5 grant, will not.
 */
export class RawHost {
  readonly transport: InMemoryTransport;
  readonly server: InMemoryTransport;
  readonly received: Wire[] = [];
  readonly #pending = new Map<string | number, (message: Wire) => void>();
  readonly #answers = new Map<string, (params: Record<string, unknown>) => Record<string, unknown>>();
  readonly #waiters: { match: (m: Wire) => boolean; resolve: (m: Wire) => void }[] = [];

  constructor() {
    const [host, server] = InMemoryTransport.createLinkedPair();
    this.transport = host;
    this.server = server;
    host.onmessage = (raw) => this.#receive(raw as unknown as Wire);
  }

  async start(): Promise<void> {
    await this.transport.start();
  }

  /** How the host answers a server→host request of `method`. */
  answer(method: string, fn: (params: Record<string, unknown>) => Record<string, unknown>): void {
    this.#answers.set(method, fn);
  }

  #receive(message: Wire): void {
    this.received.push(message);
    if (message.method !== undefined && message.id !== undefined) {
      const fn = this.#answers.get(message.method);
      const reply: Wire =
        fn === undefined
          ? { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }
          : { jsonrpc: '2.0', id: message.id, result: fn(message.params ?? {}) };
      void this.transport.send(reply as unknown as JSONRPCMessage);
    } else if (message.id !== undefined && message.method === undefined) {
      this.#pending.get(message.id)?.(message);
      this.#pending.delete(message.id);
    }
    for (const w of [...this.#waiters]) {
      if (w.match(message)) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve(message);
      }
    }
  }

  /** Sends a request and resolves with the server's response. */
  request(id: string | number, method: string, params: Record<string, unknown> = {}): Promise<Wire> {
    const answered = new Promise<Wire>((resolve) => this.#pending.set(id, resolve));
    void this.transport.send({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage);
    return answered;
  }

  notify(method: string, params: Record<string, unknown> = {}): Promise<void> {
    return this.transport.send({ jsonrpc: '2.0', method, params } as JSONRPCMessage);
  }

  /** Resolves with the first message (already received or to come) that matches. */
  waitFor(match: (m: Wire) => boolean): Promise<Wire> {
    const seen = this.received.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => this.#waiters.push({ match, resolve }));
  }

  async close(): Promise<void> {
    await this.transport.close();
  }
}
