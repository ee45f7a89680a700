// Where state lives: per realm and bot, so two realms (or the demo) never share read cursors.
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SmallRealm, startSmallRealm } from './small-realm.js';
import { startStdio } from './stdio-client.js';

let a: SmallRealm;
let b: SmallRealm;
let base = '';

beforeAll(async () => {
  [a, b] = await Promise.all([startSmallRealm('A'), startSmallRealm('B')]);
  base = await mkdtemp(join(tmpdir(), 'zmcp-state-'));
});

afterAll(async () => {
  await Promise.all([a.sim.close(), b.sim.close()]);
  await rm(base, { recursive: true, force: true });
});

function envFor(r: SmallRealm, stateDir: string): Record<string, string> {
  return r.env(stateDir, { HOME: base });
}

async function monitored(env: Record<string, string>): Promise<unknown> {
  const run = await startStdio([], env);
  const result = await run.client.callTool({ name: 'get_monitored_channels', arguments: {} });
  expect(await run.finish()).toBe(0);
  return (result.structuredContent as { streams: unknown[] }).streams;
}

describe('state on disk', () => {
  it('keeps the cursors of two realms apart under one directory and session id', async () => {
    const dir = join(base, 'two-realms');
    const first = a.post('before monitoring');
    const run = await startStdio([], envFor(a, dir));
    const started = await run.client.callTool({
      name: 'start_monitoring',
      arguments: { streams: ['general'], since_message_id: first },
    });
    expect(started.isError).toBeFalsy();
    expect(await run.finish()).toBe(0);

    // The same session id on another realm sees nothing of realm A's monitor...
    expect(await monitored(envFor(b, dir))).toEqual([]);
    // ...and realm A still has its own, across a restart.
    expect(await monitored(envFor(a, dir))).toEqual([
      expect.objectContaining({ stream_id: a.sim.realm.stream('general')?.streamId }),
    ]);
    const folders = (await readdir(dir)).sort();
    expect(folders).toHaveLength(1);
    expect(folders[0]).toMatch(/^http_3a_2f_2f127\.0\.0\.1_3a\d+@\d+$/);
    expect(await readdir(join(dir, folders[0] as string))).toEqual(['default.json']);
  });

  it('does not read a state file of the layout before accounts, and says so', async () => {
    const dir = join(base, 'unscoped');
    await mkdir(dir, { recursive: true });
    const old = JSON.stringify({ version: 1, streams: [{ name: 'general', lastReadId: 1 }] });
    await writeFile(join(dir, 'default.json'), old);
    const run = await startStdio([], envFor(a, dir));
    const result = await run.client.callTool({ name: 'get_monitored_channels', arguments: {} });
    expect((result.structuredContent as { streams: unknown[] }).streams).toEqual([]);
    expect(await run.finish()).toBe(0);
    expect(run.stderr()).toMatch(/warn state from before per-realm state is not read.*file=.*default\.json/);
  });

  it('gives --demo a state directory of its own, removed at exit', async () => {
    const dir = join(base, 'real');
    const run = await startStdio(['--demo'], {
      HOME: base,
      ZULIP_STATE_DIR: dir,
      ZMCP_LOG_LEVEL: 'info',
      ZULIP_TOOLSETS: 'all',
    });
    const started = await run.client.callTool({
      name: 'start_monitoring',
      arguments: { streams: ['general'] },
    });
    expect(started.isError).toBeFalsy();
    expect(await run.finish()).toBe(0);
    const demoDir = /demo realm started .*stateDir=(\S+)/.exec(run.stderr())?.[1] as string;
    expect(demoDir).toContain('zulip-mcp-demo-state-');
    await expect(readdir(demoDir)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(readdir(dir)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
