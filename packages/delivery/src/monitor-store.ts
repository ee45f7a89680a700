import { foldStreamName } from '@zmcp/core';
import { z } from 'zod';
import { DeliveryError } from './errors.js';
import { parseSessionId, parseStateAccount, type StateKey } from './state-key.js';
import type { StateStore } from './state-store.js';

/** A stream to monitor: its name, and its id when known (the id follows the stream across renames). */
export interface StreamRef {
  readonly name: string;
  readonly streamId?: number | undefined;
}

/** One monitored stream and its read cursor. */
export interface MonitoredStream {
  readonly name: string;
  /** Zulip's stream id, once known. */
  readonly streamId?: number;
  /** The id of the last message read on this stream; absent until something has been read. */
  readonly lastReadId?: number;
}

const MAX_STREAM_NAME = 200;

const positiveId = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

const MonitoredStreamSchema = z.object({
  name: z.string().min(1).max(MAX_STREAM_NAME),
  streamId: positiveId.optional(),
  lastReadId: positiveId.optional(),
});

/** The monitor file (`<session>.json`): monitored streams and their read cursors. */
const MonitorStateSchema = z
  .object({
    version: z.literal(1),
    streams: z.array(MonitoredStreamSchema),
  })
  .superRefine((state, ctx) => {
    const names = new Set<string>();
    const ids = new Set<number>();
    state.streams.forEach((stream, index) => {
      const folded = foldStreamName(stream.name);
      if (names.has(folded)) {
        ctx.addIssue({ code: 'custom', path: ['streams', index, 'name'], message: 'duplicate stream name' });
      }
      names.add(folded);
      if (stream.streamId !== undefined) {
        if (ids.has(stream.streamId)) {
          ctx.addIssue({
            code: 'custom',
            path: ['streams', index, 'streamId'],
            message: 'duplicate stream id',
          });
        }
        ids.add(stream.streamId);
      }
    });
  });

/** The parsed content of a monitor file. */
type MonitorState = z.infer<typeof MonitorStateSchema>;

type Entry = z.infer<typeof MonitoredStreamSchema>;

// Any name the realm holds is kept as it is: names are data here, printed only through the tools.
function checkStreamName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_STREAM_NAME) {
    throw new DeliveryError(
      'DELIVERY_INVALID_ARGUMENT',
      `invalid stream name: expected 1-${MAX_STREAM_NAME} characters, got ${describe(name)}`,
      { details: { stream: typeof name === 'string' ? name.slice(0, MAX_STREAM_NAME) : undefined } },
    );
  }
  return name;
}

function checkId(value: unknown, field: 'streamId' | 'messageId'): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new DeliveryError(
      'DELIVERY_INVALID_ARGUMENT',
      `invalid ${field}: expected a positive integer, got ${describe(value)}`,
      { details: { field } },
    );
  }
  return value;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  if (typeof value === 'number') return String(value);
  return value === null ? 'null' : typeof value;
}

function toRef(stream: string | StreamRef): { name: string; streamId: number | undefined } {
  if (typeof stream === 'string') return { name: checkStreamName(stream), streamId: undefined };
  if (typeof stream !== 'object' || stream === null) {
    throw new DeliveryError(
      'DELIVERY_INVALID_ARGUMENT',
      `invalid stream: expected a name or { name, streamId }, got ${describe(stream)}`,
    );
  }
  return {
    name: checkStreamName(stream.name),
    streamId: stream.streamId === undefined ? undefined : checkId(stream.streamId, 'streamId'),
  };
}

// By id when both sides know it (survives a rename), else by name.
function findIndex(entries: readonly Entry[], ref: { name: string; streamId: number | undefined }): number {
  if (ref.streamId !== undefined) {
    const byId = entries.findIndex((e) => e.streamId === ref.streamId);
    if (byId !== -1) return byId;
  }
  const folded = foldStreamName(ref.name);
  return entries.findIndex((e) => foldStreamName(e.name) === folded);
}

function publicView(entries: readonly Entry[]): MonitoredStream[] {
  return [...entries]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((e) => ({
      name: e.name,
      ...(e.streamId === undefined ? {} : { streamId: e.streamId }),
      ...(e.lastReadId === undefined ? {} : { lastReadId: e.lastReadId }),
    }));
}

/**
 * The plain-MCP read state of one session: which streams it monitors and, per stream, the id
 * of the last message read. Kept in the `monitor` state of a `StateStore`, so cursors survive
 * a restart; every change is one serialized `update`.
 */
export class MonitorStore {
  readonly #store: StateStore;
  readonly #key: StateKey;

