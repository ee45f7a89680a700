// The zulip-mcpl command: help, version and configuration errors; stdio carrying nothing but
// protocol; --tcp serving one loopback connection at a time; --demo; and the bin itself.

import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { FileStateStore, stateAccount } from '@zmcp/delivery';
import { connectTcp, McplHost, NdjsonTransport, spawnStdioTransport } from '@zmcp/mcpl';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configVariableNames } from '../src/config.js';
import { main } from '../src/main.js';
import { FULL_GRANT, type Realm, startRealm } from './world.js';

let realm: Realm;

beforeEach(async () => {
  realm = await startRealm();
});

afterEach(async () => {
  await realm.close();
});

function sink(): { stream: PassThrough; text(): string } {
  const stream = new PassThrough();
  let text = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    text += chunk;
  });
  return { stream, text: () => text };
}

describe('help, version and bad configuration', () => {
  it('prints help and the version on stdout', async () => {
    const out = sink();
    expect(await main(['--help'], {}, { stdout: out.stream })).toBe(0);
    for (const name of configVariableNames()) expect(out.text()).toContain(name);
    expect(out.text()).toContain('--tcp <port>');
    const version = sink();
    expect(await main(['--version'], {}, { stdout: version.stream })).toBe(0);
    expect(version.text()).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it('exits 2 naming every bad setting, and never echoes the API key', async () => {
    const err = sink();
    const code = await main(
      ['--tcp', 'x', '--bogus'],
      { ...realm.env, ZULIP_API_KEY: 'short-secret-value', ZULIP_CATCHUP_LIMIT: '0' },
      { stderr: err.stream },
    );
    expect(code).toBe(2);
    // The port is read by the whole-number rule every zmcp bin reads a port with.
    expect(err.text()).toContain('--tcp: expected a whole number from 0 to 65535 (got "x")');
    expect(err.text()).toContain('--bogus: unknown option');
    expect(err.text()).toContain('ZULIP_API_KEY: expected a Zulip API key');
    expect(err.text()).toContain('ZULIP_CATCHUP_LIMIT');
    expect(err.text()).not.toContain('short-secret-value');
  });

  it('never echoes a key pasted into the wrong variable, from the environment or beside a zuliprc', async () => {
    const key = 'Zk3yZk3yZk3yZk3yZk3yZk3yZk3yZk3y';
    const rc = join(realm.stateDir, 'wrong-variable.zuliprc');
    await writeFile(rc, `[api]\nemail=bot@example.com\nkey=${key}\nsite=https://chat.example.com\n`);
    for (const env of [
      { ZULIP_EMAIL: key, ZULIP_SITE: 'https://chat.example.com' },
      { ZULIP_EMAIL: key, ZULIP_RC_PATH: rc },
    ]) {
      const err = sink();
      expect(await main([], env, { stderr: err.stream })).toBe(2);
      expect(err.text()).toContain(
        'ZULIP_EMAIL: expected an email address such as bot@example.com (got "[REDACTED]")',
      );
      expect(err.text()).not.toContain(key);
    }
    // The key as the zuliprc's path: the library's start-up problem names the path.
    const asPath = sink();
    expect(await main([], { ZULIP_RC_PATH: key }, { stderr: asPath.stream })).toBe(2);
    expect(asPath.text()).toContain('zuliprc [REDACTED] (from ZULIP_RC_PATH) does not exist');
    expect(asPath.text()).not.toContain(key);
  });

  it('refuses the toolsets of zulip-mcp and an invalid filters file at start', async () => {
    const err = sink();
    expect(await main([], { ...realm.env, ZULIP_TOOLSETS: 'read,session' }, { stderr: err.stream })).toBe(2);
    expect(err.text()).toContain('the session toolset is zulip-mcp');
    const readOnly = sink();
    expect(await main([], { ...realm.env, ZULIP_READ_ONLY: 'true' }, { stderr: readOnly.stream })).toBe(2);
    expect(readOnly.text()).toContain('ZULIP_READ_ONLY: zulip-mcpl cannot run read-only');
    // Off is what zulip-mcp reads as off too; a word that is no boolean is refused as there.
    const off = sink();
    expect(await main(['--version'], { ...realm.env, ZULIP_READ_ONLY: 'off' }, { stdout: off.stream })).toBe(
      0,
    );
    const word = sink();
    expect(await main([], { ...realm.env, ZULIP_READ_ONLY: 'maybe' }, { stderr: word.stream })).toBe(2);
    expect(word.text()).toContain('ZULIP_READ_ONLY: expected one of 1/0, true/false, yes/no, on/off');
    const filters = new FileStateStore({ dir: realm.stateDir }).pathOf({
      account: stateAccount({ site: realm.env.ZULIP_SITE as string, userId: realm.bot }),
      session: 'default',
      kind: 'filters',
    });
    await mkdir(dirname(filters), { recursive: true });
    await writeFile(filters, '{"streams": "general"}');
    const broken = sink();
    expect(await main([], realm.env, { stderr: broken.stream })).toBe(2);
    expect(broken.text()).toContain('DELIVERY_FILTERS_INVALID');
  });
});

describe('configuration found wrong while starting', () => {
  it('exits 2 on a filters seed, a site, or an upload root that is wrong, redacting a key read from a zuliprc', async () => {
    const seed = sink();
    const seeded = { ...realm.env, ZULIP_STREAMS: 'general,__ALL__', ZULIP_SESSION_ID: '.hidden' };
    expect(await main([], seeded, { stderr: seed.stream })).toBe(2);
    expect(seed.text()).toMatch(/\n {2}ZULIP_SESSION_ID: expected 1 to 128 characters.*starts with a dot/);
    expect(seed.text()).toMatch(/\n {2}ZULIP_STREAMS: .*__ALL__/);

    const site = sink();
    const insecure = { ...realm.env, ZULIP_SITE: 'http://chat.example.com' };
    expect(await main([], insecure, { stderr: site.stream })).toBe(2);
    expect(site.text()).toContain('ZULIP_SITE: is plain http to a host that is not loopback');

    // The key comes from the zuliprc only, and the missing root's path carries it.
    const { ZULIP_EMAIL: _email, ZULIP_API_KEY: apiKey, ...env } = realm.env;
    const rc = join(realm.stateDir, 'zuliprc');
    await writeFile(rc, realm.sim.zuliprc(realm.bot));
    const missing = sink();
    const code = await main(
      [],
      { ...env, ZULIP_RC_PATH: rc, ZULIP_UPLOAD_ROOTS: `files=/nonexistent/${apiKey}` },
      { stderr: missing.stream },
    );
    expect(code).toBe(2);
    expect(missing.text()).toContain('upload root files=/nonexistent/[REDACTED]');
    expect(missing.text()).toContain('(UPLOAD_ROOT_MISSING)');
    expect(missing.text()).not.toContain(apiKey as string);
  });

  it('exits 2 when Zulip refuses the credentials, saying which to check', async () => {
    const err = sink();
    const key = 'A'.repeat(32);
    expect(await main([], { ...realm.env, ZULIP_API_KEY: key }, { stderr: err.stream })).toBe(2);
    expect(err.text()).toContain(
      'Zulip refused the credentials (CORE_UNAUTHORIZED): check ZULIP_EMAIL and ZULIP_API_KEY',
    );
    expect(err.text()).not.toContain(key);
  });
});

describe('stdio', () => {
  it('serves MCPL over stdin/stdout, and stdout carries nothing but protocol', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const lines: string[] = [];
    let buffer = '';
    stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      let end = buffer.indexOf('\n');
      while (end >= 0) {
        lines.push(buffer.slice(0, end));
        buffer = buffer.slice(end + 1);
        end = buffer.indexOf('\n');
      }
    });
    const hostOut = new PassThrough();
    stdout.pipe(hostOut);
    const shutdown = new AbortController();
    const err = sink();
    const running = main(
      [],
      { ...realm.env, ZMCP_LOG_LEVEL: 'debug' },
      { stdin, stdout, stderr: err.stream, shutdown: shutdown.signal },
    );
    const host = await McplHost.connect(new NdjsonTransport(hostOut, stdin), {
      name: 'stdio-host',
      version: '1',
    });
    const registered = new Promise<void>((resolve) => host.on('channels', () => resolve()));
    await host.setPolicy({ effectiveCapabilities: [...FULL_GRANT] });
    await registered;
    await host.openChannel({ channelId: 'zulip:general' });
    const heard = new Promise<void>((resolve) => host.on('incoming', () => resolve()));
    realm.say('general', 'over stdio');
    await heard;
    shutdown.abort();
    expect(await running).toBe(0);
    expect(lines.length).toBeGreaterThan(3);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ jsonrpc: '2.0' });
    expect(err.text()).toContain('live delivery started');
    expect(err.text()).not.toContain(realm.env.ZULIP_API_KEY);
  });
});

