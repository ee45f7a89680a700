import type { Readable, Writable } from 'node:stream';
import { type BinMain, defineMain, waitForAbort } from '@zmcp/cli';
import type { Logger } from '@zmcp/core';
import { listenTcp, NdjsonTransport, type TcpListener } from '@zmcp/mcpl';
import { runServer } from '@zmcp/server-kit';
import { binName, helpText, type McplConfig, parseConfig } from './config.js';
import { McplServerError } from './errors.js';
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
function serve(config: McplConfig, io: MainIo): Promise<number> {
  return runServer({
    bin: binName,
    config,
    stderr: io.stderr ?? process.stderr,
    demo: {
      realmName: 'zulip-mcpl demo',
      // The demo's DMs and private streams are part of the tour.
      configure: (demo) => ({ ...demo, filtersFile: undefined, privateStreams: '__ALL__' }),
    },
    version: packageVersion(),
    open: ({ config, logger, credentials, console }) =>
      createZulipMcpl({ config, logger, credentials, console }),
    serve: async (app, { config, logger }) => {
      const why =
        config.tcpPort === undefined
          ? await serveStdio(app, io, logger)
          : await serveTcp(app, config.tcpPort, io, logger);
      logger.info('shutting down', { why });
    },
  });
}
