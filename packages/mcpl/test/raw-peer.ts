import { PassThrough } from 'node:stream';
import { expect } from 'vitest';
import type { McplHostOptions, McplLogger, McplServer, McplSession } from '../src/index.js';
import { McplHost, NdjsonTransport } from '../src/index.js';
import { createToyServer } from './fixtures/toy.js';
import { FULL_GRANT, recordingLogger } from './helpers.js';

/** One JSON-RPC message as the raw peer reads it off the wire. */
export type Wire = {
  jsonrpc?: string;
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
};

/** A message's result, or an empty object when it has none. */
export function result(message: Wire): Record<string, unknown> {
  return message.result ?? {};
}

/** A message's params, or an empty object when it has none. */
export function params(message: Wire): Record<string, unknown> {
  return message.params ?? {};
}

/**
 * A host written from the spec, not from this library: it writes JSON-RPC lines to a server
 * and reads the lines it writes back, so a test sees exactly the bytes a real host would.
 */
export class RawPeer {
  readonly toServer = new PassThrough();
  readonly fromServer = new PassThrough();
  readonly received: Wire[] = [];
  readonly lines: string[] = [];
  #buffer = '';
  #waiters: { match: (message: Wire) => boolean; resolve: (message: Wire) => void }[] = [];
  #taken = new Set<Wire>();

  constructor() {
    this.fromServer.setEncoding('utf8');
    this.fromServer.on('data', (chunk: string) => {
      this.#buffer += chunk;
      let end = this.#buffer.indexOf('\n');
      while (end !== -1) {
        const line = this.#buffer.slice(0, end);
        this.#buffer = this.#buffer.slice(end + 1);
        this.lines.push(line);
        const message = JSON.parse(line) as Wire;
        this.received.push(message);
        const waiter = this.#waiters.find((w) => w.match(message));
        if (waiter !== undefined) {
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
          this.#taken.add(message);
          waiter.resolve(message);
        }
        end = this.#buffer.indexOf('\n');
      }
    });
  }

  /** Serves `server` over this peer's streams. */
  async attach(server: McplServer, logger?: McplLogger, maxLineBytes?: number): Promise<McplSession> {
    return server.connect(new NdjsonTransport(this.toServer, this.fromServer, { logger, maxLineBytes }));
  }

  /** Writes one line as is. */
  writeLine(line: string): void {
    this.toServer.write(`${line}\n`);
  }

  /** Writes one message. */
  send(message: Wire): void {
    this.writeLine(JSON.stringify({ jsonrpc: '2.0', ...message }));
  }

  /** Waits for the first not-yet-taken message matching `match`, past or future. */
  next(match: (message: Wire) => boolean): Promise<Wire> {
    const seen = this.received.find((message) => !this.#taken.has(message) && match(message));
    if (seen !== undefined) {
      this.#taken.add(seen);
      return Promise.resolve(seen);
    }
    return new Promise((resolve) => this.#waiters.push({ match, resolve }));
  }

  /** Waits for a server → host request or notification of `method`. */
  nextCall(method: string): Promise<Wire> {
    return this.next((message) => message.method === method);
  }

  /** Sends a request and waits for its answer. */
  async request(id: string | number, method: string, params?: Record<string, unknown>): Promise<Wire> {
    const answer = this.next((message) => message.method === undefined && message.id === id);
    this.send(params === undefined ? { id, method } : { id, method, params });
    return answer;
  }

  notify(method: string, params?: Record<string, unknown>): void {
    this.send(params === undefined ? { method } : { method, params });
  }

  respond(id: string | number | null | undefined, result: Record<string, unknown>): void {
    this.send({ id: id as string | number, result });
  }

  respondError(id: string | number | null | undefined, code: number, message: string): void {
    this.send({ id: id as string | number, error: { code, message } });
  }

  /** Ends the stream to the server. */
  end(): void {
    this.toServer.end();
  }
}

/**
 * A toy server behind a raw host peer, past the handshake and the policy (every capability):
 * `stillAnswers()` checks the connection still answers a `ping`.
 */
export async function readyPeer(options: { requestMs?: number; maxLineBytes?: number } = {}) {
  const { lines, logger } = recordingLogger();
  const { server } = createToyServer(
    options.requestMs === undefined ? {} : { timeouts: { requestMs: options.requestMs } },
    logger,
  );
  const peer = new RawPeer();
  const session = await peer.attach(server, logger, options.maxLineBytes);
  await peer.request(1, 'initialize', {
    protocolVersion: '2024-11-05',
    capabilities: { experimental: { mcpl: { version: '0.5' } } },
    clientInfo: { name: 'hostile', version: '0' },
  });
  peer.notify('notifications/initialized');
  await peer.request(2, 'featureSets/update', { effectiveCapabilities: FULL_GRANT });
  await session.whenReady();
  let id = 100;
  const stillAnswers = async () => {
    id += 1;
    expect((await peer.request(id, 'ping')).result).toEqual({});
  };
  return { peer, session, lines, stillAnswers };
}

/** An inbound channel a raw server registers. */
export const rawChannel = { id: 'raw:a', type: 'raw', label: 'a', direction: 'inbound' };

/**
 * A host connected to a raw peer playing a server written from the spec (channels advertised),
 * past the handshake and a policy granting `grant` (register and incoming by default).
 */
export async function hostOfRawServer(
  options: Partial<McplHostOptions> = {},
  grant: string[] = ['channels.register', 'channels.incoming'],
): Promise<{ server: RawPeer; host: McplHost }> {
  const server = new RawPeer();
  const connecting = McplHost.connect(new NdjsonTransport(server.toServer, server.fromServer), {
    name: 'strict-host',
    version: '1',
    ...options,
  });
  const initialize = await server.nextCall('initialize');
  server.respond(initialize.id, {
    protocolVersion: initialize.params?.protocolVersion,
    capabilities: {
      experimental: { mcpl: { version: '0.5', channels: { register: true, incoming: true } } },
    },
    serverInfo: { name: 'raw-server', version: '0' },
  });
  const host = await connecting;
  const policy = host.setPolicy({ effectiveCapabilities: grant });
  server.respond((await server.nextCall('featureSets/update')).id, { accepted: true });
  await policy;
  return { server, host };
}
