import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import type { Message } from '../src/api/schemas.js';
import { isZmcpError } from '../src/errors.js';
import { narrow } from '../src/history/narrow.js';
import type { PolicyMessage } from '../src/policy/policy.js';
import type { FormattableMessage } from '../src/text/message.js';
import { createMessageLineFormatter } from '../src/text/message-line.js';
import { type SimRealmFixture, startSimRealm } from './helpers/sim.js';

// Every typed endpoint against the simulator: the request is encoded as Zulip reads it and the
// response passes the schemas.
let f: SimRealmFixture;
beforeAll(async () => {
  f = await startSimRealm();
});
afterAll(async () => f.close());

async function* bytes(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield Buffer.from(p);
}

describe('typed API against the simulator', () => {
  it('server settings and the account', async () => {
    const settings = await f.client.getServerSettings();
    expect(settings.zulip_version).toBeTypeOf('string');
    expect(await f.client.getFeatureLevel()).toBe(settings.zulip_feature_level);
    const me = await f.client.getOwnUser();
    expect(me).toMatchObject({ user_id: f.bot.userId, email: f.bot.email, is_bot: true });
  });

  it('users: list, by id, by email', async () => {
    const users = await f.client.getUsers();
    expect(users.map((u) => u.user_id)).toEqual(expect.arrayContaining([f.bot.userId, f.alice.userId]));
    expect((await f.client.getUser(f.alice.userId)).full_name).toBe('Alice');
    expect((await f.client.getUserByEmail(f.alice.email)).user_id).toBe(f.alice.userId);
    const missing = await f.client.getUser(999_999).catch((e: unknown) => e);
    expect(isZmcpError(missing, 'CORE_BAD_REQUEST')).toBe(true);
  });

  it('streams, subscriptions, stream id and topics', async () => {
    const streams = await f.client.getStreams();
    expect(streams.find((s) => s.name === 'general')).toMatchObject({ invite_only: false });
    expect(streams.find((s) => s.name === 'secret')).toMatchObject({ invite_only: true });
    const subs = await f.client.getSubscriptions({ includeSubscribers: true });
    expect(subs.find((s) => s.name === 'general')?.subscribers).toContain(f.alice.userId);
    expect(await f.client.getStreamId('general')).toBe(f.general.streamId);
    expect(await f.client.getStreamMembers(f.general.streamId)).toContain(f.alice.userId);
    f.sim.realm.sendMessage({
      senderId: f.alice.userId,
      type: 'stream',
      stream: 'general',
      topic: 'lunch',
      content: 'x',
    });
    const topics = await f.client.getStreamTopics(f.general.streamId);
    expect(topics[0]?.name).toBe('lunch');
    const sub = await f.client.subscribe({
      subscriptions: [{ name: 'release-notes', description: 'notes' }],
    });
    expect(sub.subscribed[String(f.bot.userId)]).toEqual(['release-notes']);
    const unsub = await f.client.unsubscribe({ subscriptions: ['release-notes'] });
    expect(unsub.removed).toEqual(['release-notes']);
    const gone = await f.client.getStreamId('nowhere').catch((e: unknown) => e);
    expect(isZmcpError(gone, 'CORE_BAD_REQUEST')).toBe(true);
  });

  it('messages: send, fetch, edit, flags, reactions, delete', async () => {
    const sent = await f.client.sendMessage({
      type: 'stream',
      to: 'general',
      topic: 'deploys',
      content: 'shipped **v2**',
    });
    const fetched = await f.client.getMessage(sent.id, { applyMarkdown: false });
    expect(fetched.message).toMatchObject({
      id: sent.id,
      type: 'stream',
      display_recipient: 'general',
      subject: 'deploys',
      content: 'shipped **v2**',
      sender_id: f.bot.userId,
    });
    expect(Array.isArray(fetched.message.flags)).toBe(true);
    const byId = await f.client.sendMessage({
      type: 'stream',
      to: f.general.streamId,
      topic: 'deploys',
      content: 'by id',
    });
    expect(byId.id).toBeGreaterThan(sent.id);

    const dm = await f.client.sendMessage({ type: 'direct', to: [f.alice.userId], content: 'hi Alice' });
    const dmMsg = (await f.client.getMessage(dm.id)).message;
    expect(dmMsg.type).toBe('private');
    expect(Array.isArray(dmMsg.display_recipient)).toBe(true);

    await f.client.updateMessage(sent.id, { content: 'shipped **v2.1**' });
    expect((await f.client.getMessage(sent.id, { applyMarkdown: false })).message.content).toBe(
      'shipped **v2.1**',
    );
    await f.client.updateMessage(sent.id, { topic: 'deploys/v2', propagateMode: 'change_one' });

    const flags = await f.client.updateMessageFlags({ messages: [sent.id], op: 'add', flag: 'starred' });
    expect(flags.messages).toEqual([sent.id]);
    expect(f.sim.realm.flags(f.bot.userId, sent.id)).toContain('starred');
    const byNarrow = await f.client.updateMessageFlagsForNarrow({
      anchor: 'newest',
      numBefore: 100,
      numAfter: 0,
      narrow: narrow().channel('general').build(),
      op: 'add',
      flag: 'read',
    });
    expect(byNarrow.processed_count).toBeGreaterThan(0);

    await f.client.addReaction(sent.id, { emojiName: 'tada' });
    const dup = await f.client.addReaction(sent.id, { emojiName: 'tada' }).catch((e: unknown) => e);
    expect(dup).toMatchObject({ code: 'CORE_BAD_REQUEST', zulipCode: 'REACTION_ALREADY_EXISTS' });
    expect(f.sim.realm.message(sent.id)?.reactions).toHaveLength(1);
    await f.client.removeReaction(sent.id, { emojiName: 'tada' });
    expect(f.sim.realm.message(sent.id)?.reactions).toHaveLength(0);

    await f.client.deleteMessage(byId.id);
    expect(f.sim.realm.message(byId.id)).toBeUndefined();
    const unknown = await f.client
      .sendMessage({ type: 'stream', to: 'nowhere', topic: 't', content: 'x' })
      .catch((e) => e);
    expect(unknown).toMatchObject({ code: 'CORE_NOT_FOUND', zulipCode: 'STREAM_DOES_NOT_EXIST' });
  });

  it('a stream whose name looks like a number is addressed by name', async () => {
    f.sim.realm.addStream({ name: '12345', subscribers: [f.bot.userId] });
    const sent = await f.client.sendMessage({
      type: 'stream',
      to: '12345',
      topic: 't',
      content: 'numeric name',
    });
    expect(f.sim.realm.message(sent.id)?.streamId).toBe(f.sim.realm.stream('12345')?.streamId);
  });

  it('validated messages are what the formatter and the policy take, as they are', async () => {
    expectTypeOf<Message>().toExtend<FormattableMessage>();
    expectTypeOf<Message>().toExtend<PolicyMessage>();
    const id = f.sim.realm.sendMessage({
      senderId: f.alice.userId,
      type: 'stream',
      stream: 'general',
      topic: 'format',
      content: 'hi @**Helper Bot**',
    });
    const { message } = await f.client.getMessage(id, { applyMarkdown: false });
    const line = createMessageLineFormatter({ timeStyle: 'none', selfUserId: f.bot.userId })(message);
    expect(line).toBe(`[id=${id}] [#general > format] Alice (mention): hi @**Helper Bot**`);
  });

  it('messages by ids, and a bad narrow is a BAD_NARROW error', async () => {
    const a = f.sim.realm.sendMessage({
      senderId: f.alice.userId,
      type: 'stream',
      stream: 'general',
      topic: 'q',
      content: 'a',
    });
    const res = await f.client.getMessages({ messageIds: [a] });
    expect(res.messages.map((m) => m.id)).toEqual([a]);
    const bad = await f.client
      .getMessages({ narrow: narrow().channel('no-such-stream').build() })
      .catch((e) => e);
    expect(bad).toMatchObject({ code: 'CORE_BAD_REQUEST', zulipCode: 'BAD_NARROW' });
  });

  it('typing, emoji and profile fields', async () => {
    await f.client.setTyping({ op: 'start', type: 'direct', to: [f.alice.userId] });
    await f.client.setTyping({ op: 'stop', type: 'stream', streamId: f.general.streamId, topic: 'deploys' });
    f.sim.realm.addRealmEmoji({ name: 'shipit', authorId: f.alice.userId });
    expect((await f.client.getRealmEmoji()).map((e) => e.name)).toContain('shipit');
    f.sim.realm.addProfileField({ name: 'Team', hint: 'which team' });
    expect((await f.client.getCustomProfileFields()).map((p) => p.name)).toContain('Team');
  });

  it('uploads: stream up, fetch back with a cap, temporary URL', async () => {
    const up = await f.client.uploadFile({
      filename: 'report.txt',
      contentType: 'text/plain',
      size: 11,
      body: bytes('hello', ' ', 'world'),
    });
    expect(up.url).toMatch(/^\/user_uploads\//);
    expect(up.absoluteUrl).toBe(`${f.sim.url}${up.url}`);
    expect(f.sim.realm.uploads().at(-1)?.bytes).toEqual(new Uint8Array(Buffer.from('hello world')));

    const got = await f.client.downloadUpload(up.url, { maxBytes: 1024 });
    expect(Buffer.from(got.bytes).toString()).toBe('hello world');
    expect(got.contentType).toMatch(/^text\/plain/);
    const capped = await f.client.downloadUpload(up.absoluteUrl, { maxBytes: 5 }).catch((e) => e);
    expect(capped).toMatchObject({
      code: 'CORE_TOO_LARGE',
      details: { maxBytes: 5 },
    });
    expect(capped.message).toContain('5 bytes');

    const temp = await f.client.getTemporaryUploadUrl(up.url);
    expect(temp).toMatch(new RegExp(`^${f.sim.url}/user_uploads/temporary/`));
    const viaTemp = await f.client.downloadUpload(temp, { maxBytes: 1024 });
    expect(Buffer.from(viaTemp.bytes).toString()).toBe('hello world');

    const missing = await f.client
      .downloadUpload('/user_uploads/1/zz/nothing/here.txt', { maxBytes: 10 })
      .catch((e) => e);
    expect(missing).toMatchObject({ code: 'CORE_NOT_FOUND' });
    const elsewhere = await f.client
      .downloadUpload('https://evil.example/user_uploads/1/x', { maxBytes: 10 })
      .catch((e) => e);
    expect(elsewhere).toMatchObject({ code: 'CORE_INVALID_ARGUMENT' });
  });

  it('register, poll and delete a queue', async () => {
    const reg = await f.client.register({ eventTypes: ['message'], applyMarkdown: false });
    expect(reg.last_event_id).toBe(-1);
    const polled = await f.client.getEvents({ queueId: reg.queue_id, lastEventId: -1, dontBlock: true });
    expect(polled.events).toEqual([]);
    await f.client.deleteQueue(reg.queue_id);
    const gone = await f.client
      .getEvents({ queueId: reg.queue_id, lastEventId: -1, dontBlock: true })
      .catch((e) => e);
    expect(gone).toMatchObject({ code: 'CORE_BAD_REQUEST', zulipCode: 'BAD_EVENT_QUEUE_ID' });
  });
});
