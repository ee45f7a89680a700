import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createLogger,
  createRedactor,
  ExitCode,
  reportInvalidConfiguration,
  startupConfigurationProblem,
  type TextSink,
} from '@zmcp/cli';
import type { CredentialSource, Credentials, Logger } from '@zmcp/core';
import { OperatorConsole } from './console/console.js';
import { loadConfiguredCredentials } from './runtime.js';
import type { ServerSettings } from './settings.js';

/** A simulated, seeded Zulip realm on loopback, and the demo bot's credentials in it. */
export interface DemoRealm {
  /** Base URL of the realm, e.g. `http://127.0.0.1:40123`. */
  site: string;
  /** The demo bot's email. */
  email: string;
  /** The demo bot's API key (not a secret: the realm lives and dies with the process). */
  apiKey: string;
  /** How many messages the demo history holds. */
  messageCount: number;
  /** The demo bot's user id and name. */
  botUserId: number;
  botName: string;
  /** The user ids of the demo's people (not the bot), in the realm's order. */
  people: readonly number[];
  /** Posts a stream message as one of the demo's people (a demo's scripted first message); returns its id. */
  post(message: DemoPost): number;
  /** Stops the realm. */
  close(): Promise<void>;
}

/** A stream message {@link DemoRealm.post} sends. */
export interface DemoPost {
  /** One of {@link DemoRealm.people}. */
  senderId: number;
  stream: string;
  topic: string;
  content: string;
}

/**
 * Starts `@zmcp/zulip-sim` on a free loopback port with its demo data (people, public and private
 * streams, a few hundred messages, DMs, reactions, an upload) and returns the demo bot's
 * credentials. The simulator is loaded only when asked for.
 *
 * @throws SimError `SIM_LISTEN_FAILED` when no loopback port can be opened.
 */
export async function startDemoRealm(realmName: string): Promise<DemoRealm> {
  const { startDemoSim } = await import('@zmcp/zulip-sim');
  const { sim, demo } = await startDemoSim({ realmName });
  const { site, email, apiKey } = sim.credentials(demo.botId);
  return {
    site,
    email,
    apiKey,
    messageCount: demo.messageCount,
    botUserId: demo.botId,
    botName: sim.realm.user(demo.botId)?.fullName ?? email,
    people: Object.values(demo.users),
    post: ({ senderId, stream, topic, content }) =>
      sim.realm.sendMessage({ senderId, type: 'stream', stream, topic, content }),
    close: () => sim.close(),
  };
}

/** The realm as metrics label it: the site's host (and port). */
function realmLabel(site: string): string {
  try {
    return new URL(site).host;
  } catch {
    return site;
  }
}

/** What {@link runServer} hands a bin once the account is known. */
export interface ServerStart<C extends ServerSettings> {
  /** The configuration; with `--demo`, pointed at the demo realm and a temporary state directory. */
  config: C;
  /** The account's credentials: as configured, or the demo bot's. */
  credentials: Credentials;
  /** The bin's stderr logger, every secret known by now redacted (the key from a zuliprc too). */
  logger: Logger;
  /** With `--demo`, the demo realm (its people, a way to post as one of them); else undefined. */
  demo: DemoRealm | undefined;
  /**
   * The operator's console of this process: the bin adds its panels and metrics and reports long
   * work on it. Served (page and `/metrics`) when `config.status.port` is set; its `url` is then
   * logged (`status page`) before `open` runs.
   */
  console: OperatorConsole;
}

/** Options of {@link runServer}. */
export interface RunServerOptions<
  C extends ServerSettings & { demo: boolean },
  S extends { close(): Promise<void> },
> {
  /** The bin, as a configuration report names it. */
  bin: string;
  /** The bin's valid configuration. */
  config: C;
  /** Where the log and a configuration report go. */
  stderr: TextSink;
  /** The bin's own secrets (an HTTP token): redacted from the first log line on (the status token is already). */
  secrets?: readonly (string | undefined)[] | undefined;
  /** The bin's version, as the status page shows it. */
  version?: string | undefined;
  /**
   * `--demo`: the demo realm's name, and what else the demo changes in the bin's configuration
   * (the account and a temporary state directory are changed already).
   */
  demo: { realmName: string; configure?: ((config: C, demo: DemoRealm) => C) | undefined };
  /**
   * The bin's own errors that mean its configuration is wrong (a file it reads, say): the line to
   * report for one, `undefined` for anything else. Reported as the libraries' are, with exit code 2.
   */
  configurationProblem?: ((err: unknown) => string | undefined) | undefined;
  /**
   * Opens what the bin serves (over {@link openZulipRuntime}). A thrown error that means the
   * configuration is wrong (cli's `startupConfigurationProblem`, or the bin's
   * `configurationProblem`) is reported as one.
   */
  open(start: ServerStart<C>): Promise<S>;
  /** Serves what `open` gave until the run ends (the client went away, shutdown was asked for). */
  serve(served: S, start: ServerStart<C>): Promise<void>;
}

/**
 * Runs one server process from a valid configuration, the way every zmcp server does: the
 * credentials (loaded as configured, or a demo realm's with `--demo`, whose state lives in a
 * temporary directory removed at the end), a logger that redacts every secret known, `open`, then
 * `serve`, then everything closed. Resolves with the exit code: `0` after a clean run; `2` when the
 * credentials, or what `open` threw, mean the configuration is wrong (reported on `stderr` as a bad
 * variable is, no secret shown); `1` for any other failure (logged as `fatal`).
 */
