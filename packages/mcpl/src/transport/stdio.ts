import { type ChildProcess, spawn } from 'node:child_process';
import process from 'node:process';
import { McplError } from '../errors.js';
import { NdjsonTransport, type NdjsonTransportOptions } from './ndjson.js';

/**
 * The server side of stdio: NDJSON on this process's stdin and stdout. Nothing else may write
 * to stdout (log to stderr); the transport never ends stdout, so a final line is not lost.
 */
export function stdioServerTransport(
  options: Omit<NdjsonTransportOptions, 'endOnClose'> = {},
): NdjsonTransport {
  return new NdjsonTransport(process.stdin, process.stdout, { ...options, endOnClose: false });
}

/** Options of {@link spawnStdioTransport}. */
export interface SpawnStdioOptions extends Omit<NdjsonTransportOptions, 'endOnClose'> {
  command: string;
  args?: readonly string[] | undefined;
  /** The child's environment (default: this process's). */
  env?: NodeJS.ProcessEnv | undefined;
  cwd?: string | undefined;
  /** What happens to the child's stderr (default `inherit`). */
  stderr?: 'inherit' | 'pipe' | 'ignore' | undefined;
  /** How long close waits for the child to exit after its stdin ends before killing it (default 2000 ms). */
  killAfterMs?: number | undefined;
}

/** An NDJSON transport over a spawned server's stdin and stdout; closing it stops the child. */
export class ChildProcessTransport extends NdjsonTransport {
  /** The spawned server. */
  readonly child: ChildProcess;
  readonly #killAfterMs: number;
  readonly #exited: Promise<void>;

  constructor(child: ChildProcess, options: SpawnStdioOptions) {
    if (child.stdout === null || child.stdin === null) {
      throw new McplError('MCPL_TRANSPORT', 'the child process has no stdin or stdout pipe');
    }
    super(child.stdout, child.stdin, options);
    this.child = child;
    this.#killAfterMs = options.killAfterMs ?? 2000;
    this.#exited = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('exit', () => resolve());
    });
  }

  /** Resolves when the child has exited. */
  get exited(): Promise<void> {
    return this.#exited;
  }

  /** Ends the child's stdin, waits for it to exit, and kills it if it does not in time. */
  override async close(): Promise<void> {
    await super.close();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), this.#killAfterMs);
    timer.unref();
    await this.#exited;
    clearTimeout(timer);
  }
}

/**
 * Spawns an MCPL or MCP server and returns an NDJSON transport over its stdio, for a host.
 *
 * @throws McplError `MCPL_TRANSPORT` when the process cannot be spawned.
 */
export async function spawnStdioTransport(options: SpawnStdioOptions): Promise<ChildProcessTransport> {
  const child = spawn(options.command, [...(options.args ?? [])], {
    stdio: ['pipe', 'pipe', options.stderr ?? 'inherit'],
    env: options.env ?? process.env,
    cwd: options.cwd,
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err) =>
      reject(
        new McplError('MCPL_TRANSPORT', `could not start ${options.command}: ${err.message}`, { cause: err }),
      ),
    );
  });
  return new ChildProcessTransport(child, options);
}
