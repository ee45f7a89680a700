import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { StateKey, StateStore } from '@zmcp/delivery';
import { TOOLSETS, type Toolset } from '@zmcp/tools';
import { z } from 'zod';
import { McpServerError } from './errors.js';

// Per-person access tokens of a hosted server. A token is opaque (`zmcp_<id>_<secret>`): the id
// names its record in the state store, and only the SHA-256 of the whole token is kept there, so
// the store never holds what a caller presents. The record binds the token to one person of the
// realm (user id, email) and carries the person's Zulip API key, encrypted with AES-256-GCM under
// the operator's ZULIP_SECRET_KEY; the key's own record binds the ciphertext to the token (its
// additional data), so it cannot be moved to another record. Every check reads the record afresh:
// a revocation is seen by every process sharing the store on its next request.

/** Who a token's writes are posted as: the organization's bot, the person, or nobody (read only). */
export type WriteAs = 'bot' | 'person' | 'none';

const TOKEN_PATTERN = /^zmcp_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
const INDEX_KEY = { session: 'index', kind: 'tokens' } as const;

const SealedSchema = z.object({ iv: z.string(), data: z.string(), tag: z.string() });

const TokenRecordSchema = z.object({
  id: z.string().regex(/^[0-9a-f]{16}$/),
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  label: z.string().min(1).max(100),
  userId: z.number().int().positive(),
  email: z.string(),
  fullName: z.string(),
  toolsets: z.array(z.enum(TOOLSETS as [Toolset, ...Toolset[]])),
  writeAs: z.enum(['bot', 'person', 'none']),
  createdAt: z.string(),
  expiresAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  lastUsed: z.string().nullable(),
  apiKey: SealedSchema,
});
type TokenRecord = z.infer<typeof TokenRecordSchema>;

const IndexSchema = z.object({ ids: z.array(z.string()) });

/** What `tokens list` and the admin API show of a token: never its hash or the person's key. */
export interface TokenInfo {
  id: string;
  label: string;
  userId: number;
  email: string;
  fullName: string;
  toolsets: Toolset[];
  writeAs: WriteAs;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsed: string | null;
  /** `active`, or why the token is refused. */
  status: 'active' | 'revoked' | 'expired';
}

/** A token that checked out: who it is for, and the person's API key (decrypted on demand). */
export interface TokenGrant {
  info: TokenInfo;
  apiKey(): string;
}

/** Why a presented token was refused. */
export type TokenRefusal = 'malformed' | 'unknown' | 'revoked' | 'expired';

/** What a new token is for. */
export interface NewToken {
  label: string;
  userId: number;
  email: string;
  fullName: string;
  /** The person's Zulip API key: stored encrypted, never shown again. */
  apiKey: string;
  toolsets: readonly Toolset[];
  writeAs: WriteAs;
  /** When it stops working; `null` never. */
  expiresAt: Date | null;
}

/**
 * Reads `ZULIP_SECRET_KEY`: 32 bytes, as 64 hex digits or base64 (`openssl rand -base64 32`).
 * Returns `undefined` for anything else.
 */
export function decodeSecretKey(raw: string): Buffer | undefined {
  const text = raw.trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(text)) {
    const bytes = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (bytes.length === 32) return bytes;
  }
  return undefined;
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function statusOf(record: TokenRecord, now: number): TokenInfo['status'] {
  if (record.revokedAt !== null) return 'revoked';
  if (record.expiresAt !== null && Date.parse(record.expiresAt) <= now) return 'expired';
  return 'active';
}

function infoOf(record: TokenRecord, now: number): TokenInfo {
  const { hash: _hash, apiKey: _key, ...rest } = record;
  return { ...rest, status: statusOf(record, now) };
}

