// A throwaway PostgreSQL cluster for the tests and benchmarks: initialized in a temporary
// directory as an unprivileged user, started on a free loopback port, stopped and removed at the
// end. Used by test/setup/postgres.ts (the vitest global set-up) and the fleet benchmarks.
//
// The server runs under a small shell watchdog whose standard input is a pipe from this process:
// when the pipe closes (stop() or this process dying, even by kill -9) the watchdog stops the
// server and removes the directory, so a crashed test run leaves no server behind.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What to tell someone whose machine has no PostgreSQL server binaries. */
export const INSTALL_HINT =
  'install them with `apt-get install -y postgresql` (Debian/Ubuntu; scripts/system-deps.sh does it as root), ' +
  'point ZMCP_PG_BIN at the directory holding initdb and postgres, or set ZMCP_TEST_PG_URL to a server the tests may use';

/** A running throwaway cluster. */
export interface PostgresCluster {
  /** `postgres://zmcp@127.0.0.1:<port>/zmcp_test`: a superuser, trusted on loopback. */
  readonly url: string;
  readonly port: number;
  /** The temporary directory (data directory and unix socket). */
  readonly dir: string;
  /** The server's version, from `postgres --version`. */
  readonly version: string;
  /** Stops the server and removes the directory. */
  stop(): Promise<void>;
}

export interface StartClusterOptions {
  /**
   * Keep PostgreSQL's durability settings (fsync, full-page writes, synchronous commit), as a
   * production server has them: for benchmarks. Tests turn them off, which is safe for data
   * thrown away at the end and several times faster.
   */
  durable?: boolean;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The directory holding `initdb` and `postgres`: `ZMCP_PG_BIN`, else Debian's
 * `/usr/lib/postgresql/<newest>/bin`, else the PATH.
 *
 * @throws Error naming what is missing and how to install it.
 */
export function findPostgresBin(
  env: NodeJS.ProcessEnv = process.env,
  debian = '/usr/lib/postgresql',
): string {
  const has = (dir: string) => executable(join(dir, 'initdb')) && executable(join(dir, 'postgres'));
  const configured = env.ZMCP_PG_BIN;
  if (configured !== undefined && configured !== '') {
    if (has(configured)) return configured;
    throw new Error(`ZMCP_PG_BIN=${configured} holds no executable initdb and postgres; ${INSTALL_HINT}`);
  }
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (has(join(debian, v, 'bin'))) return join(debian, v, 'bin');
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) if (dir !== '' && has(dir)) return dir;
  throw new Error(`PostgreSQL server binaries (initdb, postgres) were not found; ${INSTALL_HINT}`);
}

/** The unprivileged account the cluster runs as when this process is root (initdb refuses root). */
const UNPRIVILEGED = { name: 'nobody', uid: 65534, gid: 65534 };

function asUnprivileged(command: string, args: string[]): [string, string[]] {
  if (process.getuid?.() !== 0) return [command, args];
  for (const dir of ['/usr/sbin', '/sbin', '/usr/bin', '/bin']) {
    if (executable(join(dir, 'runuser')))
      return [join(dir, 'runuser'), ['-u', UNPRIVILEGED.name, '--', command, ...args]];
  }
  for (const dir of ['/usr/bin', '/bin']) {
    if (executable(join(dir, 'setpriv'))) {
      return [
        join(dir, 'setpriv'),
        [`--reuid=${UNPRIVILEGED.uid}`, `--regid=${UNPRIVILEGED.gid}`, '--clear-groups', command, ...args],
      ];
    }
  }
  throw new Error(
    'running as root, and neither runuser nor setpriv is there to run initdb as an unprivileged user',
  );
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port'));
      });
    });
  });
}

// The watchdog: starts the server in the background, waits for its own stdin to close, then
// stops the server (fast shutdown) and removes the directory. $1 bin, $2 dir, $3 port, $4.. settings.
const WATCHDOG = `
bin=$1; dir=$2; port=$3; shift 3
"$bin/postgres" -D "$dir/data" -k "$dir" -h 127.0.0.1 -p "$port" "$@" &
pg=$!
cat >/dev/null
kill -INT "$pg" 2>/dev/null
wait "$pg"
rm -rf "$dir"
`;

