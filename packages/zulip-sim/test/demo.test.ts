import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { seedDemoRealm, startDemoSim, startZulipSim, type ZulipSim } from '../src/index.js';
import { Client, json } from './helpers.js';

let sim: ZulipSim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

describe('seedDemoRealm', () => {
  it('seeds people, a bot, every kind of stream, a few hundred messages and a real PNG upload', async () => {
    let info: ReturnType<typeof seedDemoRealm> | undefined;
    sim = await startZulipSim({
      seed: (realm) => {
        info = seedDemoRealm(realm);
      },
    });
    const demo = info as ReturnType<typeof seedDemoRealm>;
    expect(demo.messageCount).toBeGreaterThanOrEqual(200);
    expect(sim.realm.messageCount()).toBeGreaterThanOrEqual(demo.messageCount);
    const kinds = sim.realm
      .streams()
      .map((s) => [s.name, s.inviteOnly, s.isWebPublic, s.historyPublicToSubscribers]);
    expect(kinds).toEqual(
      expect.arrayContaining([
        ['general', false, false, true],
        ['design', false, true, true],
        ['leadership', true, false, false],
        ['ops', true, false, true],
      ]),
    );
    const bot = Client.of(sim, demo.botId);
    const mentions = await bot.get('/messages', {
      anchor: 'newest',
      num_before: 1000,
      narrow: [{ operator: 'is', operand: 'mentioned' }],
    });
    expect(mentions.body.messages.length).toBeGreaterThan(5);
    const dms = await bot.get('/messages', { anchor: 'newest', num_before: 100, narrow: [['is', 'dm']] });
    expect(dms.body.messages.length).toBeGreaterThan(0);
    const images = await bot.get('/messages', {
      anchor: 'newest',
      num_before: 100,
      narrow: [
        ['channel', 'engineering'],
        ['has', 'image'],
      ],
    });
    expect(images.body.messages).toHaveLength(1);
    const png = await fetch(`${sim.url}${demo.imageUrl}`, { headers: { authorization: bot.authorization } });
    const bytes = Buffer.from(await png.arrayBuffer());
    expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const streams = (await bot.get('/streams')).body.streams.map((s: { name: string }) => s.name);
    expect(streams).toContain('ops');
    expect(streams).not.toContain('leadership');
  });
});

describe('zulip-sim CLI', () => {
  it('prints a working zuliprc on stdout, writes --zuliprc, and stops on SIGTERM', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'zulip-sim-cli-'));
    const rcPath = join(dir, 'zuliprc');
    try {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', '--conditions', '@zmcp/source', 'src/cli.ts', '--port', '0', '--zuliprc', rcPath],
        { cwd: join(import.meta.dirname, '..'), stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => {
        stderr += c.toString();
      });
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (c: Buffer) => {
          stdout += c.toString();
          if (/site=.*\n/.test(stdout)) resolve();
        });
        child.once('exit', (code) => reject(new Error(`cli exited ${code}: ${stderr}`)));
      });
      const site = /site=(.*)\n/.exec(stdout)?.[1] as string;
      const email = /email=(.*)\n/.exec(stdout)?.[1] as string;
      const key = /key=(.*)\n/.exec(stdout)?.[1] as string;
      expect(stdout).toMatch(/^\[api\]\n/);
      expect(await readFile(rcPath, 'utf8')).toBe(stdout);
      const me = await fetch(`${site}/api/v1/users/me`, {
        headers: { authorization: `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}` },
      });
      expect((await json(me)).is_bot).toBe(true);
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(stderr).toContain('demo realm at');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('startDemoSim', () => {
  it('starts the seeded realm and hands back what the seed created', async () => {
    const started = await startDemoSim({ realmName: 'a demo' });
    sim = started.sim;
    const { demo } = started;
    expect(sim.realm.user(demo.botId)?.isBot).toBe(true);
    expect(sim.realm.messageCount()).toBeGreaterThanOrEqual(demo.messageCount);
    const bot = Client.of(sim, demo.botId);
    const settings = await bot.get('/server_settings');
    expect(settings.body.realm_name).toBe('a demo');
  });
});
