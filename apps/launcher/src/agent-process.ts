import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';

/** How an agent process ended. */
export interface AgentExit {
  code: number | null;
  signal: string | null;
  /** Why the launcher stopped it, if it did (`time limit`, `shutdown`). */
  stoppedFor: string | undefined;
  /** The process could not be started (`ENOENT`: the backend is not on PATH). */
  spawnError: string | undefined;
}

/** Options of {@link startAgentProcess}. */
export interface AgentProcessOptions {
  command: string;
  args: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Written to the agent's stdin, which is then closed (the prompt); without it stdin is closed at once. */
  stdin?: string | undefined;
  /** Output (stdout and stderr) is appended here, line by line, redacted. */
  logFile: string;
  /** First line written to the log for this run. */
  header: string;
  redact: (text: string) => string;
  timeLimitMs: number;
  stopGraceMs: number;
  /** Called with each complete line of the agent's stdout (its machine-readable output), redacted as the log is. */
  onStdoutLine?: ((line: string) => void) | undefined;
}

/** A running agent: its own process group, so stopping it stops everything it started. */
export interface AgentProcess {
  /** The process (and process group) id; undefined if it never started. */
  readonly pid: number | undefined;
  /** Settles once the process runs; rejects when it could not be started. */
  readonly started: Promise<number>;
  /** Settles once it exited and its process group is gone (or was killed). */
  readonly exited: Promise<AgentExit>;
  /** Stops it: SIGTERM to the group, SIGKILL after the grace period. Resolves as `exited`. */
  stop(reason: string): Promise<AgentExit>;
  /** The last non-empty line it wrote (stdout or stderr), redacted as the log is, cut to 300 characters. */
  readonly lastLine: string | undefined;
}

const MAX_LINE = 64 * 1024;

/** Copies a stream to the log a line at a time, so a secret is never split across two redactions. */
function pipeRedacted(
  source: Readable,
  log: WriteStream,
  redact: (text: string) => string,
  onLines: (redacted: string) => void,
): Promise<void> {
  let pending = '';
  source.setEncoding('utf8');
  source.on('data', (chunk: string) => {
    pending += chunk;
    const cut = pending.lastIndexOf('\n');
    if (cut >= 0) {
      const lines = redact(pending.slice(0, cut + 1));
      log.write(lines);
      onLines(lines);
      pending = pending.slice(cut + 1);
    } else if (pending.length > MAX_LINE) {
      log.write(`${redact(pending)}\n`);
      pending = '';
    }
  });
  return new Promise((resolve) => {
    source.once('close', () => {
      if (pending !== '') log.write(`${redact(pending)}\n`);
      pending = '';
      resolve();
    });
  });
}

function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * True while some process of group `pgid` is alive. On Linux zombies do not count (an orphan's
 * zombie waits for whoever reaps it, and can do nothing); elsewhere any member counts.
 */
export async function processGroupAlive(pgid: number): Promise<boolean> {
  if (process.platform !== 'linux') return signalGroup(pgid, 0);
  if (!signalGroup(pgid, 0)) return false;
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = await readFile(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after the last ")".
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
  }
  return false;
}

/** Waits (polling, up to `limitMs`) for a process group to be gone; SIGKILLs what is left. */
export async function reapProcessGroup(pgid: number, limitMs: number): Promise<void> {
  const deadline = Date.now() + limitMs;
  let delay = 5;
  while (await processGroupAlive(pgid)) {
    if (Date.now() >= deadline) {
      signalGroup(pgid, 'SIGKILL');
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 100);
  }
}

/**
 * Starts an agent CLI in a process group of its own, with `stdin` written to it and closed, and
 * its output appended (redacted) to the conversation's log. After `timeLimitMs` it is stopped.
 * When it exits, what is left of its group (the MCP server it started, say) gets SIGTERM, then
 * SIGKILL after the grace.
 */
