import { appendFile, mkdir, readdir, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type Attachment,
  AttachmentSchema,
  AttachmentsSchema,
  appendAttachmentMarkdown,
  isUploadError,
  markdownForAttachments,
  parseUploadRoots,
  type UploadErrorCode,
  UploadRoots,
  type UploadTransport,
  uploadAttachments,
} from '../src/index.js';
import { FakeTransport, SITE, tempDir } from './helpers.js';

const CAP = 1000;

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

function inline(size: number, name = `blob-${size}.bin`): Attachment {
  return { data: Buffer.alloc(size, 7).toString('base64'), name };
}

describe('uploadAttachments', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let roots: UploadRoots;
  let transport: FakeTransport;
  const options = { site: SITE, maxFileBytes: CAP };

  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    await mkdir(join(dir, 'out', 'dir'), { recursive: true });
    await writeFile(join(dir, 'out', 'report.pdf'), 'pdf bytes');
    await writeFile(join(dir, 'out', 'at-cap.bin'), Buffer.alloc(CAP, 1));
    await writeFile(join(dir, 'out', 'over-cap.bin'), Buffer.alloc(CAP + 1, 1));
    roots = await UploadRoots.open(parseUploadRoots('out=./out', dir));
    transport = new FakeTransport();
  });

  afterEach(async () => {
    await cleanup();
  });

  it('uploads local files and inline data one at a time, in order', async () => {
    let active = 0;
    let most = 0;
    transport.beforeRead = () => {
      active++;
      most = Math.max(most, active);
    };
    const upload = transport.uploadFile.bind(transport);
    transport.uploadFile = async (input) => {
      try {
        return await upload(input);
      } finally {
        active--;
      }
    };
    const result = await uploadAttachments(
      transport,
      roots,
      [
        { file: 'out/report.pdf' },
        { data: Buffer.from('a,b\n1,2\n').toString('base64'), name: 'table.csv' },
        { data: Buffer.from('x').toString('base64'), name: 'chart', mime_type: 'image/png' },
      ],
      options,
    );
    expect(most).toBe(1);
    expect(result).toEqual([
      {
        name: 'report.pdf',
        path: '/user_uploads/2/ab/k0/report.pdf',
        url: 'https://acme.example/user_uploads/2/ab/k0/report.pdf',
        markdown: '[report.pdf](/user_uploads/2/ab/k0/report.pdf)',
        contentType: 'application/pdf',
        size: 9,
      },
      {
        name: 'table.csv',
        path: '/user_uploads/2/ab/k1/table.csv',
        url: 'https://acme.example/user_uploads/2/ab/k1/table.csv',
        markdown: '[table.csv](/user_uploads/2/ab/k1/table.csv)',
        contentType: 'text/csv',
        size: 8,
      },
      expect.objectContaining({ name: 'chart', contentType: 'image/png', size: 1 }),
    ]);
    expect(transport.uploads.map((u) => [u.filename, u.size, u.bytes.toString()])).toEqual([
      ['report.pdf', 9, 'pdf bytes'],
      ['table.csv', 8, 'a,b\n1,2\n'],
      ['chart', 1, 'x'],
    ]);
  });

  it('returns nothing for no attachments', async () => {
    expect(await uploadAttachments(transport, roots, [], options)).toEqual([]);
  });

  it('uses the declared mime_type of a local file', async () => {
    const [r] = await uploadAttachments(
      transport,
      roots,
      [{ file: 'out/report.pdf', mime_type: 'text/plain' }],
      options,
    );
    expect(r?.contentType).toBe('text/plain');
    expect(transport.uploads[0]?.contentType).toBe('text/plain');
  });

  it('accepts an absolute URL on the realm from the transport and keeps the path', async () => {
    const t: Pick<UploadTransport, 'uploadFile'> = {
      async uploadFile(input) {
        for await (const _ of input.body);
        return { url: `${SITE}/user_uploads/2/x/y/a.txt` };
      },
    };
    const [r] = await uploadAttachments(t, roots, [inline(3, 'a.txt')], options);
    expect(r).toMatchObject({ path: '/user_uploads/2/x/y/a.txt', url: `${SITE}/user_uploads/2/x/y/a.txt` });
  });

  describe('per-file limit', () => {
    it('accepts a local file of exactly the cap and refuses cap + 1 before any upload', async () => {
      const [r] = await uploadAttachments(transport, roots, [{ file: 'out/at-cap.bin' }], options);
      expect(r?.size).toBe(CAP);
      const err = await refusal(
        uploadAttachments(
          transport,
          roots,
          [{ file: 'out/report.pdf' }, { file: 'out/over-cap.bin' }],
          options,
        ),
        'UPLOAD_TOO_LARGE',
      );
      expect(err.details).toMatchObject({ name: 'over-cap.bin', size: CAP + 1, limit: CAP, index: 1 });
      expect(transport.uploads).toHaveLength(1);
    });

    it('accepts inline data of exactly the cap and refuses cap + 1', async () => {
      await uploadAttachments(transport, roots, [inline(CAP - 1), inline(CAP)], options);
      expect(transport.uploads.map((u) => u.size)).toEqual([CAP - 1, CAP]);
      const err = await refusal(
        uploadAttachments(transport, roots, [inline(CAP + 1)], options),
        'UPLOAD_TOO_LARGE',
      );
      expect(err.details).toMatchObject({ size: CAP + 1, limit: CAP });
      expect(transport.uploads).toHaveLength(2);
    });

    it('measures base64 before decoding it: a huge string is refused without a decoded copy', async () => {
      const from = vi.spyOn(Buffer, 'from');
      const huge = 'QUJD'.repeat(4 * 1024 * 1024); // 16 MiB of base64, 12 MiB decoded
      const err = await refusal(
        uploadAttachments(transport, roots, [{ data: huge, name: 'huge.bin' }], options),
        'UPLOAD_TOO_LARGE',
      );
      expect(err.details).toMatchObject({ size: 12 * 1024 * 1024, limit: CAP });
      expect(from.mock.calls.filter((call) => (call as unknown[])[1] === 'base64')).toEqual([]);
    });

    it('stops a file that grows past the cap while it is read', async () => {
      transport.beforeRead = async () => {
        await appendFile(join(dir, 'out', 'report.pdf'), Buffer.alloc(CAP, 2));
      };
      const err = await refusal(
        uploadAttachments(transport, roots, [{ file: 'out/report.pdf' }], options),
        'UPLOAD_TOO_LARGE',
      );
      expect(err.details).toMatchObject({ name: 'report.pdf', limit: CAP, index: 0 });
      expect((err.details as { size: number }).size).toBeGreaterThan(CAP);
      expect(transport.uploads).toEqual([]);
    });

    it('stops a file that grows or shrinks within the cap, whose declared length would be wrong', async () => {
      transport.beforeRead = async () => {
        await appendFile(join(dir, 'out', 'report.pdf'), 'more');
      };
      const grew = await refusal(
        uploadAttachments(transport, roots, [{ file: 'out/report.pdf' }], options),
        'UPLOAD_FILE_CHANGED',
      );
      expect(grew.details).toMatchObject({ declared: 9, read: 13 });
      transport.beforeRead = async () => {
        await truncate(join(dir, 'out', 'report.pdf'), 4);
      };
      const shrank = await refusal(
        uploadAttachments(transport, roots, [{ file: 'out/report.pdf' }], options),
        'UPLOAD_FILE_CHANGED',
      );
      expect(shrank.details).toMatchObject({ declared: 13, read: 4 });
      expect(transport.uploads).toEqual([]);
    });
  });

  describe('files per message', () => {
    it('accepts 10 and refuses 11 without uploading any', async () => {
      const ten = Array.from({ length: 10 }, (_, i) => inline(1, `f${i}.bin`));
      expect(await uploadAttachments(transport, roots, ten, options)).toHaveLength(10);
      const err = await refusal(
        uploadAttachments(transport, roots, [...ten, inline(1)], options),
        'UPLOAD_TOO_MANY_FILES',
      );
      expect(err.details).toEqual({ count: 11, limit: 10 });
      expect(transport.uploads).toHaveLength(10);
    });

    it('has a schema that says so too', () => {
      expect(AttachmentsSchema.safeParse(Array.from({ length: 10 }, () => inline(1))).success).toBe(true);
      expect(AttachmentsSchema.safeParse(Array.from({ length: 11 }, () => inline(1))).success).toBe(false);
    });
  });

  describe('total per message', () => {
    it('accepts exactly 4x the cap and refuses one byte more before any upload', async () => {
      const four = [{ file: 'out/at-cap.bin' }, inline(CAP), inline(CAP), inline(CAP)];
      await uploadAttachments(transport, roots, four, options);
      expect(transport.uploads.reduce((sum, u) => sum + u.size, 0)).toBe(4 * CAP);
      const err = await refusal(
        uploadAttachments(transport, roots, [...four, inline(1)], options),
        'UPLOAD_TOTAL_TOO_LARGE',
      );
      expect(err.details).toEqual({ size: 4 * CAP + 1, limit: 4 * CAP });
      expect(transport.uploads).toHaveLength(4);
    });

    it('is charged again on bytes read: a file growing past the total is stopped', async () => {
      await writeFile(join(dir, 'out', 'small.bin'), Buffer.alloc(CAP / 2 - 1, 3));
      // Declared: 3 x CAP + CAP/2 + (CAP/2 - 1) = 4 x CAP - 1. The last file then grows by 2 bytes.
      transport.beforeRead = async (input) => {
        if (input.filename === 'small.bin') await appendFile(join(dir, 'out', 'small.bin'), 'xx');
      };
      const err = await refusal(
        uploadAttachments(
          transport,
          roots,
          [inline(CAP), inline(CAP), inline(CAP), inline(CAP / 2), { file: 'out/small.bin' }],
          options,
        ),
        'UPLOAD_TOTAL_TOO_LARGE',
      );
      expect(err.details).toMatchObject({ index: 4, name: 'small.bin', size: 4 * CAP + 1, limit: 4 * CAP });
      expect(transport.uploads).toHaveLength(4);
    });
  });

  describe('refusals before anything is sent', () => {
    it.each<[string, Attachment, UploadErrorCode]>([
      ['malformed base64', { data: 'not base64!', name: 'x.bin' }, 'UPLOAD_BAD_BASE64'],
      ['a name with a path', { data: 'QQ==', name: '../x.bin' }, 'UPLOAD_INVALID_NAME'],
      ['a bad mime_type', { data: 'QQ==', name: 'x.bin', mime_type: 'image' }, 'UPLOAD_INVALID_MIME_TYPE'],
      ['an absolute path', { file: '/etc/passwd' }, 'UPLOAD_ABSOLUTE_PATH'],
      ['an unknown root', { file: 'home/.ssh/id_rsa' }, 'UPLOAD_UNKNOWN_ROOT'],
      ['an escape', { file: 'out/../../etc/passwd' }, 'UPLOAD_PATH_ESCAPE'],
      ['a missing file', { file: 'out/nope.txt' }, 'UPLOAD_FILE_NOT_FOUND'],
      ['a directory', { file: 'out/dir' }, 'UPLOAD_NOT_REGULAR_FILE'],
      ['the root itself', { file: 'out/.' }, 'UPLOAD_INVALID_PATH'],
      [
        'both file and data',
        { file: 'out/report.pdf', data: 'QQ==', name: 'x' } as unknown as Attachment,
        'UPLOAD_INVALID_ATTACHMENT',
      ],
      ['data without a name', { data: 'QQ==' } as unknown as Attachment, 'UPLOAD_INVALID_ATTACHMENT'],
    ])('%s, even as the third attachment', async (_what, bad, code) => {
      const err = await refusal(
        uploadAttachments(transport, roots, [inline(1, 'a.bin'), { file: 'out/report.pdf' }, bad], options),
        code,
      );
      expect(err.details).toMatchObject({ index: 2, uploaded: [] });
      expect(err.message).toMatch(/^attachments\[2\] \(/);
      expect(transport.uploads).toEqual([]);
    });

    it('refuses local files without roots', async () => {
      await refusal(
        uploadAttachments(transport, undefined, [{ file: 'out/report.pdf' }], options),
        'UPLOAD_NO_ROOTS',
      );
      await refusal(
        uploadAttachments(transport, await UploadRoots.open([]), [{ file: 'out/report.pdf' }], options),
        'UPLOAD_NO_ROOTS',
      );
      expect(await uploadAttachments(transport, undefined, [inline(2, 'ok.bin')], options)).toHaveLength(1);
    });

    it('refuses a bad cap or site', async () => {
      await refusal(
        uploadAttachments(transport, roots, [], { site: SITE, maxFileBytes: -1 }),
        'UPLOAD_CONFIG_INVALID',
      );
      await refusal(
        uploadAttachments(transport, roots, [], { site: 'ftp://x', maxFileBytes: 1 }),
        'UPLOAD_CONFIG_INVALID',
      );
    });

    it('closes every descriptor it opened, whatever happens', async () => {
      const before = (await readdir('/proc/self/fd')).length;
      await refusal(
        uploadAttachments(
          transport,
          roots,
          [{ file: 'out/report.pdf' }, { file: 'out/at-cap.bin' }, inline(1, '/')],
          options,
        ),
        'UPLOAD_INVALID_NAME',
      );
      transport.failAt = 1;
      await refusal(
        uploadAttachments(
          transport,
          roots,
          [{ file: 'out/report.pdf' }, { file: 'out/at-cap.bin' }],
          options,
        ),
        'UPLOAD_FAILED',
      );
      expect((await readdir('/proc/self/fd')).length).toBe(before);
    });
  });

  describe('a failure part-way', () => {
    it('names the attachment and what earlier ones uploaded', async () => {
      transport.failAt = 1;
      const err = await refusal(
        uploadAttachments(
          transport,
          roots,
          [inline(1, 'first.bin'), inline(2, 'second.bin'), inline(3)],
          options,
        ),
        'UPLOAD_FAILED',
      );
      expect(err.message).toMatch(
        /^attachments\[1\] \(second\.bin\) could not be uploaded: Zulip answered 500/,
      );
      expect(err.message).toContain('first.bin (/user_uploads/2/ab/k0/first.bin)');
      expect(err.details).toEqual({
        index: 1,
        name: 'second.bin',
        uploaded: [{ name: 'first.bin', path: '/user_uploads/2/ab/k0/first.bin' }],
        causeCode: 'CORE_SERVER_ERROR',
      });
      expect((err.cause as Error).message).toBe('Zulip answered 500');
      expect(transport.uploads.map((u) => u.filename)).toEqual(['first.bin']);
    });

    it('keeps the body error when the transport wraps it', async () => {
      const wrapping: Pick<UploadTransport, 'uploadFile'> = {
        async uploadFile(input) {
          try {
            for await (const _ of input.body);
          } catch (err) {
            throw Object.assign(new Error('request body failed'), { code: 'CORE_NETWORK', cause: err });
          }
          return { url: '/user_uploads/1/a/b/c' };
        },
      };
      await writeFile(join(dir, 'out', 'grows.txt'), 'abc');
      const grower: Pick<UploadTransport, 'uploadFile'> = {
        async uploadFile(input) {
          await appendFile(join(dir, 'out', 'grows.txt'), 'd');
          return wrapping.uploadFile(input);
        },
      };
      await refusal(
        uploadAttachments(grower, roots, [{ file: 'out/grows.txt' }], options),
        'UPLOAD_FILE_CHANGED',
      );
    });

    it('refuses an answer that is not a realm upload path', async () => {
      for (const url of [
        'https://evil.example/user_uploads/1/a/b',
        '/api/v1/users',
        '/user_uploads/x?y=1',
        '',
      ]) {
        const t: Pick<UploadTransport, 'uploadFile'> = {
          async uploadFile(input) {
            for await (const _ of input.body);
            return { url };
          },
        };
        await refusal(uploadAttachments(t, roots, [inline(1)], options), 'UPLOAD_BAD_RESPONSE');
      }
    });

    it('stops when aborted, before or during an upload', async () => {
      const before = new AbortController();
      before.abort(new Error('stop'));
      await refusal(
        uploadAttachments(transport, roots, [inline(1)], { ...options, signal: before.signal }),
        'UPLOAD_ABORTED',
      );
      const during = new AbortController();
      transport.beforeRead = (_input, index) => {
        if (index === 1) during.abort(new Error('stop'));
      };
      const err = await refusal(
        uploadAttachments(transport, roots, [inline(1, 'a'), { file: 'out/at-cap.bin' }], {
          ...options,
          signal: during.signal,
        }),
        'UPLOAD_ABORTED',
      );
      expect(err.details).toMatchObject({ index: 1, uploaded: [{ name: 'a' }] });
    });
  });
});

