import type { ZodType, z } from 'zod';
import { DeliveryError } from './errors.js';
import { KeyedMutex } from './keyed-mutex.js';
import { type StateKey, stateFileName } from './state-key.js';
import type { StateLock } from './state-lock.js';

/**
 * Durable per-session state, keyed by session and kind. JSON files are the embedded default
 * (`FileStateStore`); a fleet can back the same interface with a shared database.
 *
 * Values are JSON: what `write` stores is what `JSON.stringify` makes of it, and `read`
 * validates it against a schema whose input accepts its own output.
 */
export interface StateStore {
  /**
   * Returns the stored value validated by `schema`, or `undefined` when it was never written
   * (or was deleted).
   *
   * @throws DeliveryError `DELIVERY_STATE_CORRUPT` when stored data is unparseable or fails
   *   `schema`; `DELIVERY_IO_FAILED`; `DELIVERY_INVALID_SESSION_ID`.
   */
  read<T>(key: StateKey, schema: ZodType<T>): Promise<T | undefined>;
  /**
   * Replaces the stored value atomically: readers see the old value or the new one, never a
   * mix. It overwrites whatever is there, corrupt data included; use `update` to build on it.
   *
   * @throws DeliveryError `DELIVERY_INVALID_ARGUMENT` when `value` is not JSON-serializable;
   *   `DELIVERY_IO_FAILED`; `DELIVERY_INVALID_SESSION_ID`.
   */
  write<T>(key: StateKey, value: T): Promise<void>;
  /**
   * Reads the value, passes it to `fn`, validates what `fn` returns against `schema` and
   * writes it atomically. Calls on one key are serialized within the process, so concurrent
   * updates never lose each other. If `fn` throws, or returns `prev` itself (unchanged),
   * nothing is written.
   *
   * @throws DeliveryError `DELIVERY_STATE_CORRUPT` when the stored data is corrupt (it is left
   *   untouched); `DELIVERY_INVALID_ARGUMENT` when `fn`'s result fails `schema`;
   *   `DELIVERY_IO_FAILED`; `DELIVERY_INVALID_SESSION_ID`.
   */
  update<T>(key: StateKey, schema: ZodType<T>, fn: (prev: T | undefined) => T | Promise<T>): Promise<T>;
  /**
   * Removes the stored value (corrupt or not); a key that holds nothing is not an error.
   *
   * @throws DeliveryError `DELIVERY_IO_FAILED`; `DELIVERY_INVALID_SESSION_ID`.
   */
  delete(key: StateKey): Promise<void>;
  /**
   * Takes exclusive use of `key` across processes, until the lock is released: what a
   * `DeliveryEngine` does for its delivery state, so two servers never deliver for one
   * session. A store without it (one that lives in a single process) is not locked.
   *
   * @throws DeliveryError `DELIVERY_STATE_LOCKED` while another holder has it;
   *   `DELIVERY_IO_FAILED`; `DELIVERY_INVALID_SESSION_ID`.
   */
  lock?(key: StateKey): Promise<StateLock>;
}