  /**
   * Binds the monitor of a session in `store`: `owner` is the session id, or the session and
   * the account (realm and bot, from `stateAccount`) whose cursors these are. Cursors of one
   * account never serve another: message ids of two realms have nothing in common.
   *
   * @throws DeliveryError `DELIVERY_INVALID_SESSION_ID`; `DELIVERY_INVALID_ARGUMENT` for a bad account.
   */
  constructor(store: StateStore, owner: string | { session: string; account?: string | undefined }) {
    this.#store = store;
    const { session, account } = typeof owner === 'string' ? { session: owner, account: undefined } : owner;
    this.#key =
      account === undefined
        ? { session: parseSessionId(session), kind: 'monitor' }
        : { account: parseStateAccount(account), session: parseSessionId(session), kind: 'monitor' };
  }

  /**
   * Adds streams to the monitored set and returns the whole set. A stream already monitored
   * keeps its cursor; a newly known id is recorded, and a known id under a new name renames it.
   *
   * @throws DeliveryError `DELIVERY_INVALID_ARGUMENT` for a bad name or id; `DELIVERY_STATE_CORRUPT`;
   *   `DELIVERY_IO_FAILED`.
   */
  async start(streams: ReadonlyArray<string | StreamRef>): Promise<MonitoredStream[]> {
    const refs = streams.map(toRef);
    const state = await this.#store.update(this.#key, MonitorStateSchema, (prev) => {
      const entries: Entry[] = [...(prev?.streams ?? [])];
      for (const ref of refs) {
        const index = findIndex(entries, ref);
        if (index === -1) {
          entries.push(
            ref.streamId === undefined ? { name: ref.name } : { name: ref.name, streamId: ref.streamId },
          );
          continue;
        }
        const current = entries[index] as Entry;
        const renamed = ref.streamId !== undefined && current.streamId === ref.streamId;
        entries[index] = {
          ...current,
          ...(renamed ? { name: ref.name } : {}),
          ...(ref.streamId === undefined ? {} : { streamId: ref.streamId }),
        };
        // A rename onto a name another entry holds: the id is authoritative, drop the stale one.
        const folded = foldStreamName(ref.name);
        const clash = entries.findIndex((e, i) => i !== index && foldStreamName(e.name) === folded);
        if (clash !== -1) entries.splice(clash, 1);
      }
      return { version: 1 as const, streams: entries };
    });
    return publicView(state.streams);
  }

  /**
   * Removes streams from the monitored set (forgetting their cursors) and returns what remains.
   * Streams that were not monitored are ignored.
   *
   * @throws DeliveryError `DELIVERY_INVALID_ARGUMENT`; `DELIVERY_STATE_CORRUPT`; `DELIVERY_IO_FAILED`.
   */
  async stop(streams: ReadonlyArray<string | StreamRef>): Promise<MonitoredStream[]> {
    const refs = streams.map(toRef);
    const state = await this.#store.update(this.#key, MonitorStateSchema, (prev) => {
      const entries: Entry[] = [...(prev?.streams ?? [])];
      for (const ref of refs) {
        const index = findIndex(entries, ref);
        if (index !== -1) entries.splice(index, 1);
      }
      return { version: 1 as const, streams: entries };
    });
    return publicView(state.streams);
  }

  /**
   * The monitored streams, sorted by name; empty when nothing was ever monitored.
   *
   * @throws DeliveryError `DELIVERY_STATE_CORRUPT`; `DELIVERY_IO_FAILED`.
   */
  async list(): Promise<MonitoredStream[]> {
    const state = await this.#store.read(this.#key, MonitorStateSchema);
    return publicView(state?.streams ?? []);
  }

  /**
   * Moves a stream's read cursor forward to `messageId` and returns the stream; a cursor never
   * moves backwards, so an older id leaves it where it is.
   *
   * @throws DeliveryError `DELIVERY_NOT_MONITORED` when the stream is not monitored;
   *   `DELIVERY_INVALID_ARGUMENT` for a bad name or id; `DELIVERY_STATE_CORRUPT`; `DELIVERY_IO_FAILED`.
   */
  async advance(stream: string | StreamRef, messageId: number): Promise<MonitoredStream> {
    const ref = toRef(stream);
    const id = checkId(messageId, 'messageId');
    let result: Entry | undefined;
    await this.#store.update(this.#key, MonitorStateSchema, (prev) => {
      const entries: Entry[] = [...(prev?.streams ?? [])];
      const index = findIndex(entries, ref);
      if (index === -1) {
        throw new DeliveryError(
          'DELIVERY_NOT_MONITORED',
          `stream ${JSON.stringify(ref.name)} is not monitored`,
          {
            details: { stream: ref.name },
          },
        );
      }
      const current = entries[index] as Entry;
      if (current.lastReadId !== undefined && current.lastReadId >= id) {
        result = current;
        return prev as MonitorState; // unchanged: nothing is written
      }
      result = { ...current, lastReadId: id };
      entries[index] = result;
      return { version: 1 as const, streams: entries };
    });
    return publicView([result as Entry])[0] as MonitoredStream;
  }
}
