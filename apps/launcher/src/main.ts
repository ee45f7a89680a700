import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { type BinMain, defineMain, waitForAbort } from '@zmcp/cli';
import { type Credentials, type Logger, mentionSyntax } from '@zmcp/core';
import { readBoundedFile } from '@zmcp/delivery';
import { type DemoRealm, runServer } from '@zmcp/server-kit';
import { binName, helpText, type LauncherConfig, parseConfig } from './config.js';
import { type LauncherConsole, launcherConsole } from './console.js';
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
/** Where the demo's scripted first mention is posted. */
const DEMO_STREAM = 'general';
const DEMO_TOPIC = 'zulip-agent demo';

/**
 * The launcher's own configuration mistakes (a bad `.mcp.json`, prompt file or option), reported
 * as a bad setting is, with exit code 2; the libraries' (credentials Zulip refuses, a zuliprc) are
 * recognised by `runServer` itself.
 */
function configurationProblem(err: unknown): string | undefined {
  return isLauncherError(
    err,
    'LAUNCHER_CONFIG_INVALID',
    'LAUNCHER_MCP_CONFIG_INVALID',
    'LAUNCHER_ENV_REFERENCE',
    'LAUNCHER_BACKEND_UNSUPPORTED',
  )
    ? err.message
    : undefined;
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
  return { ZULIP_SITE: demo.site, ZULIP_EMAIL: demo.email, ZULIP_API_KEY: `\${${DEMO_KEY_VARIABLE}}` };
}

/**
 * Runs the `zulip-agent` command: parses `argv` and `env`, prints help or the version, or builds
 * the launcher and runs it until `io.shutdown` fires (or its event queue fails for good), then
 * stops every agent. Start-up and shutdown are `@zmcp/server-kit`'s `runServer`, as for every zmcp
 * bin. Resolves with the exit code: 0 after a clean shutdown, 1 when start-up or the listener
 * fails, 2 on a bad configuration (settings, `.mcp.json`, credentials).
 */
export const main: BinMain<MainIo> = defineMain({
  bin: binName,
  help: helpText,
  version: packageVersion,
  configure: (env, argv) => parseConfig(env, argv),
  run,
});

/** Builds the launcher for a valid configuration and runs it until shutdown. */
function run(
  config: LauncherConfig,
  io: MainIo,
  env: Readonly<Record<string, string | undefined>>,
): Promise<number> {
  return runServer({
    bin: binName,
    config,
    stderr: io.stderr ?? process.stderr,
    demo: {
      realmName: 'zulip-agent demo',
      // The demo's people may call the bot; the agents' logs live with the demo's state.
      configure: (demoConfig, demo) => ({
        ...demoConfig,
        allowedUsers: demoConfig.allowedUsers ?? { userIds: demo.people, emails: [] },
        logDir: join(demoConfig.stateDir, 'logs'),
      }),
    },
    configurationProblem,
    version: packageVersion(),
    open: ({ config, credentials, logger, demo, console }) =>
      open(config, credentials, logger, demo, env, io, launcherConsole(console, credentials.site)),
    serve: (launcher, { config, logger, demo }) => serve(launcher, config, logger, demo, io),
  });
}

/** Validates what the launcher is handed (the server entry, the prompt file), then starts it. */
async function open(
  config: LauncherConfig,
  credentials: Credentials,
  logger: Logger,
  demo: DemoRealm | undefined,
  env: Readonly<Record<string, string | undefined>>,
  io: MainIo,
  panels: LauncherConsole,
): Promise<Launcher> {
  const server =
    demo === undefined
      ? await loadServerEntry(config.mcpConfigPath, config.mcpServerName)
      : await demoServer(config, demo);
  const promptFile = await readPromptFile(config.systemPromptFile);
  const launcher = createLauncher({
    zulip: { ...credentials, allowInsecureHttp: config.zulip.allowInsecureHttp },
    requestTimeoutMs: config.requestTimeoutMs,
    mcpServer: server,
    allowedUsers: config.allowedUsers ?? { userIds: [], emails: [] },
    stateDir: config.stateDir,
    stateUrl: config.stateUrl,
    logDir: config.logDir,
    backend: config.backend,
    streamBackends: config.streamBackends,
    backendArgs: config.backendArgs,
    codexToolApproval: config.codexToolApproval,
    systemPrompt: [config.systemPrompt, promptFile].filter((p) => p !== undefined).join('\n\n'),
    workdir: config.workdir,
    env: demo === undefined ? env : { ...env, [DEMO_KEY_VARIABLE]: demo.apiKey },
    launcherId: config.launcherId,
    directMessages: config.directMessages,
    approvals: config.approvals,
    progress: config.progress,
    progressIntervalMs: config.progressIntervalMs,
    maxRunning: config.maxRunning,
    maxQueued: config.maxQueued,
    timeLimitMs: config.timeLimitMs,
    stopGraceMs: config.stopGraceMs,
    workerLeaseMs: config.workerLeaseMs,
    catchUpMs: config.catchUpMs,
    emoji: config.emoji,
    logger,
    onEvent: (event) => {
      panels.onEvent(event);
      io.onEvent?.(event);
    },
  });
  // A failed start leaves nothing open.
  await launcher.start();
  panels.attach(launcher);
  return launcher;
}

/** Listens until shutdown is asked for; a listener that fails for good fails the run. */
async function serve(
  launcher: Launcher,
  config: LauncherConfig,
  logger: Logger,
  demo: DemoRealm | undefined,
  io: MainIo,
): Promise<void> {
  if (demo !== undefined) {
    const bot = mentionSyntax({ user_id: demo.botUserId, full_name: demo.botName });
    const messageId = demo.post({
      senderId: demo.people[0] as number,
      stream: DEMO_STREAM,
      topic: DEMO_TOPIC,
      content: `${bot} could you summarise what this stream talked about recently?`,
    });
    logger.info(`demo: a person mentioned the bot in #${DEMO_STREAM} > ${DEMO_TOPIC}`, {
      messageId,
      logDir: config.logDir,
    });
  }
  io.onReady?.({ launcher, demo: demo === undefined ? undefined : { site: demo.site } });
  const ended = await Promise.race([
    waitForAbort(io.shutdown).then(() => ({ why: 'shutdown requested' as const, err: undefined })),
    launcher.failed.then((err) => ({ why: 'listener failed' as const, err })),
  ]);
  logger.info('shutting down', { why: ended.why });
  // runServer logs it as fatal and exits 1, after closing the launcher.
  if (ended.why === 'listener failed') throw ended.err;
}