/** Serializes a state value as the stores keep it: pretty JSON with a trailing newline. */
export function encodeState(key: StateKey, value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value, null, 2) as string | undefined;
  } catch (err) {
    throw new DeliveryError(
      'DELIVERY_INVALID_ARGUMENT',
      `state for ${describeKey(key)} is not JSON-serializable: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err, details: { session: key.session, kind: key.kind } },
    );
  }
  if (text === undefined) {
    throw new DeliveryError(
      'DELIVERY_INVALID_ARGUMENT',
      `state for ${describeKey(key)} is not JSON-serializable: got ${typeof value}`,
      { details: { session: key.session, kind: key.kind } },
    );
  }
  return `${text}\n`;
}

/**
 * Parses stored text and validates it with `schema`. `where` names the file (or memory slot)
 * in the error; the content itself never appears in a message.
 */
export function decodeState<T>(text: string, schema: ZodType<T>, where: string): T {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw corrupt(where, `it is not valid JSON (${err instanceof Error ? err.message : String(err)})`, err);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw corrupt(
      where,
      `it does not match the expected shape: ${summarizeIssues(parsed.error)}`,
      parsed.error,
    );
  }
  return parsed.data;
}

/** Validates a value about to be stored; a mismatch is the caller's bug, not corruption. */
export function checkNewState<T>(key: StateKey, value: T, schema: ZodType<T>): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new DeliveryError(
      'DELIVERY_INVALID_ARGUMENT',
      `new state for ${describeKey(key)} does not match its schema: ${summarizeIssues(parsed.error)}`,
      { cause: parsed.error, details: { session: key.session, kind: key.kind } },
    );
  }
  return value;
}

function corrupt(where: string, reason: string, cause: unknown): DeliveryError {
  return new DeliveryError(
    'DELIVERY_STATE_CORRUPT',
    `state file ${where} is corrupt: ${reason}. It was left as is; repair, move or delete it.`,
    { cause, details: { file: where, reason } },
  );
}

function summarizeIssues(error: z.ZodError): string {
  const shown = error.issues.slice(0, 3).map((issue) => {
    const path = issue.path.length === 0 ? '(root)' : issue.path.map(String).join('.');
    return `${path}: ${issue.message}`;
  });
  const more = error.issues.length > shown.length ? `; and ${error.issues.length - shown.length} more` : '';
  return `${shown.join('; ')}${more}`;
}

function describeKey(key: StateKey): string {
  const account = key.account === undefined ? '' : ` of ${JSON.stringify(key.account)}`;
  return `session ${JSON.stringify(key.session)}${account} (${key.kind})`;
}

/**
 * A `StateStore` held in memory, for tests and embedding. Values are stored as JSON text, so
 * it copies, validates and reports corruption exactly as the file store does.
 */
export class MemoryStateStore implements StateStore {
  readonly #data = new Map<string, string>();
  readonly #locks = new KeyedMutex();

  /**
   * Returns the stored value validated by `schema`, or `undefined` when never written.
   *
   * @throws DeliveryError `DELIVERY_STATE_CORRUPT` when the stored value fails `schema`;
   *   `DELIVERY_INVALID_SESSION_ID`.
   */
  async read<T>(key: StateKey, schema: ZodType<T>): Promise<T | undefined> {
    const name = stateFileName(key);
    return this.#locks.run(name, async () => this.#load(name, schema));
  }

  /**
   * Replaces the stored value.
   *
   * @throws DeliveryError `DELIVERY_INVALID_ARGUMENT` for a non-JSON value; `DELIVERY_INVALID_SESSION_ID`.
   */
  async write<T>(key: StateKey, value: T): Promise<void> {
    const name = stateFileName(key);
    const text = encodeState(key, value);
    await this.#locks.run(name, async () => {
      this.#data.set(name, text);
    });
  }

  /**
   * Reads, transforms with `fn`, validates and stores, serialized per key.
   *
   * @throws DeliveryError `DELIVERY_STATE_CORRUPT`; `DELIVERY_INVALID_ARGUMENT`; `DELIVERY_INVALID_SESSION_ID`.
   */
  async update<T>(
    key: StateKey,
    schema: ZodType<T>,
    fn: (prev: T | undefined) => T | Promise<T>,
  ): Promise<T> {
    const name = stateFileName(key);
    return this.#locks.run(name, async () => {
      const prev = this.#load(name, schema);
      const next = await fn(prev);
      if (prev !== undefined && next === prev) return prev;
      this.#data.set(name, encodeState(key, checkNewState(key, next, schema)));
      return next;
    });
  }

  /**
   * Forgets the stored value.
   *
   * @throws DeliveryError `DELIVERY_INVALID_SESSION_ID`.
   */
  async delete(key: StateKey): Promise<void> {
    const name = stateFileName(key);
    await this.#locks.run(name, async () => {
      this.#data.delete(name);
    });
  }

  #load<T>(name: string, schema: ZodType<T>): T | undefined {
    const text = this.#data.get(name);
    return text === undefined ? undefined : decodeState(text, schema, `memory:${name}`);
  }
}
