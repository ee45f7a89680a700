// openZulipRuntime against @zmcp/zulip-sim over real HTTP: what a server opens once per process.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineSettings } from '@zmcp/cli';
import { isZmcpError, type Logger } from '@zmcp/core';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openZulipRuntime, type ServerSettings, serverSettings, type ZulipRuntime } from '../src/index.js';

const server = serverSettings({
  bin: 'zulip-test',
  toolsets: { served: ['read', 'write'], default: ['read', 'write'] },
  readOnly: 'served',
});
const settings = defineSettings({ ...server.shape }, { bin: 'zulip-test', refine: server.check });

let sim: ZulipSim;
let stateDir: string;
let ids: { bot: number; ops: number; vault: number };
const opened: ZulipRuntime[] = [];

beforeEach(async () => {
  sim = await startZulipSim({ rateLimit: false, maxMessageLength: 5000 });
  const bot = sim.realm.addUser({ fullName: 'Helper Bot', email: 'helper@example.test', isBot: true }).userId;
  const ann = sim.realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' }).userId;
  sim.realm.addStream({ name: 'general', subscribers: [bot, ann] });
  const ops = sim.realm.addStream({ name: 'ops', inviteOnly: true, subscribers: [bot, ann] }).streamId;
  const vault = sim.realm.addStream({ name: 'vault', inviteOnly: true, subscribers: [bot] }).streamId;
  ids = { bot, ops, vault };
  stateDir = await mkdtemp(join(tmpdir(), 'server-kit-runtime-'));
});

afterEach(async () => {
  for (const r of opened.splice(0)) await r.close();
  await sim.close();
  await rm(stateDir, { recursive: true, force: true });
});

function configure(env: Record<string, string> = {}, withCredentials = true): ServerSettings {
  const creds = sim.credentials('helper@example.test');
  const full = {
    HOME: '/nonexistent',
    ZULIP_STATE_DIR: stateDir,
    AGENT_TIMEZONE: 'UTC',
    ...(withCredentials
      ? { ZULIP_SITE: creds.site, ZULIP_EMAIL: creds.email, ZULIP_API_KEY: creds.apiKey }
      : {}),
    ...env,
  };
  return server.resolve(settings.parse(full, []), { env: full });
}

async function open(config: ServerSettings, logger?: Logger): Promise<ZulipRuntime> {
  const runtime = await openZulipRuntime({ settings: config, logger });
  opened.push(runtime);
  return runtime;
}

