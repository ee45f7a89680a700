import { dirname, join, resolve } from 'node:path';
import { errorCode } from '@zmcp/core';
import type { ZodType } from 'zod';
import { removeStaleTempFiles, syncDirectory, writeFileAtomic } from './atomic-write.js';
import { DeliveryError, ioError } from './errors.js';
import { type DeliveryFileSystem, resolveFileSystem } from './file-system.js';
import { KeyedMutex } from './keyed-mutex.js';
import { type StateKey, stateFileName } from './state-key.js';
import { acquireStateLock, type StateLock } from './state-lock.js';
import { checkNewState, decodeState, encodeState, type StateStore } from './state-store.js';

/** Options of `FileStateStore`. */
export interface FileStateStoreOptions {
  /** The state directory (`ZULIP_STATE_DIR`); created with mode 0700 on the first write if missing. */
  dir: string;
  /** Replaces file-system calls, for tests that inject failures. */
  fs?: Partial<DeliveryFileSystem> | undefined;
}

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
/** The largest state file read: far above what a session keeps, far below what would hurt. */
const MAX_STATE_BYTES = 64 * 1024 * 1024;

// Shared by every FileStateStore in the process, keyed by absolute path, so two stores opened
// on one directory still serialize their updates of one file.
const fileLocks = new KeyedMutex();

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A `StateStore` of JSON files, one per key, in one directory: `<account>/<session>.json`
 * (monitor), `<account>/<session>.delivery.json`, `<account>/<session>.filters.json` (without
 * the folder for a key with no account). Writes are atomic (temp file, fsync,
 * rename, directory fsync) and files are created with mode 0600.
 */
export class FileStateStore implements StateStore {
  /** The state directory, as an absolute path. */
  readonly dir: string;
  readonly #fs: DeliveryFileSystem;
  // Files whose leftover temp files this instance has already swept.
  readonly #swept = new Set<string>();

  constructor(options: FileStateStoreOptions) {
    if (typeof options.dir !== 'string' || options.dir.length === 0) {
      throw new DeliveryError('DELIVERY_INVALID_ARGUMENT', 'FileStateStore needs a non-empty dir', {
        details: { option: 'dir' },
      });
    }
    this.dir = resolve(options.dir);
    this.#fs = resolveFileSystem(options.fs);
  }

  /**
   * The absolute path of the file that holds `key`.
   *
   * @throws DeliveryError `DELIVERY_INVALID_SESSION_ID`; `DELIVERY_INVALID_ARGUMENT` for an unknown kind.
   */
  pathOf(key: StateKey): string {
    return join(this.dir, stateFileName(key));
  }

  /**
   * Returns the file's value validated by `schema`, or `undefined` when there is no file.
   * Temp files left by a crashed writer are never read.
   *
   * @throws DeliveryError `DELIVERY_STATE_CORRUPT` (not UTF-8, not JSON, or failing `schema`);
   *   `DELIVERY_IO_FAILED`; `DELIVERY_INVALID_SESSION_ID`.
   */
  async read<T>(key: StateKey, schema: ZodType<T>): Promise<T | undefined> {
    const file = this.pathOf(key);
    return fileLocks.run(file, () => this.#load(file, schema));
  }

  /**
   * Replaces the file atomically, whatever it held before (corrupt content included).
   *
   * @throws DeliveryError `DELIVERY_INVALID_ARGUMENT` for a non-JSON value; `DELIVERY_IO_FAILED`;
   *   `DELIVERY_INVALID_SESSION_ID`.
   */
  async write<T>(key: StateKey, value: T): Promise<void> {
    const file = this.pathOf(key);
    const bytes = Buffer.from(encodeState(key, value), 'utf8');
    await fileLocks.run(file, async () => {
      await this.#prepare(file);
      await writeFileAtomic(this.#fs, file, bytes, FILE_MODE);
    });
  }

  /**
   * Reads, transforms with `fn`, validates and writes atomically, serialized per file within
   * the process. Returning `prev` itself writes nothing. A corrupt file is reported and left untouched.
   *
   * @throws DeliveryError `DELIVERY_STATE_CORRUPT`; `DELIVERY_INVALID_ARGUMENT` when `fn`'s result
   *   fails `schema`; `DELIVERY_IO_FAILED`; `DELIVERY_INVALID_SESSION_ID`.
   */
  async update<T>(
    key: StateKey,
    schema: ZodType<T>,
    fn: (prev: T | undefined) => T | Promise<T>,
  ): Promise<T> {
    const file = this.pathOf(key);
    return fileLocks.run(file, async () => {
      const prev = await this.#load(file, schema);
      const next = await fn(prev);
      if (prev !== undefined && next === prev) return prev;
      const bytes = Buffer.from(encodeState(key, checkNewState(key, next, schema)), 'utf8');
      await this.#prepare(file);
      await writeFileAtomic(this.#fs, file, bytes, FILE_MODE);
      return next;
    });
  }

  /**
   * Takes `<session>.<kind>.lock` beside the key's file: created whole with this process's pid
   * and host, refused while a live process holds it, taken over from a dead pid on this host.
   * A lock left by another host always counts as held (remove the file once that host is gone).
   *
   * @throws DeliveryError `DELIVERY_STATE_LOCKED` naming the holder; `DELIVERY_IO_FAILED`;
   *   `DELIVERY_INVALID_SESSION_ID`.
   */
  lock(key: StateKey): Promise<StateLock> {
    return acquireStateLock(this.pathOf(key).replace(/\.json$/, '.lock'));
  }

  /**
   * Removes the file; a missing file is not an error.
   *
   * @throws DeliveryError `DELIVERY_IO_FAILED`; `DELIVERY_INVALID_SESSION_ID`.
   */
  async delete(key: StateKey): Promise<void> {
    const file = this.pathOf(key);
    await fileLocks.run(file, async () => {
      await this.#sweep(file);
      try {
        await this.#fs.unlink(file);
      } catch (err) {
        if (errorCode(err) === 'ENOENT') return;
        throw ioError('delete', file, err);
      }
      await syncDirectory(this.#fs, dirname(file));
    });
  }

  async #load<T>(file: string, schema: ZodType<T>): Promise<T | undefined> {
    let bytes: Uint8Array;
    try {
      bytes = await this.#fs.readFile(file, MAX_STATE_BYTES);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return undefined;
      throw ioError('read', file, err);
    }
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch (err) {
      throw new DeliveryError(
        'DELIVERY_STATE_CORRUPT',
        `state file ${file} is corrupt: it is not valid UTF-8. It was left as is; repair, move or delete it.`,
        { cause: err, details: { file, reason: 'not valid UTF-8' } },
      );
    }
    return decodeState(text, schema, file);
  }

  async #prepare(file: string): Promise<void> {
    // Every time, not once: an operator may remove the directory while the process runs.
    // The file's own folder: an account's state lives in a folder of its own.
    const dir = dirname(file);
    try {
      await this.#fs.mkdir(dir, { recursive: true, mode: DIR_MODE });
    } catch (err) {
      throw ioError('create directory', dir, err);
    }
    await this.#sweep(file);
  }

  async #sweep(file: string): Promise<void> {
    if (this.#swept.has(file)) return;
    this.#swept.add(file);
    await removeStaleTempFiles(this.#fs, file);
  }
}
