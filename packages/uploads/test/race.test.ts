import { once } from 'node:events';
import { mkdir, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isUploadError, UploadRoots, uploadAttachments } from '../src/index.js';
import { FakeTransport, SITE, tempDir } from './helpers.js';

// A writer thread flips root/sub between the real directory and a symlink to a directory
// outside the root, as fast as it can, while uploads of root/sub/data.txt run.
const SWAPPER = `
const { workerData, parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const { sub, stash, outside, control } = workerData;
const flags = new Int32Array(control);
let swaps = 0;
parentPort.postMessage('ready');
while (Atomics.load(flags, 0) === 0) {
  fs.renameSync(sub, stash);
  fs.symlinkSync(outside, sub);
  fs.unlinkSync(sub);
  fs.renameSync(stash, sub);
  swaps++;
  // Dwell in the real state for a while, so that some uploads also get through.
  for (let i = 0; i < 30 && Atomics.load(flags, 0) === 0; i++) fs.statSync(sub);
}
parentPort.postMessage(swaps);
`;

const ITERATIONS = 1500;

describe('confinement under a concurrent directory-for-symlink swap', () => {
  let dir: string;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    dir = await realpath(dir);
    await mkdir(join(dir, 'root', 'sub'), { recursive: true });
    await mkdir(join(dir, 'outside'));
    await writeFile(join(dir, 'root', 'sub', 'data.txt'), 'inside-data');
    await writeFile(join(dir, 'outside', 'data.txt'), 'SECRET-outside');
  });

  afterEach(async () => {
    await cleanup();
  });

  it(`never uploads a byte from outside the root (${ITERATIONS} uploads)`, async () => {
    const roots = await UploadRoots.open([{ name: 'r', path: join(dir, 'root') }]);
    const transport = new FakeTransport();
    const control = new SharedArrayBuffer(4);
    const worker = new Worker(SWAPPER, {
      eval: true,
      workerData: {
        sub: join(dir, 'root', 'sub'),
        stash: join(dir, 'root', 'sub-real'),
        outside: join(dir, 'outside'),
        control,
      },
    });
    const outcomes = new Map<string, number>();
    let swaps = 0;
    try {
      await once(worker, 'message');
      for (let i = 0; i < ITERATIONS; i++) {
        let outcome = 'uploaded';
        try {
          await uploadAttachments(transport, roots, [{ file: 'r/sub/data.txt' }], {
            site: SITE,
            maxFileBytes: 1024,
          });
        } catch (err) {
          if (!isUploadError(err)) throw err;
          outcome =
            err.code === 'UPLOAD_PATH_ESCAPE'
              ? `${err.code}:${(err.details as { stage: string }).stage}`
              : err.code;
        }
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      }
    } finally {
      Atomics.store(new Int32Array(control), 0, 1);
      [swaps] = (await once(worker, 'message')) as [number];
      await worker.terminate();
    }

    expect(swaps).toBeGreaterThan(0);
    // Only the inside file ever reached the transport...
    expect(transport.uploads.length).toBe(outcomes.get('uploaded') ?? 0);
    for (const upload of transport.uploads) expect(upload.bytes.toString()).toBe('inside-data');
    // ...and every refusal was one the swap explains: the path escaped, or was briefly absent.
    // (An escape is caught at stage "resolved" when the walk meets the symlink, or at "opened"
    // by the descriptor check when a directory already open was moved out of the root.)
    const refusals = [...outcomes.keys()].filter((outcome) => outcome !== 'uploaded');
    for (const outcome of refusals) {
      expect(['UPLOAD_PATH_ESCAPE:resolved', 'UPLOAD_PATH_ESCAPE:opened', 'UPLOAD_FILE_NOT_FOUND']).toContain(
        outcome,
      );
    }
  });
});
