import { execFileSync } from 'node:child_process';
import { constants, promises } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FileStateStore } from '@zmcp/delivery';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { describeStateLockContract } from '../../../test/support/state-lock-contract.js';
import { closeFixtures, startFixture } from './helpers/engine-fixture.js';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const holderScript = fileURLToPath(new URL('./fixtures/lock-holder.ts', import.meta.url));
const KEY = { session: 'agent', kind: 'delivery' } as const;

const dirs: string[] = [];

afterEach(async () => {
  await closeFixtures();
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function stateDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'zmcp-lock-'));
  dirs.push(dir);
  return dir;
}

describeStateLockContract('FileStateStore', async () => {
  const dir = await stateDir();
  return {
    store: new FileStateStore({ dir }),
    holder: (session) => ({
      command: process.execPath,
      args: ['--import', 'tsx', '--conditions', '@zmcp/source', holderScript, dir, session],
      cwd: packageDir,
    }),
    // The lock file, takeover markers and temp files are all gone.
    leftNothing: async () => expect(await readdir(dir)).toEqual([]),
    done: async () => undefined,
  };
});

describe('FileStateStore.lock', () => {
  it('writes the lock file beside the state with its pid and host, and removes it on release', async () => {
    const store = new FileStateStore({ dir: await stateDir() });
    const lock = await store.lock(KEY);
    expect(lock.file).toBe(join(store.dir, 'agent.delivery.lock'));
    expect(JSON.parse(await readFile(lock.file, 'utf8'))).toMatchObject({
      pid: process.pid,
      host: hostname(),
    });
    await expect(store.lock(KEY)).rejects.toMatchObject({
      code: 'DELIVERY_STATE_LOCKED',
      details: { file: lock.file, pid: process.pid, host: hostname() },
    });
    await lock.release();
    expect(await readdir(store.dir)).toEqual([]);
  });

  it('works where the file system has no hard links, creating the lock exclusively instead', async () => {
    const noLinks = vi
      .spyOn(promises, 'link')
      .mockRejectedValue(Object.assign(new Error('operation not permitted'), { code: 'EPERM' }));
    try {
      const store = new FileStateStore({ dir: await stateDir() });
      const lock = await store.lock(KEY);
      expect(noLinks).toHaveBeenCalled();
      expect(JSON.parse(await readFile(lock.file, 'utf8'))).toMatchObject({ pid: process.pid });
      await expect(store.lock(KEY)).rejects.toMatchObject({ code: 'DELIVERY_STATE_LOCKED' });
      await lock.release();
      expect(await readdir(store.dir)).toEqual([]);
    } finally {
      noLinks.mockRestore();
    }
  });

  it('counts a lock from another host, or one it cannot read, as held', async () => {
    const dir = await stateDir();
    const store = new FileStateStore({ dir });
    const file = join(dir, 'agent.delivery.lock');
    const elsewhere = { pid: 1, host: `not-${hostname()}`, nonce: 'n', since: '2026-11-30T10:00:00.000Z' };
    await writeFile(file, JSON.stringify(elsewhere));
    await expect(store.lock(KEY)).rejects.toMatchObject({
      code: 'DELIVERY_STATE_LOCKED',
      message: expect.stringContaining(`on not-${hostname()}`),
      details: { host: elsewhere.host, since: elsewhere.since },
    });
    await writeFile(file, 'not a lock');
    await expect(store.lock(KEY)).rejects.toMatchObject({
      code: 'DELIVERY_STATE_LOCKED',
      message: expect.stringContaining('not a lock this library wrote'),
    });
  });

  it('counts a FIFO or a link to /dev/zero in the lock’s place as held, without waiting on it or reading on', async () => {
    const dir = await stateDir();
    const store = new FileStateStore({ dir });
    const file = join(dir, 'agent.delivery.lock');
    execFileSync('mkfifo', [file]);
    try {
      await expect(store.lock(KEY)).rejects.toMatchObject({
        code: 'DELIVERY_STATE_LOCKED',
        message: expect.stringContaining('not a lock this library wrote'),
      });
    } finally {
      // A reader stuck opening the FIFO is let go by a writer.
      await promises.open(file, constants.O_WRONLY | constants.O_NONBLOCK).then(
        (h) => h.close(),
        () => undefined,
      );
    }
    await rm(file);
    await promises.symlink('/dev/zero', file);
    await expect(store.lock(KEY)).rejects.toMatchObject({
      code: 'DELIVERY_STATE_LOCKED',
      message: expect.stringContaining('not a lock this library wrote'),
    });
  });
});

