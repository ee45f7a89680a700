import { afterEach, describe, expect, it } from 'vitest';
import { json, manualClock, untilPolling, type World, world } from './helpers.js';

let w: World;
afterEach(async () => {
  await w.sim.close();
});

describe('content edits', () => {
  it('edits content, emits update_message with originals, and keeps edit history', async () => {
    w = await world();
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'shipped **v2**' });
    const { queueId } = await w.bob.register({ event_types: ['update_message'] });
    const r = await w.alice.patch(`/messages/${id}`, { content: 'shipped **v2.1**' });
    expect(r.body).toEqual({ result: 'success', msg: '', detached_uploads: [] });
    const [event] = await w.bob.events(queueId);
    expect(event).toMatchObject({
      type: 'update_message',
      user_id: w.ids.alice,
      message_id: id,
      message_ids: [id],
      rendering_only: false,
      flags: [],
      stream_id: w.ids.general,
      stream_name: 'general',
      content: 'shipped **v2.1**',
      rendered_content: '<p>shipped <strong>v2.1</strong></p>',
      orig_content: 'shipped **v2**',
      orig_rendered_content: '<p>shipped <strong>v2</strong></p>',
      is_me_message: false,
    });
    expect(event).not.toHaveProperty('propagate_mode');
    const msg = (await w.bob.get(`/messages/${id}`)).body.message;
    expect(msg.last_edit_timestamp).toEqual(expect.any(Number));
    expect(msg).not.toHaveProperty('last_moved_timestamp');
    expect(msg.edit_history).toEqual([
      expect.objectContaining({
        user_id: w.ids.alice,
        prev_content: 'shipped **v2**',
        prev_rendered_content: '<p>shipped <strong>v2</strong></p>',
      }),
    ]);
  });

  it('never serves a stale history read after edits, moves, reactions or re-renders', async () => {
    w = await world();
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'v1' });
    const read = async () =>
      (await w.bob.get('/messages', { anchor: id, narrow: [['channel', 'general']] })).body.messages[0];
    expect((await read()).content).toBe('<p>v1</p>');
    await w.alice.patch(`/messages/${id}`, { content: 'v2' });
    expect((await read()).content).toBe('<p>v2</p>');
    await w.bob.post(`/messages/${id}/reactions`, { emoji_name: 'eyes' });
    expect((await read()).reactions).toHaveLength(1);
    await w.alice.patch(`/messages/${id}`, { topic: 'moved', send_notification_to_new_thread: false });
    expect((await read()).subject).toBe('moved');
    w.realm.renderingUpdate(id, '<p>v2 with preview</p>');
    expect((await read()).content).toBe('<p>v2 with preview</p>');
    await w.bob.post('/messages/flags', { messages: [id], op: 'add', flag: 'starred' });
    expect((await read()).flags).toEqual(['starred']);
  });

  it('serves the edit history oldest first on GET /messages/{id}/history', async () => {
    w = await world();
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 'a', content: 'one' });
    await w.alice.patch(`/messages/${id}`, { content: 'two' });
    await w.alice.patch(`/messages/${id}`, { topic: 'b', send_notification_to_new_thread: false });
    const r = await w.bob.get(`/messages/${id}/history`);
    expect(r.body.message_history).toEqual([
      expect.objectContaining({ topic: 'a', content: 'one', user_id: w.ids.alice, stream: w.ids.general }),
      expect.objectContaining({ topic: 'a', content: 'two', prev_content: 'one' }),
      expect.objectContaining({ topic: 'b', content: 'two', prev_topic: 'a' }),
    ]);
  });

  it("refuses other users' content edits and edits past the time limit (600 s + 20 s grace)", async () => {
    const clock = manualClock();
    w = await world({ now: clock.now });
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'x' });
    expect((await w.bob.patch(`/messages/${id}`, { content: 'y' })).body.msg).toBe(
      "You don't have permission to edit this message",
    );
    clock.advance(615_000);
    expect((await w.alice.patch(`/messages/${id}`, { content: 'y' })).status).toBe(200);
    clock.advance(10_000);
    expect((await w.alice.patch(`/messages/${id}`, { content: 'z' })).body.msg).toBe(
      'The time limit for editing this message has passed',
    );
  });

  it('refuses empty, contradictory and DM-topic edits', async () => {
    w = await world();
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'x' });
    const dm = await w.alice.send({ type: 'direct', to: [w.ids.bob], content: 'x' });
    const msg = async (path: string, params: Record<string, unknown>) =>
      (await w.alice.patch(path, params)).body.msg;
    expect(await msg(`/messages/${id}`, {})).toBe('Nothing to change');
    expect(await msg(`/messages/${id}`, { content: 'y', propagate_mode: 'change_all' })).toBe(
      'Invalid propagate_mode without topic edit',
    );
    expect(await msg(`/messages/${id}`, { content: 'y', stream_id: w.ids.design })).toBe(
      'Cannot change message content while changing channel',
    );
    expect(await msg(`/messages/${dm}`, { topic: 'x' })).toBe('Direct messages cannot have topics.');
    expect(await msg(`/messages/${dm}`, { stream_id: w.ids.general })).toBe(
      'Direct messages cannot be moved to channels.',
    );
    expect(await msg('/messages/9999', { content: 'y' })).toBe('Invalid message(s)');
  });

  it('emits a rendering-only update without touching history', async () => {
    w = await world();
    const id = await w.alice.send({
      type: 'stream',
      to: 'general',
      topic: 't',
      content: 'https://example.org',
    });
    const { queueId } = await w.bob.register({ event_types: ['update_message'] });
    w.realm.renderingUpdate(id, '<p>with preview</p>');
    const [event] = await w.bob.events(queueId);
    expect(event).toEqual({
      type: 'update_message',
      id: 0,
      user_id: null,
      edit_timestamp: expect.any(Number),
      message_id: id,
      message_ids: [id],
      rendering_only: true,
      flags: [],
      content: 'https://example.org',
      rendered_content: '<p>with preview</p>',
    });
    expect(w.realm.message(id)?.editHistory).toEqual([]);
  });
});