describe('--tcp', () => {
  it('serves one loopback connection at a time, and the next one catches up', async () => {
    const shutdown = new AbortController();
    let port!: number;
    const ready = new Promise<void>((resolve) => {
      void main(['--tcp', '0'], realm.env, {
        shutdown: shutdown.signal,
        stderr: new PassThrough(),
        onReady: (info) => {
          if (info.transport === 'tcp') port = info.port;
          resolve();
        },
      }).then((code) => expect(code).toBe(0));
    });
    await ready;
    const first = await McplHost.connect(await connectTcp({ port }), { name: 'tcp-host', version: '1' });
    const registered = new Promise<void>((resolve) => first.on('channels', () => resolve()));
    await first.setPolicy({ effectiveCapabilities: [...FULL_GRANT] });
    await registered;
    // A second host is refused while the first is connected.
    const refused = await connectTcp({ port }).then(
      async (t) =>
        McplHost.connect(t, { name: 'second', version: '1', requestTimeoutMs: 2000 }).then(
          () => 'connected',
          () => 'refused',
        ),
      () => 'refused',
    );
    expect(refused).toBe('refused');
    await first.close();
    const mention = realm.say('random', 'while nobody listened @**Helper Bot**');
    const second = await McplHost.connect(await connectTcp({ port }), { name: 'tcp-host', version: '1' });
    const pushed = new Promise<string>((resolve) =>
      second.on('push', (e) => resolve(JSON.stringify(e.payload))),
    );
    await second.setPolicy({ effectiveCapabilities: [...FULL_GRANT] });
    expect(await pushed).toContain(`id=${mention}]`);
    await second.close();
    shutdown.abort();
  });
});

