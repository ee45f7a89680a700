import { randomBytes } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { errorCode } from '@zmcp/core';
import { writeFileAtomic } from './atomic-write.js';
import { DeliveryError, ioError } from './errors.js';
import { type DeliveryFileSystem, FileRefusedError, resolveFileSystem } from './file-system.js';

/** The largest interrupt file read: many notes of the longest messages Zulip allows. */
const MAX_INTERRUPT_BYTES = 1024 * 1024;

/**
 * One note of an interrupt file: text for the agent (untrusted: a session escapes it), and the
 * message it passes on when it is about one, so that a session hands that message over once.
 */
export interface InterruptNote {
  text: string;
  /** The Zulip message the note passes on (a launcher's follow-up), if any. */
  messageId?: number | undefined;
}

const NOTE_KEYS = new Set(['note', 'message_id']);

function checkNote(note: InterruptNote): void {
  if (typeof note?.text !== 'string' || note.text.trim() === '') {
    throw new DeliveryError('DELIVERY_INVALID_ARGUMENT', 'an interrupt note needs some text', {
      details: { field: 'text' },
    });
  }
  const id = note.messageId;
  if (id !== undefined && !(Number.isSafeInteger(id) && id > 0)) {
    throw new DeliveryError(
      'DELIVERY_INVALID_ARGUMENT',
      "an interrupt note's messageId must be a positive message id",
      {
        details: { field: 'messageId' },
      },
    );
  }
}

/**
 * One note as a line of an interrupt file: a JSON object `{"note": text, "message_id": id}` on a
 * line of its own (no line break of the text can end it). A writer appends such lines; plain
 * text is a note too (see {@link parseInterruptNotes}).
 *
 * @throws DeliveryError `DELIVERY_INVALID_ARGUMENT` for empty text or a `messageId` that is not a
 *   positive integer.
 */
export function formatInterruptNote(note: InterruptNote): string {
  checkNote(note);
  return JSON.stringify(
    note.messageId === undefined ? { note: note.text } : { note: note.text, message_id: note.messageId },
  );
}

function noteOfLine(line: string): InterruptNote | undefined {
  if (!line.startsWith('{')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  if (!Object.keys(record).every((key) => NOTE_KEYS.has(key))) return undefined;
  const { note, message_id: id } = record;
  if (typeof note !== 'string') return undefined;
  if (id === undefined) return { text: note };
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0) return undefined;
  return { text: note, messageId: id };
}

/**
 * The notes of an interrupt file's text, oldest first: each line written by
 * {@link formatInterruptNote} is a note, and each run of other lines (an operator's plain text)
 * is one note of its own, trimmed; blank runs are no note. So a file of plain text is one note,
 * as it always was.
 */
export function parseInterruptNotes(text: string): InterruptNote[] {
  const notes: InterruptNote[] = [];
  let plain: string[] = [];
  const flush = (): void => {
    const joined = plain.join('\n').trim();
    if (joined !== '') notes.push({ text: joined });
    plain = [];
  };
  for (const line of text.split('\n')) {
    const note = noteOfLine(line);
    if (note === undefined) {
      plain.push(line);
      continue;
    }
    flush();
    notes.push(note);
  }
  flush();
  return notes;
}

/** Options of `appendInterruptNote`. */
export interface AppendInterruptNoteOptions {
  /** Replaces file-system calls, for tests that inject a consumer between the steps. */
  fs?: Partial<DeliveryFileSystem> | undefined;
}

/**
 * Adds a note to the interrupt file at `path`, keeping every note not taken yet: whatever the
 * file holds is claimed as {@link consumeInterruptFile} claims it, and a file holding it and the
 * new note (a {@link formatInterruptNote} line) is renamed over the path, so a session never sees
 * half a file, and a note is never both taken and kept. Calls must not overlap for one path.
 *
 * @throws DeliveryError `DELIVERY_INVALID_ARGUMENT` for a bad note or an empty path;
 *   `DELIVERY_IO_FAILED` when the file cannot be claimed or written.
 */
export async function appendInterruptNote(
  path: string,
  note: InterruptNote,
  options: AppendInterruptNoteOptions = {},
): Promise<void> {
  const line = formatInterruptNote(note);
  const fs = resolveFileSystem(options.fs);
  const untaken = (await consumeInterruptFile(path, options)) ?? '';
  const before = untaken === '' || untaken.endsWith('\n') ? untaken : `${untaken}\n`;
  await writeFileAtomic(fs, resolve(path), new TextEncoder().encode(`${before}${line}\n`), 0o600);
}

/** Options of `consumeInterruptFile`. */
export interface ConsumeInterruptFileOptions {
  /** Replaces file-system calls, for tests that inject a writer between the steps. */
  fs?: Partial<DeliveryFileSystem> | undefined;
}

/**
 * Takes the interrupt file at `path` if there is one and returns its text, or `undefined`
 * when there is none. The file is first claimed by an atomic rename to a unique name beside
 * it, then read and deleted, so a writer replacing the file meanwhile never has its new
 * content deleted unread, and two consumers never both get one file. Invalid UTF-8 is
 * decoded to U+FFFD instead of failing, so a bad file cannot wedge every later poll. A claimed
 * file that is no regular file (a FIFO, a device behind a link) or holds more than 1 MiB is
 * removed unread, never waited on or read past the cap.
 *
 * @throws DeliveryError `DELIVERY_IO_FAILED` when the file cannot be claimed or read, or was
 *   refused as above (a missing file is not an error); `DELIVERY_INVALID_ARGUMENT` for an empty path.
 */