describe('topic and stream moves', () => {
  async function topic(n: number, name = 'deploys'): Promise<number[]> {
    const ids: number[] = [];
    for (let i = 0; i < n; i++)
      ids.push(await w.alice.send({ type: 'stream', to: 'general', topic: name, content: `m${i}` }));
    return ids;
  }

  it.each([
    ['change_one', [1]],
    ['change_later', [1, 2, 3]],
    ['change_all', [0, 1, 2, 3]],
  ] as const)('moves with %s', async (mode, moved) => {
    w = await world();
    const ids = await topic(4);
    const { queueId } = await w.bob.register({ event_types: ['update_message'] });
    const target = ids[1] as number;
    const r = await w.alice.patch(`/messages/${target}`, { topic: 'deploys/v2', propagate_mode: mode });
    expect(r.status).toBe(200);
    const [event] = await w.bob.events(queueId);
    expect(event).toMatchObject({
      message_id: target,
      message_ids: moved.map((i) => ids[i]),
      propagate_mode: mode,
      orig_subject: 'deploys',
      subject: 'deploys/v2',
      topic_links: [],
      stream_id: w.ids.general,
    });
    expect(event).not.toHaveProperty('new_stream_id');
    for (const [i, id] of ids.entries()) {
      expect(w.realm.message(id)?.topic).toBe(moved.includes(i as never) ? 'deploys/v2' : 'deploys');
    }
    const moved1 = (await w.bob.get(`/messages/${target}`)).body.message;
    expect(moved1.last_moved_timestamp).toEqual(expect.any(Number));
    expect(moved1).not.toHaveProperty('last_edit_timestamp');
    expect(moved1.edit_history[0]).toMatchObject({ prev_topic: 'deploys', topic: 'deploys/v2' });
  });

  it('posts Notification Bot breadcrumbs as Zulip does, and none when asked not to', async () => {
    w = await world();
    const ids = await topic(2);
    await w.alice.patch(`/messages/${ids[0]}`, { topic: 'moved', propagate_mode: 'change_all' });
    const last = w.realm.message(w.realm.maxMessageId());
    expect(last).toMatchObject({ topic: 'moved', client: 'Internal' });
    expect(last?.content).toBe(
      `This topic was moved here from #**general>deploys** by @_**Alice Ant|${w.ids.alice}**.`,
    );
    const before = w.realm.maxMessageId();
    await w.alice.patch(`/messages/${ids[0]}`, {
      topic: 'quiet',
      propagate_mode: 'change_one',
      send_notification_to_new_thread: false,
    });
    expect(w.realm.maxMessageId()).toBe(before);
    await w.alice.patch(`/messages/${ids[1]}`, { topic: '✔ moved', propagate_mode: 'change_all' });
    expect(w.realm.message(w.realm.maxMessageId())?.content).toBe(
      `@_**Alice Ant|${w.ids.alice}** has marked this topic as resolved.`,
    );
  });

  it('moves to another stream; users who lose access get delete_message', async () => {
    w = await world();
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'moving' });
    const carol = await w.carol.register({ event_types: ['update_message', 'delete_message'] });
    const admin = await w.admin.register({ event_types: ['update_message', 'delete_message'] });
    const r = await w.alice.patch(`/messages/${id}`, {
      stream_id: w.ids.secret,
      send_notification_to_new_thread: false,
    });
    expect(r.status).toBe(200);
    expect(await w.carol.events(carol.queueId)).toEqual([
      {
        type: 'delete_message',
        id: 0,
        message_id: id,
        message_type: 'stream',
        stream_id: w.ids.general,
        topic: 't',
      },
    ]);
    expect(await w.admin.events(admin.queueId)).toMatchObject([
      { type: 'update_message', new_stream_id: w.ids.secret, stream_id: w.ids.general, orig_subject: 't' },
    ]);
    expect((await w.carol.get(`/messages/${id}`)).body.msg).toBe('Invalid message(s)');
    expect((await w.admin.get(`/messages/${id}`)).body.message.display_recipient).toBe('secret');
  });

  it('refuses moves of old messages, and change_all past the limit with MOVE_MESSAGES_TIME_LIMIT_EXCEEDED', async () => {
    const clock = manualClock();
    w = await world({ now: clock.now });
    const old = await w.alice.send({ type: 'stream', to: 'general', topic: 'aging', content: 'old' });
    clock.advance(8 * 24 * 3600 * 1000);
    const recent = await w.alice.send({ type: 'stream', to: 'general', topic: 'aging', content: 'new' });
    expect((await w.bob.patch(`/messages/${old}`, { topic: 'x' })).body.msg).toBe(
      "The time limit for editing this message's topic has passed",
    );
    const r = await w.bob.patch(`/messages/${recent}`, { topic: 'x', propagate_mode: 'change_all' });
    expect(r.body).toMatchObject({
      code: 'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED',
      first_message_id_allowed_to_move: recent,
      total_messages_in_topic: 2,
      total_messages_allowed_to_move: 1,
    });
    expect(
      (await w.admin.patch(`/messages/${recent}`, { topic: 'x', propagate_mode: 'change_all' })).status,
    ).toBe(200);
  });

  it('finds a moved conversation again with the with operator', async () => {
    w = await world();
    const ids = await topic(2);
    await w.alice.patch(`/messages/${ids[0]}`, {
      topic: 'elsewhere',
      propagate_mode: 'change_all',
      send_notification_to_new_thread: false,
    });
    const r = await w.bob.get('/messages', {
      anchor: 'newest',
      num_before: 10,
      narrow: [
        { operator: 'channel', operand: 'general' },
        { operator: 'topic', operand: 'deploys' },
        { operator: 'with', operand: ids[1] },
      ],
    });
    expect(r.body.messages.map((m: { id: number }) => m.id)).toEqual(ids);
  });
});

