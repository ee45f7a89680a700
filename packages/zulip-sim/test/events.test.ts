import { afterEach, describe, expect, it } from 'vitest';
import { Client, manualClock, untilPolling, type World, world } from './helpers.js';

let w: World;
afterEach(async () => {
  await w.sim.close();
});

describe('POST /register', () => {
  it('returns a fresh queue with version fields and the requested state', async () => {
    w = await world();
    await w.alice.send({ type: 'direct', to: [w.ids.bob], content: 'unread for bob' });
    const { queueId, body } = await w.bob.register();
    expect(queueId).toMatch(/^[0-9a-f-]{36}$/);
    expect(body).toMatchObject({
      last_event_id: -1,
      zulip_version: '11.0',
      zulip_feature_level: 421,
      zulip_merge_base: '11.0',
      max_message_length: 10000,
      max_topic_length: 60,
      max_file_upload_size_mib: 25,
      event_queue_longpoll_timeout_seconds: 90,
      realm_url: w.sim.url,
      user_id: w.ids.bob,
    });
    expect(body.subscriptions.map((s: { name: string }) => s.name).sort()).toEqual(['design', 'general']);
    expect(body.unread_msgs).toMatchObject({ count: 1, pms: [{ other_user_id: w.ids.alice }] });
    expect(body.realm_users.map((u: { user_id: number }) => u.user_id)).toContain(w.ids.bot);
    expect(body.realm_users[0]).not.toHaveProperty('is_active');
  });

  it('returns only the state blocks fetch_event_types asks for', async () => {
    w = await world();
    const { body } = await w.bob.register({ event_types: ['message'], fetch_event_types: ['realm_emoji'] });
    expect(body).toHaveProperty('realm_emoji');
    expect(body).not.toHaveProperty('subscriptions');
    expect(body).not.toHaveProperty('max_message_id');
  });

  it('refuses narrow operators events cannot filter on', async () => {
    w = await world();
    const r = await w.bob.post('/register', { narrow: [['search', 'x']] });
    expect(r.status).toBe(400);
    expect(r.body.msg).toBe('Operator search not supported.');
  });
});

