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

describe('resolve_topic', () => {
  it('renames the whole topic to "✔ topic" and back', async () => {
    const a = h.post(h.realm.ann, 'general', 'login bug', 'it fails');
    const b = h.post(h.realm.bo, 'general', 'login bug', 'fixed in 1.2');
    const { text, structured } = expectOk(
      h,
      'resolve_topic',
      await h.call('resolve_topic', { stream: 'general', topic: 'login bug' }),
    );
    expect(h.sim.realm.message(a)?.topic).toBe('✔ login bug');
    expect(h.sim.realm.message(b)?.topic).toBe('✔ login bug');
    expect(structured).toEqual({
      stream_id: h.realm.streams.general,
      resolved: true,
      changed: true,
      message_id: b,
    });
    expect(text).toBe('Resolved #general > login bug: it is now #general > ✔ login bug.');

    const again = expectOk(
      h,
      'resolve_topic',
      await h.call('resolve_topic', { stream: 'general', topic: 'login bug' }),
    );
    expect(again.structured).toMatchObject({
      stream_id: h.realm.streams.general,
      resolved: true,
      changed: false,
    });
    // The newest message of the resolved topic (Zulip's notice of the resolve, if it posted one).
    const newest = again.structured.message_id as number;
    expect(newest).toBeGreaterThanOrEqual(b);
    expect(h.sim.realm.message(newest)?.topic).toBe('✔ login bug');
    expect(again.text).toBe('#general > ✔ login bug is already resolved; nothing changed.');

    const back = expectOk(
      h,
      'resolve_topic',
      await h.call('resolve_topic', {
        stream: h.realm.streams.general,
        topic: '✔ login bug',
        unresolve: true,
      }),
    );
    expect(back.structured).toMatchObject({ resolved: false, changed: true, message_id: newest });
    expect(back.text).toBe('Unresolved #general > ✔ login bug: it is now #general > login bug.');
    expect(h.sim.realm.message(a)?.topic).toBe('login bug');
    const twice = expectOk(
      h,
      'resolve_topic',
      await h.call('resolve_topic', { stream: 'general', topic: 'login bug', unresolve: true }),
    );
    expect(twice.structured).toMatchObject({ changed: false, resolved: false });
    expect(twice.text).toContain('already unresolved');
  });

  it('keeps the topic’s own spelling', async () => {
    const id = h.post(h.realm.ann, 'general', 'Deploy Freeze', 'until Monday');
    expectOk(
      h,
      'resolve_topic',
      await h.call('resolve_topic', { stream: 'general', topic: 'deploy freeze' }),
    );
    expect(h.sim.realm.message(id)?.topic).toBe('✔ Deploy Freeze');
  });

  it('refuses unknown topics, bad input and names Zulip would cut', async () => {
    expectFail(
      await h.call('resolve_topic', { stream: 'general', topic: 'never discussed' }),
      'TOOLS_NOT_FOUND',
    );
    expectFail(await h.call('resolve_topic', { stream: 'general' }), 'TOOLS_INVALID_INPUT');
    expectFail(await h.call('resolve_topic', { stream: 'general', topic: '✔ ' }), 'TOOLS_INVALID_INPUT');
    expectFail(await h.call('resolve_topic', { stream: 'nowhere', topic: 't' }), 'TOOLS_NOT_FOUND');
    const long = 'q'.repeat(59);
    const id = h.post(h.realm.ann, 'general', long, 'x');
    const res = expectFail(
      await h.call('resolve_topic', { stream: 'general', topic: long }),
      'TOOLS_INVALID_INPUT',
    );
    expect(res.text).toContain('61');
    expect(h.sim.realm.message(id)?.topic).toBe(long);
    const quiet = h.post(h.realm.ann, 'general', 'private chat /nobots', 'x');
    expectFail(
      await h.call('resolve_topic', { stream: 'general', topic: 'private chat /nobots' }),
      'TOOLS_NOT_FOUND',
    );
    expect(h.sim.realm.message(quiet)?.topic).toBe('private chat /nobots');
  });
});

describe('resolve_topic permissions', () => {
  let limited: Harness;
  beforeAll(async () => {
    limited = await startHarness({ policy: { writeStreams: ['dev'] } });
  });
  afterAll(async () => {
    await limited.close();
  });

  it('needs write access to the stream, and read access to a private one', async () => {
    const id = limited.post(limited.realm.ann, 'general', 'done', 'x');
    expectFail(
      await limited.call('resolve_topic', { stream: 'general', topic: 'done' }),
      'CORE_ACCESS_DENIED',
    );
    expect(limited.sim.realm.message(id)?.topic).toBe('done');
    const secret = h.post(h.realm.ann, 'secret', 'plans', 'x');
    expectFail(await h.call('resolve_topic', { stream: 'secret', topic: 'plans' }), 'CORE_ACCESS_DENIED');
    expect(h.sim.realm.message(secret)?.topic).toBe('plans');
  });
});
