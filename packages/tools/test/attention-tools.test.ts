// The attention tools through the call contract, over a real delivery engine against zulip-sim:
// each is a thin call of the engine, and what it reports is what the engine did.
import { AccessPolicy, ZulipClient } from '@zmcp/core';
import {
  DeliveryEngine,
  type DeliverySink,
  MemoryFiltersPlane,
  MemoryStateStore,
  type PushEvent,
} from '@zmcp/delivery';
import { startZulipSim, type ZulipSim } from '@zmcp/zulip-sim';
import { afterEach, describe, expect, it } from 'vitest';
import { attentionCatalog } from '../src/attention/index.js';
import type { ToolCallOutcome } from '../src/host.js';
import { createToolServices } from '../src/services.js';
import { checkedOk, testHost } from './call.js';

interface World {
  sim: ZulipSim;
  bot: number;
  ann: number;
  filters: MemoryFiltersPlane;
  engine: DeliveryEngine;
  pushes: PushEvent[];
  /** Resolves with the next push the engine makes. */
  nextPush(): Promise<PushEvent>;
  call(name: string, args?: unknown): Promise<ToolCallOutcome>;
  ok<T>(name: string, result: ToolCallOutcome): { text: string; data: T };
  say(stream: string, content: string, topic?: string): number;
  close(): Promise<void>;
}

const worlds: World[] = [];

afterEach(async () => {
  for (const w of worlds.splice(0)) await w.close();
});

async function world(
  options: { pageBudgetBytes?: number; suppressed?: string[]; readsDms?: boolean } = {},
): Promise<World> {
  const sim = await startZulipSim({ rateLimit: false });
  const bot = sim.realm.addUser({ fullName: 'Helper Bot', email: 'helper@example.test', isBot: true }).userId;
  const ann = sim.realm.addUser({ fullName: 'Ann Lee', email: 'ann@example.test' }).userId;
  sim.realm.addStream({ name: 'general', subscribers: [bot, ann] });
  sim.realm.addStream({ name: 'random', subscribers: [bot, ann] });
  sim.realm.addStream({ name: '<b>odd', subscribers: [bot, ann] });
  const client = new ZulipClient(sim.credentials(bot));
  const filters = new MemoryFiltersPlane({ suppressedReactionEmojis: options.suppressed ?? [] });
  const pushes: PushEvent[] = [];
  let waiting: ((event: PushEvent) => void)[] = [];
  const sink: DeliverySink = {
    async incoming(batch) {
      return { kind: 'answered', accepted: batch.items.map((i) => i.id) };
    },
    async push(event) {
      pushes.push(event);
      const ws = waiting;
      waiting = [];
      for (const w of ws) w(event);
      return { kind: 'answered', accepted: true };
    },
  };
  const policy = new AccessPolicy({
    readOnly: false,
    ...(options.readsDms === true ? { privateStreams: '__ALL__' as const } : {}),
  });
  const engine = new DeliveryEngine({
    client,
    policy,
    store: new MemoryStateStore(),
    session: 'agent',
    filters,
    sink,
    stateWriteGapMs: 0,
  });
  await engine.start();
  const services = createToolServices({
    client,
    policy,
    site: client.site,
    identity: { user_id: bot, email: 'helper@example.test', full_name: 'Helper Bot', is_bot: true },
    maxMessageLength: 10_000,
    maxFileBytes: 1024 * 1024,
    pageBudgetBytes: options.pageBudgetBytes,
  });
  const { host, tools } = testHost(attentionCatalog(services, engine));
  const w: World = {
    sim,
    bot,
    ann,
    filters,
    engine,
    pushes,
    nextPush: () => new Promise((resolve) => waiting.push(resolve)),
    call: (name, args = {}) => host.call(name, args),
    ok<T>(name: string, result: ToolCallOutcome) {
      const { text, structured } = checkedOk(tools, name, result);
      return { text, data: structured as T };
    },
    say: (stream, content, topic = 'deploys') =>
      sim.realm.sendMessage({ senderId: ann, type: 'stream', stream, topic, content }),
    async close() {
      await engine.close();
      await client.close();
      await sim.close();
    },
  };
  worlds.push(w);
  return w;
}

function failure(result: ToolCallOutcome): { code: string; text: string } {
  if (!result.isError) throw new Error(`expected a failure, got: ${result.text}`);
  return { code: result.code, text: result.text };
}

interface FiltersData {
  stale: boolean;
  revision: number;
  streams: number | null;
  dm_users: number | null;
  muted_streams: number | null;
  reaction_channels: number | null;
  suppressed_reactions: number;
}

