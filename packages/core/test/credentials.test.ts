import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { ZulipClient } from '../src/client/zulip-client.js';
import { loadCredentials } from '../src/credentials.js';
import { type SimRealmFixture, startSimRealm } from './helpers/sim.js';

let f: SimRealmFixture | undefined;
let dir: string | undefined;
afterEach(async () => {
  await f?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  f = undefined;
  dir = undefined;
});

it('a zuliprc from the simulator becomes a working client', async () => {
  f = await startSimRealm();
  dir = await mkdtemp(join(tmpdir(), 'zmcp-rc-'));
  const path = join(dir, 'zuliprc');
  await writeFile(path, f.sim.zuliprc(f.bot.userId));
  const creds = await loadCredentials({ env: { ZULIP_RC_PATH: path }, homedir: dir });
  const client = new ZulipClient(creds);
  try {
    expect((await client.getOwnUser()).user_id).toBe(f.bot.userId);
  } finally {
    await client.close();
  }
});

it('environment credentials become a working client', async () => {
  f = await startSimRealm();
  const { site, email, apiKey } = f.sim.credentials(f.bot.userId);
  const creds = await loadCredentials({
    env: { ZULIP_REALM: site, ZULIP_EMAIL: email, ZULIP_API_KEY: apiKey },
    homedir: '/nonexistent',
  });
  const client = new ZulipClient(creds);
  try {
    expect((await client.getOwnUser()).email).toBe(email);
  } finally {
    await client.close();
  }
});
