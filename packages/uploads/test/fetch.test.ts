import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import {
  type DownloadUploadResult,
  type FetchedAttachment,
  fetchAttachment,
  isUploadError,
  parseUploadPath,
  type UploadErrorCode,
  type UploadTransport,
} from '../src/index.js';
import { SITE } from './helpers.js';

type Download = Pick<UploadTransport, 'downloadUpload'>;

function serving(file: DownloadUploadResult): Download & { paths: string[] } {
  const paths: string[] = [];
  return {
    paths,
    async downloadUpload(path) {
      paths.push(path);
      return file;
    },
  };
}

async function refusal(
  promise: Promise<unknown>,
  code: UploadErrorCode,
): Promise<Error & { details?: unknown }> {
  try {
    await promise;
  } catch (err) {
    if (!isUploadError(err, code)) throw err;
    return err;
  }
  throw new Error(`expected ${code}, but it succeeded`);
}

async function fetchBytes(
  bytes: Uint8Array,
  contentType: string | undefined,
  options: Partial<Parameters<typeof fetchAttachment>[3]> = {},
  path = '/user_uploads/2/ab/k/file',
): Promise<FetchedAttachment> {
  return fetchAttachment(serving({ bytes, contentType }), SITE, path, { maxBytes: 50_000_000, ...options });
}

function noise(width: number, height: number, channels: 3 | 4): sharp.Sharp {
  return sharp({
    create: {
      width,
      height,
      channels,
      background: '#808080',
      noise: { type: 'gaussian', mean: 128, sigma: 60 },
    },
  });
}

describe('parseUploadPath', () => {
  it.each([
    ['/user_uploads/2/ab/Xy9/report.pdf', '/user_uploads/2/ab/Xy9/report.pdf'],
    [`${SITE}/user_uploads/2/ab/Xy9/report.pdf`, '/user_uploads/2/ab/Xy9/report.pdf'],
    ['https://ACME.example:443/user_uploads/2/ab/Xy9/a.png', '/user_uploads/2/ab/Xy9/a.png'],
    ['/user_uploads/2/ab/Xy9/r%C3%A9sum%C3%A9.pdf', '/user_uploads/2/ab/Xy9/r%C3%A9sum%C3%A9.pdf'],
    ['/user_uploads/2/ab/Xy9/résumé.pdf', '/user_uploads/2/ab/Xy9/r%C3%A9sum%C3%A9.pdf'],
    ['/user_uploads/temporary/4A6F62/report.pdf', '/user_uploads/temporary/4A6F62/report.pdf'],
  ])('accepts %s', (input, path) => {
    expect(parseUploadPath(input, SITE)).toBe(path);
  });

  it.each([
    ['/user_uploads/../api/v1/users', /dot segment/],
    ['/user_uploads/2/../../api/v1/users', /dot segment/],
    ['/user_uploads/2/./a/b', /dot segment/],
    ['/user_uploads/2/%2e%2e/%2E%2E/api/v1/users', /dot segment/],
    ['/user_uploads/2/a%2fb/c', /encoded separator/],
    ['/user_uploads/2/a%5cb/c', /encoded separator/],
    ['/user_uploads/2/a%00b/c', /control/],
    ['/user_uploads/2/a%zzb/c', /malformed/],
    ['/user_uploads//2/a', /empty/],
    ['/user_uploads/2/a/', /empty/],
    ['/user_uploads/2/a\\..\\..\\api', /backslash/],
    ['/user_uploads/2/a b', /whitespace/],
    ['/user_uploads/', /names no file/],
    ['/user_uploads/2', /names no file/],
    ['/user_uploads/2/a?x=1', /query/],
    ['/user_uploads/2/a#frag', /query or fragment/],
    ['/api/v1/users', /not under \/user_uploads/],
    ['/user_uploadsX/2/a', /not under \/user_uploads/],
    ['user_uploads/2/a', /neither/],
    ['//evil.example/user_uploads/2/a', /neither/],
    ['https://evil/user_uploads/2/x', /another host/],
    ['https://acme.example.evil.com/user_uploads/2/x', /another host/],
    ['https://acme.example@evil.com/user_uploads/2/x', /another host/],
    ['https://user:pw@acme.example/user_uploads/2/x', /credentials/],
    ['http://acme.example/user_uploads/2/x', /another host/],
    ['https://acme.example:8443/user_uploads/2/x', /another host/],
    ['javascript:alert(1)', /neither/],
    ['file:///etc/passwd', /neither/],
    ['', /neither/],
  ])('refuses %j', (input, reason) => {
    let caught: unknown;
    try {
      parseUploadPath(input, SITE);
    } catch (err) {
      caught = err;
    }
    expect(isUploadError(caught, 'UPLOAD_BAD_DOWNLOAD_PATH')).toBe(true);
    expect((caught as Error).message).toMatch(reason);
  });
});

