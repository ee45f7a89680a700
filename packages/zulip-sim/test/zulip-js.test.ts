// The official JavaScript client, zulip-js 2.1.0, against the simulator: two accounts (a person
// and a bot) configured from zuliprc files, a short heartbeat, and every call the client offers
// that the simulator serves. Nothing here is skipped for lack of a knob.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startZulipSim, type ZulipSim } from '../src/index.js';
import { untilPolling } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: zulip-js ships no types; its answers are checked field by field
type Any = any;
// zulip-js's isomorphic-form-data replaces the global FormData with the form-data package when it is
// loaded (zulip-js keeps its own reference). Test files share a worker, so the global is put back:
// the next file's FormData must be Node's own.
const nodeFormData = globalThis.FormData;
const zulipInit = createRequire(import.meta.url)('zulip-js') as (config: { zuliprc: string }) => Promise<Any>;
globalThis.FormData = nodeFormData;

let sim: ZulipSim;
let dir: string;
let ann: Any;
let bot: Any;
let ids: { ann: number; bot: number; general: number };

beforeAll(async () => {
  sim = await startZulipSim({
    zulipFeatureLevel: 512,
    heartbeatIntervalMs: 100,
    rateLimit: false,
    seed(realm) {
      const a = realm.addUser({ fullName: 'Ann Lee', email: 'ann@acme.example' });
      const b = realm.addUser({
        fullName: 'Echo',
        email: 'echo-bot@acme.example',
        isBot: true,
        botOwnerId: a.userId,
      });
      const general = realm.addStream({ name: 'general', subscribers: [a.userId, b.userId] });
      realm.sendMessage({
        senderId: a.userId,
        type: 'stream',
        stream: 'general',
        topic: 'welcome',
        content: 'hello',
      });
      ids = { ann: a.userId, bot: b.userId, general: general.streamId };
    },
  });
  dir = await mkdtemp(join(tmpdir(), 'zulip-js-'));
  await writeFile(join(dir, 'ann.zuliprc'), sim.zuliprc('ann@acme.example'));
  await writeFile(join(dir, 'bot.zuliprc'), sim.zuliprc('echo-bot@acme.example'));
  ann = await zulipInit({ zuliprc: join(dir, 'ann.zuliprc') });
  bot = await zulipInit({ zuliprc: join(dir, 'bot.zuliprc') });
});

afterAll(async () => {
  await sim.close();
  await rm(dir, { recursive: true, force: true });
});