describe('GET /events', () => {
  it('long-polls: a message sent while the poll waits arrives with flags beside it', async () => {
    w = await world();
    const { queueId } = await w.bob.register({ event_types: ['message'], apply_markdown: true });
    const poll = w.bob.poll(queueId, -1);
    await untilPolling(w.sim, queueId);
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'hi @**Bob Bee**' });
    const r = await poll;
    expect(r.body.events).toHaveLength(1);
    const [event] = r.body.events;
    expect(event).toMatchObject({ type: 'message', id: 0, flags: ['mentioned'] });
    expect(event.message).toMatchObject({ id, content_type: 'text/html', display_recipient: 'general' });
    expect(event.message).not.toHaveProperty('flags');
    expect(r.body).not.toHaveProperty('queue_id');
  });

  it('renders message events as raw markdown by default and echoes local_id to the sending queue', async () => {
    w = await world();
    const { queueId } = await w.alice.register({ event_types: ['message'] });
    await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 't',
      content: '**x**',
      queue_id: queueId,
      local_id: '7.01',
    });
    const [event] = await w.alice.events(queueId);
    expect(event).toMatchObject({ local_message_id: '7.01', flags: [] });
    expect((event as { message: { content: string } }).message.content).toBe('**x**');
  });

  it('gives a non-subscribed sender no event, but feeds all_public_streams and narrowed queues', async () => {
    w = await world();
    const own = await w.carol.register({ event_types: ['message'] });
    const all = await w.carol.register({ event_types: ['message'], all_public_streams: true });
    const narrowed = await w.carol.register({ event_types: ['message'], narrow: [['channel', 'design']] });
    const other = await w.carol.register({ event_types: ['message'], narrow: [['channel', 'general']] });
    const id = await w.carol.send({ type: 'stream', to: 'design', topic: 't', content: 'drive-by' });
    expect(await w.carol.events(own.queueId)).toEqual([]);
    expect(await w.carol.events(all.queueId)).toMatchObject([
      { type: 'message', flags: [], message: { id } },
    ]);
    expect(await w.carol.events(narrowed.queueId)).toMatchObject([
      { type: 'message', flags: [], message: { id } },
    ]);
    expect(await w.carol.events(other.queueId)).toEqual([]);
  });

  it('filters by event_types but always delivers heartbeats', async () => {
    w = await world({ heartbeatIntervalMs: 30 });
    const { queueId } = await w.bob.register({ event_types: ['reaction'] });
    await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'ignored' });
    const r = await w.bob.poll(queueId, -1);
    expect(r.body.events).toEqual([{ type: 'heartbeat', id: 0 }]);
    const next = await w.bob.poll(queueId, 0, { dont_block: true });
    expect(next.body.events).toEqual([]);
    expect(w.sim.queues(w.ids.bob)[0]).toMatchObject({ acknowledgedEventId: 0, pending: 0 });
  });

  it('acknowledges through last_event_id and refuses pruned or unknown ids', async () => {
    w = await world();
    const { queueId } = await w.bob.register({ event_types: ['message'] });
    for (const c of ['a', 'b', 'c'])
      await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: c });
    expect((await w.bob.events(queueId, -1)).map((e) => e.id)).toEqual([0, 1, 2]);
    expect((await w.bob.events(queueId, 1)).map((e) => e.id)).toEqual([2]);
    const pruned = await w.bob.poll(queueId, 0, { dont_block: true });
    expect(pruned.body).toEqual({
      result: 'error',
      msg: 'An event newer than 0 has already been pruned!',
      code: 'BAD_REQUEST',
    });
    const fresh = await w.bob.register({ event_types: ['message'] });
    const unknown = await w.bob.poll(fresh.queueId, 5, { dont_block: true });
    expect(unknown.body.msg).toBe('Event 5 was not in this queue');
  });

  it('ends an earlier poll on the same queue when a new one arrives', async () => {
    w = await world();
    const { queueId } = await w.bob.register({ event_types: ['message'] });
    const first = w.bob.poll(queueId, -1);
    await untilPolling(w.sim, queueId);
    const second = w.bob.poll(queueId, -1);
    expect((await first).body.events).toEqual([]);
    await untilPolling(w.sim, queueId);
    await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'x' });
    expect((await second).body.events).toHaveLength(1);
  });

  it('forgets a poll whose client went away, keeping its events for the next one', async () => {
    w = await world();
    const { queueId } = await w.bob.register({ event_types: ['message'] });
    const abort = new AbortController();
    const poll = w.bob.call(
      'GET',
      '/events',
      { queue_id: queueId, last_event_id: -1 },
      { signal: abort.signal },
    );
    await untilPolling(w.sim, queueId);
    abort.abort();
    await expect(poll).rejects.toThrow();
    await untilPolling(w.sim, queueId, false);
    expect(w.sim.queues(w.ids.bob)[0]?.polling).toBe(false);
    await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'while away' });
    expect(await w.bob.events(queueId)).toHaveLength(1);
  });

  it('registers implicitly with dont_block and refuses a missing queue_id otherwise', async () => {
    w = await world();
    const r = await w.bob.get('/events', {
      dont_block: true,
      event_types: ['message'],
      bulk_message_deletion: true,
    });
    expect(r.body.events).toEqual([]);
    expect(typeof r.body.queue_id).toBe('string');
    expect(w.sim.queues(w.ids.bob)[0]).toMatchObject({
      applyMarkdown: false,
      clientGravatar: false,
      capabilities: { bulk_message_deletion: true },
    });
    const bad = await w.bob.get('/events', {});
    expect(bad.body).toMatchObject({ code: 'BAD_REQUEST', msg: "Missing 'queue_id' argument" });
  });

  it("answers gone, unknown and other users' queues with BAD_EVENT_QUEUE_ID", async () => {
    w = await world();
    const { queueId } = await w.bob.register();
    const stolen = await w.alice.poll(queueId, -1, { dont_block: true });
    expect(stolen.status).toBe(400);
    expect(stolen.body).toEqual({
      result: 'error',
      code: 'BAD_EVENT_QUEUE_ID',
      msg: `Bad event queue ID: ${queueId}`,
      queue_id: queueId,
    });
    expect((await w.bob.delete('/events', { queue_id: queueId })).body).toEqual({
      result: 'success',
      msg: '',
    });
    expect((await w.bob.poll(queueId, -1)).body.code).toBe('BAD_EVENT_QUEUE_ID');
    expect((await w.bob.delete('/events', { queue_id: queueId }, 'query')).body.code).toBe(
      'BAD_EVENT_QUEUE_ID',
    );
  });

  it('expires idle queues on the injected clock, honouring queue_lifespan_secs', async () => {
    const clock = manualClock();
    w = await world({ now: clock.now, queueIdleTimeoutMs: 60_000 });
    const short = await w.bob.register();
    const long = await w.bob.register({ queue_lifespan_secs: 3600 });
    clock.advance(59_000);
    expect((await w.bob.poll(short.queueId, -1, { dont_block: true })).status).toBe(200);
    clock.advance(60_000);
    expect((await w.bob.poll(short.queueId, -1, { dont_block: true })).body.code).toBe('BAD_EVENT_QUEUE_ID');
    expect((await w.bob.poll(long.queueId, -1, { dont_block: true })).status).toBe(200);
  });

  it('expireQueue ends a blocked poll with BAD_EVENT_QUEUE_ID', async () => {
    w = await world();
    const { queueId } = await w.bob.register();
    const poll = w.bob.poll(queueId, -1);
    await untilPolling(w.sim, queueId);
    w.sim.expireQueue(queueId);
    const r = await poll;
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('BAD_EVENT_QUEUE_ID');
    expect(() => w.sim.expireQueue(queueId)).toThrow(expect.objectContaining({ code: 'SIM_NOT_FOUND' }));
  });
});

