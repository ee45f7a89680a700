// The Zulip 12 / 13.0-dev API switched on by a realm's feature level: each feature is checked on a
// feature-level-512 realm (Zulip 13.0-dev) and on the default 421 realm (Zulip 11.0), which must
// answer as the older server did.
import { afterEach, describe, expect, it } from 'vitest';
import { SimError, startZulipSim } from '../src/index.js';
import { Client, manualClock, type World, world } from './helpers.js';

const NEW = 512;
const OLD = 421;

let open: World[] = [];
async function realm(level: number, options: Parameters<typeof world>[0] = {}): Promise<World> {
  const w = await world({ zulipFeatureLevel: level, ...options });
  open.push(w);
  return w;
}
afterEach(async () => {
  await Promise.all(open.map((w) => w.sim.close()));
  open = [];
});

describe('feature level', () => {
  it('is reported by server_settings and register, with the version it belongs to', async () => {
    for (const [level, version] of [
      [OLD, '11.0'],
      [460, '12.0-dev'],
      [NEW, '13.0-dev'],
    ] as const) {
      const w = await realm(level);
      const settings = (await (await fetch(`${w.sim.url}/api/v1/server_settings`)).json()) as Record<
        string,
        unknown
      >;
      expect([settings.zulip_feature_level, settings.zulip_version, settings.zulip_merge_base]).toEqual([
        level,
        version,
        version,
      ]);
      const { body } = await w.bot.register({ fetch_event_types: [] });
      expect([body.zulip_feature_level, body.zulip_version]).toEqual([level, version]);
      expect([w.sim.zulipFeatureLevel, w.sim.zulipVersion]).toEqual([level, version]);
    }
  });

  it('defaults to 421 and refuses levels the simulator does not model', async () => {
    const sim = await startZulipSim();
    expect(sim.zulipFeatureLevel).toBe(421);
    await sim.close();
    for (const bad of [420, 513, 445.5]) {
      const err = await startZulipSim({ zulipFeatureLevel: bad }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SimError);
      expect((err as SimError).code).toBe('SIM_INVALID_ARGUMENT');
      expect((err as SimError).message).toContain('zulipFeatureLevel');
    }
    const custom = await startZulipSim({ zulipFeatureLevel: 500, zulipVersion: '12.0' });
    expect(custom.zulipVersion).toBe('12.0');
    await custom.close();
  });
});