/** Options of {@link TokenRegistry}. */
export interface TokenRegistryOptions {
  /** The state store every process of the server shares. */
  store: StateStore;
  /** The state account (realm and bot) the tokens belong to. */
  account: string;
  /** The 32-byte key the people's API keys are encrypted with (`ZULIP_SECRET_KEY`). */
  secretKey: Buffer;
  /** `last_used` is written at most this often per token, in milliseconds. Default 60 000. */
  touchEveryMs?: number | undefined;
  now?: (() => number) | undefined;
}

/** The per-person tokens of one realm and bot, kept in the state store. */
export class TokenRegistry {
  readonly #store: StateStore;
  readonly #account: string;
  readonly #key: Buffer;
  readonly #touchEveryMs: number;
  readonly #now: () => number;

  constructor(options: TokenRegistryOptions) {
    if (options.secretKey.length !== 32) {
      throw new McpServerError('MCP_TOKEN_INVALID', 'the secret key must be 32 bytes');
    }
    this.#store = options.store;
    this.#account = options.account;
    this.#key = options.secretKey;
    this.#touchEveryMs = options.touchEveryMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  #keyOf(id: string): StateKey {
    return { account: this.#account, session: id, kind: 'token' };
  }

  #aad(id: string, userId: number): Buffer {
    return Buffer.from(`zmcp-token:${this.#account}:${id}:${userId}`, 'utf8');
  }