describe('--demo and the bin', () => {
  it('serves a seeded simulated realm with no account', async () => {
    const shutdown = new AbortController();
    let port!: number;
    const done = new Promise<number>((resolve) => {
      void main(
        ['--demo', '--tcp', '0'],
        { HOME: '/nonexistent', ZMCP_LOG_LEVEL: 'silent' },
        {
          shutdown: shutdown.signal,
          onReady: (info) => {
            if (info.transport === 'tcp') port = info.port;
            resolve(-1);
          },
        },
      ).then(resolve);
    });
    await done;
    const host = await McplHost.connect(await connectTcp({ port }), { name: 'demo-host', version: '1' });
    const registered = new Promise<void>((resolve) => host.on('channels', () => resolve()));
    await host.setPolicy({ effectiveCapabilities: [...FULL_GRANT] });
    await registered;
    expect(host.channels.length).toBeGreaterThan(2);
    const history = await host.callTool('fetch_history', {
      stream: host.channels[0]?.label.slice(1) ?? 'general',
    });
    expect(history.isError).not.toBe(true);
    await host.close();
    shutdown.abort();
  });

  it('runs as a separate process on stdio (the bin from its sources)', async () => {
    const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
    const transport = await spawnStdioTransport({
      command: process.execPath,
      args: ['--import', 'tsx', '--conditions', '@zmcp/source', cli],
      env: { ...process.env, ...realm.env },
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      stderr: 'ignore',
    });
    const host = await McplHost.connect(transport, { name: 'bin-host', version: '1' });
    expect(host.serverInfo?.name).toBe('zulip-mcpl');
    const registered = new Promise<void>((resolve) => host.on('channels', () => resolve()));
    await host.setPolicy({ effectiveCapabilities: [...FULL_GRANT] });
    await registered;
    expect(host.channels.map((c) => c.id).sort()).toEqual(['zulip:general', 'zulip:random']);
    await host.close();
  });
});