interface Started {
  child: ChildProcess;
  exited: Promise<void>;
}

/** Starts the server under the watchdog; resolves once it accepts connections. */
function startServer(bin: string, dir: string, port: number, settings: string[]): Promise<Started> {
  const [command, args] = asUnprivileged('/bin/sh', [
    '-c',
    WATCHDOG,
    'watchdog',
    bin,
    dir,
    String(port),
    ...settings,
  ]);
  const child = spawn(command, args, { stdio: ['pipe', 'ignore', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log: string[] = [];
  return new Promise((resolve, reject) => {
    let buffered = '';
    let settled = false;
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      child.stdin?.end();
      reject(new Error(`PostgreSQL did not start (${why}):\n${log.slice(-20).join('\n')}`));
    };
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        if (log.length < 200) log.push(line);
        if (settled) continue;
        if (line.includes('database system is ready to accept connections')) {
          settled = true;
          resolve({ child, exited });
        } else if (/\b(FATAL|PANIC):/.test(line)) {
          fail(line.includes('Address already in use') ? 'port in use' : 'a fatal error');
        }
      }
    });
    child.once('error', (err) => fail(err.message));
    child.once('exit', (code) => fail(`it exited with ${code}`));
  });
}

async function psql(bin: string, port: number, dir: string, sql: string): Promise<void> {
  // The client binary sits beside the server's; it connects over the unix socket as the superuser.
  await run(join(bin, 'psql'), [
    '-X',
    '-q',
    '-v',
    'ON_ERROR_STOP=1',
    '-h',
    dir,
    '-p',
    String(port),
    '-U',
    'zmcp',
    '-d',
    'postgres',
    '-c',
    sql,
  ]);
}

/**
 * Initializes a cluster in a new temporary directory (as `nobody` when this process is root),
 * starts it on a free loopback port and creates the database `zmcp_test`.
 *
 * @throws Error when the binaries are missing (saying how to install them) or the server fails.
 */
export async function startPostgresCluster(options: StartClusterOptions = {}): Promise<PostgresCluster> {
  const bin = findPostgresBin();
  const dir = await mkdtemp(join(tmpdir(), 'zmcp-pg-'));
  try {
    if (process.getuid?.() === 0) await chown(dir, UNPRIVILEGED.uid, UNPRIVILEGED.gid);
    const [initdb, initArgs] = asUnprivileged(join(bin, 'initdb'), [
      '-D',
      join(dir, 'data'),
      '-U',
      'zmcp',
      '--auth=trust',
      '--encoding=UTF8',
      '--locale=C',
      '--no-sync',
      '--no-instructions',
    ]);
    await run(initdb, initArgs, { maxBuffer: 4 << 20 }).catch((err: { stderr?: string; message: string }) => {
      throw new Error(`initdb failed: ${err.stderr ?? err.message}`);
    });
    const { stdout: version } = await run(join(bin, 'postgres'), ['--version']);
    const settings = [
      '-c',
      'max_connections=200',
      '-c',
      'shared_buffers=32MB',
      '-c',
      'logging_collector=off',
      '-c',
      'log_min_messages=warning',
      ...(options.durable
        ? []
        : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
    ];
    // The port is free when chosen; should another process take it first, try another.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      let started: Started;
      try {
        started = await startServer(bin, dir, port, settings);
      } catch (err) {
        if (attempt < 5 && (err as Error).message.includes('port in use')) continue;
        throw err;
      }
      await psql(bin, port, dir, 'CREATE DATABASE zmcp_test');
      let stopping: Promise<void> | undefined;
      return {
        url: `postgres://zmcp@127.0.0.1:${port}/zmcp_test`,
        port,
        dir,
        version: version.trim(),
        stop() {
          stopping ??= (async () => {
            started.child.stdin?.end();
            await started.exited;
            // The watchdog removed the directory; this covers a watchdog that could not.
            await rm(dir, { recursive: true, force: true });
          })();
          return stopping;
        },
      };
    }
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