describe('anchor=date (FL445)', () => {
  async function dated(level: number) {
    const clock = manualClock(Date.UTC(2026, 4, 1, 9));
    const w = await realm(level, { now: clock.now });
    const at = (iso: string) => Date.parse(iso) / 1000;
    const ids = [
      w.realm.sendMessage({
        senderId: w.ids.alice,
        type: 'stream',
        stream: 'general',
        topic: 't',
        content: 'a',
        timestamp: at('2026-04-29T10:00:00Z'),
      }),
      w.realm.sendMessage({
        senderId: w.ids.alice,
        type: 'stream',
        stream: 'general',
        topic: 't',
        content: 'b',
        timestamp: at('2026-04-30T08:00:00Z'),
      }),
      w.realm.sendMessage({
        senderId: w.ids.alice,
        type: 'stream',
        stream: 'design',
        topic: 't',
        content: 'c',
        timestamp: at('2026-04-30T12:00:00Z'),
      }),
      w.realm.sendMessage({
        senderId: w.ids.alice,
        type: 'stream',
        stream: 'general',
        topic: 't',
        content: 'd',
        timestamp: at('2026-04-30T15:30:00Z'),
      }),
    ];
    return { w, ids };
  }

  it('anchors at the first matching message sent at or after anchor_date', async () => {
    const { w, ids } = await dated(NEW);
    const narrow = [{ operator: 'channel', operand: 'general' }];
    const r = await w.bob.get('/messages', {
      anchor: 'date',
      anchor_date: '2026-04-30T09:00:00Z',
      num_before: 1,
      num_after: 1,
      narrow,
    });
    expect(r.status).toBe(200);
    expect(r.body.anchor).toBe(ids[3]);
    expect(r.body.messages.map((m: { id: number }) => m.id)).toEqual([ids[1], ids[3]]);
    expect(r.body.found_anchor).toBe(true);
    expect(r.body.ignored_parameters_unsupported).toBeUndefined();
    // A date alone is midnight UTC; no offset means UTC.
    const day = await w.bob.get('/messages', { anchor: 'date', anchor_date: '2026-04-30', narrow });
    expect(day.body.anchor).toBe(ids[1]);
    const local = await w.bob.get('/messages', {
      anchor: 'date',
      anchor_date: '2026-04-30T15:00:00',
      narrow,
    });
    expect(local.body.anchor).toBe(ids[3]);
    const offset = await w.bob.get('/messages', {
      anchor: 'date',
      anchor_date: '2026-04-30T14:00:00+02:00',
      narrow,
    });
    expect(offset.body.anchor).toBe(ids[3]);
  });

  it('falls back to newest after the last message, and refuses a missing or bad anchor_date', async () => {
    const { w } = await dated(NEW);
    const late = await w.bob.get('/messages', { anchor: 'date', anchor_date: '2027-01-01', num_before: 1 });
    expect(late.body.anchor).toBe(10_000_000_000_000_000);
    expect(late.body.found_newest).toBe(true);
    const none = await w.bob.get('/messages', { anchor: 'date' });
    expect([none.status, none.body.code, none.body.msg]).toEqual([
      400,
      'REQUEST_VARIABLE_MISSING',
      "Missing 'anchor_date' argument",
    ]);
    for (const bad of ['yesterday', '2026-02-30', '2026-04-30T25:00:00Z']) {
      const r = await w.bob.get('/messages', { anchor: 'date', anchor_date: bad });
      expect([r.status, r.body.code]).toEqual([400, 'BAD_REQUEST']);
      expect(r.body.msg).toContain('anchor_date');
    }
  });

  it('is an invalid anchor on an 11.0 realm, where anchor_date is an unknown parameter', async () => {
    const { w, ids } = await dated(OLD);
    const r = await w.bob.get('/messages', { anchor: 'date', anchor_date: '2026-04-30' });
    expect([r.status, r.body.code, r.body.msg]).toEqual([400, 'BAD_REQUEST', 'Invalid anchor']);
    const plain = await w.bob.get('/messages', { anchor: ids[1], anchor_date: '2026-04-30' });
    expect(plain.body.ignored_parameters_unsupported).toEqual(['anchor_date']);
  });
});

describe('the mentions operator (FL446)', () => {
  it('matches direct visible mentions of the user, by id or email', async () => {
    const w = await realm(NEW);
    const send = (content: string) =>
      w.realm.sendMessage({ senderId: w.ids.alice, type: 'stream', stream: 'general', topic: 'm', content });
    const direct = send('hi @**Bob Bee**');
    send('hi @_**Bob Bee**');
    send('hi @**all**');
    send('> @**Bob Bee** quoted');
    send('hi @**Carol Cat**');
    for (const operand of [w.ids.bob, 'bob@acme.example']) {
      const r = await w.carol.get('/messages', {
        anchor: 'newest',
        num_before: 100,
        narrow: [
          { operator: 'channel', operand: 'general' },
          { operator: 'mentions', operand },
        ],
      });
      expect(r.status).toBe(200);
      expect(r.body.messages.map((m: { id: number }) => m.id)).toEqual([direct]);
    }
    const unknown = await w.bob.get('/messages', {
      anchor: 'newest',
      narrow: [{ operator: 'mentions', operand: 999 }],
    });
    expect([unknown.body.code, unknown.body.desc]).toEqual(['BAD_NARROW', 'unknown user 999']);
  });

  it('is an unknown operator on an 11.0 realm', async () => {
    const w = await realm(OLD);
    const r = await w.bob.get('/messages', {
      anchor: 'newest',
      narrow: [{ operator: 'mentions', operand: 'bob@acme.example' }],
    });
    expect([r.status, r.body.code, r.body.msg]).toEqual([
      400,
      'BAD_NARROW',
      'Invalid narrow operator: unknown operator mentions',
    ]);
    const byId = await w.bob.get('/messages', {
      anchor: 'newest',
      narrow: [{ operator: 'mentions', operand: w.ids.bob }],
    });
    expect([byId.status, byId.body.code, byId.body.msg]).toEqual([
      400,
      'BAD_REQUEST',
      'operand is not a string',
    ]);
  });
});

