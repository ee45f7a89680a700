import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import {
  chmod,
  mkdir,
  mkdtemp,
  open,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  truncate,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isDeliveryError } from './errors.js';
import { FileStateStore } from './file-state-store.js';
import type { DeliveryFileSystem } from './file-system.js';
import type { StateKey } from './state-key.js';

const Schema = z.object({ n: z.number() });
const key: StateKey = { session: 'agent-1', kind: 'delivery' };
// A pid above Linux's pid_max (2^22): no such process can exist.
const DEAD_PID = 99_999_999;

let root: string;
let dir: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'zmcp-delivery-file-'));
  dir = join(root, 'state');
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('FileStateStore on disk', () => {
  it('lays files out by session and kind, mode 0600, in a directory created 0700', async () => {
    const store = new FileStateStore({ dir });
    await store.write({ session: 'my-agent', kind: 'monitor' }, { n: 1 });
    await store.write({ session: 'my-agent', kind: 'delivery' }, { n: 2 });
    await store.write({ session: 'my-agent', kind: 'filters' }, { n: 3 });
    expect((await readdir(dir)).sort()).toEqual([
      'my-agent.delivery.json',
      'my-agent.filters.json',
      'my-agent.json',
    ]);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    for (const name of await readdir(dir)) expect((await stat(join(dir, name))).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(join(dir, 'my-agent.json'), 'utf8'))).toEqual({ n: 1 });
    expect(store.pathOf({ session: 'my-agent', kind: 'filters' })).toBe(join(dir, 'my-agent.filters.json'));
  });

  it('keeps an account’s files in a folder of its own, created 0700', async () => {
    const store = new FileStateStore({ dir });
    const account = 'chat.example.com@42';
    await store.write({ account, session: 'my-agent', kind: 'monitor' }, { n: 1 });
    expect(await readdir(dir)).toEqual([account]);
    expect(await readdir(join(dir, account))).toEqual(['my-agent.json']);
    expect((await stat(join(dir, account))).mode & 0o777).toBe(0o700);
    expect(store.pathOf({ account, session: 'my-agent', kind: 'monitor' })).toBe(
      join(dir, account, 'my-agent.json'),
    );
    await store.delete({ account, session: 'my-agent', kind: 'monitor' });
    expect(await readdir(join(dir, account))).toEqual([]);
  });

  it('reads undefined when the directory does not exist yet, without creating it', async () => {
    const store = new FileStateStore({ dir });
    expect(await store.read(key, Schema)).toBeUndefined();
    await expect(stat(dir)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('recreates a directory removed while running', async () => {
    const store = new FileStateStore({ dir });
    await store.write(key, { n: 1 });
    await rm(dir, { recursive: true });
    await store.write(key, { n: 2 });
    expect(await store.read(key, Schema)).toEqual({ n: 2 });
  });

  it('reports unparseable JSON as DELIVERY_STATE_CORRUPT naming the file, and never overwrites it on update', async () => {
    await mkdir(dir, { recursive: true });
    const file = join(dir, 'agent-1.delivery.json');
    await writeFile(file, '{"n": 1,');
    const store = new FileStateStore({ dir });
    const err = await caught(store.read(key, Schema));
    expect(isDeliveryError(err, 'DELIVERY_STATE_CORRUPT')).toBe(true);
    expect((err as Error).message).toContain(file);
    expect((err as Error).message).toMatch(/not valid JSON/);
    expect((err as Error).cause).toBeInstanceOf(SyntaxError);
    expect(
      isDeliveryError(await caught(store.update(key, Schema, () => ({ n: 0 }))), 'DELIVERY_STATE_CORRUPT'),
    ).toBe(true);
    expect(await readFile(file, 'utf8')).toBe('{"n": 1,');
  });

  it('reports bytes that are not UTF-8 as DELIVERY_STATE_CORRUPT', async () => {
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'agent-1.delivery.json'), Buffer.from([0x7b, 0xff, 0xfe, 0x7d]));
    const err = await caught(new FileStateStore({ dir }).read(key, Schema));
    expect(isDeliveryError(err, 'DELIVERY_STATE_CORRUPT')).toBe(true);
    expect((err as Error).message).toMatch(/not valid UTF-8/);
  });

  it('reports an unreadable file as DELIVERY_IO_FAILED, not as absent', async () => {
    await mkdir(join(dir, 'agent-1.delivery.json'), { recursive: true }); // a directory where the file should be
    const err = await caught(new FileStateStore({ dir }).read(key, Schema));
    expect(isDeliveryError(err, 'DELIVERY_IO_FAILED')).toBe(true);
    expect((err as { details: { operation: string } }).details.operation).toBe('read');
  });

  it('refuses a FIFO, a link to /dev/zero or a file over 64 MiB as DELIVERY_IO_FAILED, without waiting or reading it', async () => {
    await mkdir(dir, { recursive: true });
    const file = join(dir, 'agent-1.delivery.json');
    const store = new FileStateStore({ dir });
    execFileSync('mkfifo', [file]);
    try {
      const err = await caught(store.read(key, Schema));
      expect(err).toMatchObject({ code: 'DELIVERY_IO_FAILED', details: { operation: 'read', file } });
      expect((err as Error).message).toContain('it is not a regular file');
    } finally {
      // A reader stuck opening the FIFO is let go by a writer.
      await open(file, constants.O_WRONLY | constants.O_NONBLOCK).then(
        (h) => h.close(),
        () => undefined,
      );
    }
    await rm(file);
    await symlink('/dev/zero', file);
    expect(await caught(store.read(key, Schema))).toMatchObject({ code: 'DELIVERY_IO_FAILED' });
    await rm(file);
    await writeFile(file, '{"n": 1}');
    await truncate(file, 64 * 1024 * 1024 + 1);
    const big = await caught(store.read(key, Schema));
    expect(big).toMatchObject({ code: 'DELIVERY_IO_FAILED' });
    expect((big as Error).message).toContain('it is larger than 67108864 bytes');
  });

  it('reports a directory it cannot create as DELIVERY_IO_FAILED', async () => {
    await writeFile(join(root, 'blocker'), '');
    const err = await caught(
      new FileStateStore({ dir: join(root, 'blocker', 'state') }).write(key, { n: 1 }),
    );
    expect(isDeliveryError(err, 'DELIVERY_IO_FAILED')).toBe(true);
    expect((err as Error).message).toMatch(/create directory/);
  });

  it('a failure between writing the temp file and the rename leaves the old state intact', async () => {
    const good = new FileStateStore({ dir });
    await good.write(key, { n: 1 });
    const renameFails: Partial<DeliveryFileSystem> = {
      rename: async () => {
        throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
      },
    };
    const failing = new FileStateStore({ dir, fs: renameFails });
    const err = await caught(failing.update(key, Schema, () => ({ n: 2 })));
    expect(isDeliveryError(err, 'DELIVERY_IO_FAILED')).toBe(true);
    expect((err as { details: { errno: string } }).details.errno).toBe('EIO');
    expect(await good.read(key, Schema)).toEqual({ n: 1 });
    // The half-made temp file was removed with the failure.
    expect(await readdir(dir)).toEqual(['agent-1.delivery.json']);
  });

  it('a failure during fsync of the temp file leaves the old state intact', async () => {
    const good = new FileStateStore({ dir });
    await good.write(key, { n: 1 });
    let opened = 0;
    const syncFails: Partial<DeliveryFileSystem> = {
      open: async (path, flags, mode) => {
        const { open } = await import('node:fs/promises');
        const handle = await open(path, flags, mode);
        opened++;
        return {
          writeFile: (data) => handle.writeFile(data),
          sync: async () => {
            throw Object.assign(new Error('ENOSPC: injected'), { code: 'ENOSPC' });
          },
          close: () => handle.close(),
        };
      },
    };
    const err = await caught(new FileStateStore({ dir, fs: syncFails }).write(key, { n: 2 }));
    expect(isDeliveryError(err, 'DELIVERY_IO_FAILED')).toBe(true);
    expect(opened).toBe(1);
    expect(await good.read(key, Schema)).toEqual({ n: 1 });
    expect(await readdir(dir)).toEqual(['agent-1.delivery.json']);
  });

  it('ignores leftover temp files on read and sweeps those of dead writers on the next write', async () => {
    const store = new FileStateStore({ dir });
    await store.write(key, { n: 1 });
    const dead = join(dir, `.agent-1.delivery.json.${DEAD_PID}.0123456789abcdef.tmp`);
    const mine = join(dir, `.agent-1.delivery.json.${process.pid}.0123456789abcdef.tmp`);
    const otherKey = join(dir, `.agent-2.delivery.json.${DEAD_PID}.0123456789abcdef.tmp`);
    await writeFile(dead, '{"n": 999, "torn');
    await writeFile(mine, '{"n": 998');
    await writeFile(otherKey, '{"n": 997');
    const later = new FileStateStore({ dir });
    expect(await later.read(key, Schema)).toEqual({ n: 1 });
    expect((await readdir(dir)).length).toBe(4); // reading changes nothing
    await later.write(key, { n: 2 });
    const left = await readdir(dir);
    expect(left).not.toContain(`.agent-1.delivery.json.${DEAD_PID}.0123456789abcdef.tmp`);
    // A live writer's temp file (this process) and other keys' files are not touched.
    expect(left).toContain(`.agent-1.delivery.json.${process.pid}.0123456789abcdef.tmp`);
    expect(left).toContain(`.agent-2.delivery.json.${DEAD_PID}.0123456789abcdef.tmp`);
    expect(await later.read(key, Schema)).toEqual({ n: 2 });
  });

  it('serializes updates across two stores on one directory in one process', async () => {
    const a = new FileStateStore({ dir });
    const b = new FileStateStore({ dir });
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 === 0 ? a : b).update(key, Schema, async (prev) => {
          await Promise.resolve();
          return { n: (prev?.n ?? 0) + 1 };
        }),
      ),
    );
    expect(await a.read(key, Schema)).toEqual({ n: 20 });
  });

  it('an update that returns prev unchanged writes nothing', async () => {
    const store = new FileStateStore({ dir });
    await store.write(key, { n: 1 });
    const file = store.pathOf(key);
    await chmod(file, 0o400); // a write would replace the file and its mode
    const result = await store.update(key, Schema, (prev) => prev as { n: number });
    expect(result).toEqual({ n: 1 });
    expect((await stat(file)).mode & 0o777).toBe(0o400);
  });

  it('refuses an empty dir option', () => {
    expect(() => new FileStateStore({ dir: '' })).toThrow(
      expect.objectContaining({ code: 'DELIVERY_INVALID_ARGUMENT' }),
    );
  });
});
