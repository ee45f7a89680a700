import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';
import { botPost, expectFail, expectOk } from './write-fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  h.sim.realm.addRealmEmoji({ name: 'partyparrot', authorId: h.realm.ann.userId });
});
afterAll(async () => {
  await h.close();
});

function botReactions(id: number) {
  return (h.sim.realm.message(id)?.reactions ?? []).filter((r) => r.userId === h.realm.bot.userId);
}

describe('add_reaction', () => {
  it('reacts with a Unicode emoji by name, idempotently', async () => {
    const id = h.post(h.realm.ann, 'general', 'reactions', 'shipped!');
    const { text, structured } = expectOk(
      h,
      'add_reaction',
      await h.call('add_reaction', { message_id: id, emoji: 'tada' }),
    );
    expect(structured).toEqual({
      message_id: id,
      emoji_name: 'tada',
      reaction_type: 'unicode_emoji',
      changed: true,
    });
    expect(text).toBe(`Reacted :tada: to message ${id} in #general > reactions.`);
    expect(botReactions(id)).toEqual([
      { emojiName: 'tada', emojiCode: '1f389', reactionType: 'unicode_emoji', userId: h.realm.bot.userId },
    ]);
    const again = expectOk(
      h,
      'add_reaction',
      await h.call('add_reaction', { message_id: id, emoji: ':tada:' }),
    );
    expect(again.structured.changed).toBe(false);
    expect(again.text).toContain('already has');
    expect(botReactions(id)).toHaveLength(1);
  });

  it('maps common glyphs to their names and refuses others', async () => {
    const id = h.post(h.realm.ann, 'general', 'reactions', 'glyphs');
    const { structured } = expectOk(
      h,
      'add_reaction',
      await h.call('add_reaction', { message_id: id, emoji: '👍' }),
    );
    expect(structured.emoji_name).toBe('+1');
    expectOk(h, 'add_reaction', await h.call('add_reaction', { message_id: id, emoji: '❤️' }));
    expect(botReactions(id).map((r) => r.emojiCode)).toEqual(['1f44d', '2764']);
    const unknown = expectFail(
      await h.call('add_reaction', { message_id: id, emoji: '🦩' }),
      'TOOLS_INVALID_INPUT',
    );
    expect(unknown.text).toContain("pass the emoji's name");
  });

  it('refuses bad names and passes on an unknown emoji', async () => {
    const id = h.post(h.realm.ann, 'general', 'reactions', 'names');
    expectFail(await h.call('add_reaction', { message_id: id, emoji: 'thumbs up!' }), 'TOOLS_INVALID_INPUT');
    expectFail(await h.call('add_reaction', { message_id: id }), 'TOOLS_INVALID_INPUT');
    expectFail(
      await h.call('add_reaction', { message_id: id, emoji: 'tada', reaction_type: 'sticker' }),
      'TOOLS_INVALID_INPUT',
    );
    const res = expectFail(
      await h.call('add_reaction', { message_id: id, emoji: 'nosuch' }),
      'CORE_BAD_REQUEST',
    );
    expect(res.text).toContain("Emoji 'nosuch' does not exist");
    expect(botReactions(id)).toHaveLength(0);
  });

  it('refuses messages the policy cannot read', async () => {
    const secret = h.sim.realm.sendMessage({
      senderId: h.realm.ann.userId,
      type: 'stream',
      stream: 'secret',
      topic: 't',
      content: 'x',
    });
    expectFail(await h.call('add_reaction', { message_id: secret, emoji: 'eyes' }), 'TOOLS_NOT_FOUND');
    expect(botReactions(secret)).toHaveLength(0);
  });
});

describe('remove_reaction', () => {
  it('removes a Unicode reaction; removing it again changes nothing', async () => {
    const id = h.post(h.realm.ann, 'general', 'reactions', 'unreact');
    h.sim.realm.addReaction(h.realm.bot.userId, id, 'eyes');
    h.sim.realm.addReaction(h.realm.ann.userId, id, 'eyes');
    const { structured } = expectOk(
      h,
      'remove_reaction',
      await h.call('remove_reaction', { message_id: id, emoji: 'eyes' }),
    );
    expect(structured).toEqual({
      message_id: id,
      emoji_name: 'eyes',
      reaction_type: 'unicode_emoji',
      changed: true,
    });
    expect(botReactions(id)).toHaveLength(0);
    expect(h.sim.realm.message(id)?.reactions).toHaveLength(1);
    const again = expectOk(
      h,
      'remove_reaction',
      await h.call('remove_reaction', { message_id: id, emoji: 'eyes' }),
    );
    expect(again.structured.changed).toBe(false);
    expect(again.text).toContain('nothing changed');
  });

  it('adds and removes a custom (realm) emoji: the reaction type always goes along', async () => {
    const id = botPost(h, 'general', 'custom', 'parrot time');
    const added = expectOk(
      h,
      'add_reaction',
      await h.call('add_reaction', { message_id: id, emoji: 'partyparrot' }),
    );
    expect(added.structured.reaction_type).toBe('realm_emoji');
    expect(botReactions(id)).toMatchObject([{ emojiName: 'partyparrot', reactionType: 'realm_emoji' }]);

    // Zulip's DELETE assumes unicode_emoji without a type: by name alone it does not come off.
    await expect(h.client.removeReaction(id, { emojiName: 'partyparrot' })).rejects.toMatchObject({
      zulipCode: 'REACTION_DOES_NOT_EXIST',
    });
    expect(botReactions(id)).toHaveLength(1);

    const removed = expectOk(
      h,
      'remove_reaction',
      await h.call('remove_reaction', { message_id: id, emoji: 'partyparrot' }),
    );
    expect(removed.structured).toEqual({
      message_id: id,
      emoji_name: 'partyparrot',
      reaction_type: 'realm_emoji',
      changed: true,
    });
    expect(botReactions(id)).toHaveLength(0);
    const del = h.sim.requests.filter(
      (r) => r.method === 'DELETE' && r.path.endsWith(`/messages/${id}/reactions`),
    );
    expect(del.at(-1)?.params).toMatchObject({ reaction_type: 'realm_emoji' });
  });

  it('finds the type from the realm emoji when the bot has no such reaction', async () => {
    const id = botPost(h, 'general', 'custom', 'no parrot here');
    const { structured } = expectOk(
      h,
      'remove_reaction',
      await h.call('remove_reaction', { message_id: id, emoji: 'partyparrot' }),
    );
    expect(structured).toMatchObject({ reaction_type: 'realm_emoji', changed: false });
  });
});

describe('reaction permissions', () => {
  let limited: Harness;
  beforeAll(async () => {
    limited = await startHarness({ policy: { writeStreams: ['dev'] } });
  });
  afterAll(async () => {
    await limited.close();
  });

  it('checks the write allowlist on the message’s stream', async () => {
    const id = limited.post(limited.realm.ann, 'general', 't', 'x');
    limited.sim.realm.addReaction(limited.realm.bot.userId, id, 'eyes');
    expectFail(await limited.call('add_reaction', { message_id: id, emoji: 'tada' }), 'CORE_ACCESS_DENIED');
    expectFail(
      await limited.call('remove_reaction', { message_id: id, emoji: 'eyes' }),
      'CORE_ACCESS_DENIED',
    );
    expect(limited.sim.realm.message(id)?.reactions).toHaveLength(1);
  });
});
