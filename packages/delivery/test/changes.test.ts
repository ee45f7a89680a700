import { AccessPolicy } from '@zmcp/core';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFixtures, type Fixture, startFixture } from './helpers/engine-fixture.js';

afterEach(closeFixtures);

/** Sends a message on general and waits for it: everything queued before it has been offered. */
async function barrier(f: Fixture, content = 'barrier'): Promise<number> {
  const id = f.send('general', content);
  await f.sink.until(() => f.sink.accepted.some((i) => i.messageId === id && i.kind === 'message'));
  return id;
}

async function openGeneral(f: Fixture, extra: Parameters<Fixture['engine']>[0] = {}) {
  const engine = f.engine(extra);
  await engine.start();
  await engine.openChannel('zulip:general');
  return engine;
}

const changes = (f: Fixture) => f.sink.accepted.filter((i) => i.kind !== 'message');

describe('edits, moves and deletions', () => {
  it('surfaces an edit of an accepted message as an [edited] line with its own id, tags and metadata', async () => {
    const f = await startFixture();
    await openGeneral(f);
    const id = f.send('general', 'ship it today');
    await f.sink.until(() => f.sink.accepted.length === 1);
    f.sim.realm.editMessage(f.ann, id, { content: 'ship it tomorrow @**Helper Bot**' });
    await f.sink.until(() => changes(f).length === 1);
    const line = changes(f)[0];
    expect(line).toMatchObject({
      kind: 'edited',
      messageId: id,
      channelId: 'zulip:general',
      id: expect.stringMatching(`^edit:${id}:`),
    });
    expect(line?.text.startsWith('[edited] ')).toBe(true);
    expect(line?.text).toContain('ship it tomorrow');
    expect(line?.tags).toEqual(['chat:edited', 'chat:mention', 'chat:addressed']);
    expect(line?.metadata).toMatchObject({
      change: 'edited',
      targetMessageId: id,
      previousContent: 'ship it today',
      actorId: f.ann,
      mentioned: true,
      previouslyMentioned: false,
    });
    // The synthetic id never moves the watermark.
    await f.store.until((s) => s.channels[`s${f.general}`]?.w === id);
  });

  it('never surfaces re-renders, changes to messages the host was never offered, or the bot’s own edits', async () => {
    const f = await startFixture();
    const before = f.send('general', 'never offered: sent before the session began');
    const engine = await openGeneral(f);
    const ambient = f.send('random', 'never offered: random is closed');
    const mine = f.sim.realm.sendMessage({
      senderId: f.bot,
      type: 'stream',
      stream: 'general',
      topic: 't',
      content: 'by the bot',
    });
    const offered = f.send('general', 'offered');
    await f.sink.until(() => f.sink.accepted.length === 1);
    f.sim.realm.editMessage(f.ann, ambient, { content: 'edited, but never offered' });
    f.sim.realm.editMessage(f.ann, before, { content: 'edited on an open channel, but never offered' });
    f.sim.realm.renderingUpdate(offered, '<p>offered, with a preview</p>');
    f.sim.realm.editMessage(f.bot, mine, { content: 'edited by the bot itself' });
    engine.suppressChanges([mine]);
    f.sim.realm.deleteMessage(f.bot, mine);
    await barrier(f);
    expect(changes(f)).toEqual([]);
  });

  it("surfaces changes to the bot's own message made by someone else", async () => {
    const f = await startFixture();
    await openGeneral(f);
    const mine = f.sim.realm.sendMessage({
      senderId: f.bot,
      type: 'stream',
      stream: 'general',
      topic: 'old',
      content: 'status',
    });
    await barrier(f, 'after the bot spoke');
    f.sim.realm.editMessage(f.ann, mine, { topic: 'new' });
    await f.sink.until(() => changes(f).length === 1);
    expect(changes(f)[0]).toMatchObject({
      kind: 'moved',
      messageId: mine,
      metadata: { previousTopic: 'old' },
    });
  });

  it('reports a topic move on the channel it left, with the previous topic and the count', async () => {
    const f = await startFixture();
    await openGeneral(f);
    const a = f.send('general', 'one', { topic: 'deploys' });
    const b = f.send('general', 'two', { topic: 'deploys' });
    await f.sink.until(() => f.sink.accepted.length === 2);
    f.sim.realm.editMessage(f.ann, a, { topic: 'deploys-2', propagateMode: 'change_all' });
    await f.sink.until(() => changes(f).length === 1);
    const line = changes(f)[0];
    expect(line?.kind).toBe('moved');
    expect(line?.tags).toEqual(['chat:edited', 'zulip:moved', 'chat:ambient']);
    expect(line?.text).toContain('deploys-2');
    expect(line?.text).toContain('topic changed from \\"deploys\\" (2 messages)'.replaceAll('\\', ''));
    expect(line?.metadata).toMatchObject({
      change: 'moved',
      previousTopic: 'deploys',
      targetMessageIds: [a, b],
    });
  });

  it('reports a move into a stream the session cannot read as no longer visible, without naming it', async () => {
    const f = await startFixture();
    await openGeneral(f, { policy: new AccessPolicy({ readOnly: false }) });
    const id = f.send('general', 'moving on');
    await f.sink.until(() => f.sink.accepted.length === 1);
    f.sim.realm.editMessage(f.ann, id, { streamId: f.secret, propagateMode: 'change_one' });
    await f.sink.until(() => changes(f).length === 1);
    const line = changes(f)[0];
    expect(line?.text).toContain('no longer visible');
    expect(line?.text).not.toContain('secret');
    expect(line?.text).toContain('#general');
    expect(line?.metadata).toMatchObject({ visible: false });
    expect(line?.metadata?.movedToChannelId).toBeUndefined();
  });

  it('a move out of sight arrives as a deletion and reads as no longer visible', async () => {
    const f = await startFixture();
    const hidden = f.sim.realm.addStream({ name: 'hidden', inviteOnly: true, subscribers: [f.ann] }).streamId;
    await openGeneral(f);
    const id = f.send('general', 'about to vanish');
    await f.sink.until(() => f.sink.accepted.length === 1);
    f.sim.realm.editMessage(f.ann, id, { streamId: hidden, propagateMode: 'change_one' });
    await f.sink.until(() => changes(f).length === 1);
    const line = changes(f)[0];
    expect(line).toMatchObject({ kind: 'deleted', messageId: id });
    expect(line?.text.startsWith('[deleted] ')).toBe(true);
    expect(line?.text).toContain('no longer visible');
    expect(line?.text).toContain('about to vanish');
    expect(line?.tags).toEqual(['chat:deleted', 'chat:ambient']);
  });

  it('on a closed channel pushes only addressed changes', async () => {
    const f = await startFixture();
    const engine = f.engine();
    await engine.start();
    const mention = f.send('random', 'hi @**Helper Bot**');
    await f.sink.until(() => f.sink.acceptedPushes.length === 1);
    f.sim.realm.editMessage(f.ann, mention, { content: 'hi @**Helper Bot**, never mind' });
    await f.sink.until(() => f.sink.acceptedPushes.length === 2);
    expect(f.sink.acceptedPushes[1]).toMatchObject({
      kind: 'change',
      eventId: expect.stringMatching(/^change:edit:/),
    });
    expect(f.sink.acceptedPushes[1]?.tags).toContain('chat:mention');
    expect(f.sink.batches).toEqual([]);
  });
});

