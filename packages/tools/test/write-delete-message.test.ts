import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';
import { botPost, expectFail, expectOk } from './write-fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

describe('delete_message', () => {
  it('deletes its own message and shows what it read', async () => {
    const id = botPost(h, 'general', 'oops', 'wrong channel, sorry');
    const { text, structured } = expectOk(
      h,
      'delete_message',
      await h.call('delete_message', { message_id: id }),
    );
    expect(h.sim.realm.message(id)).toBeUndefined();
    expect(structured).toEqual({ message_id: id, deleted: true });
    const [summary, line] = text.split('\n');
    expect(summary).toBe(`Deleted message ${id} in #general > oops. It read:`);
    expect(line).toMatch(new RegExp(`id=${id}\\] \\[#general > oops\\] Helper Bot: wrong channel, sorry$`));
    // A second call finds nothing: no further effect.
    expectFail(await h.call('delete_message', { message_id: id }), 'TOOLS_NOT_FOUND');
  });

  it('refuses bad input and passes on Zulip’s permission refusal', async () => {
    expectFail(await h.call('delete_message', {}), 'TOOLS_INVALID_INPUT');
    expectFail(await h.call('delete_message', { message_id: 'seven' }), 'TOOLS_INVALID_INPUT');
    const theirs = h.post(h.realm.ann, 'general', 'keep', 'not yours to delete');
    const res = expectFail(await h.call('delete_message', { message_id: theirs }), 'CORE_BAD_REQUEST');
    expect(res.text).toContain("You don't have permission to delete this message");
    expect(h.sim.realm.message(theirs)).toBeDefined();
  });

  it('refuses a message in a private stream the policy cannot read', async () => {
    const secret = h.sim.realm.sendMessage({
      senderId: h.realm.bot.userId,
      type: 'stream',
      stream: 'secret',
      topic: 't',
      content: 'x',
    });
    expectFail(await h.call('delete_message', { message_id: secret }), 'TOOLS_NOT_FOUND');
    expect(h.sim.realm.message(secret)).toBeDefined();
  });
});

describe('delete_message permissions', () => {
  let limited: Harness;
  beforeAll(async () => {
    limited = await startHarness({ policy: { writeStreams: ['dev'] } });
  });
  afterAll(async () => {
    await limited.close();
  });

  it('checks the write allowlist on the message’s stream', async () => {
    const id = botPost(limited, 'general', 't', 'x');
    const res = expectFail(await limited.call('delete_message', { message_id: id }), 'CORE_ACCESS_DENIED');
    expect(res.text).toContain('writeStreams');
    expect(limited.sim.realm.message(id)).toBeDefined();
    const ok = botPost(limited, 'dev', 't', 'x');
    expectOk(limited, 'delete_message', await limited.call('delete_message', { message_id: ok }));
    expect(limited.sim.realm.message(ok)).toBeUndefined();
  });
});
