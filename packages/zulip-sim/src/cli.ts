import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { startDemoSim } from './demo.js';

const HELP = `zulip-sim: a seeded demo Zulip realm on loopback

Usage: zulip-sim [--port N] [--host ADDR] [--zuliprc PATH]

  --port N         port to listen on (default 0: any free port)
  --host ADDR      interface to listen on (default 127.0.0.1)
  --zuliprc PATH   also write the demo bot's zuliprc to PATH
  --help           show this help
  --version        print the version

Prints a zuliprc for the demo bot on stdout; everything else goes to stderr.
Stop it with Ctrl-C.
`;

function fail(message: string): never {
  process.stderr.write(`zulip-sim: ${message}\n\n${HELP}`);
  process.exit(2);
}

async function main(): Promise<void> {
  let values: { port?: string; host?: string; zuliprc?: string; help?: boolean; version?: boolean };
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        zuliprc: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'V' },
      },
      strict: true,
    }));
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
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
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    fail(`--port must be 0..65535, got ${values.port}`);
  const host = values.host ?? '127.0.0.1';
  if (!/^(127\.|localhost$|::1$|\[::1\]$)/.test(host)) {
    process.stderr.write(
      `zulip-sim: warning: listening on ${host}, beyond loopback; the demo keys are not secret\n`,
    );
  }
  const { sim, demo } = await startDemoSim({ host, port, realmName: 'Zulip Simulator demo' });
  const rc = sim.zuliprc(demo.botId);
  if (values.zuliprc) await writeFile(values.zuliprc, rc, { mode: 0o600 });
  process.stdout.write(rc);
  process.stderr.write(
    `zulip-sim: demo realm at ${sim.url} (API ${sim.url}/api/v1), ${demo.messageCount} messages` +
      `${values.zuliprc ? `, zuliprc written to ${values.zuliprc}` : ''}; Ctrl-C to stop\n`,
  );
  const stop = () => {
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`zulip-sim: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