describe('reactions', () => {
  it('are opt-in per channel, carry only reaction tags, and honour suppression and the baseline', async () => {
    const f = await startFixture({ filters: { suppressedReactionEmojis: ['warning'] }, baseline: ['🔥'] });
    const engine = await openGeneral(f);
    const mine = f.sim.realm.sendMessage({
      senderId: f.bot,
      type: 'stream',
      stream: 'general',
      topic: 't',
      content: 'bot says',
    });
    const theirs = f.send('general', 'ann says');
    await f.sink.until(() => f.sink.accepted.length === 1);
    f.sim.realm.addReaction(f.bo, theirs, 'thumbs_up');
    await barrier(f, 'before opting in');
    expect(changes(f)).toEqual([]);
    await engine.setReactionVisibility('zulip:general', true);
    expect(engine.channels().find((c) => c.channel.id === 'zulip:general')?.showsReactions).toBe(true);
    f.sim.realm.addReaction(f.bo, theirs, 'warning');
    f.sim.realm.addReaction(f.bo, theirs, 'fire');
    f.sim.realm.addReaction(f.bo, mine, 'heart');
    f.sim.realm.removeReaction(f.bo, theirs, 'thumbs_up');
    await f.sink.until(() => changes(f).length === 2);
    await barrier(f, 'after the reactions');
    expect(changes(f).map((c) => [c.kind, c.messageId, c.tags])).toEqual([
      ['reaction', mine, ['chat:reaction', 'chat:to-self']],
      ['reaction-remove', theirs, ['chat:reaction-remove']],
    ]);
    expect(changes(f)[0]?.text.startsWith('[reaction] ')).toBe(true);
    expect(changes(f)[0]?.author.name).toBe('Bo');
    await engine.setReactionVisibility('zulip:general', false);
    expect(f.filters.filters.document.reactionChannels).toBeUndefined();
  });
});
