import { readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startDemoSim } from './demo.js';
import { SimError } from './errors.js';
import { parseRecording, recordTo, replay } from './scenario.js';
import { parseFault, readSeed, type SimSeed, seedFaultRules, seedOptions } from './seed.js';
import { startZulipSim } from './sim.js';
import type { SimUser, ZulipSim, ZulipSimOptions } from './types.js';

const HELP = `zulip-sim: a Zulip realm in a process, on loopback

Usage:
  zulip-sim [options]                  the seeded demo realm
  zulip-sim --seed FILE [options]      a realm from a seed file (JSON or YAML)
  zulip-sim replay RECORDING [--json]  replay a recorded scenario against a fresh realm

Options:
  --seed FILE            people, bots, channels, subscriptions and messages to start with
  --port N               port to listen on (default 0: any free port)
  --host ADDR            interface to listen on (default 127.0.0.1)
  --zuliprc PATH         also write one account's zuliprc to PATH (see --account)
  --account EMAIL        the account for --zuliprc (default: the demo bot, else the first bot, else the first user)
  --zuliprc-dir DIR      write one EMAIL.zuliprc per account into DIR
  --feature-level N      zulip_feature_level, 421 (Zulip 11.0, default) to 512 (13.0-dev)
  --zulip-version V      zulip_version to report (default: from the feature level)
  --heartbeat-ms N       heartbeat after N ms of a blocked GET /events (default 50000)
  --queue-timeout-ms N   event queues idle this long are gone (default 600000)
  --rate-limit SPEC      REQUESTS/WINDOW_MS per user (default 200/60000), or off
  --fault JSON           a fault rule, e.g. '{"method":"POST","path":"/messages","status":503,"times":1}' (repeatable)
  --record FILE          write every request served, with its answer, to FILE (JSON lines, no API keys)
  --help                 show this help
  --version              print the version

Prints a zuliprc for the demo bot, or for every account of a seeded realm, on stdout; everything
else goes to stderr. Stop it with Ctrl-C.
`;

class UsageError extends Error {}

function fail(message: string, code = 2): never {
  process.stderr.write(`zulip-sim: ${message}\n${code === 2 ? `\n${HELP}` : ''}`);
  process.exit(code);
}

function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0)
    throw new UsageError(`${flag} must be a positive integer, got ${value}`);
  return n;
}

function rateLimit(value: string | undefined): ZulipSimOptions['rateLimit'] | undefined {
  if (value === undefined) return undefined;
  if (value === 'off') return false;
  const m = /^(\d+)\/(\d+)$/.exec(value);
  if (!m || Number(m[1]) <= 0 || Number(m[2]) <= 0) {
    throw new UsageError(`--rate-limit must be REQUESTS/WINDOW_MS or off, got ${value}`);
  }
  return { requests: Number(m[1]), windowMs: Number(m[2]) };
}

function zuliprcBlock(sim: ZulipSim, user: SimUser): string {
  return `# ${user.fullName} <${user.email}> (${user.isBot ? 'bot' : 'human'})\n${sim.zuliprc(user.userId)}`;
}

function fileName(email: string): string {
  return `${email.replace(/[^A-Za-z0-9@._-]/g, '_')}.zuliprc`;
}

