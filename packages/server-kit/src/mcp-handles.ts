import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type AuthInfo, createRequestStateCodec } from '@modelcontextprotocol/server';
import { isDeliveryError, type StateKey, type StateStore } from '@zmcp/delivery';
import { z } from 'zod';
import { ServerKitError } from './errors.js';

/** Options of {@link openMcpHandles}. */
export interface McpHandlesOptions {
  /** The state store every process of the server shares: the signing key lives there. */
  store: StateStore;
  /** The state account (realm and bot): the key is one per account. */
  account: string;
  /** How long a handle stays valid, in seconds. */
  ttlSeconds: number;
  /** How long to wait for another process creating the key, in milliseconds. Default 5000. */
  lockWaitMs?: number | undefined;
}

/**
 * Handles a server mints for its 2026-era callers, who carry no session: signed (so they cannot be
 * forged or altered), expiring, bound to the credentials that made them, and valid on every
 * process that shares the state store. A handle is position data, never authentication: the
 * bearer check decides who the caller is, and the handle is refused to anyone else.
 */
export interface McpHandles<P> {
  /** Mints a handle carrying `payload`, bound to `caller`'s credentials. */
  mint(payload: P, caller: AuthInfo | undefined): Promise<string>;
  /**
   * The payload of a handle this server minted for these credentials.
   * @throws ServerKitError `SERVER_KIT_BAD_HANDLE` when it is malformed, forged or altered, expired,
   *   or minted for other credentials; `details.reason` says which.
   */
  verify(handle: string, caller: AuthInfo | undefined): Promise<P>;
  /** A tag of the caller's credentials (an HMAC of the bearer token; a constant without one), for records kept per caller. */
  principal(caller: AuthInfo | undefined): string;
}

/** Why a handle was refused. */
export type BadHandleReason = 'malformed' | 'forged' | 'expired' | 'other-credentials';

const KEY_STATE = { session: 'mcp-handles', kind: 'key' } as const;
const KeyRecordSchema = z.object({ key: z.string().min(43), created: z.string() });
type KeyRecord = z.infer<typeof KeyRecordSchema>;

/** What a handle's signed envelope carries: the caller's payload and the credentials tag. */
interface Sealed<P> {
  p: P;
  c: string;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The account's signing key: read from the store, or generated (32 random bytes) and written once
 * under the store's cross-process lock, so every process of a fleet signs with the same key.
 * The file store keeps it mode 0600.
 */
async function signingKey(store: StateStore, account: string, lockWaitMs: number): Promise<Buffer> {
  const key: StateKey = { ...KEY_STATE, account };
  const decode = (record: KeyRecord) => Buffer.from(record.key, 'base64url');
  const existing = await store.read(key, KeyRecordSchema);
  if (existing !== undefined) return decode(existing);
  const deadline = Date.now() + lockWaitMs;
  for (;;) {
    let lock: Awaited<ReturnType<NonNullable<StateStore['lock']>>> | undefined;
    try {
      lock = await store.lock?.(key);
    } catch (err) {
      if (!isDeliveryError(err, 'DELIVERY_STATE_LOCKED') || Date.now() > deadline) throw err;
      await sleep(25);
      continue;
    }
    try {
      const record = await store.update(
        key,
        KeyRecordSchema,
        (prev) => prev ?? { key: randomBytes(32).toString('base64url'), created: new Date().toISOString() },
      );
      return decode(record);
    } finally {
      await lock?.release();
    }
  }
}

/**
 * Opens the handles of one server process: the signing key read from the state store (created
 * there once, under its lock, if no process made it yet) and the SDK's `createRequestStateCodec`
 * over it. The credentials tag travels inside the signed payload.
 *
 * @throws DeliveryError `DELIVERY_IO_FAILED`, `DELIVERY_STATE_CORRUPT` (the key file),
 *   `DELIVERY_STATE_LOCKED` when another process held the key's lock past `lockWaitMs`.
 */
export async function openMcpHandles<P>(options: McpHandlesOptions): Promise<McpHandles<P>> {
  const key = await signingKey(options.store, options.account, options.lockWaitMs ?? 5_000);
  const codec = createRequestStateCodec<Sealed<P>>({ key, ttlSeconds: options.ttlSeconds });
  const principal = (caller: AuthInfo | undefined): string =>
    createHmac('sha256', key)
      .update(caller === undefined ? 'zmcp.principal:none' : `zmcp.principal:bearer:${caller.token}`)
      .digest('base64url')
      .slice(0, 22);
  const refuse = (reason: BadHandleReason, message: string): never => {
    throw new ServerKitError('SERVER_KIT_BAD_HANDLE', message, { details: { reason } });
  };
  return {
    principal,
    mint: (payload, caller) => codec.mint({ p: payload, c: principal(caller) }),
    async verify(handle, caller) {
      if (typeof handle !== 'string' || handle.length > 4096) return refuse('malformed', 'not a handle');
      let sealed: Sealed<P>;
      try {
        // The codec reads no context when it binds nothing: the credentials are checked below.
        sealed = await codec.verify(handle, undefined as never);
      } catch (err) {
        const why = err instanceof Error ? err.message : '';
        if (why === 'expired') return refuse('expired', 'the handle has expired');
        if (why === 'mac') return refuse('forged', 'the handle was not made by this server, or was altered');
        return refuse('malformed', 'not a handle');
      }
      const expected = Buffer.from(principal(caller));
      const got = Buffer.from(typeof sealed.c === 'string' ? sealed.c : '');
      if (got.length !== expected.length || !timingSafeEqual(got, expected)) {
        return refuse('other-credentials', 'the handle was made for other credentials');
      }
      return sealed.p;
    },
  };
}
