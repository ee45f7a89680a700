import type { Readable, Writable } from 'node:stream';
import { configurationProblems, reportInvalidConfiguration } from '@zmcp/cli';
import { type Config, parseConfig } from './config.js';

// What the operator's subcommands of `zulip-mcp` (`tokens`, `audit`, `hook`) share: their
// streams, the server's settings read from them, and stdin read whole.

/** Streams of one run of a subcommand; each defaults to the process's own. */
export interface CommandIo {
  stdin?: Readable | undefined;
  stdout?: Writable | undefined;
  stderr?: Writable | undefined;
}

/** The output streams of `io`, each defaulting to the process's own. */
export function outputsOf(io: CommandIo): { stdout: Writable; stderr: Writable } {
  return { stdout: io.stdout ?? process.stdout, stderr: io.stderr ?? process.stderr };
}

/**
 * The server's settings for subcommand `bin` (from `env` and `argv`, as the server reads them),
 * or, after reporting a bad setting on `stderr`, the exit code: `invalid`, else the one
 * `reportInvalidConfiguration` gives (2). Any other error is thrown on.
 */
export function commandConfig(
  bin: string,
  env: Readonly<Record<string, string | undefined>>,
  argv: readonly string[],
  stderr: Writable,
  invalid?: number,
): Config | number {
  try {
    return parseConfig(env, argv);
  } catch (err) {
    const problems = configurationProblems(err);
    if (problems === undefined) throw err;
    const code = reportInvalidConfiguration(stderr, bin, problems);
    return invalid ?? code;
  }
}

/** Reads `stream` to its end as UTF-8; past `maxBytes`, throws an error saying `tooLarge`. */
export async function readText(
  stream: Readable,
  maxBytes = Number.POSITIVE_INFINITY,
  tooLarge = `the input is over ${maxBytes} bytes`,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > maxBytes) throw new Error(tooLarge);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