describe('fetchAttachment', () => {
  it('refuses a bad path before calling the transport', async () => {
    const transport = serving({ bytes: new Uint8Array(1), contentType: 'text/plain' });
    for (const path of ['/user_uploads/../api/v1/users', 'https://evil/user_uploads/x/y', '/static/x/y']) {
      await refusal(fetchAttachment(transport, SITE, path, { maxBytes: 10 }), 'UPLOAD_BAD_DOWNLOAD_PATH');
    }
    expect(transport.paths).toEqual([]);
  });

  it('hands the transport the server-relative path and the size cap', async () => {
    const seen: unknown[] = [];
    const transport: Download = {
      async downloadUpload(path, options) {
        seen.push(path, options.maxBytes);
        return { bytes: Buffer.from('hi'), contentType: 'text/plain' };
      },
    };
    await fetchAttachment(transport, SITE, `${SITE}/user_uploads/2/a/b/n.txt`, { maxBytes: 77 });
    expect(seen).toEqual(['/user_uploads/2/a/b/n.txt', 77]);
  });

  it('refuses more bytes than the cap even if the transport returned them', async () => {
    const err = await refusal(
      fetchBytes(Buffer.alloc(11), 'text/plain', { maxBytes: 10 }),
      'UPLOAD_TOO_LARGE',
    );
    expect(err.details).toMatchObject({ size: 11, limit: 10 });
    await fetchBytes(Buffer.alloc(10, 65), 'text/plain', { maxBytes: 10 });
  });

  it('reports a transport that stopped at the cap as too large', async () => {
    const capped: Download = {
      async downloadUpload(_path, options) {
        throw Object.assign(new Error('the file is larger than the cap'), {
          code: 'CORE_TOO_LARGE',
          details: { maxBytes: options.maxBytes, declared: 5000 },
        });
      },
    };
    const err = await refusal(
      fetchAttachment(capped, SITE, '/user_uploads/2/a/b/big.zip', { maxBytes: 100 }),
      'UPLOAD_TOO_LARGE',
    );
    expect(err.details).toEqual({ name: 'big.zip', size: 5000, limit: 100 });
  });

  it('wraps a transport failure', async () => {
    const failing: Download = {
      async downloadUpload() {
        throw Object.assign(new Error('Not found'), { code: 'CORE_NOT_FOUND' });
      },
    };
    const err = await refusal(
      fetchAttachment(failing, SITE, '/user_uploads/2/a/b/c', { maxBytes: 10 }),
      'UPLOAD_DOWNLOAD_FAILED',
    );
    expect(err.details).toEqual({ path: '/user_uploads/2/a/b/c', causeCode: 'CORE_NOT_FOUND' });
    const aborted = new AbortController();
    aborted.abort(new Error('stop'));
    await refusal(
      fetchAttachment(failing, SITE, '/user_uploads/2/a/b/c', { maxBytes: 10, signal: aborted.signal }),
      'UPLOAD_ABORTED',
    );
  });

  it('refuses unusable options', async () => {
    await refusal(
      fetchBytes(Buffer.alloc(1), 'text/plain', { maxBytes: Number.NaN }),
      'UPLOAD_CONFIG_INVALID',
    );
    await refusal(fetchBytes(Buffer.alloc(1), 'text/plain', { imageMaxEdge: 0 }), 'UPLOAD_CONFIG_INVALID');
  });

  describe('images', () => {
    it('downsamples a large image so its longest side fits', async () => {
      const png = await sharp({ create: { width: 4000, height: 2500, channels: 3, background: '#3366cc' } })
        .png()
        .toBuffer();
      const result = await fetchBytes(png, 'image/png', {}, '/user_uploads/2/ab/k/big.png');
      expect(result).toMatchObject({
        kind: 'image',
        name: 'big.png',
        width: 1568,
        height: 980,
        originalBytes: png.length,
      });
      if (result.kind !== 'image') throw new Error('not an image');
      const meta = await sharp(Buffer.from(result.data, 'base64')).metadata();
      expect([meta.width, meta.height]).toEqual([1568, 980]);
      expect(result.mimeType).toBe(`image/${meta.format}`);
    });

    it('honours a smaller edge and re-encodes to fit a byte budget', async () => {
      const png = await noise(1000, 700, 3).png().toBuffer();
      expect(png.length).toBeGreaterThan(1_000_000);
      const result = await fetchBytes(png, 'image/png', { imageMaxEdge: 800, imageMaxBytes: 60_000 });
      if (result.kind !== 'image') throw new Error('not an image');
      expect(Math.max(result.width, result.height)).toBeLessThanOrEqual(800);
      expect(Buffer.from(result.data, 'base64').length).toBeLessThanOrEqual(60_000);
      expect(result.mimeType).toBe('image/jpeg');
    });

    it('keeps transparency when it re-encodes an image with alpha', async () => {
      const png = await noise(400, 300, 4).png().toBuffer();
      const result = await fetchBytes(png, 'image/png', { imageMaxBytes: 100_000 });
      if (result.kind !== 'image') throw new Error('not an image');
      expect(['image/png', 'image/webp']).toContain(result.mimeType);
      expect((await sharp(Buffer.from(result.data, 'base64')).metadata()).hasAlpha).toBe(true);
      expect(Buffer.from(result.data, 'base64').length).toBeLessThanOrEqual(100_000);
    });

    it('returns a small image untouched', async () => {
      const png = await sharp({ create: { width: 64, height: 32, channels: 4, background: '#ff000080' } })
        .png()
        .toBuffer();
      const result = await fetchBytes(png, 'image/png');
      expect(result).toEqual({
        kind: 'image',
        name: 'file',
        mimeType: 'image/png',
        data: png.toString('base64'),
        width: 64,
        height: 32,
        originalBytes: png.length,
      });
    });

    it('recognises an image by its bytes, whatever the header says', async () => {
      const jpeg = await sharp({ create: { width: 10, height: 10, channels: 3, background: '#000' } })
        .jpeg()
        .toBuffer();
      expect((await fetchBytes(jpeg, 'application/octet-stream')).kind).toBe('image');
      expect((await fetchBytes(jpeg, undefined)).kind).toBe('image');
      const fake = await fetchBytes(Buffer.from('not really a png'), 'image/png');
      expect(fake).toMatchObject({ kind: 'binary', mimeType: 'image/png' });
    });

    it('applies EXIF orientation', async () => {
      const jpeg = await sharp({ create: { width: 200, height: 100, channels: 3, background: '#0a0' } })
        .jpeg()
        .withMetadata({ orientation: 6 })
        .toBuffer();
      const result = await fetchBytes(jpeg, 'image/jpeg');
      expect(result).toMatchObject({ kind: 'image', width: 100, height: 200 });
    });

    it('converts formats models do not read', async () => {
      const tiff = await sharp({ create: { width: 20, height: 10, channels: 3, background: '#123456' } })
        .tiff()
        .toBuffer();
      const result = await fetchBytes(tiff, 'image/tiff');
      expect(result).toMatchObject({ kind: 'image', mimeType: 'image/jpeg', width: 20, height: 10 });
    });

    it('does not decode an image over the pixel cap', async () => {
      const png = await sharp({ create: { width: 100, height: 100, channels: 3, background: '#000' } })
        .png()
        .toBuffer();
      const result = await fetchBytes(png, 'image/png', { imageMaxPixels: 9_999 });
      expect(result).toMatchObject({ kind: 'binary', mimeType: 'image/png', size: png.length });
    });

    it('treats SVG as text, never rendering it', async () => {
      const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect/></svg>');
      expect(await fetchBytes(svg, 'image/svg+xml')).toMatchObject({
        kind: 'text',
        mimeType: 'image/svg+xml',
      });
    });
  });

  describe('text and binary', () => {
    it('decodes text as UTF-8, replacing invalid bytes', async () => {
      const bytes = Buffer.concat([Buffer.from('héllo '), Buffer.from([0xff, 0xfe]), Buffer.from(' world')]);
      const result = await fetchBytes(
        bytes,
        'text/plain; charset=utf-8',
        {},
        '/user_uploads/2/a/b/notes.txt',
      );
      expect(result).toEqual({
        kind: 'text',
        name: 'notes.txt',
        mimeType: 'text/plain',
        text: 'héllo \ufffd\ufffd world',
        size: bytes.length,
        truncated: false,
      });
    });

    it('caps text and says so', async () => {
      const result = await fetchBytes(Buffer.from('x'.repeat(50)), 'application/json', { textMaxChars: 20 });
      expect(result).toMatchObject({ kind: 'text', text: 'x'.repeat(20), size: 50, truncated: true });
      const emoji = await fetchBytes(Buffer.from('ab😀cd'), 'text/plain', { textMaxChars: 3 });
      expect(emoji).toMatchObject({ text: 'ab', truncated: true });
    });

    it('sniffs text when the type is generic, and uses the extension for the type', async () => {
      const csv = await fetchBytes(
        Buffer.from('a,b\n1,2\n'),
        'application/octet-stream',
        {},
        '/user_uploads/2/a/b/t.csv',
      );
      expect(csv).toMatchObject({ kind: 'text', mimeType: 'text/csv', text: 'a,b\n1,2\n' });
      const plain = await fetchBytes(Buffer.from('just words'), undefined);
      expect(plain).toMatchObject({ kind: 'text', mimeType: 'text/plain' });
    });

    it('returns anything else as base64', async () => {
      const bytes = Buffer.from([0, 1, 2, 3, 250, 251, 252]);
      expect(await fetchBytes(bytes, undefined, {}, '/user_uploads/2/a/b/x.bin')).toEqual({
        kind: 'binary',
        name: 'x.bin',
        mimeType: 'application/octet-stream',
        data: bytes.toString('base64'),
        size: 7,
      });
      const pdf = await fetchBytes(
        Buffer.from('%PDF-1.7 ...'),
        'application/pdf',
        {},
        '/user_uploads/2/a/b/r.pdf',
      );
      expect(pdf).toMatchObject({ kind: 'binary', mimeType: 'application/pdf' });
    });
  });
});