  /**
   * Issues a token for one person: returns it (shown once; only its hash is kept) and what is
   * recorded about it.
   *
   * @throws McpServerError `MCP_TOKEN_INVALID` for an empty label or an expiry in the past.
   */
  async create(spec: NewToken): Promise<{ token: string; info: TokenInfo }> {
    const label = spec.label.trim();
    if (label === '' || label.length > 100 || /[\p{Cc}]/u.test(label)) {
      throw new McpServerError(
        'MCP_TOKEN_INVALID',
        'a token label is 1-100 characters without control characters',
      );
    }
    const now = this.#now();
    if (spec.expiresAt !== null && spec.expiresAt.getTime() <= now) {
      throw new McpServerError('MCP_TOKEN_INVALID', 'the expiry is in the past');
    }
    const id = randomBytes(8).toString('hex');
    const token = `zmcp_${id}_${randomBytes(32).toString('base64url')}`;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(this.#aad(id, spec.userId));
    const data = Buffer.concat([cipher.update(spec.apiKey, 'utf8'), cipher.final()]);
    const record: TokenRecord = {
      id,
      hash: sha256(token),
      label,
      userId: spec.userId,
      email: spec.email,
      fullName: spec.fullName,
      toolsets: [...spec.toolsets],
      writeAs: spec.writeAs,
      createdAt: new Date(now).toISOString(),
      expiresAt: spec.expiresAt === null ? null : spec.expiresAt.toISOString(),
      revokedAt: null,
      lastUsed: null,
      apiKey: {
        iv: iv.toString('base64url'),
        data: data.toString('base64url'),
        tag: cipher.getAuthTag().toString('base64url'),
      },
    };
    await this.#store.write(this.#keyOf(id), record);
    await this.#store.update({ ...INDEX_KEY, account: this.#account }, IndexSchema, (prev) => ({
      ids: [...(prev?.ids ?? []), id],
    }));
    return { token, info: infoOf(record, now) };
  }

  /** Every token issued, oldest first, revoked and expired ones included. */
  async list(): Promise<TokenInfo[]> {
    const index = await this.#store.read({ ...INDEX_KEY, account: this.#account }, IndexSchema);
    const now = this.#now();
    const out: TokenInfo[] = [];
    for (const id of index?.ids ?? []) {
      const record = await this.#store.read(this.#keyOf(id), TokenRecordSchema);
      if (record !== undefined) out.push(infoOf(record, now));
    }
    return out;
  }

  /**
   * Revokes a token by its id or its label: refused from the next request on, on every process.
   *
   * @throws McpServerError `MCP_TOKEN_UNKNOWN` when no token has that id or label, or two have
   *   that label.
   */
  async revoke(idOrLabel: string): Promise<TokenInfo> {
    const all = await this.list();
    const matches = all.filter((t) => t.id === idOrLabel || t.label === idOrLabel);
    if (matches.length !== 1) {
      throw new McpServerError(
        'MCP_TOKEN_UNKNOWN',
        matches.length === 0
          ? 'no token has that id or label (zulip-mcp tokens list shows them)'
          : 'two or more tokens have that label: revoke by id',
      );
    }
    const id = (matches[0] as TokenInfo).id;
    const now = this.#now();
    const record = await this.#store.update(this.#keyOf(id), TokenRecordSchema, (prev) => {
      if (prev === undefined) throw new McpServerError('MCP_TOKEN_UNKNOWN', 'the token vanished');
      return prev.revokedAt === null ? { ...prev, revokedAt: new Date(now).toISOString() } : prev;
    });
    return infoOf(record, now);
  }

  /**
   * Checks a presented token against its record, read afresh: the grant when it is known, not
   * revoked and not expired, else why not. Constant time in the token's secret part.
   */
  async check(token: string): Promise<TokenGrant | TokenRefusal> {
    const match = TOKEN_PATTERN.exec(token);
    if (match === null) return 'malformed';
    const id = match[1] as string;
    const record = await this.#store.read(this.#keyOf(id), TokenRecordSchema);
    const presented = Buffer.from(sha256(token), 'hex');
    const expected = Buffer.from(record?.hash ?? '0'.repeat(64), 'hex');
    if (!timingSafeEqual(presented, expected) || record === undefined) return 'unknown';
    const now = this.#now();
    const status = statusOf(record, now);
    if (status !== 'active') return status;
    if (record.lastUsed === null || now - Date.parse(record.lastUsed) >= this.#touchEveryMs) {
      await this.#touch(id, now);
    }
    return {
      info: infoOf(record, now),
      apiKey: () => {
        try {
          const decipher = createDecipheriv(
            'aes-256-gcm',
            this.#key,
            Buffer.from(record.apiKey.iv, 'base64url'),
          );
          decipher.setAAD(this.#aad(record.id, record.userId));
          decipher.setAuthTag(Buffer.from(record.apiKey.tag, 'base64url'));
          return Buffer.concat([
            decipher.update(Buffer.from(record.apiKey.data, 'base64url')),
            decipher.final(),
          ]).toString('utf8');
        } catch (err) {
          throw new McpServerError(
            'MCP_SECRET_KEY_MISMATCH',
            'ZULIP_SECRET_KEY does not decrypt the API key stored with this token: the key was changed, or the record altered. Restore the key, or issue the token again.',
            { cause: err },
          );
        }
      },
    };
  }

  async #touch(id: string, now: number): Promise<void> {
    await this.#store
      .update(this.#keyOf(id), TokenRecordSchema, (prev) => {
        if (prev === undefined) throw new McpServerError('MCP_TOKEN_UNKNOWN', 'the token vanished');
        return { ...prev, lastUsed: new Date(now).toISOString() };
      })
      .catch(() => undefined);
  }
}

/** The id part of a well-formed token, or undefined. */
export function tokenIdOf(token: string): string | undefined {
  return TOKEN_PATTERN.exec(token)?.[1];
}

/** Parses an expiry: `never`, a duration (`90d`, `12h`, `30m`) from now, or an ISO date. */
export function parseExpiry(raw: string, now: number): Date | null | undefined {
  const text = raw.trim();
  if (text === 'never') return null;
  const duration = /^(\d{1,5})([mhd])$/.exec(text);
  if (duration !== null) {
    const unit = { m: 60_000, h: 3_600_000, d: 86_400_000 }[duration[2] as 'm' | 'h' | 'd'];
    return new Date(now + Number(duration[1]) * unit);
  }
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    const at = Date.parse(text);
    return Number.isNaN(at) ? undefined : new Date(at);
  }
  return undefined;
}
