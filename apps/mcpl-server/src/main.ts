import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import {
  type BinMain,
  createLogger,
  createRedactor,
  defineMain,
  ExitCode,
  reportInvalidConfiguration,
  startupConfigurationProblem,
  waitForAbort,
} from '@zmcp/cli';
import type { CredentialSource, Credentials, Logger } from '@zmcp/core';
import { listenTcp, NdjsonTransport, type TcpListener } from '@zmcp/mcpl';
import { binName, helpText, type McplConfig, parseConfig } from './config.js';
import { type DemoRealm, startDemoRealm } from './demo.js';
import { McplServerError } from './errors.js';
import { createZulipMcpl, loadConfiguredCredentials, type ZulipMcpl } from './runtime.js';
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

async function serveStdio(app: ZulipMcpl, io: MainIo, logger: Logger): Promise<string> {
  const stdin = io.stdin ?? process.stdin;
  const transport = new NdjsonTransport(stdin, io.stdout ?? process.stdout);
  const session = await app.serve(transport);
  logger.info('serving MCPL on stdio');
  io.onReady?.({ transport: 'stdio' });
  return new Promise<string>((resolve) => {
    session.on('close', () => resolve('the host closed the connection'));
    stdin.once('end', () => resolve('stdin ended'));
    void waitForAbort(io.shutdown).then(() => resolve('shutdown requested'));
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
  await waitForAbort(io.shutdown);
  await listener.close();
  return 'shutdown requested';
}

/**
 * Runs the `zulip-mcpl` command: parses `argv` and `env`, prints help or the version, or builds
 * the server and serves it on stdio (default) or on one loopback TCP connection at a time
 * (`--tcp`), until the host goes away or `io.shutdown` fires. Resolves with the exit code: 0 on a
 * clean run, 1 when start-up fails, 2 on a bad configuration (a bad variable or flag, missing or
 * refused credentials, a missing upload root, an invalid filters file). Only help, the version
 * and the protocol go to stdout.
 */
export const main: BinMain<MainIo> = defineMain({
  bin: binName,
  help: helpText,
  version: packageVersion,
  configure: parseConfig,
  run: serve,
});

/** Builds the server for a valid configuration and serves it until the host goes away. */
async function serve(config: McplConfig, io: MainIo): Promise<number> {
  const stderr = io.stderr ?? process.stderr;
  const write = (line: string) => void stderr.write(line);
  let logger = createLogger({ level: config.logLevel, secrets: [config.zulip.apiKey], write });
  let demo: DemoRealm | undefined;
  let demoState: string | undefined;
  let app: ZulipMcpl | undefined;
  // A configuration problem found while building: the same report and exit code as a bad variable.
  const misconfigured = (
    err: unknown,
    secrets: readonly (string | undefined)[],
    source?: CredentialSource,
  ) => {
    const problem = startupConfigurationProblem(err, source);
    if (problem === undefined) throw err;
    return reportInvalidConfiguration(stderr, binName, [problem], createRedactor(secrets));
  };
  try {
    let credentials: Credentials;
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
    } else {
      try {
        credentials = await loadConfiguredCredentials(config);
      } catch (err) {
        return misconfigured(err, [config.zulip.apiKey]);
      }
    }
    // From here on the key is known wherever it came from (a zuliprc included), and redacted.
    const secrets = [config.zulip.apiKey, credentials.apiKey];
    logger = createLogger({ level: config.logLevel, secrets, write });
    try {
      app = await createZulipMcpl({ config, logger, credentials });
    } catch (err) {
      return misconfigured(err, secrets, credentials.source);
    }
    const why =
      config.tcpPort === undefined
        ? await serveStdio(app, io, logger)
        : await serveTcp(app, config.tcpPort, io, logger);
    logger.info('shutting down', { why });
    return ExitCode.ok;
  } catch (err) {
    logger.error('fatal', { err });
    return ExitCode.failure;
  } finally {
    await app?.close().catch((err: unknown) => logger.warn('error while closing', { err }));
    await demo?.close().catch(() => undefined);
    if (demoState !== undefined) await rm(demoState, { recursive: true, force: true }).catch(() => undefined);
  }
}
