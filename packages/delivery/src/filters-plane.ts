import { type FSWatcher, watch } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { errorCode } from '@zmcp/core';
import { writeFileAtomic } from './atomic-write.js';
import { DeliveryError, ioError } from './errors.js';
import { type DeliveryFileSystem, FileRefusedError, resolveFileSystem } from './file-system.js';
import {
  applyFiltersPatch,
  CompiledFilters,
  digestList,
  type FiltersDocument,
  type FiltersPatch,
  type ListDigest,
  parseFiltersDocument,
  type ToolFilters,
  toolView,
} from './filters.js';
import { KeyedMutex } from './keyed-mutex.js';

/** What the filters plane reports to its subscribers. */
export type FiltersEvent =
  /** New filters are in force: the file changed (`file`) or a tool updated it (`update`). */
  | { readonly kind: 'reloaded'; readonly revision: number; readonly source: 'file' | 'update' }
  /** The file became invalid or vanished: the last-known-good stays in force, updates are refused. */
  | { readonly kind: 'stale'; readonly reason: string };

/** What `filters_get` shows: the tool-visible filters, the operator-owned list as count and digest, and staleness. */
export interface FiltersView {
  readonly filters: ToolFilters;
  /** The file's `suppressedReactionEmojis`, as a count and digest only. */
  readonly suppressedReactionEmojis: ListDigest;
  /** The host's baseline, suppressed on top of the file and never written into it. */
  readonly baselineSuppressedReactionEmojis: ListDigest;
  /** True while the file is invalid or missing: the last-known-good is in force and updates are refused. */
  readonly stale: boolean;
  /** Why the plane is stale (no content of the file). */
  readonly staleReason?: string;
  /** Increases with every change that came into force. */
  readonly revision: number;
  /** Where the filters live (the file path, or `memory`). */
  readonly location: string;
}

/**
 * The filters plane as the engine uses it: the filters in force, whether they are stale,
 * updates from the tools, and change notifications. `FileFiltersPlane` is the embedded default;
 * anything else (a shared configuration service) can implement the same interface.
 */
export interface FiltersPlane {
  /** The filters in force: the last-known-good while stale. */
  readonly filters: CompiledFilters;
  readonly stale: boolean;
  view(): FiltersView;
  /**
   * Applies a tool's change and returns the new view.
   *
   * @throws DeliveryError `DELIVERY_FILTERS_STALE` while the plane is stale;
   *   `DELIVERY_FILTERS_OPERATOR_ONLY` for `suppressedReactionEmojis`; `DELIVERY_FILTERS_INVALID`
   *   for an unknown key or a wrong type; `DELIVERY_IO_FAILED`.
   */
  update(patch: FiltersPatch): Promise<FiltersView>;
  /** Calls `listener` with every change; returns the unsubscribe function. */
  subscribe(listener: (event: FiltersEvent) => void): () => void;
  close(): Promise<void>;
}

class Listeners {
  readonly #set = new Set<(event: FiltersEvent) => void>();
  add(listener: (event: FiltersEvent) => void): () => void {
    this.#set.add(listener);
    return () => this.#set.delete(listener);
  }
  emit(event: FiltersEvent): void {
    for (const l of [...this.#set]) {
      try {
        l(event);
      } catch {
        // A listener's failure is its own; the plane goes on.
      }
    }
  }
}

/** A filters plane in memory: for tests, embedding, and hosts that keep filters elsewhere. */
export class MemoryFiltersPlane implements FiltersPlane {
  #document: FiltersDocument;
  #filters: CompiledFilters;
  #stale: string | undefined;
  #revision = 1;
  readonly #baseline: readonly string[];
  readonly #listeners = new Listeners();

  /**
   * @throws DeliveryError `DELIVERY_FILTERS_INVALID` for an invalid document or baseline.
   */
  constructor(document: FiltersDocument = {}, baseline: readonly string[] = []) {
    this.#document = parseFiltersDocument(document);
    this.#baseline = parseFiltersDocument({ suppressedReactionEmojis: [...baseline] }, 'the baseline')
      .suppressedReactionEmojis as string[];
    this.#filters = new CompiledFilters(this.#document, this.#baseline);
  }

  get filters(): CompiledFilters {
    return this.#filters;
  }

  get stale(): boolean {
    return this.#stale !== undefined;
  }