describe('events of other kinds', () => {
  it('sends update_message_flags with only the ids that changed; the response echoes the request', async () => {
    w = await world();
    const a = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'a' });
    const b = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'b' });
    await w.bob.post('/messages/flags', { messages: [a], op: 'add', flag: 'read' });
    const { queueId } = await w.bob.register({ event_types: ['update_message_flags'] });
    const r = await w.bob.post('/messages/flags', { messages: [a, b], op: 'add', flag: 'read' });
    expect(r.body.messages).toEqual([a, b]);
    const unread = await w.bob.post('/messages/flags', { messages: [b], op: 'remove', flag: 'read' });
    expect(unread.status).toBe(200);
    const events = await w.bob.events(queueId);
    expect(events[0]).toEqual({
      type: 'update_message_flags',
      op: 'add',
      operation: 'add',
      flag: 'read',
      messages: [b],
      all: false,
      id: 0,
    });
    expect(events[1]).toMatchObject({
      op: 'remove',
      messages: [b],
      message_details: { [String(b)]: { type: 'stream', stream_id: w.ids.general, topic: 't' } },
    });
  });

  it('sends subscription add to the subscriber and peer_add to others', async () => {
    w = await world();
    const carol = await w.carol.register({ event_types: ['subscription'] });
    const bob = await w.bob.register({ event_types: ['subscription'] });
    await w.carol.post('/users/me/subscriptions', { subscriptions: [{ name: 'design' }] });
    const [add] = await w.carol.events(carol.queueId);
    expect(add).toMatchObject({
      type: 'subscription',
      op: 'add',
      subscriptions: [{ name: 'design', stream_id: w.ids.design }],
    });
    expect(await w.bob.events(bob.queueId)).toMatchObject([
      { type: 'subscription', op: 'peer_add', stream_ids: [w.ids.design], user_ids: [w.ids.carol] },
    ]);
    await w.carol.delete('/users/me/subscriptions', { subscriptions: ['design'] });
    const events = await w.carol.events(carol.queueId, 0);
    expect(events).toMatchObject([
      { type: 'subscription', op: 'remove', subscriptions: [{ stream_id: w.ids.design, name: 'design' }] },
    ]);
  });
});

describe('realm_user events of an address change', () => {
  it('tells the user and admins the delivery address, and everyone the public one when it was public', async () => {
    w = await world();
    const hidden = w.realm.addUser({
      fullName: 'Hid Den',
      email: 'user90@acme.example',
      deliveryEmail: 'hid@real.example',
    });
    const queues = {
      bob: (await w.bob.register({ event_types: ['realm_user'] })).queueId,
      admin: (await w.admin.register({ event_types: ['realm_user'] })).queueId,
      alice: (await w.alice.register({ event_types: ['realm_user'] })).queueId,
    };
    w.realm.changeUserEmail(w.ids.bob, 'bob@new.example');
    w.realm.changeUserEmail(hidden.userId, 'hid@other.example');
    const persons = async (client: typeof w.bob, queueId: string) =>
      (await client.poll(queueId, -1, { dont_block: true })).body.events.map(
        (e: { person: unknown }) => e.person,
      );
    expect(await persons(w.alice, queues.alice)).toEqual([
      { user_id: w.ids.bob, new_email: 'bob@new.example' },
    ]);
    // Bob signs in with the new address now.
    expect(await persons(Client.of(w.sim, w.ids.bob), queues.bob)).toEqual([
      { user_id: w.ids.bob, delivery_email: 'bob@new.example' },
      { user_id: w.ids.bob, new_email: 'bob@new.example' },
    ]);
    expect(await persons(w.admin, queues.admin)).toEqual([
      { user_id: w.ids.bob, delivery_email: 'bob@new.example' },
      { user_id: w.ids.bob, new_email: 'bob@new.example' },
      { user_id: hidden.userId, delivery_email: 'hid@other.example' },
    ]);
    const users = (await w.alice.get('/users')).body.members as { user_id: number; email: string }[];
    expect(users.find((u) => u.user_id === w.ids.bob)?.email).toBe('bob@new.example');
    expect(users.find((u) => u.user_id === hidden.userId)?.email).toBe('user90@acme.example');
    expect(() => w.realm.changeUserEmail(w.ids.alice, 'bob@new.example')).toThrow(/taken/);
  });
});
