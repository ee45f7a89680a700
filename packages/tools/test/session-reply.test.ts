import { AccessPolicy } from '@zmcp/core';
import type { SimUser } from '@zmcp/zulip-sim';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createToolServices } from '../src/services.js';
import { type Harness, simStreams, startHarness } from './harness.js';
import { closeSessions, fails, ok, type SessionRig, sessionRig, typingLog } from './session-fixtures.js';

let h: Harness;
let otherBot: SimUser;
beforeAll(async () => {
  h = await startHarness();
  otherBot = h.sim.realm.addUser({
    fullName: 'Other Bot',
    email: 'other-bot@example.test',
    isBot: true,
    botType: 1,
  });
});
afterEach(async () => {
  await closeSessions();
});
afterAll(async () => {
  await h.close();
});

function botPost(topic: string, content: string, stream = 'general'): number {
  return h.sim.realm.sendMessage({ senderId: h.realm.bot.userId, type: 'stream', stream, topic, content });
}

async function bound(
  topic: string,
  options: Parameters<typeof sessionRig>[1] = {},
): Promise<{ rig: SessionRig; trigger: number }> {
  const rig = sessionRig(h, options);
  const trigger = h.post(h.realm.ann, 'general', topic, '@**Helper Bot** please help');
  ok(
    rig,
    'set_context',
    await rig.call('set_context', { stream: 'general', topic, trigger_message_id: trigger }),
  );
  return { rig, trigger };
}

