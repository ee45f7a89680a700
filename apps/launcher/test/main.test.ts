// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about literal ${VAR} references
// main(), the zulip-agent command, in process: help, exit codes, failing closed, and --demo.
import { execFileSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type LauncherEvent, main } from '../src/index.js';
import { type StubRecord, startWorld, type World } from './world.js';

function streams() {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const collect = (s: PassThrough) => {
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    return () => Buffer.concat(chunks).toString('utf8');
  };
  return { stdout, stderr, out: collect(stdout), err: collect(stderr) };
}

let w: World;

beforeEach(async () => {
  w = await startWorld();
});

afterEach(async () => {
  await w.close();
});

function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  const creds = w.sim.credentials(w.bot.userId);
  return {
    ...w.env,
    ZULIP_SITE: creds.site,
    ZULIP_EMAIL: creds.email,
    ZULIP_API_KEY: creds.apiKey,
    ZULIP_AGENT_ALLOWED_USERS: String(w.ann.userId),
    ZULIP_AGENT_STATE_DIR: w.stateDir,
    ZULIP_AGENT_WORKDIR: w.dir,
    ...extra,
  };
}

function writeMcpConfig(server: Record<string, unknown>): string {
  const path = join(w.dir, '.mcp.json');
  writeFileSync(path, JSON.stringify({ mcpServers: { zulip: server } }));
  return path;
}