export function startAgentProcess(options: AgentProcessOptions): AgentProcess {
  const log = createWriteStream(options.logFile, { flags: 'a', mode: 0o600 });
  log.on('error', () => undefined);
  log.write(`${options.redact(options.header)}\n`);
  let child: ChildProcess;
  let stoppedFor: string | undefined;
  let spawnError: string | undefined;
  let resolveStarted!: (pid: number) => void;
  let rejectStarted!: (err: Error) => void;
  const started = new Promise<number>((resolve, reject) => {
    resolveStarted = resolve;
    rejectStarted = reject;
  });
  started.catch(() => undefined);
  try {
    child = spawn(options.command, [...options.args], {
      cwd: options.cwd,
      env: options.env,
      stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    if (child.stdin !== null) {
      // An agent that exits without reading it all (a usage error) closes the pipe: not our failure.
      child.stdin.on('error', () => undefined);
      child.stdin.end(options.stdin, 'utf8');
    }
  } catch (err) {
    // spawn throws synchronously only for bad arguments; report it as a failed start.
    child = undefined as unknown as ChildProcess;
    spawnError = err instanceof Error ? err.message : String(err);
  }

  let killTimer: NodeJS.Timeout | undefined;
  let limitTimer: NodeJS.Timeout | undefined;
  let lastLine: string | undefined;
  const noteLines = (redacted: string) => {
    const lines = redacted.split('\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      const line = (lines[i] as string).trim();
      if (line !== '') {
        lastLine = line.length > 300 ? `${line.slice(0, 300)}…` : line;
        return;
      }
    }
  };
  const exited = new Promise<AgentExit>((resolve) => {
    if (child === undefined) {
      rejectStarted(new Error(spawnError));
      log.end(`launcher: could not start ${options.command}: ${spawnError}\n`);
      resolve({ code: null, signal: null, stoppedFor: undefined, spawnError });
      return;
    }
    const outputs = [child.stdout, child.stderr]
      .filter((s): s is Readable => s !== null)
      .map((s) =>
        pipeRedacted(s, log, options.redact, (redacted) => {
          const onLine = s === child.stdout ? options.onStdoutLine : undefined;
          // Machine-readable output (JSON events) is read for progress; the last line shown is
          // then the last one a person reads, from stderr.
          if (onLine === undefined) noteLines(redacted);
          else for (const line of redacted.slice(0, -1).split('\n')) onLine(line);
        }),
      );
    child.once('spawn', () => resolveStarted(child.pid as number));
    child.once('error', (err: NodeJS.ErrnoException) => {
      if (child.pid === undefined) {
        spawnError = err.code ?? err.message;
        rejectStarted(err);
      }
    });
    child.once('close', async (code, signal) => {
      clearTimeout(limitTimer);
      clearTimeout(killTimer);
      await Promise.all(outputs);
      const pid = child.pid;
      if (pid !== undefined) {
        // The agent is gone; whatever it left running in its group goes too. When the group was
        // stopped already it has had its SIGTERM: a second one would cut short the clean shutdown
        // it is doing (a zmcp bin exits at once on a second signal), so it only gets the grace.
        if (stoppedFor === undefined) signalGroup(pid, 'SIGTERM');
        await reapProcessGroup(pid, options.stopGraceMs);
      }
      const tail =
        spawnError !== undefined
          ? `could not start ${options.command}: ${spawnError}`
          : `exited${code === null ? '' : ` with code ${code}`}${signal === null ? '' : ` on ${signal}`}${stoppedFor === undefined ? '' : ` (stopped: ${stoppedFor})`}`;
      await new Promise<void>((done) => log.end(`launcher: ${tail}\n`, () => done()));
      resolve({ code, signal, stoppedFor, spawnError });
    });
  });

  const stop = (reason: string): Promise<AgentExit> => {
    const pid = child?.pid;
    if (
      pid !== undefined &&
      stoppedFor === undefined &&
      child.exitCode === null &&
      child.signalCode === null
    ) {
      stoppedFor = reason;
      signalGroup(pid, 'SIGTERM');
      killTimer = setTimeout(() => signalGroup(pid, 'SIGKILL'), options.stopGraceMs);
    }
    return exited;
  };
  if (child !== undefined) {
    limitTimer = setTimeout(() => void stop('time limit'), options.timeLimitMs);
  }

  return {
    get pid() {
      return child?.pid;
    },
    get lastLine() {
      return lastLine;
    },
    started,
    exited,
    stop,
  };
}