describe('markdown', () => {
  const uploaded = [
    { markdown: '[a.png](/user_uploads/2/a/b/a.png)' },
    { markdown: '[b.pdf](/user_uploads/2/c/d/b.pdf)' },
  ];

  it('puts one link per line after the text', () => {
    expect(markdownForAttachments(uploaded)).toBe(
      '[a.png](/user_uploads/2/a/b/a.png)\n[b.pdf](/user_uploads/2/c/d/b.pdf)',
    );
    expect(appendAttachmentMarkdown('See these:  \n', uploaded)).toBe(
      'See these:\n[a.png](/user_uploads/2/a/b/a.png)\n[b.pdf](/user_uploads/2/c/d/b.pdf)',
    );
    expect(appendAttachmentMarkdown(undefined, uploaded.slice(0, 1))).toBe(
      '[a.png](/user_uploads/2/a/b/a.png)',
    );
    expect(appendAttachmentMarkdown('  ', [])).toBe('');
    expect(appendAttachmentMarkdown('text', [])).toBe('text');
  });

  it('drops square brackets from the link text and encodes what would break the target', async () => {
    const t: Pick<UploadTransport, 'uploadFile'> = {
      async uploadFile(input) {
        for await (const _ of input.body);
        return { url: '/user_uploads/2/a/b/Q3 (final).txt' };
      },
    };
    const [r] = await uploadAttachments(t, undefined, [inline(1, 'Q3 [final].txt')], {
      site: SITE,
      maxFileBytes: 10,
    });
    expect(r?.markdown).toBe('[Q3 final.txt](/user_uploads/2/a/b/Q3%20%28final%29.txt)');
  });
});

describe('AttachmentSchema', () => {
  it('accepts a file or inline data, each with an optional mime_type', () => {
    for (const ok of [
      { file: 'out/a.txt' },
      { file: 'out/a.txt', mime_type: 'text/plain' },
      { data: 'QQ==', name: 'a.bin' },
      { data: '', name: 'empty.txt', mime_type: 'text/plain; charset=utf-8' },
    ]) {
      expect(AttachmentSchema.safeParse(ok).success).toBe(true);
    }
  });

  it('refuses both, neither, extra keys and malformed fields', () => {
    for (const bad of [
      {},
      { file: 'out/a', data: 'QQ==', name: 'a' },
      { data: 'QQ==' },
      { file: '' },
      { file: 'out/a', path: '/etc/passwd' },
      { data: 'QQ==', name: 'a', mime_type: 'png' },
    ]) {
      expect(AttachmentSchema.safeParse(bad).success).toBe(false);
    }
  });
});
