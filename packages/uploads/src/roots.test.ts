import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isUploadError } from './errors.js';
import { openConfined, type UploadRoot } from './roots.js';

// These drive the window between the path checks and the open, which a real race hits only
// sometimes: the check on the opened descriptor must catch what the path checks could not.
describe('openConfined: the check is bound to the opened descriptor', () => {
  let dir: string;
  let root: UploadRoot;

  beforeEach(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), 'zmcp-confine-')));
    await mkdir(join(dir, 'root', 'sub'), { recursive: true });
    await mkdir(join(dir, 'outside'));
    await writeFile(join(dir, 'root', 'sub', 'data.txt'), 'inside');
    await writeFile(join(dir, 'outside', 'data.txt'), 'SECRET');
    root = { name: 'r', path: join(dir, 'root'), realPath: join(dir, 'root') };
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('catches a directory swapped for a symlink to outside after the path checks', async () => {
    const swap = async () => {
      await rename(join(dir, 'root', 'sub'), join(dir, 'root', 'sub-old'));
      await symlink(join(dir, 'outside'), join(dir, 'root', 'sub'));
    };
    let caught: unknown;
    try {
      const file = await openConfined(root, 'r/sub/data.txt', 'sub/data.txt', { afterPrecheck: swap });
      await file.close();
    } catch (err) {
      caught = err;
    }
    expect(isUploadError(caught, 'UPLOAD_PATH_ESCAPE')).toBe(true);
    expect((caught as { details: unknown }).details).toMatchObject({ stage: 'opened' });
  });

  it('catches a file swapped for a FIFO after the path checks, without hanging', async () => {
    const swap = async () => {
      await rm(join(dir, 'root', 'sub', 'data.txt'));
      execFileSync('mkfifo', [join(dir, 'root', 'sub', 'data.txt')]);
    };
    let caught: unknown;
    try {
      const file = await openConfined(root, 'r/sub/data.txt', 'sub/data.txt', { afterPrecheck: swap });
      await file.close();
    } catch (err) {
      caught = err;
    }
    expect(isUploadError(caught, 'UPLOAD_NOT_REGULAR_FILE')).toBe(true);
  });

  it('reads the file that was opened, even if the path changes afterwards', async () => {
    const file = await openConfined(root, 'r/sub/data.txt', 'sub/data.txt');
    await rename(join(dir, 'root', 'sub'), join(dir, 'root', 'sub-old'));
    await symlink(join(dir, 'outside'), join(dir, 'root', 'sub'));
    const parts: Uint8Array[] = [];
    for await (const chunk of file.chunks({ maxBytes: 100 })) parts.push(chunk);
    await file.close();
    expect(Buffer.concat(parts).toString()).toBe('inside');
  });
});
