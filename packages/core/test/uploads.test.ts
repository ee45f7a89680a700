import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ZulipClient } from '../src/client/zulip-client.js';
import { API_KEY, EMAIL, mockClient, mockRealm, SITE } from './helpers/mock-realm.js';
import { type SimRealmFixture, startSimRealm } from './helpers/sim.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

/** An upload endpoint that counts and discards what it receives, reporting progress. */
async function startSink(onBytes: (received: number) => void = () => {}) {
  const seen: { headers: IncomingHttpHeaders; received: number }[] = [];
  const server: Server = createServer((req, res) => {
    let received = 0;
    req.on('data', (chunk: Buffer) => {
      received += chunk.byteLength;
      onBytes(received);
    });
    req.on('end', () => {
      seen.push({ headers: req.headers, received });
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          result: 'success',
          msg: '',
          url: '/user_uploads/1/ab/xyz/big.bin',
          filename: 'big.bin',
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  const client = new ZulipClient({ site: `http://127.0.0.1:${port}`, email: EMAIL, apiKey: API_KEY });
  cleanups.push(async () => {
    await client.close();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { client, seen };
}

describe('uploadFile', () => {
  it('streams: the realm receives bytes before the file has been read to the end', async () => {
    let release!: () => void;
    const firstBytesArrived = new Promise<void>((r) => (release = r));
    const { client, seen } = await startSink((n) => {
      if (n > 64 * 1024) release();
    });
    const chunk = 256 * 1024;
    async function* file(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(chunk);
      // A buffering client would wait here forever: nothing has been sent yet.
      await firstBytesArrived;
      yield new Uint8Array(chunk);
    }
    const up = await client.uploadFile({
      filename: 'big.bin',
      contentType: 'application/octet-stream',
      size: 2 * chunk,
      body: file(),
    });
    expect(up).toMatchObject({ url: '/user_uploads/1/ab/xyz/big.bin', filename: 'big.bin' });
    expect(Number(seen[0]?.headers['content-length'])).toBe(seen[0]?.received);
    expect(seen[0]?.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(seen[0]?.headers['transfer-encoding']).toBeUndefined();
  });

  it('sends 100 MB holding only a small window of it in flight', async () => {
    let received = 0;
    const { client, seen } = await startSink((n) => {
      received = n;
    });
    const total = 100 * 1024 * 1024;
    const chunk = new Uint8Array(256 * 1024); // zeros; reused, so only the client's own buffering counts
    let yielded = 0;
    let window = 0;
    async function* file(): AsyncGenerator<Uint8Array> {
      while (yielded < total) {
        // Bytes read from the file that the realm has not received yet: what the client holds.
        window = Math.max(window, yielded - received);
        yielded += chunk.byteLength;
        yield chunk;
      }
    }
    await client.uploadFile({
      filename: 'big.bin',
      contentType: 'application/octet-stream',
      size: total,
      body: file(),
    });
    expect(seen[0]?.received).toBeGreaterThan(total);
    expect(window).toBeLessThan(16 * 1024 * 1024);
  });

  it('fails when the body does not match its declared size', async () => {
    const { client } = await startSink();
    async function* short(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(10);
    }
    await expect(
      client.uploadFile({ filename: 'x', contentType: 'text/plain', size: 20, body: short() }),
    ).rejects.toMatchObject({ code: 'CORE_INVALID_ARGUMENT', details: { declared: 20, sent: 10 } });
  });

  describe('against the simulator', () => {
    let f: SimRealmFixture;
    it('stores the file and is never retried', async () => {
      f = await startSimRealm();
      cleanups.push(() => f.close());
      const fault = f.sim.faults.add({ method: 'POST', path: '/user_uploads', status: 503, times: 1 });
      async function* once(): AsyncGenerator<Uint8Array> {
        yield Buffer.from('abc');
      }
      await expect(
        f.client.uploadFile({ filename: 'a.txt', contentType: 'text/plain', size: 3, body: once() }),
      ).rejects.toMatchObject({ code: 'CORE_SERVER_ERROR' });
      expect(fault.hits).toBe(1);
      const stream = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(Buffer.from('from a web stream'));
          c.close();
        },
      });
      const up = await f.client.uploadFile({
        filename: 'notes "v2".txt',
        contentType: 'text/plain',
        size: 17,
        body: stream,
      });
      const stored = f.sim.realm.uploads().at(-1);
      expect(Buffer.from(stored?.bytes ?? []).toString()).toBe('from a web stream');
      expect(up.url).toBe(stored?.url);
    });
  });
});

describe('downloadUpload redirects (wire cases the simulator does not produce)', () => {
  async function withRedirect(location: string) {
    const { agent, pool } = mockRealm();
    pool.intercept({ path: '/user_uploads/2/ab/file.txt' }).reply(302, '', { headers: { location } });
    pool.intercept({ path: '/user_uploads/2/cd/moved.txt' }).reply(200, 'moved bytes', {
      headers: { 'content-type': 'text/plain' },
    });
    const client = mockClient(agent);
    cleanups.push(() => client.close());
    return client.downloadUpload('/user_uploads/2/ab/file.txt', { maxBytes: 100 });
  }

  it('follows a redirect within the realm uploads', async () => {
    const got = await withRedirect('/user_uploads/2/cd/moved.txt');
    expect(Buffer.from(got.bytes).toString()).toBe('moved bytes');
    expect(got.url).toBe(`${SITE}/user_uploads/2/cd/moved.txt`);
  });

  it.each([
    ['another host', 'https://bucket.s3.example/file.txt?sig=x'],
    ['the API', '/api/v1/users/me'],
    ['a traversal', '/user_uploads/../api/v1/users/me'],
  ])('refuses a redirect to %s', async (_name, location) => {
    await expect(withRedirect(location)).rejects.toMatchObject({ code: 'CORE_BAD_RESPONSE' });
  });

  it('refuses a declared length over the cap before reading the body', async () => {
    const { agent, pool } = mockRealm();
    pool
      .intercept({ path: '/user_uploads/2/ab/big.bin' })
      .reply(200, 'x'.repeat(1000), { headers: { 'content-length': '1000' } });
    const client = mockClient(agent);
    cleanups.push(() => client.close());
    await expect(
      client.downloadUpload('/user_uploads/2/ab/big.bin', { maxBytes: 999 }),
    ).rejects.toMatchObject({
      code: 'CORE_TOO_LARGE',
      details: { maxBytes: 999, declared: 1000 },
    });
  });
});