describe('deletion', () => {
  it('sends one bulk event to bulk_message_deletion queues and per-message events to others', async () => {
    w = await world();
    const ids: number[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(await w.alice.send({ type: 'stream', to: 'general', topic: 'gc', content: `m${i}` }));
    const bulk = await w.bob.register({
      event_types: ['delete_message'],
      client_capabilities: { bulk_message_deletion: true },
    });
    const single = await w.bob.register({ event_types: ['delete_message'] });
    const r = await w.admin.post(`/streams/${w.ids.general}/delete_topic`, { topic_name: 'gc' });
    expect(r.body).toMatchObject({ result: 'success', complete: true });
    expect(await w.bob.events(bulk.queueId)).toEqual([
      {
        type: 'delete_message',
        id: 0,
        message_ids: ids,
        message_type: 'stream',
        stream_id: w.ids.general,
        topic: 'gc',
      },
    ]);
    expect((await w.bob.events(single.queueId)).map((e) => e.message_id)).toEqual(ids);
    expect(w.realm.messageCount()).toBe(0);
  });

  it('lets the sender delete within the limit, admins always, and others never; DMs are private-typed', async () => {
    const clock = manualClock();
    w = await world({ now: clock.now });
    const dm = await w.alice.send({ type: 'direct', to: [w.ids.bob], content: 'oops' });
    const { queueId } = await w.bob.register({ event_types: ['delete_message'] });
    expect((await w.bob.delete(`/messages/${dm}`)).body.msg).toBe(
      "You don't have permission to delete this message",
    );
    expect((await w.alice.delete(`/messages/${dm}`)).status).toBe(200);
    expect(await w.bob.events(queueId)).toEqual([
      { type: 'delete_message', id: 0, message_id: dm, message_type: 'private' },
    ]);
    const old = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'old' });
    clock.advance(601_000);
    expect((await w.alice.delete(`/messages/${old}`)).body.msg).toBe(
      'The time limit for deleting this message has passed',
    );
    expect((await w.admin.delete(`/messages/${old}`)).status).toBe(200);
    expect((await w.admin.delete(`/messages/${old}`)).body.msg).toBe('Invalid message(s)');
  });
});

