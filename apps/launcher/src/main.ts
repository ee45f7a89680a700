import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import {
  type BinMain,
  createLogger,
  createRedactor,
  defineMain,
  ExitCode,
  homeDirectory,
  reportInvalidConfiguration,
  startupConfigurationProblem,
  waitForAbort,
} from '@zmcp/cli';
import { type CredentialSource, loadCredentials } from '@zmcp/core';
import { isDeliveryError, readBoundedFile } from '@zmcp/delivery';
import { binName, helpText, type LauncherConfig, parseConfig } from './config.js';
import { type DemoRealm, startDemoRealm } from './demo.js';
import { isLauncherError, LauncherError } from './errors.js';
import { createLauncher, type Launcher, type LauncherEvent } from './launcher.js';
import {
  loadServerEntry,
  MAX_SETTINGS_FILE_BYTES,
  type McpServerEntry,
  parseServerEntry,
  whyUnreadable,
} from './mcp-config.js';
import { packageVersion } from './version.js';

/** Streams and hooks of one run of {@link main}; each defaults to the process's own. */
export interface MainIo {
  stdout?: Writable | undefined;
  stderr?: Writable | undefined;
  /** Aborting it shuts the launcher down cleanly (the CLI aborts it on SIGINT/SIGTERM). */
  shutdown?: AbortSignal | undefined;
  /** Called once the launcher listens. */
  onReady?: ((info: { launcher: Launcher; demo: { site: string } | undefined }) => void) | undefined;
  /** Every launcher event (see `LauncherEvent`). */
  onEvent?: ((event: LauncherEvent) => void) | undefined;
}

/** The variable the demo's zulip server entry reads its API key from. */
const DEMO_KEY_VARIABLE = 'ZULIP_AGENT_DEMO_API_KEY';

/**
 * The line a configuration mistake is reported with (a bad setting, `.mcp.json`, zuliprc, or
 * credentials Zulip refuses, by the rule every bin shares); undefined for any other failure.
 * They exit with 2.
 */
function configurationProblem(err: unknown, source: CredentialSource | undefined): string | undefined {
  if (
    isLauncherError(
      err,
      'LAUNCHER_CONFIG_INVALID',
      'LAUNCHER_MCP_CONFIG_INVALID',
      'LAUNCHER_ENV_REFERENCE',
      'LAUNCHER_BACKEND_UNSUPPORTED',
    )
  ) {
    return err.message;
  }
  return startupConfigurationProblem(err, source);
}

async function readPromptFile(path: string | undefined): Promise<string | undefined> {
  if (path === undefined) return undefined;
  try {
    return Buffer.from(await readBoundedFile(path, MAX_SETTINGS_FILE_BYTES)).toString('utf8');
  } catch (err) {
    throw new LauncherError(
      'LAUNCHER_CONFIG_INVALID',
      `ZULIP_AGENT_SYSTEM_PROMPT_FILE: cannot read ${path} (${whyUnreadable(err)})`,
      { cause: err, details: { problems: ['ZULIP_AGENT_SYSTEM_PROMPT_FILE'] } },
    );
  }
}

/** The demo's zulip server: the configured entry if there is one, else `npx @zmcp/mcp-server`, pointed at the demo realm. */
async function demoServer(config: LauncherConfig, demo: DemoRealm): Promise<McpServerEntry> {
  const base = existsSync(config.mcpConfigPath)
    ? await loadServerEntry(config.mcpConfigPath, config.mcpServerName)
    : parseServerEntry({ command: 'npx', args: ['-y', '@zmcp/mcp-server'] });
  if (base.transport !== 'stdio') {
    return parseServerEntry({ command: 'npx', args: ['-y', '@zmcp/mcp-server'], env: demoEnv(demo) });
  }
  const env: Record<string, string> = { ...base.env, ...demoEnv(demo) };
  for (const name of ['ZULIP_REALM', 'ZULIP_RC_PATH']) delete env[name];
  return parseServerEntry({ ...base.raw, env });
}

function demoEnv(demo: DemoRealm): Record<string, string> {
  return { ZULIP_SITE: demo.site, ZULIP_EMAIL: demo.bot.email, ZULIP_API_KEY: `\${${DEMO_KEY_VARIABLE}}` };
}

/**
 * Runs the `zulip-agent` command: parses `argv` and `env`, prints help or the version, or builds
 * the launcher and runs it until `io.shutdown` fires (or its event queue fails for good), then
 * stops every agent. Resolves with the exit code: 0 after a clean shutdown, 1 when start-up or
 * the listener fails, 2 on a bad configuration (settings, `.mcp.json`, credentials).
 */
export const main: BinMain<MainIo> = defineMain({
  bin: binName,
  help: helpText,
  version: packageVersion,
  configure: (env, argv) => parseConfig(env, argv),
  run,
});

