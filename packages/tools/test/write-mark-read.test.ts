import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';
import { expectFail, expectOk } from './write-fixtures.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const isRead = (id: number) => h.sim.realm.flags(h.realm.bot.userId, id).includes('read');

describe('mark_read', () => {
  it('marks messages read by id and counts the ones that were unread', async () => {
    const a = h.post(h.realm.ann, 'general', 'ids', 'one');
    const b = h.post(h.realm.ann, 'general', 'ids', 'two');
    h.sim.realm.setFlag(h.realm.bot.userId, [b], 'read', 'add');
    expect(isRead(a)).toBe(false);
    const { text, structured } = expectOk(
      h,
      'mark_read',
      await h.call('mark_read', { message_ids: [a, b, a] }),
    );
    expect(isRead(a)).toBe(true);
    expect(isRead(b)).toBe(true);
    expect(structured).toEqual({ updated: 1, processed: 2, complete: true });
    expect(text).toBe('Marked 2 messages read (1 were unread).');
  });

  it('marks one topic of a stream read, and then the whole stream', async () => {
    const inTopic = [
      h.post(h.realm.ann, 'general', 'standup', 'a'),
      h.post(h.realm.bo, 'general', 'standup', 'b'),
    ];
    const other = h.post(h.realm.ann, 'general', 'lunch', 'c');
    const topic = expectOk(
      h,
      'mark_read',
      await h.call('mark_read', { stream: 'general', topic: 'standup' }),
    );
    expect(topic.structured).toEqual({ updated: 2, processed: 2, complete: true });
    expect(topic.text).toBe('Marked 2 messages read in #general > standup.');
    expect(inTopic.every(isRead)).toBe(true);
    expect(isRead(other)).toBe(false);
    const all = expectOk(h, 'mark_read', await h.call('mark_read', { stream: h.realm.streams.general }));
    expect(all.structured.updated).toBeGreaterThanOrEqual(1);
    expect(isRead(other)).toBe(true);
    expect(all.text).toMatch(/^Marked \d+ messages? read in #general\.$/);
  });

  it('refuses bad input by field', async () => {
    expectFail(await h.call('mark_read', {}), 'TOOLS_INVALID_INPUT');
    expectFail(await h.call('mark_read', { message_ids: [1], stream: 'general' }), 'TOOLS_INVALID_INPUT');
    expectFail(await h.call('mark_read', { topic: 'x' }), 'TOOLS_INVALID_INPUT');
    expectFail(await h.call('mark_read', { message_ids: [] }), 'TOOLS_INVALID_INPUT');
    expectFail(await h.call('mark_read', { message_ids: [99_999_999] }), 'TOOLS_NOT_FOUND');
  });

  it('marks nothing where the policy may not read', async () => {
    const secret = h.post(h.realm.ann, 'secret', 'plans', 'x');
    expectFail(await h.call('mark_read', { stream: 'secret' }), 'CORE_ACCESS_DENIED');
    const mixed = h.post(h.realm.ann, 'general', 'ids', 'public');
    expectFail(await h.call('mark_read', { message_ids: [mixed, secret] }), 'TOOLS_NOT_FOUND');
    expect(isRead(secret)).toBe(false);
    expect(isRead(mixed)).toBe(false);
  });
});
