import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { errorCode } from '@zmcp/core';
import { ioError } from './errors.js';
import type { DeliveryFileHandle, DeliveryFileSystem } from './file-system.js';

// `.<target name>.<pid>.<random>.tmp`: hidden, never ending in `.json`, and carrying the
// writer's pid so a later process can tell a crashed writer's leftovers from a live one's.
const TEMP_NAME = /^\.(.+)\.(\d+)\.([0-9a-f]{16})\.tmp$/;

/** A fresh temp-file path beside `target`, unique to this process and call. */
export function tempPathFor(target: string): string {
  const name = `.${basename(target)}.${process.pid}.${randomBytes(8).toString('hex')}.tmp`;
  return join(dirname(target), name);
}

// Platforms where a directory cannot be opened or fsynced report one of these; the rename
// itself has happened, so there is nothing better to do than to go on.
const DIRECTORY_SYNC_UNSUPPORTED = new Set(['EISDIR', 'EINVAL', 'EPERM', 'ENOTSUP', 'EACCES']);

/** Flushes a directory's entries (a rename or unlink in it) to disk. */
export async function syncDirectory(fs: DeliveryFileSystem, dir: string): Promise<void> {
  let handle: DeliveryFileHandle;
  try {
    handle = await fs.open(dir, 'r');
  } catch (err) {
    if (DIRECTORY_SYNC_UNSUPPORTED.has(errorCode(err) ?? '')) return;
    throw ioError('open directory', dir, err);
  }
  try {
    await handle.sync();
  } catch (err) {
    if (!DIRECTORY_SYNC_UNSUPPORTED.has(errorCode(err) ?? '')) throw ioError('fsync directory', dir, err);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * Replaces `target` with `data` so that a crash at any instant leaves the old content or the
 * new, never a mix: write a unique temp file beside it, fsync, rename over, fsync the directory.
 */
export async function writeFileAtomic(
  fs: DeliveryFileSystem,
  target: string,
  data: Uint8Array,
  mode: number,
): Promise<void> {
  const temp = tempPathFor(target);
  let renamed = false;
  try {
    let handle: DeliveryFileHandle;
    try {
      handle = await fs.open(temp, 'wx', mode);
    } catch (err) {
      throw ioError('create', temp, err);
    }
    try {
      await handle.writeFile(data);
      await handle.sync();
    } catch (err) {
      throw ioError('write', temp, err);
    } finally {
      await handle.close().catch(() => undefined);
    }
    try {
      await fs.rename(temp, target);
    } catch (err) {
      throw ioError('rename into place', target, err);
    }
    renamed = true;
    await syncDirectory(fs, dirname(target));
  } finally {
    if (!renamed) await fs.unlink(temp).catch(() => undefined);
  }
}

/** True while `pid` names a running process (EPERM: it exists but belongs to someone else). */
export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return errorCode(err) !== 'ESRCH';
  }
}

/**
 * Removes temp files of `target` left by writers that no longer run (a crash between create
 * and rename). Files of this process and of live processes are left alone; failures are ignored.
 */
export async function removeStaleTempFiles(fs: DeliveryFileSystem, target: string): Promise<void> {
  const dir = dirname(target);
  const name = basename(target);
  let entries: string[];
  try {
    entries = await fs.readdir(dir);
  } catch {
    return;
  }
  for (const entry of entries) {
    const match = TEMP_NAME.exec(entry);
    if (match === null || match[1] !== name) continue;
    const pid = Number(match[2]);
    if (pid === process.pid || processIsAlive(pid)) continue;
    await fs.unlink(join(dir, entry)).catch(() => undefined);
  }
}