describe('main', () => {
  it('prints help and the version on stdout, whatever the environment', async () => {
    const io = streams();
    expect(await main(['--help'], { ZULIP_AGENT_MAX_RUNNING: 'lots' }, io)).toBe(0);
    expect(io.out()).toContain('Usage: zulip-agent [options]');
    expect(io.err()).toBe('');
    const v = streams();
    expect(await main(['-V'], {}, v)).toBe(0);
    expect(v.out()).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it('exits 2 on a bad setting, naming it, never echoing the key', async () => {
    const io = streams();
    const code = await main(
      [],
      { ZULIP_API_KEY: 'a secret with spaces', ZULIP_AGENT_MAX_RUNNING: 'lots' },
      io,
    );
    expect(code).toBe(2);
    expect(io.err()).toContain('ZULIP_AGENT_MAX_RUNNING: expected a whole number from 1 to 64 (got "lots")');
    expect(io.err()).toContain('ZULIP_AGENT_ALLOWED_USERS: is required');
    expect(io.err()).not.toContain('a secret');
    expect(io.out()).toBe('');
  });

  it('never echoes a key pasted into the wrong variable, from the environment or beside a zuliprc', async () => {
    const key = 'Zk3yZk3yZk3yZk3yZk3yZk3yZk3yZk3y';
    const rc = join(w.dir, 'wrong-variable.zuliprc');
    writeFileSync(rc, `[api]\nemail=bot@example.com\nkey=${key}\nsite=https://chat.example.com\n`);
    for (const env of [
      { ZULIP_EMAIL: key, ZULIP_SITE: 'https://chat.example.com' },
      { ZULIP_EMAIL: key, ZULIP_RC_PATH: rc },
    ]) {
      const io = streams();
      expect(await main([], { ZULIP_AGENT_ALLOWED_USERS: '1', ...env }, io)).toBe(2);
      expect(io.err()).toContain(
        'ZULIP_EMAIL: expected an email address such as bot@example.com (got "[REDACTED]")',
      );
      expect(io.err()).not.toContain(key);
    }
    // The key as the zuliprc's path: the library's start-up problem names the path.
    const asPath = streams();
    expect(
      await main(
        [],
        { ZULIP_AGENT_ALLOWED_USERS: '1', ZULIP_AGENT_STATE_DIR: w.stateDir, ZULIP_RC_PATH: key },
        asPath,
      ),
    ).toBe(2);
    // (The launcher resolves the path against its working directory first.)
    expect(asPath.err()).toMatch(/zuliprc \S*\[REDACTED\] \(from ZULIP_RC_PATH\) does not exist/);
    expect(asPath.err()).not.toContain(key);
  });

  it('exits 2 when the .mcp.json would put a secret on argv, and starts nothing', async () => {
    const path = writeMcpConfig({
      ...w.server,
      args: [...(w.server.args as string[]), '--key', '${TEST_BOT_KEY}'],
    });
    const io = streams();
    expect(await main([], baseEnv({ ZULIP_AGENT_MCP_CONFIG: path }), io)).toBe(2);
    expect(io.err()).toContain('args[2] holds an environment reference');
    expect(io.err()).not.toContain(w.bot.apiKey);
    expect(w.records()).toEqual([]);
    // No request ever reached the realm: it failed before connecting.
    expect(w.sim.requests.filter((r) => r.userId === w.bot.userId)).toEqual([]);
  });

  it('exits 2 when codex would refuse every zulip tool that writes, saying why, and starts nothing', async () => {
    const path = writeMcpConfig(w.server);
    const io = streams();
    const env = baseEnv({
      ZULIP_AGENT_MCP_CONFIG: path,
      ZULIP_AGENT_BACKEND: 'codex',
      ZULIP_AGENT_CODEX_TOOL_APPROVAL: 'auto',
    });
    expect(await main([], env, io)).toBe(2);
    expect(io.err()).toContain(
      'ZULIP_AGENT_CODEX_TOOL_APPROVAL: with auto, codex exec would refuse every zulip tool that writes (reply, listen, end_session, send_message…)',
    );
    expect(io.err()).toContain('Use approve, or add --approve-for-me to the codex arguments');
    expect(w.sim.requests.filter((r) => r.userId === w.bot.userId)).toEqual([]);
  });

  it('exits 2 when the .mcp.json is missing, or the credentials are', async () => {
    const io = streams();
    expect(await main([], baseEnv({ ZULIP_AGENT_MCP_CONFIG: join(w.dir, 'none.json') }), io)).toBe(2);
    expect(io.err()).toContain('cannot read');
    const noKey = streams();
    const env = baseEnv({ ZULIP_AGENT_MCP_CONFIG: writeMcpConfig(w.server) });
    delete env.ZULIP_API_KEY;
    expect(await main([], env, noKey)).toBe(2);
    expect(noKey.err()).toContain('ZULIP_API_KEY');
    const noPrompt = streams();
    const withPrompt = baseEnv({
      ZULIP_AGENT_MCP_CONFIG: writeMcpConfig(w.server),
      ZULIP_AGENT_SYSTEM_PROMPT_FILE: join(w.dir, 'missing.md'),
    });
    expect(await main([], withPrompt, noPrompt)).toBe(2);
    expect(noPrompt.err()).toContain('ZULIP_AGENT_SYSTEM_PROMPT_FILE: cannot read');
  });

  it('exits 2 on a .mcp.json or prompt file that is a FIFO or /dev/zero, instead of hanging or filling memory', async () => {
    const fifo = join(w.dir, 'config.fifo');
    execFileSync('mkfifo', [fifo]);
    const zero = join(w.dir, 'zero.json');
    symlinkSync('/dev/zero', zero);
    for (const path of [fifo, zero]) {
      const io = streams();
      expect(await main([], baseEnv({ ZULIP_AGENT_MCP_CONFIG: path }), io)).toBe(2);
      expect(io.err()).toContain(`cannot read ${path}: it is not a regular file`);
      const prompt = streams();
      const env = baseEnv({
        ZULIP_AGENT_MCP_CONFIG: writeMcpConfig(w.server),
        ZULIP_AGENT_SYSTEM_PROMPT_FILE: path,
      });
      expect(await main([], env, prompt)).toBe(2);
      expect(prompt.err()).toContain(
        `ZULIP_AGENT_SYSTEM_PROMPT_FILE: cannot read ${path} (it is not a regular file)`,
      );
    }
    const huge = join(w.dir, 'huge.md');
    writeFileSync(huge, 'x'.repeat(1024 * 1024 + 1));
    const io = streams();
    const env = baseEnv({
      ZULIP_AGENT_MCP_CONFIG: writeMcpConfig(w.server),
      ZULIP_AGENT_SYSTEM_PROMPT_FILE: huge,
    });
    expect(await main([], env, io)).toBe(2);
    expect(io.err()).toContain(`cannot read ${huge} (it is larger than 1048576 bytes)`);
  });

  it('exits 2 when Zulip refuses the credentials, or the site is plain http beyond loopback, as every bin does', async () => {
    const wrongKey = 'a'.repeat(32);
    const refused = streams();
    const env = baseEnv({ ZULIP_AGENT_MCP_CONFIG: writeMcpConfig(w.server), ZULIP_API_KEY: wrongKey });
    expect(await main([], env, refused)).toBe(2);
    expect(refused.err()).toContain(
      'Zulip refused the credentials (CORE_UNAUTHORIZED): check ZULIP_EMAIL and ZULIP_API_KEY',
    );
    expect(refused.err()).not.toContain(wrongKey);
    expect(w.records()).toEqual([]);
    const insecure = streams();
    expect(await main([], baseEnv({ ZULIP_SITE: 'http://chat.example.com' }), insecure)).toBe(2);
    expect(insecure.err()).toContain('ZULIP_SITE: is plain http to a host that is not loopback');
  });

  it('runs until shut down, and exits 0', async () => {
    const shutdown = new AbortController();
    const io = streams();
    const events: LauncherEvent[] = [];
    let ended!: () => void;
    const done = new Promise<void>((resolve) => {
      ended = resolve;
    });
    const running = main(
      [],
      baseEnv({ ZULIP_AGENT_MCP_CONFIG: writeMcpConfig(w.server), STUB_MODE: 'quick' }),
      {
        ...io,
        shutdown: shutdown.signal,
        onReady: () => {
          w.mention(w.ann, 'via main');
        },
        onEvent: (e) => {
          events.push(e);
          if (e.type === 'ended') ended();
        },
      },
    );
    await done;
    shutdown.abort();
    expect(await running).toBe(0);
    expect(events.find((e) => e.type === 'ended')).toMatchObject({ end: { outcome: 'done' } });
    expect(io.err()).toContain('agent started');
    expect(io.err()).not.toContain(w.bot.apiKey);
  });

  it.each(['claude', 'codex', 'opencode'])(
    'zulip-agent runs every step with %s: mention, reply, listen, a follow-up once, dismissal, a DM',
    async (backend) => {
      const shutdown = new AbortController();
      const io = streams();
      const events: LauncherEvent[] = [];
      const waiters: ((e: LauncherEvent) => void)[] = [];
      /** The first launcher event, seen or to come, that matches. */
      const event = (match: (e: LauncherEvent) => boolean) =>
        new Promise<LauncherEvent>((resolve) => {
          const seen = events.find(match);
          if (seen !== undefined) return resolve(seen);
          waiters.push((e) => {
            if (match(e)) resolve(e);
          });
        });
      const ended = (id: number) => event((e) => e.type === 'ended' && e.end.trigger.messageId === id);
      const botPost = (match: RegExp) =>
        w.nextRequest(
          (r) =>
            r.method === 'POST' &&
            r.path.endsWith('/messages') &&
            r.userId === w.bot.userId &&
            match.test(String(r.params.content ?? '')),
        );
      let ready!: () => void;
      const listening = new Promise<void>((resolve) => {
        ready = resolve;
      });
      // DMs need the server to read them.
      const server = { ...w.server, env: { ...(w.server.env as object), ZULIP_PRIVATE_STREAMS: '__ALL__' } };
      const running = main(
        [],
        baseEnv({ ZULIP_AGENT_MCP_CONFIG: writeMcpConfig(server), ZULIP_AGENT_BACKEND: backend }),
        {
          ...io,
          shutdown: shutdown.signal,
          onReady: () => ready(),
          onEvent: (e) => {
            events.push(e);
            for (const waiter of waiters) waiter(e);
          },
        },
      );
      await listening;
      // A mention: the agent joins the topic, answers there and listens.
      const onIt = botPost(new RegExp(`^${backend} is on it\\.$`));
      const joinedListen = w.nextListen('steps');
      const first = w.mention(w.ann, 'steps');
      await onIt;
      await joinedListen;
      expect(w.reactions(first)).toContain('working_on_it');
      // A follow-up reaches it once.
      const answered = botPost(new RegExp(`^${backend} `));
      const followUp = w.mention(w.ann, 'steps', 'and the canary');
      // Handed to the running agent: the note is in its interrupt file.
      await event((e) => e.type === 'trigger' && e.trigger.messageId === followUp && e.action === 'followup');
      expect((await answered).params.content).toMatch(new RegExp(`read ${followUp}\\b|id=${followUp}\\]`));
      const sentinel = w.post(w.ann, 'steps', 'and the logs');
      await botPost(new RegExp(`${backend} read (\\d+,)*${sentinel}\\b`));
      // A person dismisses it: it ends its session and exits, the trigger gets a check.
      const botMessage = w.messages({ topic: 'steps', sender: w.bot.userId })[0];
      w.sim.realm.addReaction(w.ann.userId, botMessage?.id as number, 'stop');
      expect(await ended(first)).toMatchObject({ end: { outcome: 'done', followUpsDelivered: 1, backend } });
      // A DM: read and answered by DM.
      const dm = w.dm(w.ann, 'what is our deploy policy?');
      expect(await ended(dm)).toMatchObject({ end: { outcome: 'done', backend } });
      shutdown.abort();
      expect(await running).toBe(0);

      expect(w.reactions(first)).toEqual(['check']);
      // The run's status message (its tools as each CLI names them), then the answer, a new message.
      const dmContents = w.messages({ dmWith: w.ann.userId, sender: w.bot.userId }).map((m) => m.content);
      expect(dmContents.filter((c) => !c.startsWith('✅'))).toEqual([
        `${backend} answers your message ${dm}.`,
      ]);
      expect(dmContents.filter((c) => c.startsWith('✅'))).toEqual([
        expect.stringMatching(/^✅ Done in \d+s\nTools: `(zulip\.|zulip_)get_message`, `\1send_dm`$/),
      ]);
      const records = w.records() as StubRecord[];
      expect(records.map((r) => [r.backend, r.usageError])).toEqual([
        [backend, undefined],
        [backend, undefined],
      ]);
      const steps = records[0]?.events ?? [];
      // No tool call was refused (Codex asks before every tool that writes unless told not to).
      expect(steps.filter((e) => e.error !== undefined)).toEqual([]);
      const reached = steps.flatMap((e) =>
        e.step === 'listen'
          ? [...(e.messages as number[]), ...(e.passedOn as number[])]
          : e.step === 'reply'
            ? (e.arrived as number[])
            : [],
      );
      expect(reached.filter((id) => id === followUp)).toHaveLength(1);
      expect(steps.map((e) => e.step)).toContain('end_session');
      expect(records[1]?.events.map((e) => e.step)).toEqual(['connected', 'answered-dm']);
      expect(io.err()).not.toContain(w.bot.apiKey);
    },
  );

  it('--demo listens on a simulated realm and sends itself a first mention', async () => {
    const shutdown = new AbortController();
    const io = streams();
    let ended!: (e: LauncherEvent) => void;
    const done = new Promise<LauncherEvent>((resolve) => {
      ended = resolve;
    });
    // The configured entry is used, pointed at the demo realm; here it names the built zulip-mcp.
    const env = {
      ...w.env,
      ZULIP_AGENT_MCP_CONFIG: writeMcpConfig(w.server),
      ZULIP_AGENT_WORKDIR: w.dir,
      STUB_MODE: 'quick',
    };
    let site: string | undefined;
    const running = main(['--demo'], env, {
      ...io,
      shutdown: shutdown.signal,
      onReady: ({ demo }) => {
        site = demo?.site;
      },
      onEvent: (e) => {
        if (e.type === 'ended') ended(e);
      },
    });
    const end = await done;
    shutdown.abort();
    expect(await running).toBe(0);
    expect(end).toMatchObject({
      end: { outcome: 'done', trigger: { stream: 'general', topic: 'zulip-agent demo' } },
    });
    expect(site).not.toBe(w.sim.url);
    const [record] = w.records();
    expect(record?.server?.envKeys).toContain('ZULIP_API_KEY');
    expect(io.err()).toContain('demo realm started');
  });
});