describe('filters_get and filters_update', () => {
  it('shows the lists escaped and the operator’s suppressed reactions only as a count', async () => {
    const w = await world({ suppressed: ['biohazard', 'skull'] });
    const got = w.ok<FiltersData>('filters_get', await w.call('filters_get'));
    expect(got.data).toEqual({
      stale: false,
      revision: 1,
      streams: null,
      dm_users: null,
      muted_streams: null,
      reaction_channels: null,
      suppressed_reactions: 2,
    });
    expect(got.text).toContain('streams: every stream the bot can see');
    expect(got.text).not.toContain('biohazard');

    const updated = w.ok<FiltersData>(
      'filters_update',
      await w.call('filters_update', { streams: ['general', '<b>odd'], dm_users: [w.ann] }),
    );
    expect(updated.data).toMatchObject({ revision: 2, streams: 2, dm_users: 1, suppressed_reactions: 2 });
    expect(updated.text).toContain('"&lt;b>odd"');
    expect(updated.text).not.toContain('<b>');
    expect(w.engine.filtersView().filters).toEqual({ streams: ['general', '<b>odd'], dmUsers: [w.ann] });
    expect(JSON.stringify(updated)).not.toContain('biohazard');

    // null removes a list: unrestricted again.
    const cleared = w.ok<FiltersData>('filters_update', await w.call('filters_update', { streams: null }));
    expect(cleared.data.streams).toBeNull();
  });

  it('refuses the operator-owned key, an empty update and an invalid entry, changing nothing', async () => {
    const w = await world({ suppressed: ['biohazard'] });
    const operator = failure(await w.call('filters_update', { suppressedReactionEmojis: [] }));
    expect(operator.code).toBe('TOOLS_INVALID_INPUT');
    expect(operator.text).toContain('suppressedReactionEmojis');
    const snake = failure(await w.call('filters_update', { suppressed_reaction_emojis: [] }));
    expect(snake.code).toBe('TOOLS_INVALID_INPUT');
    expect(failure(await w.call('filters_update', {})).code).toBe('TOOLS_INVALID_INPUT');
    const bad = failure(await w.call('filters_update', { reaction_channels: ['general'] }));
    expect(bad.code).toBe('DELIVERY_FILTERS_INVALID');
    const view = w.engine.filtersView();
    expect(view.revision).toBe(1);
    expect(view.suppressedReactionEmojis.count).toBe(1);
  });

  it('is refused while the plane is stale, and says so without naming the file', async () => {
    const w = await world();
    w.filters.markStale('the file is not JSON');
    const refused = failure(await w.call('filters_update', { muted_streams: ['random'] }));
    expect(refused.code).toBe('DELIVERY_FILTERS_STALE');
    expect(refused.text).toContain('updates are refused');
    expect(refused.text).not.toContain('memory');
    expect(failure(await w.call('mute_channel', { channel: 'random' })).code).toBe('DELIVERY_FILTERS_STALE');
    const got = w.ok<FiltersData>('filters_get', await w.call('filters_get'));
    expect(got.data.stale).toBe(true);
    expect(got.text).toContain('broken or missing');
    expect(w.engine.filtersView().filters).toEqual({});
  });
});

describe('mute_channel and unmute_channel', () => {
  it('mutes a stream so that not even a mention reaches the agent, and unmutes it', async () => {
    const w = await world();
    const muted = w.ok<{ muted: boolean; changed: boolean; revision: number }>(
      'mute_channel',
      await w.call('mute_channel', { channel: 'zulip:random' }),
    );
    expect(muted.data).toEqual({ muted: true, changed: true, revision: 2 });
    expect(muted.text).toContain('Muted zulip:random');
    const again = w.ok<{ changed: boolean }>(
      'mute_channel',
      await w.call('mute_channel', { channel: 'random' }),
    );
    expect(again.data.changed).toBe(false);
    expect(w.engine.channels().find((c) => c.channel.id === 'zulip:random')?.muted).toBe(true);

    // A mention in the muted stream, then one in general: only general's is pushed.
    const push = w.nextPush();
    w.say('random', 'hey @**Helper Bot** (muted)');
    const general = w.say('general', 'hey @**Helper Bot**');
    expect((await push).items[0]?.messageId).toBe(general);
    expect(w.pushes).toHaveLength(1);

    const unmuted = w.ok<{ muted: boolean; changed: boolean }>(
      'unmute_channel',
      await w.call('unmute_channel', { channel: 'random' }),
    );
    expect(unmuted.data).toMatchObject({ muted: false, changed: true });
    const next = w.nextPush();
    const back = w.say('random', 'again @**Helper Bot**');
    expect((await next).items[0]?.messageId).toBe(back);
  });

  it('refuses a DM channel and an unknown channel by their codes', async () => {
    const w = await world({ readsDms: true });
    expect(failure(await w.call('mute_channel', { channel: `zulip:dm:${w.ann}` })).code).toBe(
      'DELIVERY_INVALID_ARGUMENT',
    );
    expect(failure(await w.call('mute_channel', { channel: 'nowhere' })).code).toBe(
      'DELIVERY_UNKNOWN_CHANNEL',
    );
  });

  it('takes back a channel id printed escaped', async () => {
    const w = await world();
    const muted = w.ok<{ changed: boolean }>(
      'mute_channel',
      await w.call('mute_channel', { channel: 'zulip:&lt;b>odd' }),
    );
    expect(muted.data.changed).toBe(true);
    expect(muted.text).not.toContain('<b>');
    expect(w.engine.channels().find((c) => c.channel.id === 'zulip:<b>odd')?.muted).toBe(true);
  });
});