describe('reactions', () => {
  it('adds unicode, realm and zulip extra emoji and emits reaction events', async () => {
    w = await world();
    const emoji = w.realm.addRealmEmoji({ name: 'shipit', authorId: w.ids.alice });
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'x' });
    const { queueId } = await w.alice.register({ event_types: ['reaction'] });
    await w.bob.post(`/messages/${id}/reactions`, { emoji_name: 'tada' });
    await w.bob.post(`/messages/${id}/reactions`, { emoji_name: 'shipit' });
    await w.bob.post(`/messages/${id}/reactions`, { emoji_name: 'zulip' });
    await w.carol.post(`/messages/${id}/reactions`, {
      emoji_name: 'tada',
      emoji_code: '1f389',
      reaction_type: 'unicode_emoji',
    });
    const [first] = await w.alice.events(queueId);
    expect(first).toEqual({
      type: 'reaction',
      op: 'add',
      id: 0,
      message_id: id,
      user_id: w.ids.bob,
      user: { user_id: w.ids.bob, email: 'bob@acme.example', full_name: 'Bob Bee' },
      emoji_name: 'tada',
      emoji_code: '1f389',
      reaction_type: 'unicode_emoji',
    });
    const msg = (await w.alice.get(`/messages/${id}`)).body.message;
    expect(msg.reactions).toEqual([
      { emoji_name: 'tada', emoji_code: '1f389', reaction_type: 'unicode_emoji', user_id: w.ids.bob },
      { emoji_name: 'shipit', emoji_code: emoji.id, reaction_type: 'realm_emoji', user_id: w.ids.bob },
      { emoji_name: 'zulip', emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji', user_id: w.ids.bob },
      { emoji_name: 'tada', emoji_code: '1f389', reaction_type: 'unicode_emoji', user_id: w.ids.carol },
    ]);
    // Carol reacted to a message she received, Zulip keeps no historical row; Bob's reaction on
    // a public message he did receive changes nothing either.
    expect(w.realm.flags(w.ids.bob, id)).toEqual([]);
  });

  it('refuses duplicates, unknown emoji and mismatched names or codes', async () => {
    w = await world();
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'x' });
    await w.bob.post(`/messages/${id}/reactions`, { emoji_name: 'tada' });
    const dup = await w.bob.post(`/messages/${id}/reactions`, { emoji_name: 'tada' });
    expect(dup.body).toEqual({
      result: 'error',
      code: 'REACTION_ALREADY_EXISTS',
      msg: 'Reaction already exists.',
    });
    const msg = async (params: Record<string, unknown>) =>
      (await w.bob.post(`/messages/${id}/reactions`, params)).body.msg;
    expect(await msg({ emoji_name: 'nosuch' })).toBe("Emoji 'nosuch' does not exist");
    expect(await msg({ emoji_name: 'tada', emoji_code: '1f600' })).toBe('Invalid emoji name.');
    expect(await msg({ emoji_name: 'tada', emoji_code: 'ffff' })).toBe('Invalid emoji code.');
  });

  it('removes by name with reaction_type defaulting to unicode_emoji, as Zulip does', async () => {
    w = await world();
    const emoji = w.realm.addRealmEmoji({ name: 'shipit', authorId: w.ids.alice });
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'x' });
    await w.bob.post(`/messages/${id}/reactions`, { emoji_name: 'shipit' });
    const byName = await w.bob.delete(`/messages/${id}/reactions`, { emoji_name: 'shipit' });
    expect(byName.body).toEqual({
      result: 'error',
      code: 'REACTION_DOES_NOT_EXIST',
      msg: "Reaction doesn't exist.",
    });
    const typed = await w.bob.delete(`/messages/${id}/reactions`, {
      emoji_name: 'shipit',
      reaction_type: 'realm_emoji',
    });
    expect(typed.status).toBe(200);
    await w.bob.post(`/messages/${id}/reactions`, { emoji_name: 'tada' });
    expect((await w.bob.delete(`/messages/${id}/reactions`, { emoji_code: '1f389' }, 'query')).status).toBe(
      200,
    );
    expect((await w.realm.message(id))?.reactions).toEqual([]);
    expect((await w.alice.get('/realm/emoji')).body.emoji).toEqual({
      [emoji.id]: {
        id: emoji.id,
        name: 'shipit',
        source_url: `/user_avatars/2/emoji/images/${emoji.id}.png`,
        still_url: null,
        deactivated: false,
        author_id: w.ids.alice,
      },
    });
  });
});

