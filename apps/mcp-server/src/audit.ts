import { appendFile, mkdir, readFile, rename, stat } from 'node:fs/promises';
import { dirname } from 'node:path';

// The audit log of a hosted server: one JSON line per write a token made and per admin operation,
// saying who (token id and label, the person's user id, the identity that posted) did what to
// which target (stream, topic, message and user ids), when, and how it ended. Never a message's
// content, a token, an API key or the secret key: entries are built from a fixed set of fields.
// Past `maxBytes` the file is rotated (`audit.log` → `audit.log.1`, one earlier file kept).

/** One line of the audit log. */
export interface AuditEntry {
  /** ISO time, added when written. */
  at?: string;
  /** `tool` for a write a token made; `admin` for a token created or revoked. */
  kind: 'tool' | 'admin';
  /** The tool (`send_message`), or the admin operation (`token.create`, `token.revoke`). */
  action: string;
  /** How it ended: `ok`, or the error code. */
  outcome: string;
  /** The token that acted (id and label), when a token did. */
  token?: { id: string; label: string } | undefined;
  /** The person the token is for. */
  userId?: number | undefined;
  /** Who the write was posted as: `bot` or `person`, with that account's user id. */
  postedAs?: { identity: 'bot' | 'person'; userId: number } | undefined;
  /** What was acted on: ids and names, never content. */
  target?: Record<string, string | number | readonly number[] | undefined> | undefined;
  /** The realm (its URL) the token or operation is of. */
  realm?: string | undefined;
  /** Who did an admin operation: `cli` or `http`. */
  via?: 'cli' | 'http' | undefined;
}

/** Input fields that name what a write acts on; anything else (content above all) is never logged. */
const TARGET_FIELDS = ['stream', 'stream_id', 'topic', 'message_id', 'to', 'user_ids', 'emoji', 'emoji_name'];

/** The target of a tool call, from the fields of its input that name one. */
export function auditTarget(input: unknown): AuditEntry['target'] {
  if (typeof input !== 'object' || input === null) return undefined;
  const out: Record<string, string | number | readonly number[]> = {};
  for (const field of TARGET_FIELDS) {
    const value = (input as Record<string, unknown>)[field];
    if (typeof value === 'number' && Number.isSafeInteger(value)) out[field] = value;
    else if (typeof value === 'string') out[field] = value.slice(0, 200);
    else if (Array.isArray(value)) {
      const ids = value.filter((v): v is number => typeof v === 'number' && Number.isSafeInteger(v));
      const names = value.filter((v): v is string => typeof v === 'string').map((v) => v.slice(0, 200));
      out[field] = ids.length > 0 ? ids.slice(0, 50) : names.slice(0, 50).join(',');
    }
  }
  return Object.keys(out).length === 0 ? undefined : out;
}

/** Options of {@link AuditLog}. */
export interface AuditLogOptions {
  path: string;
  /** Rotate past this size, in bytes. */
  maxBytes: number;
  now?: (() => number) | undefined;
}

/** The audit log file: appended to in order, rotated by size. */
export class AuditLog {
  readonly path: string;
  readonly #maxBytes: number;
  readonly #now: () => number;
  #chain: Promise<void> = Promise.resolve();
  #size: number | undefined;

  constructor(options: AuditLogOptions) {
    this.path = options.path;
    this.#maxBytes = options.maxBytes;
    this.#now = options.now ?? Date.now;
  }

  /** Appends one entry (in the order calls were made); never throws: a failure is returned. */
  record(entry: AuditEntry): Promise<void> {
    const line = `${JSON.stringify({ at: new Date(this.#now()).toISOString(), ...entry })}\n`;
    const bytes = Buffer.byteLength(line);
    const done = this.#chain.then(async () => {
      if (this.#size === undefined) {
        await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
        this.#size = await stat(this.path).then(
          (s) => s.size,
          () => 0,
        );
      }
      if (this.#size > 0 && this.#size + bytes > this.#maxBytes) {
        // Another process may have rotated already: judge the file as it is now.
        const current = await stat(this.path).then(
          (s) => s.size,
          () => 0,
        );
        if (current + bytes > this.#maxBytes)
          await rename(this.path, `${this.path}.1`).catch(() => undefined);
        this.#size = current + bytes > this.#maxBytes ? 0 : current;
      }
      await appendFile(this.path, line, { mode: 0o600 });
      this.#size += bytes;
    });
    this.#chain = done.catch(() => undefined);
    return done;
  }
}

/** The lines of the audit log, oldest first (the rotated file, then the current one); at most `last`. */
export async function readAuditLog(path: string, last: number): Promise<string[]> {
  const read = (p: string) =>
    readFile(p, 'utf8').then(
      (text) => text.split('\n').filter((l) => l !== ''),
      () => [] as string[],
    );
  const lines = [...(await read(`${path}.1`)), ...(await read(path))];
  return lines.slice(-last);
}
