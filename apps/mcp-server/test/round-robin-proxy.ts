// A tiny round-robin HTTP proxy, as a load balancer in front of a fleet: each request goes to the
// next upstream in turn; an upstream that refuses the connection (a killed process) is skipped
// for that request. Bodies stream both ways, so SSE answers pass as they come.
import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RoundRobinProxy {
  url: string;
  /** Requests each upstream answered, by upstream URL. */
  served: Map<string, number>;
  close(): Promise<void>;
}

/** Starts the proxy on a free loopback port in front of `upstreams` (base URLs). */
export async function startRoundRobinProxy(upstreams: readonly string[]): Promise<RoundRobinProxy> {
  let next = 0;
  const served = new Map<string, number>(upstreams.map((u) => [u, 0]));
  const forward = (req: IncomingMessage, body: Buffer, res: ServerResponse, tries: number) => {
    const base = upstreams[next % upstreams.length] as string;
    const upstream = new URL(base);
    next += 1;
    const out = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
      },
      (answer) => {
        served.set(base, (served.get(base) ?? 0) + 1);
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => {
      if (res.headersSent) return void res.destroy();
      if (tries + 1 < upstreams.length) forward(req, body, res, tries + 1);
      else res.writeHead(502).end();
    });
    res.on('close', () => out.destroy());
    out.end(body);
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => forward(req, Buffer.concat(chunks), res, 0));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    served,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