describe('flags', () => {
  it('refuses non-editable and unknown flags and operations', async () => {
    w = await world();
    const id = await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: 'x' });
    const msg = async (op: string, flag: string) =>
      (await w.bob.post('/messages/flags', { messages: [id], op, flag })).body.msg;
    expect(await msg('add', 'mentioned')).toBe("Flag not editable: 'mentioned'");
    expect(await msg('add', 'shiny')).toBe("Invalid flag: 'shiny'");
    expect(await msg('flip', 'read')).toBe("Invalid message flag operation: 'flip'");
  });

  it('stars a message the user never received with a historical row, refusing inaccessible ones', async () => {
    w = await world();
    const id = await w.alice.send({ type: 'stream', to: 'design', topic: 't', content: 'x' });
    expect(
      (await w.carol.post('/messages/flags', { messages: [id], op: 'add', flag: 'starred' })).status,
    ).toBe(200);
    expect(w.realm.flags(w.ids.carol, id)).toEqual(['read', 'starred', 'historical']);
    const secret = await w.alice.send({ type: 'stream', to: 'secret', topic: 't', content: 'x' });
    const r = await w.carol.post('/messages/flags', { messages: [secret], op: 'add', flag: 'starred' });
    expect(r.body.msg).toBe('Invalid message(s)');
  });

  it('updates flags over a narrow, clamped and counted', async () => {
    w = await world();
    const ids: number[] = [];
    for (let i = 0; i < 4; i++)
      ids.push(await w.alice.send({ type: 'stream', to: 'general', topic: 't', content: `${i}` }));
    await w.bob.post('/messages/flags', { messages: [ids[0]], op: 'add', flag: 'read' });
    const r = await w.bob.post('/messages/flags/narrow', {
      anchor: 'oldest',
      num_before: 0,
      num_after: 100,
      narrow: [['channel', 'general']],
      op: 'add',
      flag: 'read',
    });
    expect(r.body).toMatchObject({
      processed_count: 4,
      updated_count: 3,
      first_processed_id: ids[0],
      last_processed_id: ids[3],
      found_oldest: true,
      found_newest: true,
    });
    const empty = await w.bob.post('/messages/flags/narrow', {
      anchor: 'newest',
      num_before: 0,
      num_after: 10,
      op: 'add',
      flag: 'starred',
    });
    expect(empty.body).toMatchObject({
      processed_count: 0,
      first_processed_id: null,
      last_processed_id: null,
    });
  });
});

