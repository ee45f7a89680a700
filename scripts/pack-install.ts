// Installs zmcp the way a user will once it is published: `pnpm pack` every package, install the
// tarballs with plain npm into an empty prefix, and run the bins from there. Checks on the way
// that each packed manifest is publishable as is (no workspace: ranges, no file it does not ship,
// every bare import of its dist declared and every dependency imported), then that every entry
// imports, the declarations type-check for a consumer, every bin answers --version, and
// `zulip-mcp --demo` serves tools/list on stdio, as `zulip-mcpl --demo` does to an MCP client and its
// manifest's feature sets to an MCPL host.
//
//   pnpm test:pack                # builds first
//   pnpm test:pack --skip-build   # after `pnpm build` (CI runs it after `pnpm test`)
//
// Third-party dependencies come from the npm registry (or npm's cache); every @zmcp package comes
// from its tarball.
import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const keep = process.argv.includes('--keep');
const skipBuild = process.argv.includes('--skip-build');

type Deps = Record<string, string>;
interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  bin?: Record<string, string>;
  exports?: Record<string, string | Record<string, string>>;
  dependencies?: Deps;
  optionalDependencies?: Deps;
  peerDependencies?: Deps;
}
interface Workspace {
  dir: string;
  manifest: Manifest;
}

const failures: string[] = [];
function check(ok: boolean, what: string): void {
  if (!ok) failures.push(what);
}
function step(text: string): void {
  process.stdout.write(`pack-install: ${text}\n`);
}

function readManifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
}

function workspaces(): Workspace[] {
  const found: Workspace[] = [];
  for (const group of ['packages', 'apps']) {
    for (const entry of readdirSync(join(root, group))) {
      const dir = join(root, group, entry);
      if (!existsSync(join(dir, 'package.json'))) continue;
      const manifest = readManifest(dir);
      if (!manifest.private) found.push({ dir, manifest });
    }
  }
  return found;
}

/** The environment without what pnpm passes to scripts (`npm_*`) or any Zulip setting, so npm and the bins run as a user's would. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(npm_|pnpm_|ZULIP)/i.test(key)) env[key] = value;
  }
  return env;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)));
}

/** The package a bare specifier names: `@scope/name/sub` → `@scope/name`, `name/sub` → `name`. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return (specifier.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1)).join('/');
}

/** The DefinitelyTyped package of a package's types: `pg` → `@types/pg`, `@scope/x` → `@types/scope__x`. */
function typesPackageOf(dep: string): string {
  return `@types/${dep.startsWith('@') ? dep.slice(1).replace('/', '__') : dep}`;
}

const builtins = new Set(builtinModules);

/** Bare specifiers a built file imports (static, re-exports and dynamic `import()`), comments and strings aside. */
function bareImports(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((s) => !s.startsWith('.') && !s.startsWith('/') && !s.startsWith('node:'));
}