describe('zulip-js 2.1.0 against the simulator', () => {
  it('reads the server settings and the accounts', async () => {
    const settings = await bot.server.settings();
    expect([settings.result, settings.zulip_feature_level, settings.zulip_version]).toEqual([
      'success',
      512,
      '13.0-dev',
    ]);
    const me = await bot.users.me.getProfile();
    expect([me.result, me.user_id, me.is_bot, me.bot_owner_id]).toEqual(['success', ids.bot, true, ids.ann]);
    const users = await ann.users.retrieve({ client_gravatar: false });
    expect(users.members.map((u: { full_name: string }) => u.full_name)).toEqual(['Ann Lee', 'Echo']);
    expect((await ann.users.me.alertWords.retrieve()).alert_words).toEqual([]);
    expect((await ann.emojis.retrieve()).emoji).toEqual({});
  });

  it('registers a queue, long-polls it (heartbeats included) and gets messages sent by the other account', async () => {
    const queue = await bot.queues.register({ event_types: ['message', 'reaction', 'typing'] });
    expect([queue.result, queue.last_event_id]).toEqual(['success', -1]);
    // Nothing happens: the short heartbeat answers the long-poll.
    const idle = await bot.events.retrieve({ queue_id: queue.queue_id, last_event_id: -1 });
    expect(idle.events).toEqual([{ type: 'heartbeat', id: 0 }]);
    const poll = bot.events.retrieve({ queue_id: queue.queue_id, last_event_id: 0 });
    await untilPolling(sim, queue.queue_id);
    const sent = await ann.messages.send({
      to: 'general',
      type: 'stream',
      topic: 'deploys',
      content: 'ping @**Echo**',
    });
    expect(sent.result).toBe('success');
    expect(sent.message_url).toBe(
      `${sim.url}/#narrow/channel/${ids.general}-general/topic/deploys/near/${sent.id}`,
    );
    const got = await poll;
    expect(got.events.map((e: Any) => [e.type, e.message?.id, e.flags])).toEqual([
      ['message', sent.id, ['mentioned']],
    ]);
    // The bot answers in a direct message and by reacting; Ann types first.
    expect((await ann.typing.send({ to: [ids.bot], op: 'start' })).result).toBe('success');
    const reply = await bot.messages.send({ to: [ids.ann], type: 'direct', content: 'pong' });
    expect(reply.result).toBe('success');
    expect((await bot.reactions.add({ message_id: sent.id, emoji_name: 'thumbs_up' })).result).toBe(
      'success',
    );
    const after = await bot.events.retrieve({
      queue_id: queue.queue_id,
      last_event_id: got.events[0].id,
      dont_block: true,
    });
    expect(after.events.map((e: Any) => [e.type, e.op ?? null])).toEqual([
      ['typing', 'start'],
      ['message', null],
      ['reaction', 'add'],
    ]);
    expect((await bot.reactions.remove({ message_id: sent.id, emoji_name: 'thumbs_up' })).result).toBe(
      'success',
    );
    expect((await bot.queues.deregister({ queue_id: queue.queue_id })).result).toBe('success');
    const gone = await bot.events.retrieve({ queue_id: queue.queue_id, last_event_id: -1 });
    expect([gone.result, gone.code]).toEqual(['error', 'BAD_EVENT_QUEUE_ID']);
  });

  it('reads, narrows, edits, flags, renders and deletes messages', async () => {
    const id = (await ann.messages.send({ to: 'general', type: 'stream', topic: 'notes', content: 'draft' }))
      .id;
    const narrowed = await bot.messages.retrieve({
      anchor: 'newest',
      num_before: 10,
      num_after: 0,
      narrow: [
        { operator: 'channel', operand: 'general' },
        { operator: 'topic', operand: 'notes' },
      ],
    });
    expect(narrowed.messages.map((m: Any) => m.id)).toEqual([id]);
    const byDate = await bot.messages.retrieve({
      anchor: 'date',
      anchor_date: '2000-01-01',
      num_after: 1,
      num_before: 0,
    });
    expect(byDate.messages[0].content).toBe('<p>hello</p>');
    const mentions = await bot.messages.retrieve({
      anchor: 'newest',
      num_before: 10,
      narrow: [{ operator: 'mentions', operand: ids.bot }],
    });
    expect(mentions.messages.map((m: Any) => m.content)).toEqual([
      '<p>ping <span class="user-mention" data-user-id="9">@Echo</span></p>',
    ]);
    expect((await ann.messages.update({ message_id: id, content: 'final' })).result).toBe('success');
    const one = await bot.messages.getById({ message_id: id, apply_markdown: false });
    expect([one.message.content, one.raw_content]).toEqual(['final', 'final']);
    const history = await bot.messages.getHistoryById({ message_id: id });
    expect(history.message_history.map((h: Any) => h.content)).toEqual(['draft', 'final']);
    expect((await bot.messages.flags.add({ messages: [id], flag: 'starred' })).messages).toEqual([id]);
    expect(sim.realm.flags(ids.bot, id)).toContain('starred');
    expect((await bot.messages.flags.remove({ messages: [id], flag: 'starred' })).result).toBe('success');
    expect((await bot.messages.render({ content: '**bold**' })).rendered).toBe(
      '<p><strong>bold</strong></p>',
    );
    expect((await ann.messages.deleteById({ message_id: id })).result).toBe('success');
    expect(sim.realm.message(id)).toBeUndefined();
  });

  it('lists, joins and leaves channels, and reads their topics', async () => {
    const streams = await bot.streams.retrieve();
    expect(streams.streams.map((s: Any) => s.name)).toEqual(['general']);
    expect((await bot.streams.getStreamId('general')).stream_id).toBe(ids.general);
    const added = await bot.users.me.subscriptions.add({ subscriptions: [{ name: 'bots' }] });
    expect(added.subscribed).toEqual({ [String(ids.bot)]: ['bots'] });
    const subs = await bot.streams.subscriptions.retrieve();
    expect(subs.subscriptions.map((s: Any) => s.name)).toEqual(['general', 'bots']);
    const topics = await bot.streams.topics.retrieve({ stream_id: ids.general });
    expect(topics.topics.map((t: Any) => t.name)).toContain('welcome');
    expect(
      (await bot.users.me.subscriptions.remove({ subscriptions: JSON.stringify(['bots']) })).removed,
    ).toEqual(['bots']);
  });

  it('reaches the Zulip 12/13 endpoints through callEndpoint', async () => {
    const target = (
      await ann.messages.send({ to: 'general', type: 'stream', topic: 'later', content: 'look again' })
    ).id;
    const at = Math.floor(Date.now() / 1000) + 3600;
    const made = await ann.callEndpoint('/reminders', 'POST', {
      message_id: target,
      scheduled_delivery_timestamp: at,
    });
    expect(made.result).toBe('success');
    const listed = await ann.callEndpoint('/reminders', 'GET');
    expect(listed.reminders.map((r: Any) => r.reminder_target_message_id)).toEqual([target]);
    const channels = await ann.callEndpoint(`/users/${ids.bot}/channels`, 'GET');
    expect(channels.subscribed_channel_ids).toEqual([ids.general]);
  });
});
