import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { Credentials } from '@zmcp/core';
import { listenTcp, NdjsonTransport, type TcpListener } from '@zmcp/mcpl';
import { helpText, type McplConfig, parseConfig } from './config.js';
import { type DemoRealm, startDemoRealm } from './demo.js';
import { McplServerError } from './errors.js';
import { createLogger, type Logger } from './logging.js';
import { createZulipMcpl, type ZulipMcpl } from './runtime.js';
import { packageVersion } from './version.js';

/** Streams and hooks of one run of {@link main}; each defaults to the process's own. */
export interface MainIo {
  stdin?: Readable | undefined;
  stdout?: Writable | undefined;
  stderr?: Writable | undefined;
  /** Aborting it shuts the server down cleanly (the CLI aborts it on SIGINT/SIGTERM). */
  shutdown?: AbortSignal | undefined;
  /** Called once serving: on stdio, or with the TCP port bound. */
  onReady?: ((info: { transport: 'stdio' } | { transport: 'tcp'; port: number }) => void) | undefined;
}

const BIN = 'zulip-mcpl';

/** Library codes that mean the configuration is wrong, not the run. */
const CONFIG_CODES = new Set([
  'CORE_CONFIG_INVALID',
  'CORE_INSECURE_URL',
  'CORE_UNAUTHORIZED',
  'UPLOAD_CONFIG_INVALID',
  'UPLOAD_ROOT_MISSING',
  'DELIVERY_FILTERS_INVALID',
  'DELIVERY_INVALID_SESSION_ID',
]);

function aborted(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal === undefined) return;
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

async function serveStdio(app: ZulipMcpl, io: MainIo, logger: Logger): Promise<string> {
  const stdin = io.stdin ?? process.stdin;
  const transport = new NdjsonTransport(stdin, io.stdout ?? process.stdout);
  const session = await app.serve(transport);
  logger.info('serving MCPL on stdio');
  io.onReady?.({ transport: 'stdio' });
  return new Promise<string>((resolve) => {
    session.on('close', () => resolve('the host closed the connection'));
    stdin.once('end', () => resolve('stdin ended'));
    void aborted(io.shutdown).then(() => resolve('shutdown requested'));
  });
}

async function serveTcp(app: ZulipMcpl, port: number, io: MainIo, logger: Logger): Promise<string> {
  let listener: TcpListener;
  try {
    listener = await listenTcp({
      port,
      host: '127.0.0.1',
      onConnection: (transport) => void app.serve(transport),
    });
  } catch (err) {
    throw new McplServerError('MCPL_SERVER_LISTEN_FAILED', `cannot listen on 127.0.0.1:${port}`, {
      cause: err,
    });
  }
  logger.info('serving MCPL on TCP, one connection at a time', { host: listener.host, port: listener.port });
  io.onReady?.({ transport: 'tcp', port: listener.port });
  await aborted(io.shutdown);
  await listener.close();
  return 'shutdown requested';
}

/**
 * Runs the `zulip-mcpl` command: parses `argv` and `env`, prints help or the version, or builds
 * the server and serves it on stdio (default) or on one loopback TCP connection at a time
 * (`--tcp`), until the host goes away or `io.shutdown` fires. Resolves with the exit code: 0 on a
 * clean run, 1 when start-up fails, 2 on a bad configuration. Only help, the version and the
 * protocol go to stdout.
 */
export async function main(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  io: MainIo = {},
): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  if (argv.includes('--help') || argv.includes('-h')) {
    stdout.write(helpText());
    return 0;
  }
  if (argv.includes('--version') || argv.includes('-V')) {
    stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  let config: McplConfig;
  try {
    config = parseConfig(env, argv);
  } catch (err) {
    if (err instanceof McplServerError) {
      stderr.write(`${BIN}: ${err.message}\nRun ${BIN} --help for every setting.\n`);
      return 2;
    }
    throw err;
  }
  const write = (line: string) => void stderr.write(line);
  let logger = createLogger({ level: config.logLevel, secrets: [config.zulip.apiKey], write });
  let demo: DemoRealm | undefined;
  let demoState: string | undefined;
  let app: ZulipMcpl | undefined;
  try {
    let credentials: Credentials | undefined;
    if (config.demo) {
      demo = await startDemoRealm();
      demoState = await mkdtemp(join(tmpdir(), 'zulip-mcpl-demo-'));
      credentials = { site: demo.site, email: demo.email, apiKey: demo.apiKey, source: { kind: 'env' } };
      config = {
        ...config,
        stateDir: demoState,
        filtersFile: undefined,
        // The demo's DMs and private streams are part of the tour.
        privateStreams: '__ALL__',
      };
      logger.info('demo realm started', { site: demo.site, bot: demo.email, messages: demo.messageCount });
    }
    try {
      app = await createZulipMcpl({ config, logger, credentials });
    } catch (err) {
      const code = (err as { code?: unknown } | null)?.code;
      if (typeof code === 'string' && CONFIG_CODES.has(code)) {
        const message = (err as Error).message.split(config.zulip.apiKey ?? '\u0000').join('[REDACTED]');
        stderr.write(
          `${BIN}: Invalid configuration:\n  ${message} (${code})\nRun ${BIN} --help for every setting.\n`,
        );
        return 2;
      }
      throw err;
    }
    logger = createLogger({
      level: config.logLevel,
      secrets: [config.zulip.apiKey, credentials?.apiKey],
      write,
    });
    const why =
      config.tcpPort === undefined
        ? await serveStdio(app, io, logger)
        : await serveTcp(app, config.tcpPort, io, logger);
    logger.info('shutting down', { why });
    return 0;
  } catch (err) {
    logger.error('fatal', { err });
    return 1;
  } finally {
    await app?.close().catch((err: unknown) => logger.warn('error while closing', { err }));
    await demo?.close().catch(() => undefined);
    if (demoState !== undefined) await rm(demoState, { recursive: true, force: true }).catch(() => undefined);
  }
}