export async function runServer<
  C extends ServerSettings & { demo: boolean },
  S extends { close(): Promise<void> },
>(options: RunServerOptions<C, S>): Promise<number> {
  const { bin, stderr } = options;
  let config = options.config;
  const write = (line: string) => void stderr.write(line);
  // The configured key stays redacted after --demo points the configuration at the demo bot.
  const configured = [
    options.config.zulip.apiKey,
    options.config.status.token,
    ...stateUrlSecrets(options.config.stateUrl),
    ...(options.secrets ?? []),
  ];
  // One redactor for every logger of the run and the status page: a secret learnt while serving
  // (`logger.redact`, a person's key or token) is hidden everywhere from then on.
  const redactor = createRedactor(configured);
  let logger: Logger = createLogger({ level: config.logLevel, redactor, write });
  // A configuration problem found while opening: the same report and exit code as a bad variable.
  const misconfigured = (
    err: unknown,
    secrets: readonly (string | undefined)[],
    source?: CredentialSource,
  ): number => {
    const problem = options.configurationProblem?.(err) ?? startupConfigurationProblem(err, source);
    if (problem === undefined) throw err;
    return reportInvalidConfiguration(stderr, bin, [problem], createRedactor(secrets));
  };

  let served: S | undefined;
  let operatorConsole: OperatorConsole | undefined;
  let demo: DemoRealm | undefined;
  let demoStateDir: string | undefined;
  try {
    let credentials: Credentials;
    if (config.demo) {
      demo = await startDemoRealm(options.demo.realmName);
      if (config.zulip.site !== undefined || config.zulip.rcPath !== undefined) {
        logger.warn('--demo ignores the configured Zulip credentials');
      }
      credentials = { site: demo.site, email: demo.email, apiKey: demo.apiKey, source: { kind: 'env' } };
      // The demo realm lives and dies with the process: its state does too, apart from any real realm's.
      demoStateDir = await mkdtemp(join(tmpdir(), `${bin}-demo-state-`));
      config = {
        ...config,
        zulip: {
          site: demo.site,
          email: demo.email,
          apiKey: demo.apiKey,
          rcPath: undefined,
          allowInsecureHttp: false,
        },
        stateDir: demoStateDir,
        stateDirSource: 'setting',
        stateUrl: undefined,
      };
      config = options.demo.configure?.(config, demo) ?? config;
      logger.info('demo realm started', {
        site: demo.site,
        bot: demo.email,
        messages: demo.messageCount,
        stateDir: demoStateDir,
      });
    } else {
      try {
        credentials = await loadConfiguredCredentials(config);
      } catch (err) {
        return misconfigured(err, configured);
      }
    }
    // From here on the key is known wherever it came from (a zuliprc included) and is redacted.
    const secrets = [
      ...configured,
      credentials.apiKey,
      Buffer.from(`${credentials.email}:${credentials.apiKey}`).toString('base64'),
    ];
    logger = createLogger({ level: config.logLevel, secrets, redactor, write });
    operatorConsole = new OperatorConsole({
      bin,
      version: options.version,
      labels: { realm: realmLabel(credentials.site), bot: credentials.email },
      stderr: stderr as { write(text: string): unknown; isTTY?: boolean },
      logger,
      redact: redactor,
    });
    if (config.status.port !== undefined) {
      const url = await operatorConsole.listen({
        port: config.status.port,
        host: config.status.host,
        token: config.status.token,
      });
      logger.info('status page', {
        url,
        ...(config.status.token === undefined
          ? {}
          : { auth: 'bearer token, or open /?token=<ZMCP_STATUS_TOKEN> once' }),
      });
    }
    const start: ServerStart<C> = { config, credentials, logger, demo, console: operatorConsole };
    try {
      served = await options.open(start);
    } catch (err) {
      return misconfigured(err, secrets, credentials.source);
    }
    await options.serve(served, start);
    return ExitCode.ok;
  } catch (err) {
    logger.error('fatal', { err });
    return ExitCode.failure;
  } finally {
    await served?.close().catch((err: unknown) => logger.warn('error while closing', { err }));
    await operatorConsole?.close();
    await demo?.close().catch((err: unknown) => logger.warn('error while stopping the demo realm', { err }));
    if (demoStateDir !== undefined) {
      await rm(demoStateDir, { recursive: true, force: true }).catch((err: unknown) =>
        logger.warn('error while removing the demo state directory', { err }),
      );
    }
  }
}

/**
 * What of a state URL (`ZULIP_STATE_URL`) is secret, for a logger's `secrets`: the whole URL, its
 * password (as written and decoded) and its query (which may name a key file or hold a password).
 * Empty for an unset URL.
 */
export function stateUrlSecrets(url: string | undefined): string[] {
  if (url === undefined) return [];
  const secrets = [url];
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') secrets.push(parsed.password, decodeURIComponent(parsed.password));
    if (parsed.search.length > 1) secrets.push(parsed.search.slice(1));
  } catch {
    // Not a URL: the whole value is redacted.
  }
  return secrets;
}
