import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * A web-standard handler: the request (its body streamed, not yet read), and a promise that
 * settles once the response has been written out or the connection closed, whichever is first.
 */
export type WebHandler = (request: Request, ended: Promise<void>) => Promise<Response>;

/**
 * The request as a web `Request`, its body a stream over the node request that reads only as the
 * handler reads it: the handler judges the headers (path, Host, Origin, credentials) before a byte
 * of the body is taken. Its URL keeps the path and query; the `Host` header is passed as sent.
 */
function webRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(':')) continue;
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else headers.set(name, value);
  }
  const method = req.method ?? 'GET';
  if (method === 'GET' || method === 'HEAD') return new Request(url, { method, headers, signal });
  let onData: ((chunk: Buffer) => void) | undefined;
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        onData = (chunk: Buffer) => {
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) req.pause();
        };
        req.on('data', onData);
        req.once('end', () => controller.close());
        req.once('error', (err) => controller.error(err));
      },
      pull() {
        req.resume();
      },
      cancel() {
        // The handler read enough (a body over the limit): stop buffering; its answer closes the connection.
        if (onData !== undefined) req.off('data', onData);
      },
    },
    { highWaterMark: 1 },
  );
  return new Request(url, { method, headers, body, signal, duplex: 'half' } as RequestInit);
}

/** Writes a web `Response` to a node response, its body streamed with back-pressure. */
async function writeResponse(response: Response, res: ServerResponse, closed: AbortSignal): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  const onClose = () => void reader.cancel().catch(() => undefined);
  closed.addEventListener('abort', onClose, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || closed.aborted) break;
      if (!res.write(value)) {
        await new Promise<void>((resolve) => {
          const go = () => {
            res.off('drain', go);
            closed.removeEventListener('abort', go);
            resolve();
          };
          res.on('drain', go);
          closed.addEventListener('abort', go, { once: true });
        });
      }
    }
  } finally {
    closed.removeEventListener('abort', onClose);
    if (!closed.aborted) res.end();
  }
}

/**
 * Mounts a web-standard handler on `node:http`: each request is handed over at once (its body
 * still arriving), the request's signal aborts when the client goes away before its answer is
 * written, and `ended` settles when the response is done either way. A handler that throws gets
 * a 500 with a JSON-RPC error.
 */
export function nodeHandler(
  handler: WebHandler,
  onError: (err: unknown) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const gone = new AbortController();
    const ended = new Promise<void>((resolve) => {
      res.once('close', () => {
        if (!res.writableFinished) gone.abort();
        resolve();
      });
    });
    void (async () => {
      let response: Response;
      try {
        response = await handler(webRequest(req, gone.signal), ended);
      } catch (err) {
        onError(err);
        response = Response.json(
          { jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null },
          { status: 500 },
        );
      }
      if (res.headersSent) return;
      await writeResponse(response, res, gone.signal);
    })().catch((err: unknown) => {
      onError(err);
      res.destroy();
    });
  };
}
