// The real Claude Code CLI for the slow end-to-end tests (`pnpm test:e2e`): where it is installed,
// and the environment that runs it offline, in a throwaway home, against the Messages API stub.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

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
  remove(): Promise<void>;
}

/** Makes a throwaway home with `claude` linked into a bin directory of its own. */
export async function claudeHome(claude = claudeCodeBin()): Promise<ClaudeHome> {
  const dir = await mkdtemp(join(tmpdir(), 'zmcp-claude-home-'));
  const binDir = join(dir, 'bin');
  const workDir = join(dir, 'work');
  await mkdir(binDir);
  await mkdir(workDir);
  await symlink(claude, join(binDir, 'claude'));
  return {
    dir,
    binDir,
    workDir,
    env(stubUrl, extra = {}) {
      return {
        PATH: [binDir, join(process.execPath, '..'), '/usr/local/bin', '/usr/bin', '/bin'].join(delimiter),
        HOME: dir,
        TMPDIR: tmpdir(),
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
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