describe('can_create_topic_group (FL441)', () => {
  async function restricted(level: number) {
    const w = await realm(level);
    const mod = w.realm.addUser({ fullName: 'Mo Mod', email: 'mod@acme.example', role: 300 });
    const modBot = w.realm.addUser({
      fullName: 'Mod Bot',
      email: 'mod-bot@acme.example',
      isBot: true,
      botOwnerId: mod.userId,
    });
    w.realm.addStream({
      name: 'support',
      subscribers: [w.ids.alice, w.ids.bot, mod.userId, modBot.userId, w.ids.admin],
      canCreateTopicGroup: 'role:moderators',
    });
    w.realm.sendMessage({
      senderId: mod.userId,
      type: 'stream',
      stream: 'support',
      topic: 'open',
      content: 'ask here',
    });
    return { w, mod: Client.of(w.sim, mod.userId), modBot: Client.of(w.sim, modBot.userId) };
  }

  it('refuses a new topic to a user outside the group, as Zulip words it', async () => {
    const { w, modBot } = await restricted(NEW);
    const refused = await w.alice.post('/messages', {
      type: 'stream',
      to: 'support',
      topic: 'brand new',
      content: 'x',
    });
    expect([refused.status, refused.body]).toEqual([
      400,
      {
        result: 'error',
        msg: 'You do not have permission to create new topics in this channel.',
        code: 'BAD_REQUEST',
      },
    ]);
    // An existing topic (matched case-insensitively) is fine; so are the group, admins and a bot whose owner is in it.
    expect(
      (await w.alice.post('/messages', { type: 'stream', to: 'support', topic: 'OPEN', content: 'x' }))
        .status,
    ).toBe(200);
    expect(
      (await w.admin.post('/messages', { type: 'stream', to: 'support', topic: 'admin topic', content: 'x' }))
        .status,
    ).toBe(200);
    expect(
      (await modBot.post('/messages', { type: 'stream', to: 'support', topic: 'bot topic', content: 'x' }))
        .status,
    ).toBe(200);
    // Moving a message into a new topic is creating one too.
    const id = await w.alice.send({ type: 'stream', to: 'support', topic: 'open', content: 'move me' });
    const move = await w.alice.patch(`/messages/${id}`, { topic: 'elsewhere' });
    expect(move.body.msg).toBe('You do not have permission to create new topics in this channel.');
    expect(() =>
      w.realm.sendMessage({
        senderId: w.ids.bot,
        type: 'stream',
        stream: 'support',
        topic: 'bot new',
        content: 'x',
      }),
    ).toThrow(SimError);
  });

  it('shows the setting on channel objects, and is settable when creating a channel', async () => {
    const { w } = await restricted(NEW);
    const { body } = await w.admin.register({ fetch_event_types: ['subscription', 'stream'] });
    const support = body.subscriptions.find((s: { name: string }) => s.name === 'support');
    expect(support.can_create_topic_group).toBe(4);
    expect(body.streams.find((s: { name: string }) => s.name === 'general').can_create_topic_group).toBe(7);
    const created = await w.admin.post('/users/me/subscriptions', {
      subscriptions: [{ name: 'announcements' }],
      can_create_topic_group: { direct_members: [w.ids.bob], direct_subgroups: [3] },
    });
    expect(created.status).toBe(200);
    expect(created.body.ignored_parameters_unsupported).toBeUndefined();
    expect(w.realm.stream('announcements')?.canCreateTopicGroup).toEqual({
      users: [w.ids.bob],
      groups: ['role:administrators'],
    });
    const protectedHistory = await w.admin.post('/users/me/subscriptions', {
      subscriptions: [{ name: 'vault' }],
      invite_only: true,
      can_create_topic_group: 6,
    });
    expect(protectedHistory.body.msg).toBe(
      'Unsupported parameter combination: history_public_to_subscribers, can_create_topic_group',
    );
  });

  it('does not exist on an 11.0 realm: anyone who may post starts topics', async () => {
    const { w } = await restricted(OLD);
    expect(
      (await w.alice.post('/messages', { type: 'stream', to: 'support', topic: 'brand new', content: 'x' }))
        .status,
    ).toBe(200);
    const { body } = await w.alice.register({ fetch_event_types: ['subscription'] });
    expect(body.subscriptions[0]).not.toHaveProperty('can_create_topic_group');
    const created = await w.admin.post('/users/me/subscriptions', {
      subscriptions: [{ name: 'x' }],
      can_create_topic_group: 6,
    });
    expect(created.body.ignored_parameters_unsupported).toEqual(['can_create_topic_group']);
  });
});

