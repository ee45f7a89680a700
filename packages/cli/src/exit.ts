import { configurationProblems, invalidConfigurationMessage } from './define.js';

/** The exit codes of every zmcp bin. */
export const ExitCode = Object.freeze({
  /** A clean run, help or the version. */
  ok: 0,
  /** Start-up or the run failed. */
  failure: 1,
  /** The configuration is wrong: a bad variable or flag, or a file or credential it names. */
  configuration: 2,
} as const);

/** Where a bin writes: a stream, or anything with its `write`. */
export interface TextSink {
  write(text: string): unknown;
}

/**
 * Answers `--help`/`-h` (the help text) or `--version`/`-V` (the version and a newline) on
 * `stdout` when `argv` asks for either, before anything else is read: neither depends on the
 * environment being valid. Returns the exit code when it answered, `undefined` otherwise.
 */
export function answerHelpOrVersion(
  argv: readonly string[],
  stdout: TextSink,
  texts: { help: () => string; version: () => string },
): number | undefined {
  if (argv.includes('--help') || argv.includes('-h')) {
    stdout.write(texts.help());
    return ExitCode.ok;
  }
  if (argv.includes('--version') || argv.includes('-V')) {
    stdout.write(`${texts.version()}\n`);
    return ExitCode.ok;
  }
  return undefined;
}

/**
 * Writes a configuration error to `stderr` the way every bin reports one (the bin's name, one
 * indented line per problem, then where to find every setting), passing the text through
 * `redact` first, and returns {@link ExitCode}.configuration.
 */
export function reportInvalidConfiguration(
  stderr: TextSink,
  bin: string,
  problems: readonly string[],
  redact: (text: string) => string = (text) => text,
): number {
  stderr.write(
    `${bin}: ${redact(invalidConfigurationMessage(problems))}\nRun ${bin} --help for every setting.\n`,
  );
  return ExitCode.configuration;
}

/** The streams every bin's `main` may be handed; each defaults to the process's own. */
export interface BinIo {
  stdout?: TextSink | undefined;
  stderr?: TextSink | undefined;
}

/** A bin's `main`: resolves with the exit code. */
export type BinMain<Io extends BinIo> = (
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  io?: Io,
) => Promise<number>;

/** What {@link defineMain} builds a bin's `main` from. */
export interface MainSpec<C, Io extends BinIo> {
  /** The bin's name, as the error report calls it. */
  bin: string;
  /** The `--help` text. */
  help: () => string;
  /** The version `--version` prints. */
  version: () => string;
  /**
   * Reads the configuration. A bad one is thrown as a `CLI_CONFIG_INVALID` error, or an error
   * with one in its `cause` chain (see `SettingsOptions.configError`).
   */
  configure: (env: Readonly<Record<string, string | undefined>>, argv: readonly string[]) => C;
  /** Runs the bin with its configuration; resolves with the exit code ({@link ExitCode}). */
  run: (config: C, io: Io, env: Readonly<Record<string, string | undefined>>) => Promise<number>;
}

/**
 * A bin's `main(argv, env, io)`: `--help` and `--version` are answered on stdout before
 * anything else is read; then the configuration is read, and a bad one is reported on stderr
 * ({@link reportInvalidConfiguration}) with exit code 2; then `run` takes over. Any other
 * error from `configure` is thrown on.
 */
export function defineMain<C, Io extends BinIo>(spec: MainSpec<C, Io>): BinMain<Io> {
  return async (argv, env, io = {} as Io) => {
    const answered = answerHelpOrVersion(argv, io.stdout ?? process.stdout, spec);
    if (answered !== undefined) return answered;
    let config: C;
    try {
      config = spec.configure(env, argv);
    } catch (err) {
      const problems = configurationProblems(err);
      if (problems === undefined) throw err;
      return reportInvalidConfiguration(io.stderr ?? process.stderr, spec.bin, problems);
    }
    return spec.run(config, io, env);
  };
}

/** Resolves once `signal` aborts (at once if it has); never, without a signal. */
export function waitForAbort(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal === undefined) return;
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** What {@link runBin} hands to a bin's `main`. */
export interface BinContext {
  /** Aborted by the first SIGINT or SIGTERM: shut down cleanly. */
  shutdown: AbortSignal;
}

/**
 * Runs a bin's `main` as the process: the first SIGINT or SIGTERM aborts `shutdown`, a second
 * one exits at once (130 or 143). The code `main` resolves with becomes the exit code once
 * stdout has drained (it may carry the last protocol message); a rejection prints
 * `<bin>: <message>` on stderr and exits 1.
 */
export function runBin(
  bin: string,
  main: (argv: string[], env: NodeJS.ProcessEnv, context: BinContext) => Promise<number>,
): void {
  const shutdown = new AbortController();
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) process.exit(signal === 'SIGINT' ? 130 : 143);
    shutdown.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  main(process.argv.slice(2), process.env, { shutdown: shutdown.signal }).then(
    (code) => {
      process.stdout.write('', () => process.exit(code));
    },
    (err: unknown) => {
      process.stderr.write(`${bin}: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(ExitCode.failure);
    },
  );
}
