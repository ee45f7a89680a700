import { describe, expect, it } from 'vitest';
import { multipartFileBody } from './multipart.js';

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of chunks) parts.push(Buffer.from(c));
  return Buffer.concat(parts);
}

async function* from(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield Buffer.from(p);
}

describe('multipartFileBody', () => {
  it('wraps one file part with an exact Content-Length', async () => {
    const body = multipartFileBody({
      field: 'file',
      filename: 'report.pdf',
      contentType: 'application/pdf',
      size: 11,
      body: from('hello', ' ', 'world'),
    });
    const bytes = await collect(body.chunks);
    expect(bytes.byteLength).toBe(body.contentLength);
    const boundary = body.contentType.split('boundary=')[1] as string;
    const text = bytes.toString('utf8');
    expect(text.startsWith(`--${boundary}\r\n`)).toBe(true);
    expect(text).toContain('Content-Disposition: form-data; name="file"; filename="report.pdf"\r\n');
    expect(text).toContain('Content-Type: application/pdf\r\n\r\nhello world\r\n');
    expect(text.endsWith(`--${boundary}--\r\n`)).toBe(true);
  });

  it('accepts a web ReadableStream', async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(Buffer.from('abc'));
        c.close();
      },
    });
    const body = multipartFileBody({
      field: 'file',
      filename: 'a',
      contentType: 'text/plain',
      size: 3,
      body: stream,
    });
    expect((await collect(body.chunks)).byteLength).toBe(body.contentLength);
  });

  it('escapes the filename so it cannot break out of its quotes or header', async () => {
    const body = multipartFileBody({
      field: 'file',
      filename: 'a"\r\nContent-Type: text/html\r\n.txt',
      contentType: 'text/plain\r\nX-Evil: 1',
      size: 0,
      body: from(),
    });
    const text = (await collect(body.chunks)).toString('utf8');
    expect(text).toContain('filename="a%22%0D%0AContent-Type: text/html%0D%0A.txt"');
    expect(text).toContain('Content-Type: application/octet-stream\r\n');
    expect(text).not.toContain('X-Evil');
  });

  it('fails when the body is longer or shorter than declared', async () => {
    const longer = multipartFileBody({
      field: 'f',
      filename: 'a',
      contentType: 'text/plain',
      size: 2,
      body: from('abc'),
    });
    await expect(collect(longer.chunks)).rejects.toMatchObject({ code: 'CORE_INVALID_ARGUMENT' });
    const shorter = multipartFileBody({
      field: 'f',
      filename: 'a',
      contentType: 'text/plain',
      size: 5,
      body: from('ab'),
    });
    await expect(collect(shorter.chunks)).rejects.toMatchObject({
      code: 'CORE_INVALID_ARGUMENT',
      details: { sent: 2 },
    });
  });
});
