// The real Claude Code CLI for the slow end-to-end tests (`pnpm test:e2e`): where it is installed,
// and the environment that runs it offline, in a throwaway home, against the Messages API stub.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, readFileSync, watch } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, delimiter, dirname, join } from 'node:path';

/** The pinned version scripts/install-e2e-tools.sh installs. */
export const CLAUDE_CODE_VERSION = '2.1.332';

/**
 * The installed `claude`: `ZMCP_E2E_CLAUDE` when set, else where scripts/install-e2e-tools.sh puts
 * it (`${ZMCP_E2E_TOOLS_DIR:-${TMPDIR:-/tmp}/zmcp-e2e-tools}`). Throws, saying how to install it,
 * when it is not there: the tests never install anything themselves.
 */
export function claudeCodeBin(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const explicit = env.ZMCP_E2E_CLAUDE;
  const toolsDir = env.ZMCP_E2E_TOOLS_DIR ?? join(env.TMPDIR ?? '/tmp', 'zmcp-e2e-tools');
  const path =
    explicit !== undefined && explicit !== ''
      ? explicit
      : join(toolsDir, `claude-code-${CLAUDE_CODE_VERSION}`, 'node_modules', '.bin', 'claude');
  if (!existsSync(path)) {
    throw new Error(
      `Claude Code ${CLAUDE_CODE_VERSION} is not installed at ${path}: run scripts/install-e2e-tools.sh first (or set ZMCP_E2E_CLAUDE).`,
    );
  }
  return path;
}

/**
 * Variables that keep Claude Code off the network beyond loopback: no auto-update, telemetry,
 * error reporting, feedback survey or other "nonessential" traffic (its bootstrap, the MCP
 * registry, the fast-mode and feature-flag fetches all stop with
 * `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`; the others are belt and braces).
 */
export const OFFLINE_SWITCHES: Readonly<Record<string, string>> = {
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_AUTOUPDATER: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
  DISABLE_BUG_COMMAND: '1',
  CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
  CLAUDE_CODE_DISABLE_TERMINAL_TITLE: '1',
  // Interactive sessions otherwise fetch Anthropic's plugin marketplace (downloads.claude.ai),
  // then try to clone it from github.com, over SSH too, which no proxy variable stops.
  CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL: '1',
  // A failed model request is a failed test: no ten retries with backoff.
  CLAUDE_CODE_MAX_RETRIES: '0',
};

/**
 * The rollout flags that turn on Claude Code channels (`tengu_harbor`) and their permission relay
 * (`tengu_harbor_permissions`). Claude Code fetches them from Anthropic; offline it reads them from
 * the `cachedFeatureFlags` of `~/.claude.json` only with
 * `CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF` set (telemetry is off here). A test switch for a
 * throwaway home: without them the session says "Channels are not currently available" and drops
 * every channel event.
 */
export const CHANNEL_ROLLOUT_FLAGS: Readonly<Record<string, boolean>> = {
  tengu_harbor: true,
  tengu_harbor_permissions: true,
};

/** The fake key Claude Code sends the stub (never a real one: the stub is all it talks to). */
export const STUB_API_KEY = 'sk-ant-api03-zmcp-e2e-stub-key-not-a-secret-000000000000000000AA';

/** A throwaway home for one run: Claude Code's `~/.claude.json` and `~/.claude/` live there. */
export interface ClaudeHome {
  /** The home directory (HOME). */
  dir: string;
  /** A directory holding only a `claude` link to the installed CLI, to put first on PATH. */
  binDir: string;
  /** A work directory inside the home, for the session's cwd. */
  workDir: string;
  /**
   * The environment for Claude Code (or for a launcher that starts it): the base PATH and the
   * variables of `extra`, nothing else inherited, so no key or setting of the machine leaks in.
   */
  env(stubUrl: string, extra?: Record<string, string>): Record<string, string>;
  /** Writes `~/.claude.json` (first-run state) with these fields. */
  writeConfig(config: Record<string, unknown>): Promise<void>;
  /**
   * Writes the `~/.claude.json` an interactive session needs to start without a dialog: onboarding
   * done, the stub's API key approved, the work directory trusted, and these feature flags cached.
   */
  writeInteractiveConfig(flags?: Readonly<Record<string, boolean>>): Promise<void>;
  remove(): Promise<void>;
}