describe('topics_policy', () => {
  it('refuses the empty topic in disable_empty_topic channels and named topics in empty_topic_only ones', async () => {
    const w = await realm(NEW);
    w.realm.addStream({ name: 'strict', subscribers: [w.ids.alice], topicsPolicy: 'disable_empty_topic' });
    w.realm.addStream({ name: 'chat', subscribers: [w.ids.alice], topicsPolicy: 'empty_topic_only' });
    const empty = await w.alice.post('/messages', { type: 'stream', to: 'strict', topic: '', content: 'x' });
    expect(empty.body.msg).toBe('Sending messages to the general chat topic is not allowed in this channel.');
    const named = await w.alice.post('/messages', {
      type: 'stream',
      to: 'chat',
      topic: 'named',
      content: 'x',
    });
    expect(named.body.msg).toBe('Only the general chat topic is allowed in this channel.');
    expect(
      (await w.alice.post('/messages', { type: 'stream', to: 'chat', topic: '(no topic)', content: 'x' }))
        .status,
    ).toBe(200);
    expect(
      (await w.alice.post('/messages', { type: 'stream', to: 'general', topic: '', content: 'x' })).status,
    ).toBe(200);
    const streams = (await w.alice.get('/streams')).body.streams;
    expect(
      Object.fromEntries(
        streams.map((s: { name: string; topics_policy: string }) => [s.name, s.topics_policy]),
      ),
    ).toMatchObject({
      strict: 'disable_empty_topic',
      chat: 'empty_topic_only',
      general: 'inherit',
    });
  });
});

describe('channel folders', () => {
  it('come in the register response and as folder_id on channels', async () => {
    const w = await realm(OLD);
    const folder = w.realm.addChannelFolder({
      name: 'Teams',
      description: 'all **teams**',
      creatorId: w.ids.admin,
    });
    w.realm.addStream({ name: 'team-a', subscribers: [w.ids.alice], folderId: folder.id });
    const { body } = await w.alice.register({ fetch_event_types: ['channel_folders', 'subscription'] });
    expect(body.channel_folders).toEqual([
      {
        id: folder.id,
        name: 'Teams',
        description: 'all **teams**',
        rendered_description: '<p>all <strong>teams</strong></p>',
        order: 0,
        date_created: expect.any(Number),
        creator_id: w.ids.admin,
        is_archived: false,
      },
    ]);
    expect(body.subscriptions.find((s: { name: string }) => s.name === 'team-a').folder_id).toBe(folder.id);
    expect(
      (await w.alice.get('/channel_folders')).body.channel_folders.map((f: { name: string }) => f.name),
    ).toEqual(['Teams']);
  });
});

