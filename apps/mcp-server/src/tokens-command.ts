import { readFile } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { createLogger, ExitCode, reportInvalidConfiguration, startupConfigurationProblem } from '@zmcp/cli';
import { errorCode } from '@zmcp/core';
import { openZulipRuntime, stateUrlSecrets, type ZulipRuntime } from '@zmcp/server-kit';
import { AuditLog, readAuditLog } from './audit.js';
import { type CommandIo, commandConfig, outputsOf, readText } from './command-io.js';
import type { Config } from './config.js';
import { McpServerError } from './errors.js';
import { loadRealmConfigs } from './realms.js';
import {
  type RealmTokenInfo,
  realmsAdmin,
  type TokenAdmin,
  type TokenRequest,
  tokenAdmin,
  tokenToolsets,
} from './token-admin.js';
import { parseExpiry, TokenRegistry, type WriteAs } from './tokens.js';

// `zulip-mcp tokens create|list|revoke` and `zulip-mcp audit`: the operator's side of hosting the
// server for an organization. They read the server's own settings (the bot's account, the state
// directory, ZULIP_SECRET_KEY), so they act on the tokens the server checks.

export const tokensUsage = `Usage:
  zulip-mcp tokens create --label <label> --email <person's email> (--api-key-file <file> | --api-key-stdin)
                          [--expires <90d|12h|2027-01-31|never>] [--toolsets <list|default|all>]
                          [--write-as <bot|person|none>] [--realm <realm URL, with ZMCP_REALMS_FILE>]
  zulip-mcp tokens list [--json]
  zulip-mcp tokens revoke <id or label>
  zulip-mcp audit [--last <n>]

The person's API key is read from a file or stdin, never from the command line. The new token is
printed once on stdout; only its hash is kept. Settings as for the server (ZULIP_SECRET_KEY, the
bot's account, ZULIP_STATE_DIR).`;

/** Flags of a subcommand: `--name value` pairs and bare `--switch`es, then positionals. */
function parseFlags(
  argv: readonly string[],
  switches: readonly string[],
): { flags: Map<string, string>; rest: string[] } {
  const flags = new Map<string, string>();
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith('--')) {
      rest.push(arg);
      continue;
    }
    if (arg === '--api-key' || arg.startsWith('--api-key=')) {
      throw new McpServerError(
        'MCP_TOKEN_INVALID',
        'an API key is never taken on the command line (other users can read it there): use --api-key-file or --api-key-stdin',
      );
    }
    if (switches.includes(arg)) {
      flags.set(arg, 'true');
      continue;
    }
    const value = argv[i + 1];
    if (value === undefined) throw new McpServerError('MCP_TOKEN_INVALID', `${arg} needs a value`);
    flags.set(arg, value);
    i++;
  }
  return { flags, rest };
}

function describe(info: RealmTokenInfo, multiRealm: boolean): string {
  return [
    info.id,
    info.status,
    JSON.stringify(info.label),
    `user=${info.userId}`,
    `email=${JSON.stringify(info.email)}`,
    `write-as=${info.writeAs}`,
    `toolsets=${info.toolsets.join(',')}`,
    `expires=${info.expiresAt ?? 'never'}`,
    `last-used=${info.lastUsed ?? 'never'}`,
    ...(multiRealm ? [`realm=${info.realm}`] : []),
  ].join('  ');
}

/** The settings of the server these tokens are for (`zulip-mcp --http`), or the exit code of bad ones. */
function settingsOf(env: Readonly<Record<string, string | undefined>>, stderr: Writable): Config | number {
  return commandConfig('zulip-mcp tokens', env, ['--http'], stderr);
}

/**
 * Runs `zulip-mcp tokens <create|list|revoke>`. Resolves with the exit code: 0 when done, 2 for a
 * bad setting or flag, 1 when the realm refused (a key that is not the person's) or the state
 * could not be read.
 */