/** Makes a throwaway home with `claude` linked into a bin directory of its own. */
export async function claudeHome(claude = claudeCodeBin()): Promise<ClaudeHome> {
  const dir = await mkdtemp(join(tmpdir(), 'zmcp-claude-home-'));
  const binDir = join(dir, 'bin');
  const workDir = join(dir, 'work');
  // Claude Code keeps its scratch files (claude-<uid>/) and session sockets (cc-socks/) under
  // TMPDIR: inside the home, they go with it.
  const tmpDir = join(dir, 'tmp');
  await mkdir(binDir);
  await mkdir(workDir);
  await mkdir(tmpDir);
  await symlink(claude, join(binDir, 'claude'));
  return {
    dir,
    binDir,
    workDir,
    env(stubUrl, extra = {}) {
      return {
        PATH: [binDir, join(process.execPath, '..'), '/usr/local/bin', '/usr/bin', '/bin'].join(delimiter),
        HOME: dir,
        TMPDIR: tmpDir,
        LANG: 'C.UTF-8',
        ...OFFLINE_SWITCHES,
        ANTHROPIC_BASE_URL: stubUrl,
        ANTHROPIC_API_KEY: STUB_API_KEY,
        // Anything that would leave loopback goes to the stub's refusing proxy, and is recorded.
        HTTPS_PROXY: stubUrl,
        HTTP_PROXY: stubUrl,
        https_proxy: stubUrl,
        http_proxy: stubUrl,
        NO_PROXY: '127.0.0.1,localhost,::1',
        no_proxy: '127.0.0.1,localhost,::1',
        ...extra,
      };
    },
    writeConfig: (config) => writeFile(join(dir, '.claude.json'), `${JSON.stringify(config, null, 2)}\n`),
    writeInteractiveConfig: (flags = {}) =>
      writeFile(
        join(dir, '.claude.json'),
        `${JSON.stringify(
          {
            hasCompletedOnboarding: true,
            theme: 'dark',
            // Claude Code remembers an approved key by its last 20 characters.
            customApiKeyResponses: { approved: [STUB_API_KEY.slice(-20)], rejected: [] },
            projects: { [workDir]: { hasTrustDialogAccepted: true, allowedTools: [] } },
            cachedFeatureFlags: flags,
          },
          null,
          2,
        )}\n`,
      ),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A program running in a pseudo-terminal (an interactive Claude Code session). */
export interface TerminalSession {
  /** The `script` process that holds the terminal. */
  readonly child: ChildProcessWithoutNullStreams;
  /** Everything printed so far, escape sequences removed, cursor moves as spaces, spaces folded. */
  text(): string;
  /** Resolves once the text printed (from the start) matches; rejects if the program exits first. */
  waitFor(match: RegExp): Promise<void>;
  /** Types into the terminal (a carriage return is the Enter key). */
  type(keys: string): void;
  /** The exit code of the program (script -e passes it on). */
  readonly exited: Promise<number | null>;
  /** SIGTERM to the terminal's holder, which hangs up on the program; resolves once it has exited. */
  kill(): Promise<void>;
}

/** Quotes a word for a POSIX shell. */
function shellWord(word: string): string {
  return `'${word.replace(/'/g, "'\\''")}'`;
}

// CSI and OSC sequences, and the two-character escapes (charset, keypad modes).
const ESCAPES =
  /\u001b\[[0-9;?<>=]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[()][0-9A-Za-z]|\u001b[=>78MDEHc]/g;

/**
 * Starts `command` in a pseudo-terminal of `cols` x `rows`, with util-linux `script` (present on
 * every Debian-like system, unlike a native pty addon): Claude Code reads channel flags and shows
 * its dialogs only in an interactive session, which needs a terminal.
 */
export function startInTerminal(
  command: string,
  args: readonly string[],
  options: { env: Record<string, string>; cwd: string; cols?: number; rows?: number },
): TerminalSession {
  const line = `stty cols ${options.cols ?? 120} rows ${options.rows ?? 40}; exec ${[command, ...args].map(shellWord).join(' ')}`;
  const child = spawn('script', ['--quiet', '--flush', '--return', '--command', line, '/dev/null'], {
    env: { ...options.env, SHELL: '/bin/sh', TERM: 'xterm-256color' },
    cwd: options.cwd,
  });
  let raw = '';
  let clean = '';
  const waiters = new Set<() => void>();
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    raw += chunk;
    // The renderer moves the cursor instead of writing spaces: each move is one space, and runs of
    // spaces are folded, so a test matches words separated by single spaces.
    clean = raw
      .replace(/\u001b\[\d*(?:;\d*)?[CGH]/g, ' ')
      .replace(ESCAPES, '')
      .replace(/[ \t]+/g, ' ');
    for (const w of [...waiters]) w();
  });
  child.stderr.resume();
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    text: () => clean,
    waitFor: (match) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!match.test(clean)) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
        void exited.then(() => {
          if (waiters.delete(check))
            reject(new Error(`the terminal closed before ${match}:\n${clean.slice(-3000)}`));
        });
      }),
    type: (keys) => {
      child.stdin.write(keys);
    },
    exited,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Resolves once the file at `path` (which may not exist yet) holds a line matching `match`:
 * re-read on every change the directory reports, so it waits on the writer, not on a timer.
 */
export function fileLine(path: string, match: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const read = (): string | undefined => {
      let content: string;
      try {
        content = readFileSync(path, 'utf8');
      } catch {
        return undefined;
      }
      return content.split('\n').find((l) => match.test(l));
    };
    const watcher = watch(dirname(path), (_event, name) => {
      if (name !== null && name !== basename(path)) return;
      const found = read();
      if (found === undefined) return;
      watcher.close();
      resolve(found);
    });
    watcher.on('error', reject);
    const found = read();
    if (found !== undefined) {
      watcher.close();
      resolve(found);
    }
  });
}
