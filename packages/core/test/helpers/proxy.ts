import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy in front of a server, which a test can take down (connections refused,
 * open ones cut) and bring back on the same port: a realm that is down for a while.
 */
export async function startProxy(targetPort: number) {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;

  const listen = async () => {
    server = createServer((client) => {
      const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => server?.listen(port, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  };
  await listen();

  return {
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    /** Refuses new connections and cuts open ones. */
    async down() {
      const s = server;
      server = undefined;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => (s ? s.close(() => resolve()) : resolve()));
    },
    /** Listens again on the same port. */
    up: listen,
    async close() {
      await this.down();
    },
  };
}