describe('reminders', () => {
  it('are scheduled, listed, announced and delivered by Notification Bot at the due time', async () => {
    const clock = manualClock();
    const w = await realm(NEW, { now: clock.now });
    const target = w.realm.sendMessage({
      senderId: w.ids.alice,
      type: 'stream',
      stream: 'general',
      topic: 'plans',
      content: 'ship it',
    });
    const { queueId } = await w.bob.register({
      event_types: ['reminders', 'message'],
      queue_lifespan_secs: 7200,
    });
    const due = Math.floor(clock.now() / 1000) + 3600;
    const r = await w.bob.post('/reminders', {
      message_id: target,
      scheduled_delivery_timestamp: due,
      note: 'check',
    });
    expect(r.status).toBe(200);
    const reminderId = r.body.reminder_id as number;
    const listed = await w.bob.get('/reminders');
    const url = `${w.sim.url}/#narrow/channel/${w.ids.general}-general/topic/plans/near/${target}`;
    const content =
      'You requested a reminder for the following message. Note:\n > check\n\n' +
      `@_**Alice Ant|${w.ids.alice}** [said](${url}) in #**general>plans@${target}**:\n\`\`\`quote\nship it\n\`\`\``;
    expect(listed.body.reminders).toEqual([
      {
        reminder_id: reminderId,
        type: 'private',
        to: [w.ids.bob],
        content,
        rendered_content: expect.any(String),
        scheduled_delivery_timestamp: due,
        failed: false,
        reminder_target_message_id: target,
      },
    ]);
    expect((await w.bob.events(queueId)).map((e) => [e.type, e.op])).toEqual([['reminders', 'add']]);
    // Not due yet.
    expect(w.sim.deliverDueReminders()).toBe(0);
    clock.advance(3600 * 1000);
    expect(w.sim.deliverDueReminders()).toBe(1);
    const delivered = (
      await w.bob.get('/messages', { anchor: 'newest', num_before: 1, apply_markdown: false })
    ).body.messages[0];
    expect([delivered.sender_email, delivered.type, delivered.content, delivered.timestamp]).toEqual([
      'notification-bot@zulip.com',
      'private',
      content,
      due,
    ]);
    expect((await w.bob.get('/reminders')).body.reminders).toEqual([]);
    const events = (await w.bob.events(queueId, 0)).map((e) => [e.type, e.op ?? null]);
    expect(events).toEqual([
      ['message', null],
      ['reminders', 'remove'],
    ]);
  });

  it('a direct message reminder quotes the conversation, and the next request delivers a due reminder', async () => {
    const clock = manualClock();
    const w = await realm(OLD, { now: clock.now });
    const dm = w.realm.sendMessage({
      senderId: w.ids.bob,
      type: 'direct',
      to: [w.ids.alice],
      content: 'call me',
    });
    const due = Math.floor(clock.now() / 1000) + 60;
    expect(
      (await w.alice.post('/reminders', { message_id: dm, scheduled_delivery_timestamp: due })).status,
    ).toBe(200);
    clock.advance(61_000);
    const last = (await w.alice.get('/messages', { anchor: 'newest', num_before: 1, apply_markdown: false }))
      .body.messages[0];
    expect(last.content).toBe(
      'You requested a reminder for the following direct message.\n\n' +
        `@_**Bob Bee|${w.ids.bob}** [said](${w.sim.url}/#narrow/dm/${w.ids.alice},${w.ids.bob}/near/${dm}) to @_**Alice Ant|${w.ids.alice}**:\n\`\`\`quote\ncall me\n\`\`\``,
    );
  });

  it('refuses past times, inaccessible messages, long notes and other users’ reminders', async () => {
    const w = await realm(NEW);
    const target = w.realm.sendMessage({
      senderId: w.ids.alice,
      type: 'stream',
      stream: 'secret',
      topic: 's',
      content: 'x',
    });
    const now = Math.floor(Date.now() / 1000);
    const past = await w.alice.post('/reminders', {
      message_id: target,
      scheduled_delivery_timestamp: now - 10,
    });
    expect(past.body.msg).toBe('Scheduled delivery time must be in the future.');
    const hidden = await w.bob.post('/reminders', {
      message_id: target,
      scheduled_delivery_timestamp: now + 99,
    });
    expect(hidden.body.msg).toBe('Invalid message(s)');
    const long = await w.alice.post('/reminders', {
      message_id: target,
      scheduled_delivery_timestamp: now + 99,
      note: 'x'.repeat(1001),
    });
    expect(long.body.msg).toBe('Maximum reminder note length: 1000 characters');
    const ok = await w.alice.post('/reminders', {
      message_id: target,
      scheduled_delivery_timestamp: now + 99,
    });
    const foreign = await w.bob.delete(`/reminders/${ok.body.reminder_id}`);
    expect([foreign.status, foreign.body.msg, foreign.body.code]).toEqual([
      404,
      'Reminder does not exist',
      'BAD_REQUEST',
    ]);
    expect((await w.alice.delete(`/reminders/${ok.body.reminder_id}`)).status).toBe(200);
    expect(w.realm.reminders()).toEqual([]);
  });
});

describe('the message URL in the send response (FL508)', () => {
  it('comes as message_url and message_link', async () => {
    const w = await realm(NEW);
    const r = await w.alice.post('/messages', {
      type: 'stream',
      to: 'general',
      topic: 'v2 (beta).',
      content: 'x',
    });
    const url = `${w.sim.url}/#narrow/channel/${w.ids.general}-general/topic/v2.20.28beta.29.2E/near/${r.body.id}`;
    expect(r.body).toEqual({
      result: 'success',
      msg: '',
      id: expect.any(Number),
      message_url: url,
      message_link: `[#general > v2 (beta). @ 💬](${url})`,
    });
    const dm = await w.alice.post('/messages', {
      type: 'direct',
      to: [w.ids.bob, w.ids.carol],
      content: 'x',
    });
    const dmUrl = `${w.sim.url}/#narrow/dm/${[w.ids.alice, w.ids.bob, w.ids.carol].join(',')}-group/near/${dm.body.id}`;
    expect([dm.body.message_url, dm.body.message_link]).toEqual([dmUrl, dmUrl]);
  });

  it('is absent on an 11.0 realm', async () => {
    const w = await realm(OLD);
    const r = await w.alice.post('/messages', { type: 'stream', to: 'general', topic: 't', content: 'x' });
    expect(Object.keys(r.body).sort()).toEqual(['id', 'msg', 'result']);
  });
});

