import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editMessageTool } from '../src/write/edit-message.js';
import { type Harness, startHarness } from './harness.js';
import { botPost, callWith, expectFail, expectOk } from './write-fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

describe('edit_message', () => {
  it('replaces the content of its own message and returns the new line', async () => {
    const id = botPost(h, 'general', 'edits', 'first draft');
    const { text, structured } = expectOk(
      h,
      'edit_message',
      await h.call('edit_message', { message_id: id, content: 'second draft' }),
    );
    expect(h.sim.realm.message(id)?.content).toBe('second draft');
    expect(h.sim.realm.message(id)?.editHistory[0]?.prevContent).toBe('first draft');
    expect(structured).toEqual({
      message_id: id,
      permalink: expect.stringMatching(new RegExp(`/topic/edits/near/${id}$`)),
      changed: { content: true, topic: false, stream: false },
      propagate_mode: null,
    });
    const [summary, line] = text.split('\n');
    expect(summary).toBe(`Message ${id}: content edited (${structured.permalink}).`);
    expect(line).toMatch(
      new RegExp(`id=${id}\\] \\[#general > edits\\] Helper Bot: second draft \\(edited\\)$`),
    );
  });

  it('normalizes new content, and not when switched off', async () => {
    const id = botPost(h, 'general', 'edits', 'x');
    expectOk(
      h,
      'edit_message',
      await h.call('edit_message', { message_id: id, content: 'T:\n| a |\n|---|' }),
    );
    expect(h.sim.realm.message(id)?.content).toBe('T:\n\n| a |\n|---|');
    const off = await callWith(
      editMessageTool,
      { ...h.services, markdownAutofix: false },
      {
        message_id: id,
        content: 'U:\n| a |\n|---|',
      },
    );
    expect(off.isError).not.toBe(true);
    expect(h.sim.realm.message(id)?.content).toBe('U:\n| a |\n|---|');
  });

  it('moves a whole topic with change_all', async () => {
    const first = botPost(h, 'general', 'old place', 'one');
    const second = h.post(h.realm.ann, 'general', 'old place', 'two');
    const { text, structured } = expectOk(
      h,
      'edit_message',
      await h.call('edit_message', { message_id: first, topic: 'new place', propagate_mode: 'change_all' }),
    );
    expect(h.sim.realm.message(first)?.topic).toBe('new place');
    expect(h.sim.realm.message(second)?.topic).toBe('new place');
    expect(structured).toMatchObject({
      message_id: first,
      changed: { content: false, topic: true, stream: false },
      propagate_mode: 'change_all',
    });
    const [summary, line] = text.split('\n');
    expect(summary).toContain(
      `Message ${first}: moved from #general > old place to #general > new place (whole topic)`,
    );
    expect(line).toMatch(
      new RegExp(`id=${first}\\] \\[#general > new place\\] Helper Bot: one \\(moved\\)$`),
    );
  });

  it('moves one message to another stream (change_one by default)', async () => {
    const first = botPost(h, 'general', 'moving', 'a');
    const second = botPost(h, 'general', 'moving', 'b');
    const { text } = expectOk(
      h,
      'edit_message',
      await h.call('edit_message', { message_id: first, stream: 'dev' }),
    );
    expect(h.sim.realm.message(first)?.streamId).toBe(h.realm.streams.dev);
    expect(h.sim.realm.message(second)?.streamId).toBe(h.realm.streams.general);
    expect(text).toContain('moved from #general > moving to #dev > moving');
  });

  it('refuses calls that change nothing, and bad input by field', async () => {
    const id = botPost(h, 'general', 'same', 'unchanged');
    const none = expectFail(await h.call('edit_message', { message_id: id }), 'TOOLS_INVALID_INPUT');
    expect(none.text).toContain('Nothing to change');
    const same = expectFail(
      await h.call('edit_message', { message_id: id, content: 'unchanged', topic: 'same' }),
      'TOOLS_INVALID_INPUT',
    );
    expect(same.text).toContain('already has that content and topic');
    expectFail(
      await h.call('edit_message', { message_id: id, content: 'x', stream: 'dev' }),
      'TOOLS_INVALID_INPUT',
    );
    expectFail(
      await h.call('edit_message', { message_id: id, topic: 'y'.repeat(61) }),
      'TOOLS_INVALID_INPUT',
    );
    expectFail(await h.call('edit_message', { message_id: -1, content: 'x' }), 'TOOLS_INVALID_INPUT');
    expectFail(
      await h.call('edit_message', { message_id: id, topic: 't', propagate_mode: 'everything' }),
      'TOOLS_INVALID_INPUT',
    );
    expectFail(await h.call('edit_message', { message_id: 99_999_999, content: 'x' }), 'TOOLS_NOT_FOUND');
    expect(h.sim.realm.message(id)?.editHistory).toHaveLength(0);
  });

  it("passes Zulip's refusals on with its message", async () => {
    const theirs = h.post(h.realm.ann, 'general', 'refusals', 'mine, not yours');
    const perm = expectFail(
      await h.call('edit_message', { message_id: theirs, content: 'x' }),
      'CORE_BAD_REQUEST',
    );
    expect(perm.text).toContain("You don't have permission to edit this message");
    const old = botPost(h, 'general', 'refusals', 'long ago', Math.floor(Date.now() / 1000) - 3600);
    const late = expectFail(
      await h.call('edit_message', { message_id: old, content: 'x' }),
      'CORE_BAD_REQUEST',
    );
    expect(late.text).toContain('time limit for editing this message has passed');
    expect(h.sim.realm.message(old)?.content).toBe('long ago');
  });

  it('refuses over-long content with both numbers and leaves the message alone', async () => {
    const id = botPost(h, 'general', 'edits', 'short');
    const res = expectFail(
      await h.call('edit_message', { message_id: id, content: 'x'.repeat(10_001) }),
      'CORE_MESSAGE_TOO_LONG',
    );
    expect(res.text).toContain('10001');
    expect(res.text).toContain('10000');
    expect(h.sim.realm.message(id)?.content).toBe('short');
  });

  it('refuses messages the policy cannot read, and ones that opted out of bots', async () => {
    const secret = h.sim.realm.sendMessage({
      senderId: h.realm.bot.userId,
      type: 'stream',
      stream: 'secret',
      topic: 't',
      content: 'private',
    });
    expectFail(await h.call('edit_message', { message_id: secret, content: 'x' }), 'TOOLS_NOT_FOUND');
    const hidden = h.post(h.realm.ann, 'hidden', 't', 'not for bots');
    expectFail(await h.call('edit_message', { message_id: hidden, content: 'x' }), 'TOOLS_NOT_FOUND');
    const nobots = botPost(h, 'general', 'quiet /nobots', 'x');
    const res = expectFail(
      await h.call('edit_message', { message_id: nobots, content: 'y' }),
      'TOOLS_NOT_FOUND',
    );
    expect(res.text).toContain(`No message with id ${nobots} is available to this bot`);
    expect(h.sim.realm.message(secret)?.content).toBe('private');
    expect(h.sim.realm.message(nobots)?.content).toBe('x');
  });
});

describe('edit_message permissions', () => {
  let limited: Harness;
  beforeAll(async () => {
    limited = await startHarness({ policy: { writeStreams: ['general'] } });
  });
  afterAll(async () => {
    await limited.close();
  });

  it('checks writes on the source stream and on the target stream', async () => {
    const inDev = botPost(limited, 'dev', 't', 'in dev');
    const source = expectFail(
      await limited.call('edit_message', { message_id: inDev, content: 'x' }),
      'CORE_ACCESS_DENIED',
    );
    expect(source.text).toContain('not allowed');
    const inGeneral = botPost(limited, 'general', 't', 'in general');
    const target = expectFail(
      await limited.call('edit_message', { message_id: inGeneral, stream: 'dev' }),
      'CORE_ACCESS_DENIED',
    );
    expect(target.text).toContain('not allowed');
    expect(limited.sim.realm.message(inDev)?.content).toBe('in dev');
    expect(limited.sim.realm.message(inGeneral)?.streamId).toBe(limited.realm.streams.general);
  });
});