function recordingLogger(): Logger & { lines: { level: string; message: string; fields: unknown }[] } {
  const lines: { level: string; message: string; fields: unknown }[] = [];
  const at = (level: string) => (message: string, fields?: unknown) =>
    void lines.push({ level, message, fields });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** What zulip-sim was asked, besides reads. */
function writes(): string[] {
  return sim.requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.path}`);
}

describe('openZulipRuntime', () => {
  it('opens the client, the account, the realm’s limits, the services and the state store, and says so', async () => {
    const logger = recordingLogger();
    const runtime = await open(configure({ ZULIP_SESSION_ID: 'agent-1' }), logger);
    expect(runtime.identity).toEqual({
      user_id: ids.bot,
      email: 'helper@example.test',
      full_name: 'Helper Bot',
      is_bot: true,
    });
    expect(runtime.facts.identity).toBe(runtime.identity);
    // The realm told its limit through POST /register; the queue was deleted at once.
    expect(runtime.services.maxMessageLength).toBe(5000);
    expect(writes()).toEqual(['POST /api/v1/register', 'DELETE /api/v1/events']);
    expect(runtime.services.timeZone).toBe('UTC');
    expect(runtime.account).toMatch(/^http_3a_2f_2f127\.0\.0\.1_3a\d+@\d+$/);
    expect(runtime.account.endsWith(`@${ids.bot}`)).toBe(true);
    expect(runtime.backend.kind).toBe('files');
    expect(runtime.backend.location).toBe(stateDir);
    expect(runtime.stateLocation).toBe(join(stateDir, runtime.account));
    expect(
      runtime.backend.locationOf({ account: runtime.account, session: 'agent-1', kind: 'delivery' }),
    ).toBe(join(runtime.stateLocation, 'agent-1.delivery.json'));
    expect(runtime.uploadRoots).toBeUndefined();
    expect(logger.lines).toContainEqual({
      level: 'info',
      message: 'connected to Zulip',
      fields: {
        site: runtime.client.site,
        account: 'helper@example.test',
        readOnly: false,
        uploadRoots: 'none',
        state: runtime.stateLocation,
        session: 'agent-1',
      },
    });
    await runtime.close();
    await runtime.close();
  });

  it('lets the operator’s limits win over the realm’s', async () => {
    const runtime = await open(
      configure({
        ZULIP_MAX_MESSAGE_LENGTH: '200',
        ZULIP_UPLOAD_MAX_BYTES: '1KiB',
        ZULIP_PAGE_BUDGET_BYTES: '2KiB',
      }),
    );
    expect(runtime.services).toMatchObject({
      maxMessageLength: 200,
      maxFileBytes: 1024,
      pageBudgetBytes: 2048,
    });
  });

  it('resolves the allowlists to stream ids once, against the streams the account can see', async () => {
    const runtime = await open(
      configure({ ZULIP_PRIVATE_STREAMS: 'ops', ZULIP_WRITE_STREAMS: `${ids.ops}` }),
    );
    // Both lists from one read of the streams and the subscriptions.
    expect(sim.requests.filter((r) => r.path === '/api/v1/streams')).toHaveLength(1);
    const lookup = await runtime.services.directory.streamLookup();
    expect(runtime.policy.canReadStream(ids.ops, lookup)).toBe(true);
    expect(runtime.policy.canReadStream(ids.vault, lookup)).toBe(false);
    expect(() => runtime.policy.checkWrite({ stream: ids.ops }, lookup)).not.toThrow();
    expect(() => runtime.policy.checkWrite({ stream: 'general' }, lookup)).toThrow(/ZULIP_WRITE_STREAMS/);
    // A DM is no stream of the write allowlist: refused unless ZULIP_WRITE_DMS says otherwise.
    expect(() => runtime.policy.checkWrite({ dm: [1] }, lookup)).toThrow(/ZULIP_WRITE_DMS/);
  });

  it('reads the streams only when an allowlist names some', async () => {
    await open(configure({ ZULIP_PRIVATE_STREAMS: '__ALL__' }));
    expect(sim.requests.filter((r) => r.path === '/api/v1/streams')).toEqual([]);
  });

  it('refuses an allowlist entry that names no stream, naming the setting, and leaves nothing open', async () => {
    const failure = await openZulipRuntime({
      settings: configure({ ZULIP_WRITE_STREAMS: 'general,nowhere' }),
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(isZmcpError(failure, 'CORE_CONFIG_INVALID')).toBe(true);
    expect((failure as Error).message).toContain('ZULIP_WRITE_STREAMS');
  });

  it('in read-only mode sends nothing but GETs, and its client refuses every write', async () => {
    const runtime = await open(configure({ ZULIP_READ_ONLY: 'on' }));
    expect(runtime.policy.readOnly).toBe(true);
    const refused = await runtime.client
      .sendMessage({ type: 'stream', to: 'general', topic: 't', content: 'x' })
      .catch((err: unknown) => err);
    expect(isZmcpError(refused, 'CORE_READ_ONLY')).toBe(true);
    expect(writes()).toEqual([]);
  });

  it('loads the credentials as configured when none are given: the zuliprc fills what the variables leave', async () => {
    const creds = sim.credentials('helper@example.test');
    const rc = join(stateDir, 'zuliprc');
    await writeFile(rc, `[api]\nemail=${creds.email}\nkey=${creds.apiKey}\nsite=${creds.site}\n`);
    const runtime = await open(configure({ ZULIP_RC_PATH: rc }, false));
    expect(runtime.identity.user_id).toBe(ids.bot);
  });

  it('refuses a missing upload root before it reaches the realm', async () => {
    const failure = await openZulipRuntime({
      settings: configure({ ZULIP_UPLOAD_ROOTS: `notes=${join(stateDir, 'missing')}` }),
    }).catch((err: unknown) => err);
    expect(failure).toMatchObject({ code: 'UPLOAD_ROOT_MISSING' });
    expect(sim.requests).toEqual([]);
  });
});
