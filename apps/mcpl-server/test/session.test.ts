// A test host from @zmcp/mcpl's host role drives zulip-mcpl against zulip-sim: the handshake and
// grant, registration, open with history, live delivery, pushes from closed channels, publishing
// to the exact topic, typing and acknowledgement.
import { describe, expect, it } from 'vitest';
import { type Realm, realmPerTest, textOf } from './world.js';

let realm: Realm;
const { start } = realmPerTest((r) => {
  realm = r;
});

describe('handshake, grant and registration', () => {
  it('declares the three feature sets, accepts the grant and registers the subscribed streams', async () => {
    const s = await start();
    const featureSets = s.host.manifest?.featureSets as Record<
      string,
      { uses: string[]; rollback?: boolean }
    >;
    expect(Object.keys(featureSets).sort()).toEqual(['zulip.context', 'zulip.history', 'zulip.messaging']);
    expect(featureSets['zulip.messaging']?.rollback).toBe(true);
    expect(featureSets['zulip.context']?.uses).toEqual(['contextHooks.beforeInference.inject.beforeUser']);
    expect(
      s.host.featureSets
        .filter((f) => f.enabled)
        .map((f) => f.name)
        .sort(),
    ).toEqual(['zulip.context', 'zulip.history', 'zulip.messaging']);
    const ids = s.host.channels.map((c) => c.id).sort();
    expect(ids).toEqual(['zulip:general', 'zulip:random']);
    const general = s.host.channels.find((c) => c.id === 'zulip:general');
    expect(general).toMatchObject({
      type: 'zulip',
      label: '#general',
      direction: 'bidirectional',
      address: { streamId: realm.streams.general },
    });
    const tools = (await s.host.listTools()).map((t) => t.name);
    expect(tools).toContain('send_message');
    expect(tools).toContain('fetch_history');
    expect(tools).toContain('channel_missed');
  });

  it('stays inert until the grant: no channel is registered and tools are refused', async () => {
    const s = await start({ grant: null });
    expect(s.host.channels).toEqual([]);
    await expect(s.host.callTool('list_streams', {})).rejects.toMatchObject({
      code: 'MCPL_PEER_ERROR',
      // Capability denied (-32002): the MCP SDK v2 writes a handler's -32002 as -32602.
      details: { rpcCode: -32602, data: { capability: 'tools' } },
    });
    await s.host.setPolicy({ effectiveCapabilities: ['tools', 'channels.*', 'pushEvents'] });
    await s.app.connection(s.session)?.started;
    expect(s.host.channels.map((c) => c.id).sort()).toEqual(['zulip:general', 'zulip:random']);
  });

  it('serves a plain MCP client the plain tool surface, with no manifest and no channels', async () => {
    const s = await start({ host: { capabilities: null }, grant: null });
    expect(s.host.manifest).toBeUndefined();
    const tools = (await s.host.listTools()).map((t) => t.name);
    expect(tools).toContain('send_message');
    expect(tools).not.toContain('channel_missed');
    const result = await s.host.callTool('list_streams', {});
    expect(result.isError).not.toBe(true);
    expect(result.state).toBeUndefined();
  });
});

