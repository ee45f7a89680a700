#!/usr/bin/env node
// Runs a pnpm command in this workspace on a machine that has only Node and npm: finds the pnpm
// version the root package.json pins (`packageManager`), installs it with npm into a cache
// directory when the one on PATH is missing or another version, installs the workspace from the
// lockfile when it has not been (or the lockfile changed since), then runs
// `pnpm <args>` with that pnpm first on PATH, so scripts that call pnpm find the same one.
//
//   node scripts/pnpm.mjs run check        # what `npm test` runs
//   node scripts/pnpm.mjs --filter @zmcp/mcp-server demo
//
// ZMCP_TOOLS_DIR overrides where the pinned pnpm is kept (default: $XDG_CACHE_HOME/zmcp, or
// ~/.cache/zmcp). Plain JavaScript with no dependencies: it runs before anything is installed.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';

const root = join(import.meta.dirname, '..');

function fail(message) {
  process.stderr.write(`scripts/pnpm.mjs: ${message}\n`);
  process.exit(1);
}

function pinnedVersion() {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const match = /^pnpm@(\d+\.\d+\.\d+)$/.exec(String(manifest.packageManager ?? ''));
  if (match === null) fail(`package.json's packageManager is not "pnpm@x.y.z": ${manifest.packageManager}`);
  return match[1];
}

/** The version a pnpm executable reports, or undefined when it does not run. */
function versionOf(command) {
  const result = spawnSync(command, ['--version'], { encoding: 'utf8', shell: false });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** The directory of a pnpm executable of the pinned version, installing it when needed. */
function pnpmBinDir(version) {
  if (versionOf('pnpm') === version) return undefined; // the one on PATH will do
  const base =
    process.env.ZMCP_TOOLS_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'zmcp');
  const prefix = join(base, `pnpm-${version}`);
  const bin = join(prefix, 'node_modules', '.bin');
  if (versionOf(join(bin, 'pnpm')) !== version) {
    process.stderr.write(`Installing pnpm ${version} into ${prefix} (once)...\n`);
    mkdirSync(prefix, { recursive: true });
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const installed = spawnSync(
      npm,
      ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', prefix, `pnpm@${version}`],
      { stdio: 'inherit' },
    );
    if (installed.status !== 0 || versionOf(join(bin, 'pnpm')) !== version) {
      fail(`could not install pnpm ${version} with npm (exit ${installed.status})`);
    }
  }
  return bin;
}

/** Installs the workspace from the lockfile unless this lockfile was installed already. */
function ensureInstalled(env) {
  const lock = readFileSync(join(root, 'pnpm-lock.yaml'));
  const digest = createHash('sha256').update(lock).digest('hex');
  const stamp = join(root, 'node_modules', '.zmcp-installed');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === digest) return;
  process.stderr.write('Installing the workspace from pnpm-lock.yaml...\n');
  const installed = spawnSync('pnpm', ['install', '--frozen-lockfile'], { cwd: root, env, stdio: 'inherit' });
  if (installed.status !== 0) fail(`pnpm install failed (exit ${installed.status})`);
  mkdirSync(dirname(stamp), { recursive: true });
  writeFileSync(stamp, `${digest}\n`);
}

const version = pinnedVersion();
const binDir = pnpmBinDir(version);
const env = { ...process.env };
if (binDir !== undefined) env.PATH = `${binDir}${delimiter}${env.PATH ?? ''}`;
ensureInstalled(env);

// pnpm runs in a process group of its own, so a signal this process gets (Ctrl-C, a supervisor's
// SIGTERM) reaches pnpm and every script it started, not pnpm alone.
const child = spawn('pnpm', process.argv.slice(2), { cwd: root, env, stdio: 'inherit', detached: true });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    try {
      process.kill(-child.pid, signal);
    } catch {
      // the group is gone already
    }
  });
}
child.on('exit', (code, signal) => {
  if (signal !== null) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