  view(): FiltersView {
    return makeView(this.#document, this.#baseline, this.#stale, this.#revision, 'memory');
  }

  /** Replaces the whole document, as an operator editing the file would; clears staleness. */
  replace(document: FiltersDocument): void {
    this.#document = parseFiltersDocument(document);
    this.#filters = new CompiledFilters(this.#document, this.#baseline);
    this.#stale = undefined;
    this.#revision += 1;
    this.#listeners.emit({ kind: 'reloaded', revision: this.#revision, source: 'file' });
  }

  /** Marks the plane stale, as a broken file would: the filters in force stay, updates are refused. */
  markStale(reason: string): void {
    this.#stale = reason;
    this.#listeners.emit({ kind: 'stale', reason });
  }

  async update(patch: FiltersPatch): Promise<FiltersView> {
    if (this.#stale !== undefined) throw staleError('memory', this.#stale);
    this.#document = applyFiltersPatch(this.#document, patch);
    this.#filters = new CompiledFilters(this.#document, this.#baseline);
    this.#revision += 1;
    this.#listeners.emit({ kind: 'reloaded', revision: this.#revision, source: 'update' });
    return this.view();
  }

  subscribe(listener: (event: FiltersEvent) => void): () => void {
    return this.#listeners.add(listener);
  }

  async close(): Promise<void> {}
}

function makeView(
  doc: FiltersDocument,
  baseline: readonly string[],
  stale: string | undefined,
  revision: number,
  location: string,
): FiltersView {
  return {
    filters: toolView(doc),
    suppressedReactionEmojis: digestList(doc.suppressedReactionEmojis ?? []),
    baselineSuppressedReactionEmojis: digestList(baseline),
    stale: stale !== undefined,
    ...(stale === undefined ? {} : { staleReason: stale }),
    revision,
    location,
  };
}

function staleError(location: string, reason: string): DeliveryError {
  return new DeliveryError(
    'DELIVERY_FILTERS_STALE',
    `the filters file ${location} is stale (${reason}); the last-known-good filters are in force and updates are refused until the file is repaired`,
    { details: { file: location, reason } },
  );
}

/** Options of {@link FileFiltersPlane.open}. */
export interface FileFiltersPlaneOptions {
  /** The filters file (`<state dir>/<session>.filters.json` unless configured otherwise). */
  file: string;
  /** What a new file is created with (from the environment); default `{}`, unrestricted. */
  seed?: FiltersDocument | undefined;
  /** The host's suppressed reactions, added at every start and never written. */
  baseline?: readonly string[] | undefined;
  /** How often the file is also checked without a watch event, in ms. Default 2000. */
  pollIntervalMs?: number | undefined;
  /** How long to wait after a change before reading, so a write in progress settles. Default 50 ms. */
  settleMs?: number | undefined;
  /**
   * The largest filters file read, in bytes. Default 1 MiB. A larger file, or one that is no
   * regular file (a FIFO, a device, a directory, whatever link leads to it), is invalid: a
   * start-up failure, or stale while running; it is never read past the cap, nor waited on.
   */
  maxBytes?: number | undefined;
  /** File-system calls, for injecting failures in tests. */
  fs?: Partial<DeliveryFileSystem> | undefined;
}

/** The default cap of a filters file: far above any list of streams and people a realm has. */
const DEFAULT_MAX_BYTES = 1024 * 1024;
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
const utf8 = new TextDecoder('utf-8', { fatal: true });

type Loaded =
  | { ok: true; document: FiltersDocument; bytes: Uint8Array }
  | { ok: false; missing: boolean; reason: string; cause?: unknown; io?: DeliveryError };

function sameBytes(a: Uint8Array | undefined, b: Uint8Array): boolean {
  return a !== undefined && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}

/**
 * The filters plane in one JSON file, hot-reloaded. The file always exists once `open` has
 * returned (created from the seed if missing); a change to it comes into force within
 * `settleMs` of a watch event, and within `pollIntervalMs` even if the watch missed it. An
 * invalid or vanished file keeps the last-known-good in force and marks the plane stale; a
 * valid file clears it. Updates from the tools re-read the file first, are refused while it is
 * invalid or missing, and are written atomically (temp file, fsync, rename).
 */
export class FileFiltersPlane implements FiltersPlane {
  readonly file: string;
  readonly #fs: DeliveryFileSystem;
  readonly #baseline: readonly string[];
  readonly #listeners = new Listeners();
  readonly #lock = new KeyedMutex();
  readonly #settleMs: number;
  readonly #maxBytes: number;
  #document: FiltersDocument;
  #filters: CompiledFilters;
  #bytes: Uint8Array | undefined;
  #stale: string | undefined;
  #revision = 1;
  #watcher: FSWatcher | undefined;
  #poll: NodeJS.Timeout | undefined;
  #settle: NodeJS.Timeout | undefined;
  #lastStat = '';
  #lastDir = '';
  #closed = false;

  private constructor(
    file: string,
    fs: DeliveryFileSystem,
    baseline: readonly string[],
    document: FiltersDocument,
    bytes: Uint8Array,
    settleMs: number,
    maxBytes: number,
  ) {
    this.file = file;
    this.#fs = fs;
    this.#baseline = baseline;
    this.#document = document;
    this.#bytes = bytes;
    this.#filters = new CompiledFilters(document, baseline);
    this.#settleMs = settleMs;
    this.#maxBytes = maxBytes;
  }

  /**
   * Opens the plane: reads the file, or creates it from the seed when it does not exist, and
   * starts watching it.
   *
   * @throws DeliveryError `DELIVERY_FILTERS_INVALID` when the file exists but is not a valid
   *   filters document, no regular file or larger than `maxBytes` (a start-up failure: there is
   *   no last-known-good yet), or the seed or
   *   baseline is invalid; `DELIVERY_IO_FAILED` when it cannot be read or created.
   */
  static async open(options: FileFiltersPlaneOptions): Promise<FileFiltersPlane> {
    const fs = resolveFileSystem(options.fs);
    const file = options.file;
    const baseline = parseFiltersDocument(
      { suppressedReactionEmojis: [...(options.baseline ?? [])] },
      'the suppressed-reactions baseline',
    ).suppressedReactionEmojis as string[];
    const seed = parseFiltersDocument(options.seed ?? {}, 'the filters seed');
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    let loaded = await load(fs, file, maxBytes);
    if (!loaded.ok && loaded.missing) {
      const bytes = encode(seed);
      try {
        await fs.mkdir(dirname(file), { recursive: true, mode: DIR_MODE });
      } catch (err) {
        throw ioError('create directory', dirname(file), err);
      }
      await writeFileAtomic(fs, file, bytes, FILE_MODE);
      loaded = { ok: true, document: seed, bytes };
    }
    if (!loaded.ok && loaded.io !== undefined) throw loaded.io;
    if (!loaded.ok) {
      throw new DeliveryError(
        'DELIVERY_FILTERS_INVALID',
        `the filters file ${file} is invalid: ${loaded.reason}. Repair it, or remove it to create it again from the environment.`,
        { cause: loaded.cause, details: { file, reason: loaded.reason } },
      );
    }
    const plane = new FileFiltersPlane(
      file,
      fs,
      baseline,
      loaded.document,
      loaded.bytes,
      options.settleMs ?? 50,
      maxBytes,
    );
    plane.#lastStat = await statSignature(file);
    plane.#lastDir = await statSignature(dirname(file));
    plane.#startWatching(options.pollIntervalMs ?? 2_000);
    return plane;
  }

  get filters(): CompiledFilters {
    return this.#filters;
  }

  get stale(): boolean {
    return this.#stale !== undefined;
  }

  view(): FiltersView {
    return makeView(this.#document, this.#baseline, this.#stale, this.#revision, this.file);
  }

  subscribe(listener: (event: FiltersEvent) => void): () => void {
    return this.#listeners.add(listener);
  }

  async update(patch: FiltersPatch): Promise<FiltersView> {
    return this.#lock.run('update', async () => {
      if (this.#closed) throw new DeliveryError('DELIVERY_NOT_RUNNING', 'the filters plane is closed');
      // Re-read first: an operator's edit not yet reloaded must not be overwritten.
      const fresh = await load(this.#fs, this.file, this.#maxBytes);
      if (!fresh.ok) {
        this.#markStale(fresh.reason);
        throw staleError(this.file, fresh.reason);
      }
      this.#accept(fresh.document, fresh.bytes, 'file');
      const next = applyFiltersPatch(fresh.document, patch);
      const bytes = encode(next);
      await writeFileAtomic(this.#fs, this.file, bytes, FILE_MODE);
      this.#accept(next, bytes, 'update');
      return this.view();
    });
  }

  /** Reads the file now (as a watch event would) and applies what it holds. */
  async reload(): Promise<void> {
    await this.#lock.run('update', async () => {
      if (this.#closed) return;
      const loaded = await load(this.#fs, this.file, this.#maxBytes);
      if (loaded.ok) this.#accept(loaded.document, loaded.bytes, 'file');
      else this.#markStale(loaded.reason);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#watcher?.close();
    this.#watcher = undefined;
    if (this.#poll !== undefined) clearInterval(this.#poll);
    if (this.#settle !== undefined) clearTimeout(this.#settle);
    await this.#lock.run('update', async () => undefined);
  }

  #accept(document: FiltersDocument, bytes: Uint8Array, source: 'file' | 'update'): void {
    if (this.#stale === undefined && sameBytes(this.#bytes, bytes)) return;
    this.#document = document;
    this.#bytes = bytes;
    this.#filters = new CompiledFilters(document, this.#baseline);
    this.#stale = undefined;
    this.#revision += 1;
    this.#listeners.emit({ kind: 'reloaded', revision: this.#revision, source });
  }

  #markStale(reason: string): void {
    if (this.#stale === reason) return;
    this.#stale = reason;
    this.#listeners.emit({ kind: 'stale', reason });
  }

  #schedule(): void {
    if (this.#closed) return;
    if (this.#settle !== undefined) clearTimeout(this.#settle);
    this.#settle = setTimeout(() => {
      this.#settle = undefined;
      void this.reload();
    }, this.#settleMs);
    this.#settle.unref();
  }

  #watch(): void {
    const dir = dirname(this.file);
    const name = basename(this.file);
    try {
      const watcher = watch(dir, { persistent: false }, (_event, filename) => {
        if (filename === null || filename === name) this.#schedule();
      });
      watcher.on('error', () => {
        // The directory went away (or the watch broke): the poll re-creates the watch.
        watcher.close();
        if (this.#watcher === watcher) this.#watcher = undefined;
        this.#schedule();
      });
      this.#watcher = watcher;
    } catch {
      this.#watcher = undefined;
    }
  }

  #startWatching(pollIntervalMs: number): void {
    this.#watch();
    this.#poll = setInterval(() => {
      void Promise.all([statSignature(dirname(this.file)), statSignature(this.file)]).then(([dir, file]) => {
        if (this.#closed) return;
        // A directory that was replaced leaves the old watch blind: watch the new one.
        if (dir !== this.#lastDir) {
          this.#watcher?.close();
          this.#watcher = undefined;
          this.#lastDir = dir;
        }
        if (this.#watcher === undefined) this.#watch();
        this.#polled(file);
      });
    }, pollIntervalMs);
    this.#poll.unref();
  }

  #polled(signature: string): void {
    if (this.#lastStat !== signature) this.#schedule();
    this.#lastStat = signature;
  }
}

async function statSignature(path: string): Promise<string> {
  try {
    const s = await stat(path);
    return s.isDirectory() ? `dir:${s.ino}` : `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch (err) {
    return errorCode(err) ?? 'error';
  }
}

function encode(doc: FiltersDocument): Uint8Array {
  return Buffer.from(`${JSON.stringify(doc, null, 2)}\n`, 'utf8');
}

async function load(fs: DeliveryFileSystem, file: string, maxBytes: number): Promise<Loaded> {
  let bytes: Uint8Array;
  try {
    bytes = await fs.readFile(file, maxBytes);
  } catch (err) {
    // Not a regular file, or too large: the file is invalid, as one that does not parse.
    if (err instanceof FileRefusedError)
      return { ok: false, missing: false, reason: err.message, cause: err };
    const code = errorCode(err);
    if (code === 'ENOENT') return { ok: false, missing: true, reason: 'the file is missing' };
    const io = ioError('read', file, err);
    return { ok: false, missing: false, reason: `it cannot be read (${code ?? 'error'})`, io };
  }
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(bytes));
  } catch (cause) {
    return { ok: false, missing: false, reason: 'it is not UTF-8 JSON', cause };
  }
  try {
    return { ok: true, document: parseFiltersDocument(value, 'the file'), bytes };
  } catch (err) {
    const reason = (err as DeliveryError).details?.reason;
    return { ok: false, missing: false, reason: typeof reason === 'string' ? reason : 'invalid', cause: err };
  }
}