/** Checks one unpacked tarball's manifest and files against what a registry install needs. */
function checkPacked(unpacked: string, source: Manifest, versions: Map<string, string>): Manifest {
  const packed = JSON.parse(readFileSync(join(unpacked, 'package.json'), 'utf8')) as Manifest;
  const name = packed.name;
  const files = new Set(filesUnder(unpacked));
  const runtime: Deps = {
    ...packed.dependencies,
    ...packed.optionalDependencies,
    ...packed.peerDependencies,
  };
  for (const [dep, range] of Object.entries(runtime)) {
    const own = versions.get(dep);
    if (own !== undefined)
      check(range === own, `${name}: depends on ${dep}@${range}, the workspace has ${dep}@${own}`);
    // Exact pins: the frozen lockfile resolved these very versions, so the install gets what was tested.
    else check(/^\d+\.\d+\.\d+$/.test(range), `${name}: ${dep}@${range} is not an exact version`);
  }
  const targets: string[] = [];
  for (const [subpath, target] of Object.entries(packed.exports ?? {})) {
    if (typeof target === 'string') targets.push(target);
    else {
      check(!('@zmcp/source' in target), `${name}: exports["${subpath}"] keeps the @zmcp/source condition`);
      targets.push(...Object.values(target));
    }
  }
  for (const target of targets)
    check(files.has(target.replace(/^\.\//, '')), `${name}: exports point at ${target}, not in the tarball`);
  check(
    JSON.stringify(Object.keys(packed.bin ?? {})) === JSON.stringify(Object.keys(source.bin ?? {})),
    `${name}: the packed bins differ from package.json's`,
  );
  for (const [bin, target] of Object.entries(packed.bin ?? {})) {
    const path = target.replace(/^\.\//, '');
    check(files.has(path), `${name}: bin ${bin} points at ${target}, not in the tarball`);
    if (files.has(path))
      check(
        readFileSync(join(unpacked, path), 'utf8').startsWith('#!/usr/bin/env node\n'),
        `${name}: bin ${bin} (${target}) has no node shebang`,
      );
  }
  const imported = new Set<string>();
  // The JavaScript and the declarations: a package a .d.ts imports is needed by a consumer's types.
  for (const file of files) {
    if (!/\.(c|m)?js$|\.d\.ts$/.test(file)) continue;
    for (const specifier of bareImports(join(unpacked, file))) {
      const dep = packageOf(specifier);
      if (builtins.has(dep) || dep === name) continue;
      imported.add(dep);
      check(dep in runtime, `${name}: ${file} imports ${specifier}, which is not a dependency`);
      // A declaration importing a package that ships no types of its own needs its @types package.
      if (file.endsWith('.d.ts')) imported.add(typesPackageOf(dep));
    }
  }
  // A dependency nothing imports is dead weight, or was bundled (a native one then breaks).
  for (const dep of Object.keys(runtime))
    check(imported.has(dep), `${name}: depends on ${dep}, which no file of dist/ imports (bundled?)`);
  return packed;
}

interface JsonRpcMessage {
  jsonrpc: '2.0';
  id?: number;
  method?: string;
  result?: {
    tools?: { name: string }[];
    serverInfo?: { name: string; version: string };
    capabilities?: { experimental?: { mcpl?: { featureSets?: Record<string, unknown> } } };
  };
  error?: { code: number; message: string };
}

/** A minimal MCP client over a child's stdio: newline-delimited JSON-RPC, as the stdio transport speaks it. */
function stdioClient(child: ChildProcessWithoutNullStreams) {
  const pending = new Map<number, (message: JsonRpcMessage) => void>();
  const stray: string[] = [];
  let buffer = '';
  let nextId = 1;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    buffer += chunk;
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      let message: JsonRpcMessage;
      try {
        message = JSON.parse(line) as JsonRpcMessage;
      } catch {
        stray.push(line);
        continue;
      }
      if (message.jsonrpc !== '2.0') stray.push(line);
      if (message.id !== undefined && message.method === undefined) pending.get(message.id)?.(message);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    stray,
    exited,
    notify(method: string, params: object = {}): void {
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method, params })}\n`);
    },
    request(method: string, params: object = {}): Promise<JsonRpcMessage> {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, resolve);
        exited.then((code) => reject(new Error(`exited with ${code} before answering ${method}`)));
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
      });
    },
  };
}

/** Rejects after `ms` unless `work` settles first; the timer never keeps the process alive. */
function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Runs `<bin> --demo` as a client would: `initialize` (as an MCPL host with `mcpl`, which must
 * answer with its manifest's feature sets), then `tools/list` for a plain MCP client, then
 * closes stdin and expects exit 0 and nothing but JSON-RPC on stdout.
 */
async function demoSession(
  bin: string,
  env: NodeJS.ProcessEnv,
  version: string,
  mcpl?: { featureSets: readonly string[] },
): Promise<void> {
  const label = `${basename(bin)} --demo${mcpl === undefined ? '' : ' (MCPL host)'}`;
  const child = spawn(bin, ['--demo'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const client = stdioClient(child);
  try {
    const init = await within(
      30_000,
      'initialize',
      client.request('initialize', {
        protocolVersion: '2025-06-18',
        capabilities: mcpl === undefined ? {} : { experimental: { mcpl: { version: '0.5', channels: {} } } },
        clientInfo: { name: 'pack-install', version: '0' },
      }),
    );
    check(init.result?.serverInfo?.version === version, `${label}: serverInfo ${JSON.stringify(init)}`);
    client.notify('notifications/initialized');
    if (mcpl !== undefined) {
      const sets = init.result?.capabilities?.experimental?.mcpl?.featureSets;
      const names = sets === undefined ? [] : Object.keys(sets).sort();
      check(
        JSON.stringify(names) === JSON.stringify([...mcpl.featureSets].sort()),
        `${label}: the manifest's feature sets are ${JSON.stringify(names)}`,
      );
      step(`${label} advertises feature sets ${names.join(', ')}`);
    } else {
      const list = await within(30_000, 'tools/list', client.request('tools/list'));
      const names = list.result?.tools?.map((t) => t.name) ?? [];
      check(names.length > 0, `${label}: tools/list answered ${JSON.stringify(list)}`);
      step(`${label} lists ${names.length} tools: ${names.join(', ')}`);
    }
    child.stdin.end();
    const code = await within(30_000, 'exit after stdin closed', client.exited);
    check(code === 0, `${label} exited with ${code} after stdin closed: ${stderr}`);
    check(client.stray.length === 0, `${label} wrote non-JSON-RPC to stdout: ${client.stray.join('\n')}`);
  } catch (err) {
    failures.push(`${label}: ${err instanceof Error ? err.message : String(err)}\n${stderr}`);
  } finally {
    child.kill('SIGKILL');
  }
}