/** Builds the launcher for a valid configuration and runs it until shutdown. */
async function run(
  config: LauncherConfig,
  io: MainIo,
  env: Readonly<Record<string, string | undefined>>,
): Promise<number> {
  const stderr = io.stderr ?? process.stderr;
  // The secrets known so far: a key from a zuliprc joins them once it is read.
  let secrets: (string | undefined)[] = [config.zulip.apiKey];
  let source: CredentialSource | undefined;
  const makeLogger = () =>
    createLogger({ level: config.logLevel, secrets, write: (line) => void stderr.write(line) });
  let logger = makeLogger();

  let demo: DemoRealm | undefined;
  let launcher: Launcher | undefined;
  try {
    let zulip: { site: string; email: string; apiKey: string; allowInsecureHttp: boolean };
    let server: McpServerEntry;
    let agentEnv = env;
    let allowed = config.allowedUsers;
    let stateDir = config.stateDir;
    let logDir = config.logDir;
    if (config.demo) {
      demo = await startDemoRealm();
      zulip = { site: demo.site, email: demo.bot.email, apiKey: demo.bot.apiKey, allowInsecureHttp: false };
      server = await demoServer(config, demo);
      agentEnv = { ...env, [DEMO_KEY_VARIABLE]: demo.bot.apiKey };
      allowed ??= { userIds: demo.people, emails: [] };
      // The demo's record and logs are its own: a real launcher's state is never touched.
      stateDir = await mkdtemp(join(tmpdir(), 'zulip-agent-demo-'));
      logDir = join(stateDir, 'logs');
      logger.info('demo realm started', { site: demo.site, bot: demo.bot.email, stateDir });
    } else {
      const credentials = await loadCredentials({
        env: {
          ZULIP_SITE: config.zulip.site,
          ZULIP_EMAIL: config.zulip.email,
          ZULIP_API_KEY: config.zulip.apiKey,
          ZULIP_RC_PATH: config.zulip.rcPath,
        },
        homedir: homeDirectory(env),
      });
      source = credentials.source;
      zulip = {
        site: credentials.site,
        email: credentials.email,
        apiKey: credentials.apiKey,
        allowInsecureHttp: config.zulip.allowInsecureHttp,
      };
      // A key from a zuliprc is as secret as one from the environment.
      secrets = [config.zulip.apiKey, credentials.apiKey];
      logger = makeLogger();
      server = await loadServerEntry(config.mcpConfigPath, config.mcpServerName);
    }
    const promptFile = await readPromptFile(config.systemPromptFile);
    launcher = createLauncher({
      zulip,
      mcpServer: server,
      allowedUsers: allowed ?? { userIds: [], emails: [] },
      stateDir,
      logDir,
      backend: config.backend,
      streamBackends: config.streamBackends,
      backendArgs: config.backendArgs,
      codexToolApproval: config.codexToolApproval,
      systemPrompt: [config.systemPrompt, promptFile].filter((p) => p !== undefined).join('\n\n'),
      workdir: config.workdir,
      env: agentEnv,
      launcherId: config.launcherId,
      directMessages: config.directMessages,
      maxRunning: config.maxRunning,
      maxQueued: config.maxQueued,
      timeLimitMs: config.timeLimitMs,
      stopGraceMs: config.stopGraceMs,
      catchUpMs: config.catchUpMs,
      emoji: config.emoji,
      logger,
      onEvent: io.onEvent,
    });
    await launcher.start();
    if (demo !== undefined) {
      const id = demo.mention();
      logger.info('demo: a person mentioned the bot in #general > zulip-agent demo', {
        messageId: id,
        logDir,
      });
    }
    io.onReady?.({ launcher, demo: demo === undefined ? undefined : { site: demo.site } });
    const why = await Promise.race([
      waitForAbort(io.shutdown).then(() => 'shutdown requested' as const),
      launcher.failed.then(() => 'listener failed' as const),
    ]);
    logger.info('shutting down', { why });
    await launcher.close();
    return why === 'listener failed' ? ExitCode.failure : ExitCode.ok;
  } catch (err) {
    const problem = configurationProblem(err, source);
    if (problem !== undefined) {
      return reportInvalidConfiguration(stderr, binName, [problem], createRedactor(secrets));
    }
    if (isDeliveryError(err, 'DELIVERY_STATE_CORRUPT'))
      logger.error('the trigger record is unreadable', { err });
    else logger.error('fatal', { err });
    return ExitCode.failure;
  } finally {
    await launcher?.close().catch((err: unknown) => logger.warn('error while stopping', { err }));
    await demo?.close().catch((err: unknown) => logger.warn('error while stopping the demo realm', { err }));
  }
}