describe('set_reaction_visibility', () => {
  it('adds and removes the channel from the reaction channels', async () => {
    const w = await world();
    const shown = w.ok<{ visible: boolean; changed: boolean }>(
      'set_reaction_visibility',
      await w.call('set_reaction_visibility', { channel: 'general', visible: true }),
    );
    expect(shown.data).toMatchObject({ visible: true, changed: true });
    expect(w.engine.filtersView().filters.reactionChannels).toEqual(['zulip:general']);
    expect(w.engine.channels().find((c) => c.channel.id === 'zulip:general')?.showsReactions).toBe(true);
    const hidden = w.ok<{ visible: boolean; changed: boolean }>(
      'set_reaction_visibility',
      await w.call('set_reaction_visibility', { channel: 'general', visible: false }),
    );
    expect(hidden.data).toMatchObject({ visible: false, changed: true });
    expect(w.engine.filtersView().filters.reactionChannels).toBeUndefined();
  });
});

describe('channel_missed', () => {
  it('reads back what a closed channel dropped, and clears the tally when asked', async () => {
    const w = await world();
    const ids = [
      w.say('general', 'first ambient'),
      w.say('general', 'second ambient'),
      w.say('general', '<b>third</b>'),
    ];
    // The mention after them is pushed once the three before it were judged (in channel order).
    const push = w.nextPush();
    w.say('general', 'and you @**Helper Bot**');
    await push;
    const missed = w.ok<{ count: number; shown: number; cleared: boolean }>(
      'channel_missed',
      await w.call('channel_missed', { channel: 'zulip:general' }),
    );
    expect(missed.data).toEqual({ count: 3, shown: 3, cleared: false });
    expect(missed.text).toContain('3 ambient messages missed on zulip:general');
    for (const id of ids) expect(missed.text).toContain(`id=${id}]`);
    expect(missed.text).toContain('&lt;b>third&lt;/b>');
    expect(missed.text).toContain('<missed channel="zulip:general"');

    const cleared = w.ok<{ count: number; cleared: boolean }>(
      'channel_missed',
      await w.call('channel_missed', { channel: 'general', clear: true }),
    );
    expect(cleared.data).toMatchObject({ count: 3, cleared: true });
    const after = w.ok<{ count: number; shown: number }>(
      'channel_missed',
      await w.call('channel_missed', { channel: 'general' }),
    );
    expect(after.data).toEqual({ count: 0, shown: 0, cleared: false });
    expect(after.text).toBe('Nothing missed on zulip:general.');
  });

  it('cuts a long block to the page budget, keeping the newest and pointing at the rest', async () => {
    const w = await world({ pageBudgetBytes: 2048 });
    const ids: number[] = [];
    for (let i = 0; i < 12; i++) ids.push(w.say('general', `message ${i} ${'x'.repeat(180)}`));
    const push = w.nextPush();
    w.say('general', 'ping @**Helper Bot**');
    await push;
    const result = await w.call('channel_missed', { channel: 'general' });
    const missed = w.ok<{ count: number; shown: number }>('channel_missed', result);
    expect(missed.data.count).toBe(12);
    expect(missed.data.shown).toBeGreaterThan(0);
    expect(missed.data.shown).toBeLessThan(12);
    expect(Buffer.byteLength(missed.text)).toBeLessThanOrEqual(2048);
    expect(missed.text).toContain(`id=${ids[11]}]`);
    expect(missed.text).not.toContain(`id=${ids[0]}]`);
    expect(missed.text).toContain(`not shown here (ids ${ids[0]}-`);
    expect(missed.text.trimEnd().endsWith('</missed>')).toBe(true);
  });
});

describe('refresh_channels', () => {
  it('lists every channel with its state and counts what changed', async () => {
    const w = await world();
    w.sim.realm.addStream({ name: 'later', subscribers: [w.bot, w.ann] });
    const refreshed = w.ok<{ channels: number; open: number; added: number; removed: number }>(
      'refresh_channels',
      await w.call('refresh_channels'),
    );
    expect(refreshed.data).toMatchObject({ channels: 4, open: 0, removed: 0 });
    expect(refreshed.text).toContain('zulip:later #later: ');
    expect(refreshed.text).toContain('zulip:&lt;b>odd #&lt;b>odd: closed');
    expect(refreshed.text).not.toContain('<b>');
  });
});