async function runReplay(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return;
  }
  if (positionals.length !== 1) throw new UsageError('replay takes one recording file');
  const recording = parseRecording(await readFile(positionals[0] as string, 'utf8'));
  const report = await replay(recording);
  if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else {
    process.stdout.write(
      `replayed ${report.total - report.skipped} of ${report.total} requests (${report.skipped} answered by injected faults skipped): ` +
        `${report.matched} matched, ${report.mismatches.length} differed\n`,
    );
    for (const m of report.mismatches) {
      process.stdout.write(`  #${m.seq} ${m.method} ${m.path}: differs at ${m.where}\n`);
    }
  }
  process.exitCode = report.mismatches.length === 0 ? 0 : 1;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === 'replay') return runReplay(argv.slice(1));
  const { values } = parseArgs({
    args: argv,
    options: {
      seed: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      zuliprc: { type: 'string' },
      account: { type: 'string' },
      'zuliprc-dir': { type: 'string' },
      'feature-level': { type: 'string' },
      'zulip-version': { type: 'string' },
      'heartbeat-ms': { type: 'string' },
      'queue-timeout-ms': { type: 'string' },
      'rate-limit': { type: 'string' },
      fault: { type: 'string', multiple: true },
      record: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'V' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return;
  }
  if (values.version) {
    // package.json is one level above both src/ and dist/.
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    process.stdout.write(`${(manifest as { version: string }).version}\n`);
    return;
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`--port must be 0..65535, got ${values.port}`);
  }
  const host = values.host ?? '127.0.0.1';
  const knobs: ZulipSimOptions = {};
  const level = positiveInt('--feature-level', values['feature-level']);
  if (level !== undefined) knobs.zulipFeatureLevel = level;
  if (values['zulip-version'] !== undefined) knobs.zulipVersion = values['zulip-version'];
  const heartbeat = positiveInt('--heartbeat-ms', values['heartbeat-ms']);
  if (heartbeat !== undefined) knobs.heartbeatIntervalMs = heartbeat;
  const idle = positiveInt('--queue-timeout-ms', values['queue-timeout-ms']);
  if (idle !== undefined) knobs.queueIdleTimeoutMs = idle;
  const limit = rateLimit(values['rate-limit']);
  if (limit !== undefined) knobs.rateLimit = limit;
  const faults = (values.fault ?? []).map((text, i) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new UsageError(`--fault #${i + 1} is not JSON: ${text}`);
    }
    return parseFault(parsed, `--fault #${i + 1}`);
  });
  if (!/^(127\.|localhost$|::1$|\[::1\]$)/.test(host)) {
    process.stderr.write(
      `zulip-sim: warning: listening on ${host}, beyond loopback; the API keys are not secret\n`,
    );
  }

  let seed: SimSeed | null = null;
  let sim: ZulipSim;
  let accounts: SimUser[];
  let chosen: SimUser | undefined;
  let summary: string;
  if (values.seed !== undefined) {
    seed = readSeed(await readFile(values.seed, 'utf8'));
    sim = await startZulipSim({ ...seedOptions(seed), ...knobs, host, port });
    accounts = sim.realm.users().filter((u) => u.isActive);
    chosen = accounts.find((u) => u.isBot) ?? accounts[0];
    summary = `realm from ${values.seed} at ${sim.url} (API ${sim.url}/api/v1): ${accounts.length} accounts, ${sim.realm.streams().length} channels, ${sim.realm.messageCount()} messages`;
  } else {
    const demo = await startDemoSim({ ...knobs, host, port, realmName: 'Zulip Simulator demo' });
    sim = demo.sim;
    chosen = sim.realm.user(demo.demo.botId);
    accounts = chosen ? [chosen] : [];
    summary = `demo realm at ${sim.url} (API ${sim.url}/api/v1), ${demo.demo.messageCount} messages`;
  }
  for (const rule of [...(seed ? seedFaultRules(seed) : []), ...seedFaultRules({ faults })])
    sim.faults.add(rule);
  if (values.account !== undefined) {
    chosen = sim.realm.user(values.account);
    if (!chosen) {
      await sim.close();
      throw new UsageError(`--account ${values.account}: no such account`);
    }
  }
  const recorder = values.record === undefined ? undefined : recordTo(sim, values.record, seed);
  if (values['zuliprc-dir'] !== undefined) {
    const dir = values['zuliprc-dir'];
    await mkdir(dir, { recursive: true });
    for (const u of accounts)
      await writeFile(join(dir, fileName(u.email)), sim.zuliprc(u.userId), { mode: 0o600 });
  }
  if (values.zuliprc !== undefined && chosen) {
    await writeFile(values.zuliprc, sim.zuliprc(chosen.userId), { mode: 0o600 });
  }
  process.stdout.write(
    seed === null && chosen
      ? sim.zuliprc(chosen.userId)
      : accounts.map((u) => zuliprcBlock(sim, u)).join('\n'),
  );
  process.stderr.write(
    `zulip-sim: ${summary}, feature level ${sim.zulipFeatureLevel}` +
      `${values.zuliprc ? `, zuliprc written to ${values.zuliprc}` : ''}` +
      `${values['zuliprc-dir'] ? `, zuliprc files in ${values['zuliprc-dir']}` : ''}` +
      `${values.record ? `, recording to ${values.record}` : ''}; Ctrl-C to stop\n`,
  );
  const stop = () => {
    Promise.resolve(recorder?.stop())
      .then(() => sim.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  if (error instanceof UsageError) fail(error.message);
  if (
    error instanceof SimError ||
    (error instanceof Error && error.name === 'TypeError' && 'code' in error)
  ) {
    fail(error.message, error instanceof SimError ? 1 : 2);
  }
  process.stderr.write(`zulip-sim: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
