import { AccessPolicy } from '@zmcp/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTools } from '../src/write/index.js';
import { type Harness, startHarness } from './harness.js';
import { callWith, expectFail, writesSeen } from './write-fixtures.js';

let h: Harness;
let ids: { ann: number; own: number };
beforeAll(async () => {
  h = await startHarness({ policy: { readOnly: true }, uploadRoot: true });
  ids = {
    ann: h.post(h.realm.ann, 'general', 'ro', 'a message'),
    own: h.sim.realm.sendMessage({
      senderId: h.realm.bot.userId,
      type: 'stream',
      stream: 'general',
      topic: 'ro',
      content: 'mine',
    }),
  };
  h.sim.realm.addReaction(h.realm.bot.userId, ids.ann, 'eyes');
});
afterAll(async () => {
  await h.close();
});

function snapshot() {
  return {
    messages: h.sim.realm.messageCount(),
    max: h.sim.realm.maxMessageId(),
    uploads: h.sim.realm.uploads().length,
    own: h.sim.realm.message(ids.own),
    ann: h.sim.realm.message(ids.ann),
    flags: h.sim.realm.flags(h.realm.bot.userId, ids.ann),
    subscriptions: h.sim.realm
      .streams()
      .filter((s) => s.subscribers.includes(h.realm.bot.userId))
      .map((s) => s.name),
  };
}

const calls: [string, Record<string, unknown>][] = [
  ['send_message', { stream: 'general', topic: 'ro', content: 'hello' }],
  ['send_dm', { to: ['Bo Chen'], content: 'hello' }],
  ['upload_file', { attachment: { data: Buffer.from('x').toString('base64'), name: 'x.txt' } }],
  ['edit_message', { message_id: 0, content: 'changed' }],
  ['delete_message', { message_id: 0 }],
  ['add_reaction', { message_id: 0, emoji: 'tada' }],
  ['remove_reaction', { message_id: 0, emoji: 'eyes' }],
  ['resolve_topic', { stream: 'general', topic: 'ro' }],
  ['mark_read', { stream: 'general' }],
  ['subscribe', { streams: ['dev'] }],
  ['unsubscribe', { streams: ['general'] }],
];

describe('read-only mode', () => {
  it('covers every write tool', () => {
    expect(calls.map(([name]) => name).sort()).toEqual(writeTools.map((t) => t.name).sort());
  });

  it.each(calls)('%s is refused and the realm does not change', async (name, args) => {
    const fixed =
      'message_id' in args ? { ...args, message_id: name === 'remove_reaction' ? ids.ann : ids.own } : args;
    const before = snapshot();
    const start = Date.now();
    const res = expectFail(await h.call(name, fixed), 'CORE_READ_ONLY');
    expect(res.text).toContain('Read-only');
    expect(snapshot()).toEqual(before);
    expect(writesSeen(h, start)).toBe(0);
  });

  it('is enforced by the transport too, whatever the policy says', async () => {
    const lax = { ...h.services, policy: new AccessPolicy({ readOnly: false }) };
    const before = snapshot();
    const start = Date.now();
    for (const tool of writeTools) {
      const args = calls.find(([name]) => name === tool.name)?.[1] ?? {};
      const fixed =
        'message_id' in args
          ? { ...args, message_id: tool.name === 'remove_reaction' ? ids.ann : ids.own }
          : args;
      const res = await callWith(tool, lax, fixed);
      expect(res.isError, `${tool.name}: ${res.isError ? '' : res.text}`).toBe(true);
      expect(res.isError === true && res.text).toContain('nothing was sent');
    }
    expect(snapshot()).toEqual(before);
    expect(writesSeen(h, start)).toBe(0);
  });
});
