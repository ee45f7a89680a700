import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ZulipClient } from '@zmcp/core';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  fetchAttachment,
  isUploadError,
  parseUploadRoots,
  resolveMaxFileBytes,
  UploadRoots,
  type UploadTransport,
  uploadAttachments,
} from '../src/index.js';
import { tempDir } from './helpers.js';

const BOT = 'uploader-bot@zulip.example';

// End to end: core's ZulipClient -> @zmcp/zulip-sim POST /user_uploads, then GET the bytes back.
describe('against zulip-sim', () => {
  let sim: ZulipSim;
  let client: ZulipClient;
  let site: string;
  let dir: string;
  let cleanup: () => Promise<void>;
  let roots: UploadRoots;

  beforeAll(async () => {
    sim = await startZulipSim({
      maxFileUploadMib: 1,
      seed: (realm) => {
        realm.addUser({ fullName: 'Uploader Bot', email: BOT, isBot: true, botType: 1 });
      },
    });
    const credentials = sim.credentials(BOT);
    site = credentials.site;
    client = new ZulipClient(credentials);
    ({ dir, cleanup } = await tempDir());
    await mkdir(join(dir, 'out'));
    roots = await UploadRoots.open(parseUploadRoots('out=./out', dir));
  });

  afterAll(async () => {
    await client?.close();
    await sim?.close();
    await cleanup?.();
  });

  it('a ZulipClient is an UploadTransport', () => {
    const transport: UploadTransport = client;
    expect(typeof transport.uploadFile).toBe('function');
  });

  it('uploads a local file and inline data, and reads them back', async () => {
    const png = await sharp({ create: { width: 3000, height: 1000, channels: 3, background: '#2a9d8f' } })
      .png()
      .toBuffer();
    await writeFile(join(dir, 'out', 'chart.png'), png);
    const maxFileBytes = resolveMaxFileBytes({ realmMaxFileUploadSizeMib: 1 });
    const uploaded = await uploadAttachments(
      client,
      roots,
      [
        { file: 'out/chart.png' },
        { data: Buffer.from('line one\nline two\n').toString('base64'), name: 'notes.txt' },
      ],
      { site, maxFileBytes },
    );
    expect(uploaded).toHaveLength(2);
    expect(uploaded[0]).toMatchObject({ name: 'chart.png', contentType: 'image/png', size: png.length });
    expect(uploaded[0]?.path).toMatch(/^\/user_uploads\/\d+\/.+\/chart\.png$/);
    expect(uploaded[0]?.url).toBe(new URL(uploaded[0]!.path, site).href);
    expect(uploaded[0]?.markdown).toBe(`[chart.png](${uploaded[0]?.path})`);

    const image = await fetchAttachment(client, site, uploaded[0]!.url, { maxBytes: maxFileBytes });
    expect(image).toMatchObject({ kind: 'image', width: 1568, height: 523, originalBytes: png.length });
    const text = await fetchAttachment(client, site, uploaded[1]!.path, { maxBytes: maxFileBytes });
    expect(text).toMatchObject({ kind: 'text', text: 'line one\nline two\n', truncated: false });
  });

  it('reports the realm refusing a file over its own cap, naming the attachment', async () => {
    const big = Buffer.alloc(1024 * 1024 + 1, 1).toString('base64');
    let caught: unknown;
    try {
      await uploadAttachments(client, roots, [{ data: big, name: 'big.bin' }], {
        site,
        maxFileBytes: 4 * 1024 * 1024,
      });
    } catch (err) {
      caught = err;
    }
    expect(isUploadError(caught, 'UPLOAD_FAILED')).toBe(true);
    expect((caught as { details: unknown }).details).toMatchObject({
      index: 0,
      name: 'big.bin',
      uploaded: [],
    });
  });

  it('never sends a request for a path off the realm', async () => {
    const before = sim.requests.length;
    for (const path of [
      `${site}/user_uploads/../api/v1/users/me`,
      'https://evil.example/user_uploads/2/a/b/c',
    ]) {
      let caught: unknown;
      try {
        await fetchAttachment(client, site, path, { maxBytes: 1000 });
      } catch (err) {
        caught = err;
      }
      expect(isUploadError(caught, 'UPLOAD_BAD_DOWNLOAD_PATH')).toBe(true);
    }
    expect(sim.requests.length).toBe(before);
  });
});