describe('typing', () => {
  it('sends DM typing to every participant, typist included', async () => {
    w = await world();
    const alice = await w.alice.register({ event_types: ['typing'] });
    const bob = await w.bob.register({ event_types: ['typing'] });
    const r = await w.alice.post('/typing', { op: 'start', to: [w.ids.bob] });
    expect(r.body).toEqual({ result: 'success', msg: '' });
    const expected = {
      type: 'typing',
      op: 'start',
      id: 0,
      message_type: 'direct',
      sender: { user_id: w.ids.alice, email: 'alice@acme.example' },
      recipients: [
        { user_id: w.ids.alice, email: 'alice@acme.example' },
        { user_id: w.ids.bob, email: 'bob@acme.example' },
      ],
    };
    expect(await w.alice.events(alice.queueId)).toEqual([expected]);
    expect(await w.bob.events(bob.queueId)).toEqual([expected]);
  });

  it('sends stream typing only to queues with stream_typing_notifications', async () => {
    w = await world();
    const capable = await w.bob.register({
      event_types: ['typing'],
      client_capabilities: { stream_typing_notifications: true },
    });
    const plain = await w.bob.register({ event_types: ['typing'] });
    const poll = w.bob.poll(capable.queueId, -1);
    await untilPolling(w.sim, capable.queueId);
    await w.alice.post('/typing', {
      op: 'stop',
      type: 'channel',
      stream_id: w.ids.general,
      topic: 'deploys',
    });
    expect((await poll).body.events).toEqual([
      {
        type: 'typing',
        op: 'stop',
        id: 0,
        message_type: 'stream',
        sender: { user_id: w.ids.alice, email: 'alice@acme.example' },
        stream_id: w.ids.general,
        topic: 'deploys',
      },
    ]);
    expect(await w.bob.events(plain.queueId)).toEqual([]);
  });

  it('validates typing requests', async () => {
    w = await world();
    const msg = async (params: Record<string, unknown>) => (await w.alice.post('/typing', params)).body.msg;
    expect(await msg({ op: 'start', to: [] })).toBe("Empty 'to' list");
    expect(await msg({ op: 'start', to: [999] })).toBe('Invalid user ID 999');
    expect(await msg({ op: 'start', type: 'private', to: [w.ids.bob] })).toBe('Invalid type');
    expect(await msg({ op: 'start', type: 'stream', topic: 't' })).toBe('Missing stream_id');
    expect(await msg({ op: 'start', type: 'stream', stream_id: w.ids.general })).toBe('Missing topic');
    expect(await msg({ op: 'dance', to: [w.ids.bob] })).toBe('Invalid op');
  });
});