/** A fixture whose first engine is running, so it holds the state lock of its store. */
async function firstHolding() {
  const f = await startFixture();
  const files = new FileStateStore({ dir: await stateDir() });
  const first = f.engine({ store: files });
  await first.start();
  return { f, files, first };
}

/** A second engine on the same store, started to wait for the lock; `warned` once it says so. */
function secondWaiting(f: Awaited<ReturnType<typeof startFixture>>, files: FileStateStore) {
  const { warned, logger } = warnings('waiting for the delivery state');
  const second = f.engine({ store: files, logger });
  return { second, warned, started: second.start({ waitForLock: true }) };
}

describe('DeliveryEngine and the state lock', () => {
  it('a second engine on the same state refuses to start, registers no queue, and starts once the first closes', async () => {
    const { f, files, first } = await firstHolding();
    const queues = f.sim.queues(f.bot).length;
    const second = f.engine({ store: files });
    await expect(second.start()).rejects.toMatchObject({ code: 'DELIVERY_STATE_LOCKED' });
    expect(second.status().state).toBe('failed');
    expect(f.sim.queues(f.bot)).toHaveLength(queues);
    await first.close();
    const third = f.engine({ store: files });
    await third.start();
    await third.close();
    await expect(readFile(files.pathOf(KEY).replace(/\.json$/, '.lock'))).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });
});

describe('DeliveryEngine state per account', () => {
  it('keys its state, and its lock, by the account it is given', async () => {
    const f = await startFixture();
    const files = new FileStateStore({ dir: await stateDir() });
    const one = f.engine({ store: files, account: 'chat.example.com@1' });
    const two = f.engine({ store: files, account: 'chat.example.com@2' });
    // Two accounts on one store and session are two states: both start.
    await one.start();
    await two.start();
    await one.close();
    await two.close();
    for (const account of ['chat.example.com@1', 'chat.example.com@2']) {
      const file = files.pathOf({ account, session: 'agent', kind: 'delivery' });
      expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ version: 1 });
    }
    await expect(readFile(files.pathOf(KEY), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
    expect(() => f.engine({ store: files, account: '../elsewhere' })).toThrow(
      expect.objectContaining({ code: 'DELIVERY_INVALID_ARGUMENT' }),
    );
  });
});

/** A logger that resolves `warned` with the fields of the first warning that starts with `prefix`. */
function warnings(prefix: string) {
  let seen: (fields: Readonly<Record<string, unknown>> | undefined) => void = () => undefined;
  const warned = new Promise<Readonly<Record<string, unknown>> | undefined>((resolve) => {
    seen = resolve;
  });
  const ignore = () => undefined;
  return {
    warned,
    logger: {
      debug: ignore,
      info: ignore,
      error: ignore,
      warn: (message: string, fields?: Readonly<Record<string, unknown>>) => {
        if (message.startsWith(prefix)) seen(fields);
      },
    },
  };
}

describe('DeliveryEngine start({ waitForLock })', () => {
  it('waits for the engine that holds the state, refuses calls meanwhile, and starts once it is free', async () => {
    const { f, files, first } = await firstHolding();
    const { second, warned, started } = secondWaiting(f, files);
    expect(await warned).toMatchObject({ pid: process.pid });
    expect(second.status()).toMatchObject({ state: 'starting', waitingFor: { pid: process.pid } });
    await expect(second.refreshChannels()).rejects.toMatchObject({ code: 'DELIVERY_STATE_LOCKED' });
    const queues = f.sim.queues(f.bot).length;
    await first.close();
    await started;
    expect(second.status().state).toBe('running');
    expect(second.status().waitingFor).toBeUndefined();
    expect(f.sim.queues(f.bot)).toHaveLength(queues);
    await second.close();
  });

  it('stops waiting when closed, holding nothing', async () => {
    const { f, files, first } = await firstHolding();
    const { second, warned, started } = secondWaiting(f, files);
    await warned;
    await second.close();
    await expect(started).rejects.toMatchObject({ code: 'DELIVERY_NOT_RUNNING' });
    expect(second.status().state).toBe('closed');
    await first.close();
    await (await files.lock(KEY)).release();
  });
});