export async function tokensMain(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  io: CommandIo = {},
): Promise<number> {
  const { stdout, stderr } = outputsOf(io);
  const [sub, ...args] = argv;
  if (sub === undefined || sub === '--help' || !['create', 'list', 'revoke'].includes(sub)) {
    (sub === undefined || sub === '--help' ? stdout : stderr).write(`${tokensUsage}\n`);
    return sub === undefined || sub === '--help' ? ExitCode.ok : ExitCode.configuration;
  }
  const config = settingsOf(env, stderr);
  if (typeof config === 'number') return config;
  const logger = createLogger({
    level: config.logLevel,
    secrets: [config.zulip.apiKey, env.ZULIP_SECRET_KEY, ...stateUrlSecrets(config.stateUrl)],
    write: (line) => void stderr.write(line),
  });
  if (config.http.secretKey === undefined) {
    return reportInvalidConfiguration(stderr, 'zulip-mcp tokens', [
      'ZULIP_SECRET_KEY: is required to issue, list or revoke tokens (openssl rand -base64 32); give the server the same key',
    ]);
  }
  let request: { flags: Map<string, string>; rest: string[] };
  try {
    request = parseFlags(args, ['--json', '--api-key-stdin']);
  } catch (err) {
    stderr.write(`zulip-mcp tokens: ${(err as Error).message}\n`);
    return ExitCode.configuration;
  }
  const { flags, rest } = request;
  const runtimes: ZulipRuntime[] = [];
  try {
    // Each realm's bot account names the state the server keeps for it: read with GET requests only.
    const audit = new AuditLog({ path: config.http.auditLog, maxBytes: config.http.auditMaxBytes });
    const realmConfigs = [
      config,
      ...(config.http.realmsFile === undefined ? [] : await loadRealmConfigs(config.http.realmsFile, config)),
    ];
    const admins: TokenAdmin[] = [];
    for (const realmConfig of realmConfigs) {
      const runtime = await openZulipRuntime({
        settings: {
          ...realmConfig,
          readOnly: true,
          admissionList: undefined,
          privateStreams: undefined,
          writeStreams: undefined,
        },
        logger,
      });
      runtimes.push(runtime);
      const registry = new TokenRegistry({
        store: runtime.store,
        account: runtime.account,
        secretKey: config.http.secretKey,
      });
      admins.push(tokenAdmin({ registry, config: realmConfig, site: runtime.client.site, audit, logger }));
    }
    const admin = realmsAdmin(admins);
    if (sub === 'list') {
      const tokens = await admin.list();
      stdout.write(
        flags.has('--json')
          ? `${JSON.stringify(tokens, null, 2)}\n`
          : tokens.length === 0
            ? 'no tokens\n'
            : `${tokens.map((t) => describe(t, admins.length > 1)).join('\n')}\n`,
      );
      return ExitCode.ok;
    }
    if (sub === 'revoke') {
      const which = rest[0];
      if (which === undefined)
        throw new McpServerError('MCP_TOKEN_INVALID', 'revoke needs a token id or label');
      const info = await admin.revoke(which, 'cli');
      stdout.write(`revoked ${describe(info, admins.length > 1)}\n`);
      return ExitCode.ok;
    }
    const label = flags.get('--label');
    const email = flags.get('--email');
    if (label === undefined || email === undefined) {
      throw new McpServerError('MCP_TOKEN_INVALID', 'create needs --label and --email');
    }
    const keyFile = flags.get('--api-key-file');
    if ((keyFile === undefined) === !flags.has('--api-key-stdin')) {
      throw new McpServerError(
        'MCP_TOKEN_INVALID',
        'give the person’s API key with one of --api-key-file or --api-key-stdin',
      );
    }
    const apiKey = (
      keyFile === undefined ? await readText(io.stdin ?? process.stdin) : await readFile(keyFile, 'utf8')
    ).trim();
    if (!/^[\x21-\x7e]{8,200}$/.test(apiKey)) {
      throw new McpServerError(
        'MCP_TOKEN_INVALID',
        'the API key read is empty or not one line of printable characters',
      );
    }
    const expiresAt = parseExpiry(flags.get('--expires') ?? '90d', Date.now());
    if (expiresAt === undefined) {
      throw new McpServerError(
        'MCP_TOKEN_INVALID',
        '--expires takes never, a duration (90d, 12h, 30m) or a date (2027-01-31)',
      );
    }
    const writeAs = flags.get('--write-as') ?? 'bot';
    if (!['bot', 'person', 'none'].includes(writeAs)) {
      throw new McpServerError('MCP_TOKEN_INVALID', '--write-as takes bot, person or none');
    }
    const spec: TokenRequest & { realm?: string | undefined } = {
      label,
      email,
      apiKey,
      expiresAt,
      toolsets: tokenToolsets(flags.get('--toolsets')),
      writeAs: writeAs as WriteAs,
      realm: flags.get('--realm'),
    };
    const { token, info } = await admin.create(spec, 'cli');
    stderr.write(
      `created ${describe(info, admins.length > 1)}\nThe token follows on stdout; it is shown only now.\n`,
    );
    stdout.write(`${token}\n`);
    return ExitCode.ok;
  } catch (err) {
    const code = errorCode(err);
    if (code === 'MCP_TOKEN_INVALID' || code === 'MCP_TOKEN_UNKNOWN') {
      stderr.write(`zulip-mcp tokens: ${(err as Error).message}\n`);
      return ExitCode.configuration;
    }
    const problem = startupConfigurationProblem(err);
    if (problem !== undefined) return reportInvalidConfiguration(stderr, 'zulip-mcp tokens', [problem]);
    logger.error('zulip-mcp tokens failed', { code: code ?? 'UNKNOWN', err });
    return ExitCode.failure;
  } finally {
    await Promise.allSettled(runtimes.map((r) => r.close()));
  }
}

/** Runs `zulip-mcp audit [--last n]`: prints the audit log's last lines (JSON, oldest first). */
export async function auditMain(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  io: CommandIo = {},
): Promise<number> {
  const { stdout, stderr } = outputsOf(io);
  const config = settingsOf(env, stderr);
  if (typeof config === 'number') return config;
  const lastIndex = argv.indexOf('--last');
  const last = lastIndex === -1 ? 100 : Number(argv[lastIndex + 1]);
  if (!Number.isSafeInteger(last) || last < 1) {
    stderr.write('zulip-mcp audit: --last takes a positive number\n');
    return ExitCode.configuration;
  }
  const lines = await readAuditLog(config.http.auditLog, last);
  stdout.write(lines.length === 0 ? '' : `${lines.join('\n')}\n`);
  return ExitCode.ok;
}
