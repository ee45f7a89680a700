import { constants } from 'node:fs';
import * as fsp from 'node:fs/promises';

/** An open file as the stores use it: write everything, flush to disk, close. */
export interface DeliveryFileHandle {
  writeFile(data: Uint8Array): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The file-system calls the file store and the interrupt file make, so tests can inject
 * failures between them. Each method behaves as its `node:fs/promises` namesake, but for
 * `readFile`, which reads a regular file of at most `maxBytes` (see {@link readBoundedFile}).
 */
export interface DeliveryFileSystem {
  mkdir(path: string, options: { recursive: true; mode: number }): Promise<unknown>;
  open(path: string, flags: string, mode?: number): Promise<DeliveryFileHandle>;
  rename(oldPath: string, newPath: string): Promise<void>;
  unlink(path: string): Promise<void>;
  /**
   * The whole content of a regular file of at most `maxBytes`; a FIFO, device, socket or
   * directory, or a larger file, is refused (an error whose `refused` is `'not-regular'` or
   * `'too-large'`) without blocking or reading more than `maxBytes + 1` bytes.
   */
  readFile(path: string, maxBytes: number): Promise<Uint8Array>;
  readdir(path: string): Promise<string[]>;
}

/** Why {@link readBoundedFile} refused a file: it is no regular file, or larger than the cap. */
export class FileRefusedError extends Error {
  override readonly name = 'FileRefusedError';
  readonly refused: 'not-regular' | 'too-large';
  readonly maxBytes: number;

  constructor(refused: 'not-regular' | 'too-large', maxBytes: number) {
    super(refused === 'not-regular' ? 'it is not a regular file' : `it is larger than ${maxBytes} bytes`);
    this.refused = refused;
    this.maxBytes = maxBytes;
  }
}

// Without O_NONBLOCK, opening a FIFO for reading waits for a writer: forever, on a thread of
// libuv's pool. Where the flag does not exist (Windows) there are no FIFOs to open.
const READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

/**
 * The one way the delivery layer reads a file another process or an operator controls (the
 * filters file, state files, the lock, the interrupt file): opened non-blocking, so a FIFO cannot
 * hang the open; judged by `fstat` on the opened descriptor, so a FIFO, device, socket or
 * directory is refused whatever link led to it; read for at most `maxBytes + 1` bytes, so a huge
 * file (or `/dev/zero` behind a link, or a file growing while read) never grows memory past the cap.
 *
 * @throws FileRefusedError for a file that is not regular or holds more than `maxBytes` bytes;
 *   the open's own errors (`ENOENT`, `EACCES`, ...) as they are.
 */
export async function readBoundedFile(path: string, maxBytes: number): Promise<Uint8Array> {
  const handle = await fsp.open(path, READ_FLAGS);
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new FileRefusedError('not-regular', maxBytes);
    if (stat.size > maxBytes) throw new FileRefusedError('too-large', maxBytes);
    let buffer = Buffer.allocUnsafe(stat.size + 1);
    let total = 0;
    for (;;) {
      if (total === buffer.length) {
        if (total > maxBytes) break;
        // Grew since the stat: read on, up to one byte past the cap.
        const bigger = Buffer.allocUnsafe(Math.min(buffer.length * 2, maxBytes + 1));
        buffer.copy(bigger, 0, 0, total);
        buffer = bigger;
      }
      const { bytesRead } = await handle.read(buffer, total, buffer.length - total, total);
      if (bytesRead === 0) break;
      total += bytesRead;
    }
    if (total > maxBytes) throw new FileRefusedError('too-large', maxBytes);
    return buffer.subarray(0, total);
  } finally {
    await handle.close();
  }
}

const nodeFileSystem: DeliveryFileSystem = {
  mkdir: (path, options) => fsp.mkdir(path, options),
  open: (path, flags, mode) => fsp.open(path, flags, mode),
  rename: (oldPath, newPath) => fsp.rename(oldPath, newPath),
  unlink: (path) => fsp.unlink(path),
  readFile: (path, maxBytes) => readBoundedFile(path, maxBytes),
  readdir: (path) => fsp.readdir(path),
};

/** The real file system, with any methods in `overrides` replacing their namesakes. */
export function resolveFileSystem(overrides: Partial<DeliveryFileSystem> | undefined): DeliveryFileSystem {
  return overrides === undefined ? nodeFileSystem : { ...nodeFileSystem, ...overrides };
}