describe('uploads', () => {
  async function upload(as: World['alice'], name: string, bytes: Buffer, field = 'filename') {
    const form = new FormData();
    form.set(field, new Blob([new Uint8Array(bytes)], { type: 'image/png' }), name);
    const res = await fetch(`${w.sim.url}/api/v1/user_uploads`, {
      method: 'POST',
      headers: { authorization: as.authorization },
      body: form,
    });
    return { status: res.status, body: await json(res) };
  }

  it('stores one file under any field name, serves its bytes to those who may see it', async () => {
    w = await world();
    const bytes = Buffer.from('\x89PNG fake but stored');
    const up = await upload(w.alice, 'My chart (final).png', bytes, '/home/alice/chart.png');
    expect(up.status).toBe(200);
    expect(up.body.url).toMatch(/^\/user_uploads\/2\/[0-9a-f]{1,2}\/[\w-]{24}\/My-chart-final\.png$/);
    expect(up.body).toMatchObject({ uri: up.body.url, filename: 'My-chart-final.png' });
    const get = (c: World['alice']) =>
      fetch(`${w.sim.url}${up.body.url}`, { headers: { authorization: c.authorization } });
    const mine = await get(w.alice);
    expect(mine.status).toBe(200);
    expect(Buffer.from(await mine.arrayBuffer())).toEqual(bytes);
    expect(mine.headers.get('content-type')).toBe('image/png');
    const before = await get(w.bob);
    expect(before.status).toBe(403);
    expect(await before.text()).toBe('<p>You are not authorized to view this file.</p>');
    await w.alice.send({ type: 'stream', to: 'general', topic: 'files', content: `[chart](${up.body.url})` });
    expect((await get(w.bob)).status).toBe(200);
    expect(
      (
        await fetch(`${w.sim.url}/user_uploads/2/ab/nothing/here.png`, {
          headers: { authorization: w.bob.authorization },
        })
      ).status,
    ).toBe(404);
    expect(w.realm.uploads()[0]?.bytes).toEqual(new Uint8Array(bytes));
  });

  it('hands out a temporary URL that works without credentials', async () => {
    w = await world();
    const up = await upload(w.alice, 'a.png', Buffer.from('abc'));
    const r = await w.alice.get(`${up.body.url.replace('/user_uploads', '/user_uploads')}`);
    expect(r.status).toBe(200);
    expect(r.body.url).toMatch(/^\/user_uploads\/temporary\/[0-9a-f]+\/a\.png$/);
    const res = await fetch(`${w.sim.url}${r.body.url}`);
    expect(await res.text()).toBe('abc');
  });

  it('refuses no file, two files and files over the limit', async () => {
    w = await world({ maxFileUploadMib: 1 });
    const none = await w.alice.call('POST', '/user_uploads', { x: 'y' }, { encoding: 'multipart' });
    expect(none.body.msg).toBe('You must specify a file to upload');
    const form = new FormData();
    form.set('a', new Blob(['1']), 'a.txt');
    form.set('b', new Blob(['2']), 'b.txt');
    const two = await fetch(`${w.sim.url}/api/v1/user_uploads`, {
      method: 'POST',
      headers: { authorization: w.alice.authorization },
      body: form,
    });
    expect((await json(two)).msg).toBe('You may only upload one file at a time');
    const big = await upload(w.alice, 'big.bin', Buffer.alloc(1024 * 1024 + 1));
    expect(big.body.msg).toBe('Uploaded file is larger than the allowed limit of 1 MiB');
  });
});
