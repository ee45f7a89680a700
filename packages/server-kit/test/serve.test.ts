// runServer: the start-up and shutdown every zmcp server runs alike, against @zmcp/zulip-sim.
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineSettings, flagSwitch } from '@zmcp/cli';
import { ZmcpError } from '@zmcp/core';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  openZulipRuntime,
  runServer,
  type ServerSettings,
  type ServerStart,
  serverSettings,
} from '../src/index.js';

const server = serverSettings({
  bin: 'zulip-test',
  toolsets: { served: ['read'], default: ['read'] },
  readOnly: 'served',
});
const settings = defineSettings(
  {
    ...server.shape,
    '--demo': flagSwitch({ group: 'Other', flag: '--demo', defaultText: 'off', help: 'Serve a demo realm.' }),
  },
  { bin: 'zulip-test', refine: server.check },
);
type TestConfig = ServerSettings & { demo: boolean; marker?: string };

let sim: ZulipSim;
let stateDir: string;

beforeEach(async () => {
  sim = await startZulipSim({ rateLimit: false });
  sim.realm.addUser({ fullName: 'Helper Bot', email: 'helper@example.test', isBot: true });
  stateDir = await mkdtemp(join(tmpdir(), 'server-kit-serve-'));
});

afterEach(async () => {
  await sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

function configure(env: Record<string, string>, argv: string[] = []): TestConfig {
  const full = { HOME: '/nonexistent', ZULIP_STATE_DIR: stateDir, ...env };
  const values = settings.parse(full, argv);
  return { ...server.resolve(values, { env: full }), demo: values['--demo'] };
}

function credentialsEnv(): Record<string, string> {
  const { site, email, apiKey } = sim.credentials('helper@example.test');
  return { ZULIP_SITE: site, ZULIP_EMAIL: email, ZULIP_API_KEY: apiKey };
}

function stderr() {
  const chunks: string[] = [];
  return { write: (text: string) => void chunks.push(text), text: () => chunks.join('') };
}

describe('runServer', () => {
  it('opens, serves, then closes what it opened, with exit code 0', async () => {
    const err = stderr();
    const events: string[] = [];
    const code = await runServer({
      bin: 'zulip-test',
      config: configure(credentialsEnv()),
      stderr: err,
      demo: { realmName: 'unused' },
      open: async ({ config, credentials, logger }) => {
        const runtime = await openZulipRuntime({ settings: config, credentials, logger });
        events.push(`open ${runtime.identity.full_name}`);
        return {
          close: async () => {
            events.push('close');
            await runtime.close();
          },
        };
      },
      serve: async () => void events.push('serve'),
    });
    expect(code).toBe(0);
    expect(events).toEqual(['open Helper Bot', 'serve', 'close']);
    expect(err.text()).toMatch(/ info connected to Zulip /);
  });

  it('serves a demo realm with --demo, its state in a directory removed at the end', async () => {
    const err = stderr();
    let seen: ServerStart<TestConfig> | undefined;
    let site = '';
    const code = await runServer({
      bin: 'zulip-test',
      config: configure({}, ['--demo']),
      stderr: err,
      demo: {
        realmName: 'test demo',
        configure: (config, demo) => ({ ...config, marker: `demo with ${demo.people.length} people` }),
      },
      open: async (start) => {
        seen = start;
        site = start.credentials.site;
        const runtime = await openZulipRuntime({ settings: start.config, credentials: start.credentials });
        expect(runtime.identity).toMatchObject({ is_bot: true, user_id: start.demo?.botUserId });
        expect(runtime.identity.full_name).toBe(start.demo?.botName);
        return runtime;
      },
      serve: async ({ settings, client }, { demo }) => {
        expect(existsSync(settings.stateDir)).toBe(true);
        // A bin's demo may script the realm: a message from one of its people.
        const from = demo?.people[0] as number;
        const id = demo?.post({ senderId: from, stream: 'general', topic: 'scripted', content: 'hello bot' });
        const { message } = await client.getMessage(id as number, { applyMarkdown: false });
        expect(message).toMatchObject({ sender_id: from, subject: 'scripted', content: 'hello bot' });
      },
    });
    expect(code).toBe(0);
    expect(seen?.config.marker).toMatch(/^demo with [1-9]\d* people$/);
    expect(seen?.demo?.people).not.toContain(seen?.demo?.botUserId);
    expect(seen?.config.zulip.site).toBe(site);
    expect(seen?.config.stateDir).not.toBe(stateDir);
    expect(seen?.config.stateDir).toContain('zulip-test-demo-state-');
    expect(existsSync(seen?.config.stateDir as string)).toBe(false);
    expect(err.text()).toMatch(/ info demo realm started site=http:\/\/127\.0\.0\.1:\d+ /);
    // The demo realm is gone with the run.
    await expect(fetch(`${site}/api/v1/server_settings`)).rejects.toThrow();
  });

  it('reports credentials that mean the configuration is wrong as a bad variable is, with exit code 2', async () => {
    const err = stderr();
    let opened = false;
    const code = await runServer({
      bin: 'zulip-test',
      config: configure({ ZULIP_SITE: 'https://chat.example.com', ZULIP_EMAIL: 'bot@example.com' }),
      stderr: err,
      demo: { realmName: 'unused' },
      open: async () => {
        opened = true;
        return { close: async () => undefined };
      },
      serve: async () => undefined,
    });
    expect(code).toBe(2);
    expect(opened).toBe(false);
    expect(err.text()).toMatch(
      /^zulip-test: Invalid configuration:\n {2}.*ZULIP_API_KEY.*\(CORE_CONFIG_INVALID\)\nRun zulip-test --help/,
    );
  });

  it('reports a configuration problem open throws with exit code 2, any other failure with 1', async () => {
    const run = (failure: Error) => {
      const err = stderr();
      const code = runServer({
        bin: 'zulip-test',
        config: configure(credentialsEnv()),
        stderr: err,
        demo: { realmName: 'unused' },
        open: async () => {
          throw failure;
        },
        serve: async () => undefined,
      });
      return code.then((c) => ({ code: c, text: err.text() }));
    };
    const refused = await run(new ZmcpError('CORE_UNAUTHORIZED', 'refused'));
    expect(refused.code).toBe(2);
    expect(refused.text).toContain(
      'Zulip refused the credentials (CORE_UNAUTHORIZED): check ZULIP_EMAIL and ZULIP_API_KEY',
    );
    const broken = await run(new Error('disk on fire'));
    expect(broken.code).toBe(1);
    expect(broken.text).toMatch(/ error fatal .*disk on fire/);
  });

  it('reports the bin’s own configuration errors as configuration problems, with exit code 2', async () => {
    const run = (failure: Error) => {
      const err = stderr();
      const code = runServer({
        bin: 'zulip-test',
        config: configure(credentialsEnv()),
        stderr: err,
        demo: { realmName: 'unused' },
        configurationProblem: (e) =>
          (e as { code?: unknown }).code === 'TEST_SETTINGS_FILE' ? (e as Error).message : undefined,
        open: async () => {
          throw failure;
        },
        serve: async () => undefined,
      });
      return code.then((c) => ({ code: c, text: err.text() }));
    };
    const own = await run(
      Object.assign(new Error('TEST_FILE: cannot read /etc/nope'), { code: 'TEST_SETTINGS_FILE' }),
    );
    expect(own).toEqual({
      code: 2,
      text: expect.stringMatching(
        /^zulip-test: Invalid configuration:\n {2}TEST_FILE: cannot read \/etc\/nope\n/,
      ),
    });
    // The libraries' problems are still recognised beside the bin's own.
    expect((await run(new ZmcpError('CORE_UNAUTHORIZED', 'refused'))).code).toBe(2);
    expect((await run(new Error('disk on fire'))).code).toBe(1);
  });

  it('fails with exit code 1 when serving fails, closing what it opened', async () => {
    const err = stderr();
    let closed = false;
    const code = await runServer({
      bin: 'zulip-test',
      config: configure(credentialsEnv()),
      stderr: err,
      demo: { realmName: 'unused' },
      open: async () => ({
        close: async () => {
          closed = true;
        },
      }),
      serve: async () => {
        throw new Error('the event queue failed for good');
      },
    });
    expect(code).toBe(1);
    expect(closed).toBe(true);
    expect(err.text()).toMatch(/ error fatal .*the event queue failed for good/);
  });

  it('redacts the key wherever it came from, a zuliprc included, in every line', async () => {
    const { site, email, apiKey } = sim.credentials('helper@example.test');
    const rc = join(stateDir, 'zuliprc');
    await writeFile(rc, `[api]\nemail=${email}\nkey=${apiKey}\nsite=${site}\n`);
    const basic = Buffer.from(`${email}:${apiKey}`).toString('base64');
    const err = stderr();
    const code = await runServer({
      bin: 'zulip-test',
      config: configure({ ZULIP_RC_PATH: rc, ZMCP_LOG_LEVEL: 'debug' }),
      stderr: err,
      secrets: ['bin-own-secret-0123456789'],
      demo: { realmName: 'unused' },
      open: async ({ logger, credentials }) => {
        logger.info('about to serve', { key: credentials.apiKey, token: 'bin-own-secret-0123456789' });
        logger.info('basic', { header: basic });
        return { close: async () => undefined };
      },
      serve: async () => undefined,
    });
    expect(code).toBe(0);
    expect(err.text()).toContain('about to serve key=[REDACTED] token=[REDACTED]');
    expect(err.text()).toMatch(/ info basic \S*\[REDACTED\]/);
    expect(err.text()).not.toContain(basic);
    expect(err.text()).not.toContain(apiKey);
  });
});
