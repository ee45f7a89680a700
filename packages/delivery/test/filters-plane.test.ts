import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import {
  mkdir,
  mkdtemp,
  open as openFile,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  truncate,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileFiltersPlane, type FiltersPlane } from '@zmcp/delivery';
import { afterEach, describe, expect, it } from 'vitest';
import {
  describeFiltersPlaneContract,
  reloadedTo,
  when,
} from '../../../test/support/filters-plane-contract.js';

const dirs: string[] = [];
const planes: FiltersPlane[] = [];
const fifos: string[] = [];
afterEach(async () => {
  // A reader stuck opening a FIFO (what a plane without bounds does) is let go by a writer.
  for (const fifo of fifos.splice(0)) {
    await openFile(fifo, constants.O_WRONLY | constants.O_NONBLOCK).then(
      (h) => h.close(),
      () => undefined,
    );
  }
  await Promise.all(planes.splice(0).map((p) => p.close()));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function tempFile(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'zmcp-filters-'));
  dirs.push(dir);
  return join(dir, 'agent.filters.json');
}

// The poll is pushed far out: these tests prove the watch alone picks every change up.
async function open(file: string, extra: Partial<Parameters<typeof FileFiltersPlane.open>[0]> = {}) {
  const plane = await FileFiltersPlane.open({ file, pollIntervalMs: 600_000, ...extra });
  planes.push(plane);
  return plane;
}

/** A named pipe at `path`: opening it for reading blocks until a writer comes. */
function mkfifo(path: string): void {
  execFileSync('mkfifo', [path]);
  fifos.push(path);
}

describeFiltersPlaneContract('FileFiltersPlane', async () => {
  const file = await tempFile();
  return {
    open: ({ seed, baseline, quiet } = {}) =>
      FileFiltersPlane.open({
        file,
        seed,
        baseline,
        pollIntervalMs: 600_000,
        ...(quiet ? { settleMs: 60_000 } : {}),
      }),
    // The way an editor that saves atomically writes it.
    write: async (document) => {
      await writeFile(`${file}.tmp`, JSON.stringify(document));
      await rename(`${file}.tmp`, file);
    },
    remove: () => unlink(file),
    read: async () => {
      try {
        return JSON.parse(await readFile(file, 'utf8'));
      } catch (err) {
        if ((err as { code?: string }).code === 'ENOENT') return undefined;
        throw err;
      }
    },
    location: file,
    done: async () => undefined,
  };
});