export async function consumeInterruptFile(
  path: string,
  options: ConsumeInterruptFileOptions = {},
): Promise<string | undefined> {
  if (typeof path !== 'string' || path.length === 0) {
    throw new DeliveryError('DELIVERY_INVALID_ARGUMENT', 'interrupt file path must be a non-empty string');
  }
  const fs = resolveFileSystem(options.fs);
  const target = resolve(path);
  const claimed = join(
    dirname(target),
    `.${basename(target)}.claimed.${process.pid}.${randomBytes(8).toString('hex')}`,
  );
  try {
    await fs.rename(target, claimed);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return undefined;
    throw ioError('claim interrupt file', target, err);
  }
  let bytes: Uint8Array;
  try {
    bytes = await fs.readFile(claimed, MAX_INTERRUPT_BYTES);
  } catch (err) {
    // A FIFO, a device or a huge file is claimed and dropped, so it cannot trip every later poll.
    if (err instanceof FileRefusedError) await fs.unlink(claimed).catch(() => undefined);
    throw ioError('read claimed interrupt file', claimed, err);
  }
  // The text is in hand; a claimed file that cannot be removed is never read again anyway.
  await fs.unlink(claimed).catch(() => undefined);
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
}

/** Options of `watchInterruptFile`. */
export interface WatchInterruptFileOptions {
  /** Stops watching when aborted. */
  signal?: AbortSignal | undefined;
  /** Receives failures to watch, to consume, or thrown by the callback. Without it they are dropped. */
  onError?: ((error: unknown) => void) | undefined;
  /** Replaces file-system calls used to consume the file. */
  fs?: Partial<DeliveryFileSystem> | undefined;
}

/** A running interrupt-file watcher. */
export interface InterruptWatcher {
  /** Settles once the watcher is listening and any file already present has been handed over. */
  readonly ready: Promise<void>;
  /** Stops watching; no consume starts afterwards (one already claimed is still delivered). */
  close(): Promise<void>;
}

/**
 * Watches for the interrupt file at `path` and hands each one's text to `onInterrupt`,
 * consuming it with `consumeInterruptFile`. A file already present when watching starts is
 * consumed too. Calls to `onInterrupt` never overlap. The directory is created (mode 0700)
 * if missing, since a watcher cannot see into a directory that does not exist yet.
 * Nothing is watched until this is called.
 *
 * `ready` rejects with `DELIVERY_IO_FAILED` when the directory cannot be created;
 * later failures (watching, consuming, or thrown by `onInterrupt`) go to `options.onError`.
 *
 * @throws DeliveryError `DELIVERY_INVALID_ARGUMENT` for an empty path.
 */
export function watchInterruptFile(
  path: string,
  onInterrupt: (text: string) => void | Promise<void>,
  options: WatchInterruptFileOptions = {},
): InterruptWatcher {
  if (typeof path !== 'string' || path.length === 0) {
    throw new DeliveryError('DELIVERY_INVALID_ARGUMENT', 'interrupt file path must be a non-empty string');
  }
  const { signal, onError = () => undefined } = options;
  const fs = resolveFileSystem(options.fs);
  const target = resolve(path);
  const dir = dirname(target);

  if (signal?.aborted) return { ready: Promise.resolve(), close: async () => undefined };

  const name = basename(target);
  let closed = false;
  let loop: Promise<void> | undefined;
  let again = false;
  let watcher: FSWatcher | undefined;

  const report = (err: unknown): void => {
    try {
      onError(err);
    } catch {
      // An error handler that throws has nowhere left to report to.
    }
  };

  const consumeAll = async (): Promise<void> => {
    do {
      again = false;
      if (closed) return;
      let text: string | undefined;
      try {
        text = await consumeInterruptFile(target, { fs });
      } catch (err) {
        report(err);
        continue;
      }
      if (text === undefined) continue;
      try {
        await onInterrupt(text);
      } catch (err) {
        report(err);
      }
    } while (again);
  };

  // One consume loop at a time; an event that arrives while it runs makes it go round again.
  const drain = (): Promise<void> => {
    if (loop !== undefined) {
      again = true;
      return loop;
    }
    loop = consumeAll().finally(() => {
      loop = undefined;
    });
    return loop;
  };

  const close = async (): Promise<void> => {
    closed = true;
    signal?.removeEventListener('abort', onAbort);
    watcher?.close();
  };
  const onAbort = (): void => {
    void close();
  };
  signal?.addEventListener('abort', onAbort, { once: true });

  const ready = (async () => {
    try {
      await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      await close();
      throw ioError('create interrupt directory', dir, err);
    }
    if (closed) return;
    try {
      // The directory, not the file: the file comes and goes, and a rename onto the path is
      // an event on the directory. Any event naming the file (or none) is worth a look.
      watcher = watch(dir, { persistent: true }, (_event, filename) => {
        if (filename === null || filename === name) void drain();
      });
    } catch (err) {
      await close();
      throw ioError('watch', dir, err);
    }
    watcher.on('error', (err: unknown) => report(ioError('watch', dir, err)));
    // Whatever was dropped before the watch began.
    await drain();
  })();
  // A caller that never awaits `ready` must not crash the process with an unhandled rejection.
  ready.catch(() => undefined);

  return { ready, close };
}
