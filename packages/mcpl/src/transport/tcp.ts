import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { McplError } from '../errors.js';
import { type McplLogger, silentMcplLogger } from '../logger.js';
import { NdjsonTransport, type NdjsonTransportOptions } from './ndjson.js';

/** A loopback address to listen on: TCP is for a host on the same machine. */
export type LoopbackHost = '127.0.0.1' | '::1' | 'localhost';

const loopbackHosts = new Set<string>(['127.0.0.1', '::1', 'localhost']);

/** Options of {@link listenTcp}. */
export interface ListenTcpOptions extends Omit<NdjsonTransportOptions, 'endOnClose'> {
  /** The port (default 0: any free port, read it from the listener). */
  port?: number | undefined;
  /** A loopback address (default `127.0.0.1`). */
  host?: LoopbackHost | undefined;
  /** Called with each accepted connection; one at a time (a second is refused while one is open). */
  onConnection(transport: NdjsonTransport): void | Promise<void>;
}

/** A listening TCP endpoint. */
export interface TcpListener {
  /** The port bound. */
  readonly port: number;
  /** The address bound. */
  readonly host: string;
  /** Stops listening and closes the open connection, if any. */
  close(): Promise<void>;
}

/**
 * Listens on a loopback port and serves one connection at a time over NDJSON: while a
 * connection is open, another is refused (closed at once, with a log line); when it closes, the
 * next is accepted.
 *
 * @throws McplError `MCPL_INVALID_ARGUMENT` for a host that is not one of the loopback names,
 * `MCPL_TRANSPORT` when the port cannot be bound.
 */
export async function listenTcp(options: ListenTcpOptions): Promise<TcpListener> {
  const host = options.host ?? '127.0.0.1';
  if (!loopbackHosts.has(host)) {
    throw new McplError(
      'MCPL_INVALID_ARGUMENT',
      `listenTcp serves loopback only: host must be one of ${[...loopbackHosts].join(', ')}`,
    );
  }
  const logger: McplLogger = options.logger ?? silentMcplLogger;
  let active: NdjsonTransport | undefined;
  const server: Server = createServer((socket: Socket) => {
    if (active !== undefined && !active.closed) {
      logger.warn('refused a connection: one is already open', { remote: socket.remoteAddress });
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    const transport = new NdjsonTransport(socket, socket, { ...options, endOnClose: true });
    active = transport;
    Promise.resolve(options.onConnection(transport)).catch((err: unknown) => {
      logger.error('the connection handler failed', {
        error: err instanceof Error ? err.message : String(err),
      });
      void transport.close();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(new McplError('MCPL_TRANSPORT', `could not listen on ${host}: ${err.message}`, { cause: err })),
    );
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    host,
    async close() {
      await active?.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Options of {@link connectTcp}. */
export interface ConnectTcpOptions extends Omit<NdjsonTransportOptions, 'endOnClose'> {
  port: number;
  /** Default `127.0.0.1`. */
  host?: string | undefined;
}

/**
 * Connects to an MCPL server listening on TCP and returns an NDJSON transport, for a host.
 *
 * @throws McplError `MCPL_TRANSPORT` when the connection fails.
 */
export async function connectTcp(options: ConnectTcpOptions): Promise<NdjsonTransport> {
  const host = options.host ?? '127.0.0.1';
  const socket = netConnect({ port: options.port, host });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', (err) =>
      reject(
        new McplError('MCPL_TRANSPORT', `could not connect to ${host}:${options.port}: ${err.message}`, {
          cause: err,
        }),
      ),
    );
  });
  socket.setNoDelay(true);
  return new NdjsonTransport(socket, socket, { ...options, endOnClose: true });
}
