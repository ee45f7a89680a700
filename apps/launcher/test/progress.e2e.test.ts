// Live progress: one status message per run, edited from the CLI's machine-readable output,
// coalesced, moved to a new message past the realm's edit window; off by a setting.
import { AccessPolicy, ZulipClient } from '@zmcp/core';
import { createToolServices, loadRealmFacts } from '@zmcp/tools';
import { startZulipSim } from '@zmcp/zulip-sim';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../src/index.js';
import { ProgressReporter } from '../src/progress.js';
import { startWorld, type World } from './world.js';

describe('ProgressReporter', () => {
  async function realm() {
    const sim = await startZulipSim({
      rateLimit: false,
      seed(r) {
        const bot = r.addUser({ fullName: 'Helper', email: 'bot@example.test', isBot: true });
        r.addStream({ name: 'ops', subscribers: [bot.userId] });
      },
    });
    const client = new ZulipClient({ ...sim.credentials('bot@example.test'), readOnly: false });
    const facts = await loadRealmFacts(client, { readOnly: false });
    const services = createToolServices({
      client,
      policy: new AccessPolicy({ readOnly: false }),
      site: client.site,
      identity: facts.identity,
      maxMessageLength: 10_000,
      maxFileBytes: 1_000_000,
    });
    const streamId = sim.realm.stream('ops')?.streamId as number;
    const patches: string[] = [];
    sim.onRequest((r) => {
      if (r.method === 'PATCH') patches.push(String(r.params.content));
    });
    return {
      sim,
      services,
      streamId,
      patches,
      async close() {
        await client.close();
        await sim.close();
      },
    };
  }

  it('coalesces: many events between two writes make one edit; the end is the last edit', async () => {
    const r = await realm();
    let now = 1_000_000;
    const progress = new ProgressReporter({
      services: r.services,
      to: { kind: 'stream', streamId: r.streamId, topic: 'deploy' },
      intervalMs: 3_600_000,
      editLimitSeconds: null,
      logger: silentLogger,
      now: () => now,
    });
    for (let i = 0; i < 50; i++)
      progress.observe([{ kind: 'tool', name: i % 2 === 0 ? 'Bash' : 'zulip.reply' }]);
    progress.observe([{ kind: 'text', text: 'Deploying @**all** `now`\nsecond line' }]);
    expect(progress.render()).toContain('Step: ``Deploying @**all** `now` second line``');
    now += 75_000;
    await progress.finish('done');
    expect(progress.messageIds).toHaveLength(1);
    expect(r.patches).toHaveLength(1);
    expect(r.sim.realm.message(progress.messageIds[0] as number)?.content).toBe(
      '✅ Done in 1m 15s\nTools: `Bash` ×25, `zulip.reply` ×25',
    );
    await r.close();
  });

  it('starts a new message once the realm’s edit window is about to close', async () => {
    const r = await realm();
    let now = 1_000_000;
    const progress = new ProgressReporter({
      services: r.services,
      to: { kind: 'stream', streamId: r.streamId, topic: 'long' },
      intervalMs: 3_600_000,
      editLimitSeconds: 120,
      logger: silentLogger,
      now: () => now,
    });
    progress.observe([{ kind: 'tool', name: 'Bash' }]);
    // The first status message is out; then time passes to within a minute of the window's end.
    while (progress.messageIds.length === 0) await new Promise((resolve) => setImmediate(resolve));
    now += 90_000;
    await progress.finish('failed');
    expect(progress.messageIds).toHaveLength(2);
    expect(r.patches).toHaveLength(0);
    expect(r.sim.realm.message(progress.messageIds[1] as number)?.content).toBe(
      '⚠️ Failed after 1m 30s\nTools: `Bash`',
    );
    await r.close();
  });
});

describe('a launched run', () => {
  let w: World;
  beforeEach(async () => {
    w = await startWorld();
  });
  afterEach(async () => {
    await w.close();
  });

  it('shows its step and tools in one status message while it works, edited, and how it ended', async () => {
    const launcher = await w.launch({ progressIntervalMs: 1 });
    const working = w.nextRequest(
      (r) =>
        r.method === 'PATCH' &&
        r.userId === w.bot.userId &&
        /^⏳ Working · \d+s\nStep: using `zulip.set_context`\nTools: `zulip.set_context`$/.test(
          String(r.params.content),
        ),
    );
    const trigger = w.mention(w.ann, 'slow', '[stub:hang]');
    await working;
    const status = w.messages({ topic: 'slow', sender: w.bot.userId });
    expect(status).toHaveLength(1);
    expect(status[0]?.editHistory.length).toBeGreaterThan(0);
    // Status reactions are as they were.
    expect(w.reactions(trigger)).toContain('working_on_it');
    // Stopped with the launcher: the last edit says so.
    await launcher.close();
    expect(w.sim.realm.message(status[0]?.id as number)?.content ?? '').toMatch(/^⏹ Stopped after/);
  });

  it('is off with progress: false: no status message, the CLI prints its plain output', async () => {
    await w.launch({ progress: false });
    const trigger = w.mention(w.ann, 'quiet', '[stub:quick]');
    await w.ended(trigger);
    expect(w.messages({ topic: 'quiet', sender: w.bot.userId }).map((m) => m.content)).toEqual([
      'claude is on it.',
    ]);
    expect(w.records()[0]?.argv).not.toContain('--output-format');
  });
});
