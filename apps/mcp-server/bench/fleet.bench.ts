// Benchmark of a zulip-mcp fleet: HTTP tool calls per second through a round-robin proxy in front
// of 1, 2 and 4 `zulip-mcp --http` processes sharing one PostgreSQL (ZULIP_STATE_URL), each with
// the one-process figure of the same run as its baseline. Eight 2026-era clients call a read tool
// (`get_stream_topics`) in a loop for a few seconds. The realm runs in this process.
// Run: pnpm --filter @zmcp/mcp-server bench (after server.bench.ts), or bench:fleet alone.
// BENCH_FLEET_SECONDS (default 5) and BENCH_FLEET_CLIENTS (default 8) change the load.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startZulipSim } from '@zmcp/zulip-sim';
import pg from 'pg';
import { startPostgresCluster } from '../../../test/support/postgres-cluster.js';
import { setup as buildBin } from '../test/global-setup.js';
import { startRoundRobinProxy } from '../test/round-robin-proxy.js';

const SECONDS = Number(process.env.BENCH_FLEET_SECONDS ?? 5);
const CLIENTS = Number(process.env.BENCH_FLEET_CLIENTS ?? 8);
const token = 'fleet-bench-token-0123456789';
const appDir = join(import.meta.dirname, '..');

buildBin();
const cluster = await startPostgresCluster();
const sim = await startZulipSim({ rateLimit: false, requestLogSize: 0 });
const ann = sim.realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' }).userId;
const bot = sim.realm.addUser({ fullName: 'Helper Bot', email: 'helper@example.test', isBot: true }).userId;
sim.realm.addStream({ name: 'general', subscribers: [ann, bot] });
for (let i = 0; i < 50; i++) {
  sim.realm.sendMessage({
    senderId: ann,
    type: 'stream',
    stream: 'general',
    topic: `t${i % 10}`,
    content: `m${i}`,
  });
}
const home = await mkdtemp(join(tmpdir(), 'zmcp-fleet-http-bench-'));

async function database(name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(cluster.url);
  url.pathname = `/${name}`;
  return url.href;
}

function startProcess(stateUrl: string): Promise<{ child: ChildProcessWithoutNullStreams; url: string }> {
  const { site, email, apiKey } = sim.credentials(bot);
  const child = spawn(process.execPath, [join(appDir, 'dist', 'cli.js'), '--http', '--port', '0'], {
    cwd: appDir,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      ZULIP_STATE_DIR: join(home, 'unused'),
      ZULIP_STATE_URL: stateUrl,
      ZULIP_REALM: site,
      ZULIP_EMAIL: email,
      ZULIP_API_KEY: apiKey,
      ZMCP_HTTP_TOKEN: token,
      ZMCP_LOG_LEVEL: 'info',
      ZMCP_HTTP_MAX_SESSIONS: '1000',
    },
  });
  child.stdin.end();
  let stderr = '';
  return new Promise((resolve, reject) => {
    // Read (and drain) stderr: the address is in the 'listening' line.
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length > 100_000) return;
      stderr += chunk.toString('utf8');
      const match = /listening url=(\S+)/.exec(stderr);
      if (match) {
        stderr = '\n'.repeat(100_001);
        resolve({ child, url: new URL(match[1] as string).origin });
      }
    });
    child.once('exit', (code) => reject(new Error(`zulip-mcp exited ${code}: ${stderr.trim()}`)));
  });
}

async function callsPerSecond(processes: number): Promise<number> {
  const stateUrl = await database(`fleet_${processes}_${process.pid}`);
  const started = [];
  for (let i = 0; i < processes; i++) started.push(await startProcess(stateUrl));
  const proxy = await startRoundRobinProxy(started.map((p) => p.url));
  const clients = await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      const c = new Client(
        { name: 'bench', version: '1' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
      );
      await c.connect(
        new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      return c;
    }),
  );
  const call = (c: Client) => c.callTool({ name: 'get_stream_topics', arguments: { stream: 'general' } });
  await Promise.all(clients.map(call)); // warm-up
  let calls = 0;
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    clients.map(async (c) => {
      while (performance.now() < until) {
        const result = await call(c);
        if (result.isError) throw new Error(`a call failed: ${JSON.stringify(result.content)}`);
        calls += 1;
      }
    }),
  );
  const rate = calls / SECONDS;
  await Promise.all(clients.map((c) => c.close()));
  await proxy.close();
  await Promise.all(
    started.map(
      ({ child }) =>
        new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
  return rate;
}

console.log(
  `zulip-mcp --http fleet on PostgreSQL ${cluster.version}: ${CLIENTS} clients through a round-robin proxy, ${SECONDS} s each, on ${(await import('node:os')).cpus().length} cores`,
);
const one = await callsPerSecond(1);
let failed = 0;
console.log(`1 process: ${Math.round(one)} calls/s`);
for (const n of [2, 4]) {
  const rate = await callsPerSecond(n);
  const ratio = rate / one;
  // The processes share the machine's cores with the realm, the proxy and the clients: the
  // target is that spreading requests over processes costs nothing, not that it scales here.
  const pass = ratio >= 0.8;
  if (!pass) failed += 1;
  console.log(`${n} processes: ${Math.round(rate)} calls/s`);
  console.log(`  baseline (1 process, same run): ${Math.round(one)} calls/s`);
  console.log(`  ratio: ${ratio.toFixed(3)}   target: >= 0.8   ${pass ? 'PASS' : 'FAIL'}`);
}
await sim.close();
await cluster.stop();
await rm(home, { recursive: true, force: true });
console.log(failed === 0 ? 'all 2 figures PASS' : `${failed} of 2 figures FAIL`);
if (failed > 0) process.exitCode = 1;