describe('reply', () => {
  it('posts in the bound conversation and hands over what arrived meanwhile', async () => {
    const { rig } = await bound('reply-a');
    const more = h.post(h.realm.bo, 'general', 'reply-a', 'also check <staging>');
    botPost('reply-a', 'a note the bot posted elsewhere');
    h.post(h.realm.ann, 'general', 'reply-a', '/nobots keep this from the bot');
    h.post(h.realm.ann, 'general', 'reply-b', 'another topic');
    const { text, structured } = ok(rig, 'reply', await rig.call('reply', { content: 'Looking into it.' }));
    const sent = structured.message_id as number;
    expect(h.sim.realm.message(sent)).toMatchObject({ topic: 'reply-a', content: 'Looking into it.' });
    expect(structured).toEqual({
      message_id: sent,
      permalink: expect.stringMatching(new RegExp(`/topic/reply-a/near/${sent}$`)),
      attachments: 0,
      arrived_ids: [more],
      hidden: 1,
      more_waiting: false,
      last_seen_id: sent,
    });
    const lines = text.split('\n');
    expect(lines[0]).toMatch(new RegExp(`^Sent message ${sent} to #general > reply-a \\(http`));
    expect(lines[1]).toMatch(
      new RegExp(`id=${sent}\\] \\[#general > reply-a\\] Helper Bot: Looking into it\\.$`),
    );
    expect(lines[2]).toContain(`1 message arrived since you last read the conversation (id ${more})`);
    expect(lines[2]).toContain('1 message hidden');
    expect(lines[3]).toContain('Bo Chen: also check &lt;staging>');
    expect(text).not.toContain('keep this from the bot');

    const again = ok(rig, 'reply', await rig.call('reply', { content: 'Found it.' }));
    expect(again.structured.arrived_ids).toEqual([]);
    expect(again.text.split('\n')).toHaveLength(2);
  });

  it('sends typing stop in place of a start, whatever autoTyping says', async () => {
    for (const autoTyping of [true, false]) {
      const { rig } = await bound(`reply-typing-${autoTyping}`, { autoTyping });
      const typing = typingLog(h);
      ok(rig, 'reply', await rig.call('reply', { content: 'done' }));
      await rig.session.settled();
      typing.stop();
      expect(typing.ops).toEqual(['stop']);
    }
  });

  it('attaches inline data', async () => {
    const { rig } = await bound('reply-attach');
    const { structured } = ok(
      rig,
      'reply',
      await rig.call('reply', {
        content: 'The log:',
        attachments: [{ data: Buffer.from('line 1\n').toString('base64'), name: 'log.txt' }],
      }),
    );
    expect(structured.attachments).toBe(1);
    expect(h.sim.realm.message(structured.message_id as number)?.content).toMatch(
      /^The log:\n\[log\.txt\]\(\/user_uploads\//,
    );
  });

  it('refuses bad input before anything is sent', async () => {
    const { rig } = await bound('reply-bad');
    const count = h.sim.realm.messageCount();
    expect(fails(await rig.call('reply', {}), 'TOOLS_INVALID_INPUT').text).toContain('content');
    expect(fails(await rig.call('reply', { content: 42 }), 'TOOLS_INVALID_INPUT').text).toContain('content');
    const long = fails(await rig.call('reply', { content: 'x'.repeat(10_001) }), 'CORE_MESSAGE_TOO_LONG');
    expect(long.text).toContain('10000');
    expect(h.sim.realm.messageCount()).toBe(count);
  });

  it('refuses a stream outside the write allowlist', async () => {
    const services = createToolServices({
      ...h.services,
      policy: AccessPolicy.resolve({ readOnly: false, writeStreams: ['dev'] }, simStreams(h.sim)),
    });
    const rig = sessionRig(h, {}, services);
    h.post(h.realm.ann, 'general', 'reply-denied', '@**Helper Bot** hi');
    ok(rig, 'set_context', await rig.call('set_context', { stream: 'general', topic: 'reply-denied' }));
    const count = h.sim.realm.messageCount();
    const denied = fails(await rig.call('reply', { content: 'hello' }), 'CORE_ACCESS_DENIED');
    expect(denied.text).toContain('writeStreams');
    expect(h.sim.realm.messageCount()).toBe(count);
  });
});

describe('dismissal before a reply (REST)', () => {
  it('a person’s dismiss reaction on the bot’s reply ends the session: nothing more is sent', async () => {
    const { rig } = await bound('dismiss-rest');
    const first = ok(rig, 'reply', await rig.call('reply', { content: 'Here is a first answer.' }));
    h.sim.realm.addReaction(h.realm.ann.userId, first.structured.message_id as number, 'stop');
    const count = h.sim.realm.messageCount();
    const refused = fails(await rig.call('reply', { content: 'And another thing' }), 'TOOLS_SESSION_ENDED');
    expect(refused.text).toContain('Nothing was sent.');
    expect(refused.text).toContain(`Ann Lee reacted :stop: to your message ${first.structured.message_id}`);
    expect(h.sim.realm.messageCount()).toBe(count);
    expect(rig.session.state()).toMatchObject({
      bound: false,
      ended: { reason: 'dismissed', byUserId: h.realm.ann.userId, stream: 'general', topic: 'dismiss-rest' },
    });
    fails(await rig.call('listen', { timeout_seconds: 5 }), 'TOOLS_SESSION_ENDED');
    const end = ok(rig, 'end_session', await rig.call('end_session', {}));
    expect(end.structured).toMatchObject({ ended: false });
    expect(end.text).toBe(
      'Session in #general > dismiss-rest ended (it had already been ended from the conversation). Call set_context to start another.',
    );
    // Called again later: the old dismissal belongs to the old session.
    const trigger = h.post(h.realm.bo, 'general', 'dismiss-rest', '@**Helper Bot** one more question');
    ok(
      rig,
      'set_context',
      await rig.call('set_context', {
        stream: 'general',
        topic: 'dismiss-rest',
        trigger_message_id: trigger,
      }),
    );
    ok(rig, 'reply', await rig.call('reply', { content: 'Sure.' }));
  });

  it('ignores reactions that do not dismiss: other emoji, bots, people’s messages, earlier sessions', async () => {
    const before = botPost('dismiss-not', 'an answer from an earlier session');
    h.sim.realm.addReaction(h.realm.ann.userId, before, 'stop');
    const { rig, trigger } = await bound('dismiss-not');
    const reply = ok(rig, 'reply', await rig.call('reply', { content: 'first' }));
    const mine = reply.structured.message_id as number;
    h.sim.realm.addReaction(h.realm.ann.userId, mine, 'tada');
    h.sim.realm.addReaction(otherBot.userId, mine, 'stop');
    h.sim.realm.addReaction(h.realm.bo.userId, trigger, 'stop');
    ok(rig, 'reply', await rig.call('reply', { content: 'second' }));
    expect(rig.session.state().bound).toBe(true);
  });

  it('honours a configured dismiss emoji only', async () => {
    const { rig } = await bound('dismiss-custom', { dismissEmoji: 'octopus' });
    const reply = ok(rig, 'reply', await rig.call('reply', { content: 'first' }));
    h.sim.realm.addReaction(h.realm.ann.userId, reply.structured.message_id as number, 'stop');
    ok(rig, 'reply', await rig.call('reply', { content: 'still here' }));
    h.sim.realm.addReaction(h.realm.ann.userId, reply.structured.message_id as number, 'octopus');
    expect(fails(await rig.call('reply', { content: 'no' }), 'TOOLS_SESSION_ENDED').text).toContain(
      ':octopus:',
    );
  });
});
