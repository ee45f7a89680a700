import * as fsp from 'node:fs/promises';

/** An open file as the stores use it: write everything, flush to disk, close. */
export interface DeliveryFileHandle {
  writeFile(data: Uint8Array): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The file-system calls the file store and the interrupt file make, so tests can inject
 * failures between them. Each method behaves as its `node:fs/promises` namesake.
 */
export interface DeliveryFileSystem {
  mkdir(path: string, options: { recursive: true; mode: number }): Promise<unknown>;
  open(path: string, flags: string, mode?: number): Promise<DeliveryFileHandle>;
  rename(oldPath: string, newPath: string): Promise<void>;
  unlink(path: string): Promise<void>;
  readFile(path: string): Promise<Uint8Array>;
  readdir(path: string): Promise<string[]>;
}

const nodeFileSystem: DeliveryFileSystem = {
  mkdir: (path, options) => fsp.mkdir(path, options),
  open: (path, flags, mode) => fsp.open(path, flags, mode),
  rename: (oldPath, newPath) => fsp.rename(oldPath, newPath),
  unlink: (path) => fsp.unlink(path),
  readFile: (path) => fsp.readFile(path),
  readdir: (path) => fsp.readdir(path),
};

/** The real file system, with any methods in `overrides` replacing their namesakes. */
export function resolveFileSystem(overrides: Partial<DeliveryFileSystem> | undefined): DeliveryFileSystem {
  return overrides === undefined ? nodeFileSystem : { ...nodeFileSystem, ...overrides };
}