describe('GET /users/{user_id}/channels (FL440)', () => {
  it('lists the channels of another user the caller may see', async () => {
    const w = await realm(NEW);
    const forBob = await w.bob.get(`/users/${w.ids.alice}/channels`);
    expect(forBob.body.subscribed_channel_ids).toEqual([w.ids.general, w.ids.design]);
    const forAdmin = await w.admin.get(`/users/${w.ids.alice}/channels`);
    expect(forAdmin.body.subscribed_channel_ids).toEqual([
      w.ids.general,
      w.ids.design,
      w.ids.secret,
      w.ids.shared,
    ]);
    expect((await w.bob.get('/users/999/channels')).body.msg).toBe('No such user');
  });

  it('is an unknown endpoint on an 11.0 realm', async () => {
    const w = await realm(OLD);
    const r = await w.bob.get(`/users/${w.ids.alice}/channels`);
    expect([r.status, r.body.msg]).toEqual([404, 'Not Found']);
  });
});

describe('attachments', () => {
  async function attached(level: number) {
    const clock = manualClock(Date.UTC(2026, 0, 1, 12, 0, 0, 500));
    const w = await realm(level, { now: clock.now });
    const { url } = w.realm.upload(w.ids.alice, 'notes.txt', Buffer.from('hello'));
    const id = w.realm.sendMessage({
      senderId: w.ids.alice,
      type: 'stream',
      stream: 'general',
      topic: 'f',
      content: `[notes](${url})`,
    });
    return { w, id, url, t: Math.floor(clock.now() / 1000) };
  }

  it('list message_ids and seconds on a 13.0 realm', async () => {
    const { w, id, url, t } = await attached(NEW);
    const r = await w.alice.get('/attachments');
    expect(r.body).toMatchObject({
      attachments: [
        {
          id: 1,
          name: 'notes.txt',
          path_id: url.slice('/user_uploads/'.length),
          size: 5,
          create_time: t,
          message_ids: [id],
        },
      ],
      upload_space_used: 5,
    });
    expect(r.body.attachments[0]).not.toHaveProperty('messages');
    expect((await w.bob.get('/attachments')).body.attachments).toEqual([]);
  });

  it('list messages with millisecond dates on an 11.0 realm', async () => {
    const { w, id, t } = await attached(OLD);
    const [a] = (await w.alice.get('/attachments')).body.attachments;
    expect(a.create_time).toBe(t * 1000 + 500);
    expect(a.messages).toEqual([{ id, date_sent: t * 1000 }]);
    expect(a).not.toHaveProperty('message_ids');
    expect((await w.bob.delete(`/attachments/${a.id}`)).body.msg).toBe('Invalid attachment');
    expect((await w.alice.delete(`/attachments/${a.id}`)).status).toBe(200);
    expect((await w.alice.get('/attachments')).body.attachments).toEqual([]);
  });
});

describe('user objects', () => {
  it('carry is_imported_stub from feature level 433', async () => {
    const w13 = await realm(NEW);
    expect((await w13.bob.get(`/users/${w13.ids.alice}`)).body.user.is_imported_stub).toBe(false);
    const w11 = await realm(OLD);
    expect((await w11.bob.get(`/users/${w11.ids.alice}`)).body.user).not.toHaveProperty('is_imported_stub');
  });
});

describe('onRequest with responses', () => {
  it('hands listeners the JSON answered, without API keys', async () => {
    const w = await realm(OLD);
    const seen: unknown[] = [];
    const stop = w.sim.onRequest((r) => seen.push([r.method, r.path, r.response]), { responses: true });
    await w.bob.get('/users/me/alert_words');
    stop();
    expect(seen).toEqual([
      ['GET', '/api/v1/users/me/alert_words', { result: 'success', msg: '', alert_words: [] }],
    ]);
  });
});
