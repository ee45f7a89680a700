import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { constants, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, open, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isUploadError } from './errors.js';
import { openConfined, type UploadRoot } from './roots.js';

/** What opening threw (the file is closed if it opened after all). */
async function caught(opening: Promise<{ close(): Promise<void> }>): Promise<unknown> {
  try {
    await (await opening).close();
  } catch (err) {
    return err;
  }
  return undefined;
}

/** Swaps root/sub for a symlink to the directory outside. */
function swapSubForOutside(dir: string): () => Promise<void> {
  return async () => {
    await rename(join(dir, 'root', 'sub'), join(dir, 'root', 'sub-old'));
    await symlink(join(dir, 'outside'), join(dir, 'root', 'sub'));
  };
}

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
    const failure = await caught(
      openConfined(root, 'r/sub/data.txt', 'sub/data.txt', { afterPrecheck: swapSubForOutside(dir) }),
    );
    expect(isUploadError(failure, 'UPLOAD_PATH_ESCAPE')).toBe(true);
    expect((failure as { details: unknown }).details).toMatchObject({ stage: 'resolved' });
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

// A writer opening a FIFO blocks until someone opens it for reading: a writer still blocked after
// the attempt proves nothing opened the FIFO, not even for an instant. The kernel shows where a
// process sleeps in /proc/<pid>/wchan (or, where symbols are hidden, the syscall it is in).
function blockedOpeningFifo(pid: number): boolean {
  try {
    const wchan = readFileSync(`/proc/${pid}/wchan`, 'utf8').trim();
    if (wchan !== '' && wchan !== '0') return wchan === 'wait_for_partner' || wchan === 'fifo_open';
    const [syscall] = readFileSync(`/proc/${pid}/syscall`, 'utf8').trim().split(' ');
    // openat on x86-64 and on arm64.
    return syscall === '257' || syscall === '56';
  } catch {
    return false;
  }
}

describe('openConfined: nothing outside the root is opened, even for an instant', () => {
  let dir: string;
  let root: UploadRoot;

  beforeEach(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), 'zmcp-noopen-')));
    await mkdir(join(dir, 'root', 'sub'), { recursive: true });
    await mkdir(join(dir, 'outside'));
    await writeFile(join(dir, 'root', 'sub', 'data.txt'), 'inside');
    root = { name: 'r', path: join(dir, 'root'), realPath: join(dir, 'root') };
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a directory swapped for a symlink to a FIFO outside without opening the FIFO', async () => {
    const fifo = join(dir, 'outside', 'data.txt');
    execFileSync('mkfifo', [fifo]);
    const writer = spawn('sh', ['-c', 'exec 3>"$1"; echo released', 'sh', fifo], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    writer.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = once(writer, 'exit');
    try {
      // Wait until the writer sleeps in its open of the FIFO.
      while (!blockedOpeningFifo(writer.pid as number)) await new Promise((r) => setImmediate(r));
      const failure = await caught(
        openConfined(root, 'r/sub/data.txt', 'sub/data.txt', { afterPrecheck: swapSubForOutside(dir) }),
      );
      expect(isUploadError(failure, 'UPLOAD_PATH_ESCAPE')).toBe(true);
      // Had anything opened the FIFO, the kernel would have woken the writer inside that open.
      expect(blockedOpeningFifo(writer.pid as number)).toBe(true);
      expect(output).toBe('');
    } finally {
      // Release the writer ourselves.
      const reader = await open(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
      await exited;
      await reader.close();
    }
    expect(output).toBe('released\n');
  });

  it('refuses a component swapped for a symlink between its lstat and its open', async () => {
    await mkdir(join(dir, 'outside', 'deeper'));
    await writeFile(join(dir, 'outside', 'deeper', 'data.txt'), 'SECRET');
    await mkdir(join(dir, 'root', 'sub', 'deeper'));
    await writeFile(join(dir, 'root', 'sub', 'deeper', 'data.txt'), 'inside');
    const swapped: string[] = [];
    const beforeOpen = async (name: string) => {
      if (name !== 'deeper' || swapped.length > 0) return;
      swapped.push(name);
      await rename(join(dir, 'root', 'sub', 'deeper'), join(dir, 'root', 'sub', 'old'));
      await symlink(join(dir, 'outside', 'deeper'), join(dir, 'root', 'sub', 'deeper'));
    };
    let caught: unknown;
    try {
      const file = await openConfined(root, 'r/sub/deeper/data.txt', 'sub/deeper/data.txt', { beforeOpen });
      await file.close();
    } catch (err) {
      caught = err;
    }
    expect(swapped).toEqual(['deeper']);
    expect(isUploadError(caught, 'UPLOAD_PATH_ESCAPE')).toBe(true);
    expect((caught as { details: unknown }).details).toMatchObject({ stage: 'resolved' });
  });

  it('gives the same answer whatever the outside target is, so it reveals nothing about it', async () => {
    const targets = {
      missing: join(dir, 'outside', 'missing'),
      directory: join(dir, 'outside'),
      file: join(dir, 'outside', 'file.txt'),
    };
    await writeFile(targets.file, 'SECRET');
    for (const [name, target] of Object.entries(targets)) {
      await symlink(target, join(dir, 'root', 'sub', name));
      let caught: unknown;
      try {
        const file = await openConfined(root, `r/sub/${name}`, `sub/${name}`);
        await file.close();
      } catch (err) {
        caught = err;
      }
      expect([name, (caught as { code?: unknown }).code]).toEqual([name, 'UPLOAD_PATH_ESCAPE']);
    }
  });

  it('follows symlinks that stay inside the root, relative and absolute', async () => {
    await symlink('data.txt', join(dir, 'root', 'sub', 'relative'));
    await symlink(join(dir, 'root', 'sub', 'data.txt'), join(dir, 'root', 'absolute'));
    await symlink('../sub/./data.txt', join(dir, 'root', 'sub', 'updown'));
    for (const path of ['sub/relative', 'absolute', 'sub/updown', 'sub/../sub/data.txt']) {
      const file = await openConfined(root, `r/${path}`, path);
      expect(file.name).toBe(path.split('/').pop());
      await file.close();
    }
    await symlink('../../outside', join(dir, 'root', 'sub', 'up'));
    await expect(openConfined(root, 'r/sub/up/x', 'sub/up/x')).rejects.toMatchObject({
      code: 'UPLOAD_PATH_ESCAPE',
      details: { stage: 'resolved' },
    });
    await symlink('loop', join(dir, 'root', 'loop'));
    await expect(openConfined(root, 'r/loop', 'loop')).rejects.toMatchObject({
      code: 'UPLOAD_FILE_UNREADABLE',
    });
  });
});