describe('FileFiltersPlane', () => {
  it('creates the file from the seed on first start, mode 0600, and reads it on the next', async () => {
    const file = await tempFile();
    const plane = await open(file, { seed: { streams: ['general'] }, baseline: ['☣️'] });
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ streams: ['general'] });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(plane.view()).toMatchObject({
      filters: { streams: ['general'] },
      stale: false,
      baselineSuppressedReactionEmojis: { count: 1 },
      location: file,
    });
    await plane.close();
    // The seed only applies to a missing file; the baseline is never written.
    const again = await open(file, { seed: { streams: ['other'] } });
    expect(again.filters.document).toEqual({ streams: ['general'] });
    expect(await readFile(file, 'utf8')).not.toContain('☣');
  });

  it('refuses to start on a file that exists but does not parse, or has a wrong type', async () => {
    const file = await tempFile();
    await writeFile(file, '{"streams": ["a",');
    await expect(open(file)).rejects.toMatchObject({ code: 'DELIVERY_FILTERS_INVALID', details: { file } });
    await writeFile(file, '{"streams": "a"}');
    await expect(open(file)).rejects.toMatchObject({ code: 'DELIVERY_FILTERS_INVALID' });
    await expect(readFile(file, 'utf8')).resolves.toBe('{"streams": "a"}');
  });

  it('refuses to start on a file that is no regular file, or larger than the cap, without hanging or reading it all', async () => {
    const file = await tempFile();
    mkfifo(file);
    await expect(open(file)).rejects.toMatchObject({
      code: 'DELIVERY_FILTERS_INVALID',
      details: { file, reason: 'it is not a regular file' },
    });
    await unlink(file);
    await symlink('/dev/zero', file);
    await expect(open(file)).rejects.toMatchObject({
      code: 'DELIVERY_FILTERS_INVALID',
      details: { reason: 'it is not a regular file' },
    });
    await unlink(file);
    // A sparse file past the default cap of 1 MiB, and a small one past a smaller cap.
    await writeFile(file, '');
    await truncate(file, 1024 * 1024 + 1);
    await expect(open(file)).rejects.toMatchObject({
      code: 'DELIVERY_FILTERS_INVALID',
      details: { reason: 'it is larger than 1048576 bytes' },
    });
    await writeFile(file, '{"streams": ["general"]}');
    await expect(open(file, { maxBytes: 10 })).rejects.toMatchObject({
      details: { reason: 'it is larger than 10 bytes' },
    });
    await expect(open(file, { maxBytes: 24 })).resolves.toBeDefined();
  });

  it('fails to start when the file cannot be created', async () => {
    const file = await tempFile();
    await writeFile(join(file, '..', 'blocker'), 'x');
    await expect(open(join(file, '..', 'blocker', 'f.json'))).rejects.toMatchObject({
      code: 'DELIVERY_IO_FAILED',
    });
  });

  it('reloads a file replaced by rename', async () => {
    const file = await tempFile();
    const plane = await open(file);
    const seen = reloadedTo(plane, ['a']);
    await writeFile(`${file}.tmp`, '{"streams": ["a"]}');
    await rename(`${file}.tmp`, file);
    await seen;
    expect(plane.stale).toBe(false);
  });

  it('reloads a file written in place and one saved the way vim saves', async () => {
    const file = await tempFile();
    const plane = await open(file);
    const inPlace = reloadedTo(plane, ['b']);
    await writeFile(file, '{"streams": ["b"]}');
    await inPlace;
    // vim: move the original to a backup, write a new file, delete the backup.
    const vim = reloadedTo(plane, ['c']);
    await rename(file, `${file}~`);
    await writeFile(file, '{"streams": ["c"]}');
    await unlink(`${file}~`);
    await vim;
    expect(plane.stale).toBe(false);
  });

  it('a FIFO, a link to /dev/zero or an oversized file while running marks the plane stale, never hangs or grows', async () => {
    const file = await tempFile();
    const plane = await open(file, { seed: { streams: ['a'] }, maxBytes: 4096 });
    const swap = async (make: (path: string) => Promise<void> | void, reason: string) => {
      const stale = when(plane, (e) => e.kind === 'stale' && e.reason === reason);
      const next = `${file}.next`;
      await make(next);
      await rename(next, file);
      await stale;
      expect(plane.filters.document).toEqual({ streams: ['a'] });
      // An update re-reads the file first: refused at once, not stuck on the pipe.
      await expect(plane.update({ streams: ['b'] })).rejects.toMatchObject({
        code: 'DELIVERY_FILTERS_STALE',
        details: { reason },
      });
      const repaired = reloadedTo(plane, ['a']);
      await writeFile(next, '{"streams": ["a"]}');
      await rename(next, file);
      await repaired;
    };
    await swap((path) => mkfifo(path), 'it is not a regular file');
    await swap((path) => symlink('/dev/zero', path), 'it is not a regular file');
    await swap(async (path) => {
      await writeFile(path, '');
      await truncate(path, 64 * 1024 * 1024);
    }, 'it is larger than 4096 bytes');
  });

  it('finds the file again when its whole directory is replaced (the poll re-watches)', async () => {
    const file = await tempFile();
    const dir = join(file, '..');
    const plane = await open(file, { pollIntervalMs: 20 });
    const stale = when(plane, (e) => e.kind === 'stale');
    await rm(dir, { recursive: true });
    await stale;
    // A watch on the old directory sees nothing of the new one; the poll notices and re-watches.
    const back = reloadedTo(plane, ['p']);
    await mkdir(dir);
    await writeFile(file, '{"streams": ["p"]}');
    await back;
    const again = reloadedTo(plane, ['q']);
    await writeFile(file, '{"streams": ["q"]}');
    await again;
  });
});
