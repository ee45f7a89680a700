import { errorCode, type Logger, learnSecret } from '@zmcp/core';
import { openZulipRuntime } from '@zmcp/server-kit';
import { parseToolsets, type Toolset } from '@zmcp/tools';
import type { AuditLog } from './audit.js';
import type { Config } from './config.js';
import { McpServerError } from './errors.js';
import type { TokenInfo, TokenRegistry, WriteAs } from './tokens.js';

/** What an administrator asks for when issuing a token (the CLI's flags, the admin API's body). */
export interface TokenRequest {
  label: string;
  /** The person's Zulip email; the API key must be theirs. */
  email: string;
  /** The person's Zulip API key (read from stdin or a file, never argv). */
  apiKey: string;
  /** `never`, a duration (`90d`) or an ISO date. */
  expiresAt: Date | null;
  toolsets: readonly Toolset[];
  writeAs: WriteAs;
}

/** The token operations of one realm and bot, shared by `zulip-mcp tokens` and the admin API. */
export interface TokenAdmin {
  readonly registry: TokenRegistry;
  /** The realm's URL, as its client names it. */
  readonly site: string;
  /** Checks the person's key against the realm (it must be the account of `email`), then issues a token. */
  create(request: TokenRequest, via: 'cli' | 'http'): Promise<{ token: string; info: TokenInfo }>;
  list(): Promise<TokenInfo[]>;
  revoke(idOrLabel: string, via: 'cli' | 'http'): Promise<TokenInfo>;
}

/** Reads a `--toolsets` value: a toolset list, `default` or `all`. */
export function tokenToolsets(raw: string | undefined): Toolset[] {
  try {
    return parseToolsets(raw);
  } catch (err) {
    throw new McpServerError('MCP_TOKEN_INVALID', err instanceof Error ? err.message : 'bad toolsets', {
      cause: err,
    });
  }
}

/**
 * The token operations over a registry: a new token's key is checked first by opening the
 * person's runtime read-only (the one spine: GET requests only), so a token is only ever issued
 * for the account the key belongs to. Every operation goes to the audit log.
 */
export function tokenAdmin(options: {
  registry: TokenRegistry;
  config: Config;
  site: string;
  audit: AuditLog;
  logger: Logger;
}): TokenAdmin {
  const { registry, config, audit, logger } = options;
  /**
   * Runs one token operation and writes its audit line whatever the outcome: `ok` or the error's
   * code, and the token it acted on once `run` has named it through `acted`.
   */
  async function audited<T>(
    action: 'token.create' | 'token.revoke',
    via: 'cli' | 'http',
    run: (acted: (info: TokenInfo) => void) => Promise<T>,
  ): Promise<T> {
    let outcome = 'ok';
    let token: TokenInfo | undefined;
    try {
      return await run((info) => {
        token = info;
      });
    } catch (err) {
      outcome = errorCode(err) ?? 'failed';
      throw err;
    } finally {
      await audit
        .record({
          kind: 'admin',
          action,
          outcome,
          via,
          realm: options.site,
          ...(token === undefined
            ? {}
            : { token: { id: token.id, label: token.label }, userId: token.userId }),
        })
        .catch((err: unknown) => logger.error('could not write the audit log', { err }));
    }
  }
  return {
    registry,
    site: options.site,
    async create(request, via) {
      // The person's key (from the admin API's body or the command's stdin) is never logged.
      learnSecret(logger, request.apiKey);
      return audited('token.create', via, async (acted) => {
        const person = await openZulipRuntime({
          settings: {
            ...config,
            readOnly: true,
            privateStreams: undefined,
            writeStreams: undefined,
            admissionList: undefined,
          },
          credentials: {
            site: options.site,
            email: request.email,
            apiKey: request.apiKey,
            source: { kind: 'env' },
          },
          logger,
        }).catch((err: unknown) => {
          if (errorCode(err) !== 'CORE_UNAUTHORIZED') throw err;
          throw new McpServerError(
            'MCP_TOKEN_INVALID',
            'Zulip refused that email and API key: the key must be the person’s own (their Zulip settings, Account & privacy, API key)',
            { cause: err },
          );
        });
        try {
          const identity = person.identity;
          if (identity.email.toLowerCase() !== request.email.trim().toLowerCase()) {
            throw new McpServerError(
              'MCP_TOKEN_INVALID',
              'the API key is not the key of that email’s account',
            );
          }
          const created = await registry.create({
            label: request.label,
            userId: identity.user_id,
            email: identity.email,
            fullName: identity.full_name,
            apiKey: request.apiKey,
            toolsets: request.toolsets,
            writeAs: request.writeAs,
            expiresAt: request.expiresAt,
          });
          acted(created.info);
          learnSecret(logger, created.token);
          return created;
        } finally {
          await person.close();
        }
      });
    },
    list: () => registry.list(),
    revoke: (idOrLabel, via) =>
      audited('token.revoke', via, async (acted) => {
        const revoked = await registry.revoke(idOrLabel);
        acted(revoked);
        return revoked;
      }),
  };
}

/** A token as the operator sees it on a server that fronts several realms: which realm it is of. */
export type RealmTokenInfo = TokenInfo & { realm: string };

/** The token operations of every realm a server fronts (the first is the primary realm). */
export interface RealmsAdmin {
  list(): Promise<RealmTokenInfo[]>;
  /** Issues a token on `realm` (its URL; default the primary realm). */
  create(
    request: TokenRequest & { realm?: string | undefined },
    via: 'cli' | 'http',
  ): Promise<{ token: string; info: RealmTokenInfo }>;
  /** Revokes the one token with this id or label, whichever realm it is of. */
  revoke(idOrLabel: string, via: 'cli' | 'http'): Promise<RealmTokenInfo>;
}

function sameSite(a: string, b: string): boolean {
  const norm = (s: string) => s.trim().replace(/\/+$/, '').toLowerCase();
  return norm(a) === norm(b);
}

/** The token operations over several realms' admins. */
export function realmsAdmin(admins: readonly TokenAdmin[]): RealmsAdmin {
  const list = async () =>
    (
      await Promise.all(admins.map(async (a) => (await a.list()).map((t) => ({ ...t, realm: a.site }))))
    ).flat();
  return {
    list,
    async create(request, via) {
      const admin =
        request.realm === undefined
          ? admins[0]
          : admins.find((a) => sameSite(a.site, request.realm as string));
      if (admin === undefined) {
        throw new McpServerError(
          'MCP_TOKEN_INVALID',
          `this server fronts no realm at that URL; it fronts ${admins.map((a) => a.site).join(', ')}`,
        );
      }
      const created = await admin.create(request, via);
      return { token: created.token, info: { ...created.info, realm: admin.site } };
    },
    async revoke(idOrLabel, via) {
      const matches = (await list()).filter((t) => t.id === idOrLabel || t.label === idOrLabel);
      const realms = new Set(matches.map((t) => t.realm));
      if (realms.size > 1) {
        throw new McpServerError('MCP_TOKEN_UNKNOWN', 'tokens of two realms have that label: revoke by id');
      }
      const admin = admins.find((a) => a.site === matches[0]?.realm) ?? admins[0];
      if (admin === undefined) throw new McpServerError('MCP_TOKEN_UNKNOWN', 'no realm is served');
      return { ...(await admin.revoke(idOrLabel, via)), realm: admin.site };
    },
  };
}