describe('channels', () => {
  it('opens with history read before the open and then delivers live messages in order', async () => {
    const older = [realm.say('general', 'first'), realm.say('general', 'second')];
    const s = await start();
    const opened = await s.host.openChannel({ channelId: 'zulip:general' }, { history: { limit: 10 } });
    expect(opened.history?.map((m) => m.messageId)).toEqual(older.map(String));
    expect(textOf(opened.history?.[0] as never)).toMatch(/id=\d+\] \[#general > deploys\] Ann Lee: first$/);
    const live = [realm.say('general', 'third'), realm.say('general', '<b>fourth</b>', { topic: 'ops' })];
    await s.incoming.until((items) => items.length >= 2);
    expect(s.incoming.items.map((m) => m.messageId)).toEqual(live.map(String));
    const [third, fourth] = s.incoming.items;
    expect(third).toMatchObject({
      channelId: 'zulip:general',
      threadId: 'deploys',
      author: { name: 'Ann Lee' },
    });
    expect(third?.tags).toContain('chat:ambient');
    expect(third?.metadata).toMatchObject({ attributed: true, zulipMessageId: live[0] });
    expect(String(third?.metadata?.attributionHeader)).toMatch(/\[#general > deploys\] Ann Lee: $/);
    expect(textOf(fourth as never)).toContain('&lt;b>fourth&lt;/b>');
    expect(fourth?.threadId).toBe('ops');
  });

  it('subscribes first to open a public stream the bot is not in, and refuses a private one it was not invited to', async () => {
    const earlier = realm.say('lobby', 'before the bot came');
    // The bot has seen a later message elsewhere: its history reaches back past the lobby's.
    realm.say('general', 'meanwhile');
    const s = await start();
    expect(s.host.channels.some((c) => c.id === 'zulip:lobby')).toBe(false);
    const opened = await s.host.openChannel({ channelId: 'zulip:lobby' }, { history: { limit: 5 } });
    expect(opened.channel.id).toBe('zulip:lobby');
    expect(opened.history?.map((m) => m.messageId)).toEqual([String(earlier)]);
    expect(realm.sim.realm.stream('lobby')?.subscribers).toContain(realm.bot);
    const live = realm.say('lobby', 'now it hears');
    expect((await s.incoming.first((m) => m.channelId === 'zulip:lobby')).messageId).toBe(String(live));

    await expect(s.host.openChannel({ channelId: 'zulip:hidden' })).rejects.toMatchObject({
      code: 'MCPL_PEER_ERROR',
      details: { rpcCode: -32023 },
    });
    await expect(s.host.openChannel({ channelId: 'zulip:no-such-stream' })).rejects.toMatchObject({
      details: { rpcCode: -32023 },
    });
    expect(realm.sim.realm.stream('hidden')?.subscribers).not.toContain(realm.bot);
    expect(realm.sim.realm.streams().map((st) => st.name)).not.toContain('no-such-stream');
  });

  it('opens by {type, address} as 0.4 hosts do', async () => {
    const s = await start();
    const opened = await s.host.openChannel({ type: 'zulip', address: { streamId: realm.streams.random } });
    expect(opened.channel.id).toBe('zulip:random');
  });

  it('pushes a mention and a DM from closed channels, and counts the ambient traffic it dropped', async () => {
    const s = await start();
    realm.say('random', 'just chatting');
    realm.say('random', 'more chatter');
    const mention = realm.say('random', 'hey @**Helper Bot** can you look?');
    const dm = realm.dm('psst');
    await s.pushes.until((items) => items.length >= 2);
    const [first, second] = s.pushes.items;
    expect(first?.eventId).toBe(`msg:${mention}`);
    expect(first?.tags).toEqual(expect.arrayContaining(['chat:mention', 'chat:addressed']));
    expect(first?.origin).toMatchObject({
      channelId: 'zulip:random',
      threadId: 'deploys',
      zulipMessageId: mention,
    });
    expect(textOf(first?.payload as never)).toContain('Ann Lee (mention): hey @**Helper Bot** can you look?');
    expect(second?.eventId).toBe(`msg:${dm}`);
    expect(second?.tags).toEqual(expect.arrayContaining(['chat:dm', 'chat:private']));
    expect(textOf(second?.payload as never)).toContain('[DM] Ann Lee: psst');
    // The new DM conversation became a channel.
    await s.registrations.until(() => s.host.channels.some((c) => c.id === `zulip:dm:${realm.ann}`));

    const missed = await s.host.callTool('channel_missed', { channel: 'zulip:random' });
    expect(missed.structuredContent).toMatchObject({ count: 2, shown: 2 });
    expect(textOf(missed)).toContain('just chatting');
    expect(missed.state?.checkpoint).toEqual(expect.any(String));
  });

  it('publishes to the exact topic of the message answered, following a rename', async () => {
    const s = await start();
    await s.host.openChannel({ channelId: 'zulip:general' });
    const asked = realm.say('general', 'is the build green?', { topic: 'ci' });
    await s.incoming.first((m) => m.messageId === String(asked));
    const published = await s.host.publish({ channelId: 'zulip:general', content: 'yes, all green' });
    expect(published?.delivered).toBe(true);
    const sent = realm.sim.realm.message(Number(published?.messageId));
    expect(sent).toMatchObject({ topic: 'ci', senderId: realm.bot });

    // Someone renames the topic: the next reply follows it, never the old name.
    realm.sim.realm.editMessage(realm.ann, asked, { topic: 'ci-2026', propagateMode: 'change_all' });
    const again = await s.host.publish({ channelId: 'zulip:general', content: 'still green' });
    expect(realm.sim.realm.message(Number(again?.messageId))).toMatchObject({ topic: 'ci-2026' });

    // A channel no message has arrived on has no topic to guess.
    await expect(s.host.publish({ channelId: 'zulip:random', content: 'hello?' })).rejects.toMatchObject({
      details: { rpcCode: -32602 },
    });
  });

  it('sends typing to the active topic and acknowledges by reaction', async () => {
    const s = await start();
    await s.host.openChannel({ channelId: 'zulip:general' });
    const asked = realm.say('general', 'ping', { topic: 'alerts' });
    await s.incoming.first((m) => m.messageId === String(asked));
    const seen = new Promise<{ path: string; params: Record<string, unknown> }>((resolve) => {
      const off = realm.sim.onRequest((r) => {
        if (r.path.endsWith('/typing')) {
          off();
          resolve(r as never);
        }
      });
    });
    await s.host.typing({ channelId: 'zulip:general' });
    const typing = await seen;
    expect(typing.params).toMatchObject({ op: 'start', type: 'stream', topic: 'alerts' });

    const ack = await s.host.acknowledge({
      channelId: 'zulip:general',
      messageId: String(asked),
      intent: 'seen',
    });
    expect(ack).toMatchObject({ acknowledged: true, representation: 'reaction:eyes' });
    expect(realm.sim.realm.message(asked)?.reactions).toEqual(
      expect.arrayContaining([expect.objectContaining({ emojiName: 'eyes', userId: realm.bot })]),
    );
  });
});
