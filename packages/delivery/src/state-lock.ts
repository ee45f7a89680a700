import { randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { errorCode } from '@zmcp/core';
import { processIsAlive } from './atomic-write.js';
import { DeliveryError, ioError } from './errors.js';
import { FileRefusedError, readBoundedFile } from './file-system.js';

/** Exclusive use of one piece of state, held until released. */
export interface StateLock {
  /** The lock file. */
  readonly file: string;
  /** Gives the state up; a second call does nothing. @throws DeliveryError `DELIVERY_IO_FAILED`. */
  release(): Promise<void>;
}

/** What a lock file holds: who took it, and a nonce naming this taking of it. */
interface Holder {
  pid: number;
  host: string;
  nonce: string;
  since: string;
}

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
const ATTEMPTS = 4;
/** A lock this library writes is one short line of JSON. */
const MAX_LOCK_BYTES = 64 * 1024;

// The nonces of the locks this process holds or is creating: a lock naming this pid with a
// nonce not listed here was left by an earlier process that had the same pid.
const ours = new Set<string>();

function parseHolder(bytes: Uint8Array): Holder | undefined {
  try {
    const value = JSON.parse(Buffer.from(bytes).toString('utf8')) as Partial<Holder>;
    if (
      Number.isSafeInteger(value.pid) &&
      typeof value.host === 'string' &&
      typeof value.nonce === 'string' &&
      typeof value.since === 'string'
    ) {
      return value as Holder;
    }
  } catch {
    // An unreadable lock is treated as held: nothing here can tell whose it is.
  }
  return undefined;
}

/** The holder of `file`: undefined when there is no file, `'unreadable'` when it is not a lock. */
async function readHolder(file: string): Promise<Holder | 'unreadable' | undefined> {
  let bytes: Uint8Array;
  try {
    bytes = await readBoundedFile(file, MAX_LOCK_BYTES);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return undefined;
    // A FIFO, a device or a huge file is no lock this library wrote: held, as any unreadable one.
    if (err instanceof FileRefusedError) return 'unreadable';
    throw ioError('read', file, err);
  }
  return parseHolder(bytes) ?? 'unreadable';
}

/** False only when the holder is known to be gone: a dead pid on this host, or an earlier process with our pid. */
function isLive(holder: Holder): boolean {
  if (holder.host !== hostname()) return true;
  if (holder.pid === process.pid) return ours.has(holder.nonce);
  return processIsAlive(holder.pid);
}

function locked(file: string, holder: Holder | 'unreadable'): DeliveryError {
  if (holder === 'unreadable') {
    return new DeliveryError(
      'DELIVERY_STATE_LOCKED',
      `the delivery state is locked by ${file}, which is not a lock this library wrote; remove it if no other server uses this state`,
      { details: { file } },
    );
  }
  const where = holder.host === hostname() ? `pid ${holder.pid}` : `pid ${holder.pid} on ${holder.host}`;
  return new DeliveryError(
    'DELIVERY_STATE_LOCKED',
    `another server (${where}, since ${holder.since}) delivers for this session: give this one its own session id, or stop that one (lock ${file})`,
    { details: { file, pid: holder.pid, host: holder.host, since: holder.since } },
  );
}

// What a file system without hard links answers `link` with.
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV']);

/**
 * Writes `holder` to a temp file and links it into place: the lock appears whole or not at all.
 * Where the file system has no hard links, it is created exclusively and written in one call.
 */
async function create(file: string, holder: Holder): Promise<boolean> {
  const temp = `${file}.${holder.nonce}.tmp`;
  const text = `${JSON.stringify(holder)}\n`;
  try {
    await fsp.mkdir(dirname(file), { recursive: true, mode: DIR_MODE });
    await fsp.writeFile(temp, text, { mode: FILE_MODE, flag: 'wx' });
    try {
      await fsp.link(temp, file);
    } catch (err) {
      if (!NO_HARD_LINKS.has(errorCode(err) ?? '')) throw err;
      await fsp.writeFile(file, text, { mode: FILE_MODE, flag: 'wx' });
    }
    return true;
  } catch (err) {
    if (errorCode(err) === 'EEXIST') return false;
    throw ioError('create the lock', file, err);
  } finally {
    await fsp.unlink(temp).catch(() => undefined);
  }
}

/**
 * Removes the lock `stale` left behind, unless another process is already doing so: only the
 * one that creates the marker named by that lock's nonce may remove it, so no two can both
 * take it over (and none removes a lock taken after it).
 */
async function takeOver(file: string, stale: Holder): Promise<{ path: string; nonce: string } | undefined> {
  const marker = `${file}.${stale.nonce}.takeover`;
  const mine: Holder = {
    pid: process.pid,
    host: hostname(),
    nonce: randomUUID(),
    since: new Date().toISOString(),
  };
  // Listed first, so a taker in this process sees this marker as live.
  ours.add(mine.nonce);
  try {
    await fsp.writeFile(marker, JSON.stringify(mine), { mode: FILE_MODE, flag: 'wx' });
  } catch (err) {
    ours.delete(mine.nonce);
    if (errorCode(err) !== 'EEXIST') throw ioError('take over the lock', file, err);
    // A taker that died before finishing leaves its marker: clear it for the next attempt.
    const taker = await readHolder(marker).catch(() => undefined);
    if (taker !== undefined && taker !== 'unreadable' && !isLive(taker)) {
      await fsp.unlink(marker).catch(() => undefined);
    }
    return undefined;
  }
  const now = await readHolder(file);
  if (now !== undefined && now !== 'unreadable' && now.nonce === stale.nonce) {
    await fsp.unlink(file).catch((err: unknown) => {
      if (errorCode(err) !== 'ENOENT') throw ioError('take over the lock', file, err);
    });
  }
  return { path: marker, nonce: mine.nonce };
}

/** Removes a marker this process made, once the takeover it guarded is over. */
async function dropMarker(marker: { path: string; nonce: string } | undefined): Promise<void> {
  if (marker === undefined) return;
  await fsp.unlink(marker.path).catch(() => undefined);
  ours.delete(marker.nonce);
}

/**
 * Takes the lock `file` for this process: created whole with its pid and host, or taken over
 * from a holder that is gone (a dead pid on this host).
 *
 * @throws DeliveryError `DELIVERY_STATE_LOCKED` while a live holder has it (on another host
 *   it always counts as live); `DELIVERY_IO_FAILED`.
 */
export async function acquireStateLock(file: string): Promise<StateLock> {
  let marker: { path: string; nonce: string } | undefined;
  try {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const holder: Holder = {
        pid: process.pid,
        host: hostname(),
        nonce: randomUUID(),
        since: new Date().toISOString(),
      };
      // Listed before it can appear on disk, so no taker in this process mistakes it for stale.
      ours.add(holder.nonce);
      let created: boolean;
      try {
        created = await create(file, holder);
      } catch (err) {
        ours.delete(holder.nonce);
        throw err;
      }
      if (created) return lockOf(file, holder.nonce);
      ours.delete(holder.nonce);
      const current = await readHolder(file);
      if (current === undefined) continue;
      if (current === 'unreadable' || isLive(current)) throw locked(file, current);
      const taken = await takeOver(file, current);
      if (taken !== undefined) {
        await dropMarker(marker);
        marker = taken;
      }
    }
    const current = await readHolder(file);
    throw locked(file, current === undefined ? 'unreadable' : current);
  } finally {
    await dropMarker(marker);
  }
}

function lockOf(file: string, nonce: string): StateLock {
  let released = false;
  return {
    file,
    async release() {
      if (released) return;
      released = true;
      ours.delete(nonce);
      const current = await readHolder(file).catch(() => undefined);
      if (current === undefined || current === 'unreadable' || current.nonce !== nonce) return;
      try {
        await fsp.unlink(file);
      } catch (err) {
        if (errorCode(err) !== 'ENOENT') throw ioError('release the lock', file, err);
      }
    },
  };
}