async function main(): Promise<void> {
  const all = workspaces();
  const versions = new Map(all.map((w) => [w.manifest.name, w.manifest.version]));
  if (!skipBuild) {
    step('pnpm build');
    await run('pnpm', ['build'], { cwd: root, maxBuffer: 64 << 20 });
  }
  for (const { dir, manifest } of all) {
    const built = join(dir, 'dist');
    check(existsSync(built) && statSync(built).isDirectory(), `${manifest.name}: no dist/, run pnpm build`);
  }
  const work = await mkdtemp(join(tmpdir(), 'zmcp-pack-install-'));
  const env = cleanEnv();
  // The bins get a home of their own: no ~/.zuliprc of whoever runs this.
  const binEnv = { ...env, HOME: work };
  try {
    const tarballs = join(work, 'tarballs');
    step(`packing ${all.length} packages into ${tarballs}`);
    await Promise.all(
      all.map(({ dir }) => run('pnpm', ['pack', '--pack-destination', tarballs], { cwd: dir, env })),
    );
    const packed = new Map<string, Manifest>();
    for (const file of readdirSync(tarballs)) {
      const unpacked = join(work, 'unpacked', file);
      await mkdir(unpacked, { recursive: true });
      await run('tar', ['-xzf', join(tarballs, file), '-C', unpacked, '--strip-components=1']);
      const name = (JSON.parse(await readFile(join(unpacked, 'package.json'), 'utf8')) as Manifest).name;
      const source = all.find((w) => w.manifest.name === name);
      if (source === undefined) throw new Error(`${file} is no workspace package`);
      packed.set(name, checkPacked(unpacked, source.manifest, versions));
    }
    check(packed.size === all.length, `packed ${packed.size} tarballs for ${all.length} packages`);

    const prefix = join(work, 'prefix');
    await mkdir(prefix);
    step(`npm install --prefix ${prefix} <${packed.size} tarballs>`);
    const tgz = readdirSync(tarballs).map((f) => join(tarballs, f));
    await run('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--prefer-offline', ...tgz], {
      cwd: prefix,
      env,
      maxBuffer: 64 << 20,
    });

    // Every entry loads from the prefix, with nothing but what the tarballs declared.
    for (const name of packed.keys()) {
      const script = `import(${JSON.stringify(name)}).then((m) => process.stdout.write(String(Object.keys(m).length)))`;
      try {
        const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
          cwd: prefix,
          env: binEnv,
        });
        check(Number(stdout) > 0, `${name}: its entry exports nothing`);
      } catch (err) {
        failures.push(`${name}: import failed: ${(err as { stderr?: string }).stderr ?? String(err)}`);
      }
    }

    // A TypeScript consumer type-checks against the shipped declarations, every .d.ts checked.
    const consumer = [...packed.keys()].map((name, i) => `import type * as entry${i} from '${name}';`);
    consumer.push(
      `export type Entries = [${[...packed.keys()].map((_, i) => `typeof entry${i}`).join(', ')}];`,
    );
    await writeFile(join(prefix, 'consumer.ts'), `${consumer.join('\n')}\n`);
    try {
      await run(
        join(root, 'node_modules', '.bin', 'tsc'),
        [
          ...['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext'],
          ...['--target', 'es2023', '--types', 'node', '--typeRoots', join(root, 'node_modules', '@types')],
          'consumer.ts',
        ],
        { cwd: prefix, env },
      );
      step('the declarations type-check for a consumer');
    } catch (err) {
      failures.push(
        `tsc over the installed declarations: ${(err as { stdout?: string }).stdout ?? String(err)}`,
      );
    }

    const binVersions = async (binDir: string, how: string) => {
      for (const [name, manifest] of packed) {
        for (const bin of Object.keys(manifest.bin ?? {})) {
          try {
            const { stdout } = await run(join(binDir, bin), ['--version'], { cwd: work, env: binEnv });
            check(
              stdout === `${manifest.version}\n`,
              `${how} ${bin} --version printed ${JSON.stringify(stdout)}`,
            );
            step(`${how}: ${bin} --version: ${stdout.trim()} (${name})`);
          } catch (err) {
            failures.push(
              `${how} ${bin} --version failed: ${(err as { stderr?: string }).stderr ?? String(err)}`,
            );
          }
        }
      }
    };
    await binVersions(join(prefix, 'node_modules', '.bin'), 'npm install --prefix');

    const server = packed.get('@zmcp/mcp-server');
    check(server?.bin?.['zulip-mcp'] !== undefined, '@zmcp/mcp-server has no zulip-mcp bin');
    if (server !== undefined)
      await demoSession(join(prefix, 'node_modules', '.bin', 'zulip-mcp'), binEnv, server.version);
    const live = packed.get('@zmcp/mcpl-server');
    check(live?.bin?.['zulip-mcpl'] !== undefined, '@zmcp/mcpl-server has no zulip-mcpl bin');
    if (live !== undefined) {
      const zulipMcpl = join(prefix, 'node_modules', '.bin', 'zulip-mcpl');
      await demoSession(zulipMcpl, binEnv, live.version);
      await demoSession(zulipMcpl, binEnv, live.version, {
        featureSets: ['zulip.context', 'zulip.history', 'zulip.messaging'],
      });
    }

    // The README's install from a clone: `npm install -g ./packed/*.tgz`, here into a global prefix of its own.
    const globalPrefix = join(work, 'global');
    step(`npm install -g --prefix ${globalPrefix} <${packed.size} tarballs>`);
    await run(
      'npm',
      ['install', '-g', '--prefix', globalPrefix, '--no-audit', '--no-fund', '--prefer-offline', ...tgz],
      { cwd: work, env, maxBuffer: 64 << 20 },
    );
    await binVersions(join(globalPrefix, 'bin'), 'npm install -g');
  } finally {
    if (keep) step(`kept ${work}`);
    else await rm(work, { recursive: true, force: true });
  }
  if (failures.length > 0) {
    process.stderr.write(`pack-install: ${failures.length} problem(s):\n- ${failures.join('\n- ')}\n`);
    process.exitCode = 1;
  } else step('ok');
}

main().catch((err: unknown) => {
  process.stderr.write(`pack-install: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
