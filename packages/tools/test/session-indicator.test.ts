import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';
import { botReactions, closeSessions, nextRequest, ok, polling, sessionRig } from './session-fixtures.js';

// A realm with a custom `robot_ear`: the default listening indicator becomes that custom emoji,
// and removing it needs its reaction type (Zulip's removal defaults to Unicode emoji).

let h: Harness;
let robotEar: string;
beforeAll(async () => {
  h = await startHarness();
  robotEar = h.sim.realm.addRealmEmoji({ name: 'robot_ear', authorId: h.realm.ann.userId }).id;
});
afterEach(async () => {
  await closeSessions();
});
afterAll(async () => {
  await h.close();
});

describe('the listening indicator', () => {
  it('is the realm’s custom robot_ear, and comes off with its reaction type', async () => {
    const rig = sessionRig(h);
    const trigger = h.post(h.realm.ann, 'general', 'ears', '@**Helper Bot** wait for my logs');
    ok(
      rig,
      'set_context',
      await rig.call('set_context', { stream: 'general', topic: 'ears', trigger_message_id: trigger }),
    );
    const pending = rig.call('listen', { timeout_seconds: 60 });
    await polling(h, 'ears');
    expect(botReactions(h, trigger)).toEqual([
      {
        emojiName: 'robot_ear',
        emojiCode: robotEar,
        reactionType: 'realm_emoji',
        userId: h.realm.bot.userId,
      },
    ]);
    expect(rig.session.state().indicator).toEqual({
      messageId: trigger,
      emojiName: 'robot_ear',
      reactionType: 'realm_emoji',
    });
    const removed = nextRequest(
      h,
      (r) => r.method === 'DELETE' && r.path.endsWith(`/messages/${trigger}/reactions`),
    );
    h.post(h.realm.ann, 'general', 'ears', 'here they are');
    expect(ok(rig, 'listen', await pending).structured.status).toBe('messages');
    await rig.session.settled();
    const request = await removed;
    expect(request.status).toBe(200);
    expect(request.params).toMatchObject({ emoji_name: 'robot_ear', reaction_type: 'realm_emoji' });
    expect(botReactions(h, trigger)).toEqual([]);
    expect(rig.session.state().indicator).toBeUndefined();
  });

  it('is removed by close() when the process exits mid-listen', async () => {
    const rig = sessionRig(h);
    const trigger = h.post(h.realm.ann, 'general', 'ears-exit', '@**Helper Bot** hold on');
    ok(
      rig,
      'set_context',
      await rig.call('set_context', { stream: 'general', topic: 'ears-exit', trigger_message_id: trigger }),
    );
    const pending = rig.call('listen', { timeout_seconds: 60 });
    await polling(h, 'ears-exit');
    expect(botReactions(h, trigger)).toHaveLength(1);
    await rig.session.close();
    // close() waits for the listen to hand over its clean-up, and for the clean-up itself.
    expect(botReactions(h, trigger)).toEqual([]);
    expect(h.sim.queues(h.realm.bot.userId)).toEqual([]);
    expect(ok(rig, 'listen', await pending).structured.status).toBe('cancelled');
  });

  it('uses a configured Unicode emoji instead', async () => {
    const rig = sessionRig(h, { listenEmoji: 'eyes' });
    const trigger = h.post(h.realm.ann, 'general', 'eyes', '@**Helper Bot** look');
    ok(
      rig,
      'set_context',
      await rig.call('set_context', { stream: 'general', topic: 'eyes', trigger_message_id: trigger }),
    );
    const pending = rig.call('listen', { timeout_seconds: 60 });
    await polling(h, 'eyes');
    expect(botReactions(h, trigger).map((r) => [r.emojiName, r.reactionType])).toEqual([
      ['eyes', 'unicode_emoji'],
    ]);
    h.post(h.realm.ann, 'general', 'eyes', 'ok');
    ok(rig, 'listen', await pending);
    await rig.session.settled();
    expect(botReactions(h, trigger)).toEqual([]);
  });
});
