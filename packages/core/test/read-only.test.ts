import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZulipClient } from '../src/client/zulip-client.js';
import { isZmcpError } from '../src/errors.js';
import { EventQueue } from '../src/events/event-queue.js';
import { HistoryPager } from '../src/history/pager.js';
import { type SimRealmFixture, startSimRealm } from './helpers/sim.js';

let f: SimRealmFixture;
let upload: string;
let messageId: number;
beforeAll(async () => {
  f = await startSimRealm();
  upload = f.sim.realm.upload(f.bot.userId, 'a.txt', new Uint8Array([1, 2, 3]), 'text/plain').url;
  messageId = f.sim.realm.sendMessage({
    senderId: f.alice.userId,
    type: 'stream',
    stream: 'general',
    topic: 't',
    content: 'hello',
  });
});
afterAll(async () => f.close());

async function* body(): AsyncGenerator<Uint8Array> {
  yield new Uint8Array([1]);
}

// One call per client method. The table is checked against the class, so a method added
// later without a line here fails this test.
function everyMethod(c: ZulipClient): Record<string, () => Promise<unknown>> {
  return {
    getServerSettings: () => c.getServerSettings(),
    getFeatureLevel: () => c.getFeatureLevel(),
    register: () => c.register({ eventTypes: ['message'] }),
    getEvents: () => c.getEvents({ queueId: 'nope', lastEventId: -1, dontBlock: true }),
    deleteQueue: () => c.deleteQueue('nope'),
    getMessages: () => c.getMessages({ anchor: 'newest', numBefore: 5 }),
    getMessage: () => c.getMessage(messageId),
    sendMessage: () => c.sendMessage({ type: 'stream', to: 'general', topic: 't', content: 'x' }),
    updateMessage: () => c.updateMessage(messageId, { content: 'y' }),
    deleteMessage: () => c.deleteMessage(messageId),
    updateMessageFlags: () => c.updateMessageFlags({ messages: [messageId], op: 'add', flag: 'read' }),
    updateMessageFlagsForNarrow: () =>
      c.updateMessageFlagsForNarrow({
        anchor: 'newest',
        numBefore: 10,
        numAfter: 0,
        narrow: [{ operator: 'channel', operand: 'general' }],
        op: 'add',
        flag: 'read',
      }),
    addReaction: () => c.addReaction(messageId, { emojiName: 'tada' }),
    removeReaction: () => c.removeReaction(messageId, { emojiName: 'tada' }),
    getUsers: () => c.getUsers(),
    getOwnUser: () => c.getOwnUser(),
    getUser: () => c.getUser(f.alice.userId),
    getUserByEmail: () => c.getUserByEmail(f.alice.email),
    getStreams: () => c.getStreams(),
    getSubscriptions: () => c.getSubscriptions(),
    subscribe: () => c.subscribe({ subscriptions: [{ name: 'new-stream' }] }),
    unsubscribe: () => c.unsubscribe({ subscriptions: ['general'] }),
    getStreamTopics: () => c.getStreamTopics(f.general.streamId),
    getStreamId: () => c.getStreamId('general'),
    getStreamMembers: () => c.getStreamMembers(f.general.streamId),
    setTyping: () => c.setTyping({ op: 'start', type: 'direct', to: [f.alice.userId] }),
    getRealmEmoji: () => c.getRealmEmoji(),
    getCustomProfileFields: () => c.getCustomProfileFields(),
    uploadFile: () =>
      c.uploadFile({ filename: 'x.bin', contentType: 'application/octet-stream', size: 1, body: body() }),
    downloadUpload: () => c.downloadUpload(upload, { maxBytes: 100 }),
    getTemporaryUploadUrl: () => c.getTemporaryUploadUrl(upload),
    hasFeature: () => c.hasFeature('reminders'),
    requireFeature: () => c.requireFeature('reminders', 'Reminders'),
    createReminder: () =>
      c.createReminder({ messageId, scheduledDeliveryTimestamp: Math.floor(Date.now() / 1000) + 3600 }),
    getReminders: () => c.getReminders(),
    deleteReminder: () => c.deleteReminder(1),
    getAttachments: () => c.getAttachments(),
  };
}

const READS = new Set([
  'getServerSettings',
  'getFeatureLevel',
  'getEvents',
  'getMessages',
  'getMessage',
  'getUsers',
  'getOwnUser',
  'getUser',
  'getUserByEmail',
  'getStreams',
  'getSubscriptions',
  'getStreamTopics',
  'getStreamId',
  'getStreamMembers',
  'getRealmEmoji',
  'getCustomProfileFields',
  'downloadUpload',
  'getTemporaryUploadUrl',
  'hasFeature',
  'requireFeature',
  'getReminders',
  'getAttachments',
]);

describe('read-only mode against the simulator', () => {
  it('covers every method of the client', () => {
    const methods = Object.getOwnPropertyNames(ZulipClient.prototype).filter((name) => {
      const d = Object.getOwnPropertyDescriptor(ZulipClient.prototype, name);
      return typeof d?.value === 'function' && !['constructor', 'close', 'toJSON'].includes(name);
    });
    const client = f.clientFor(f.bot.userId, { readOnly: true });
    expect(Object.keys(everyMethod(client)).sort()).toEqual(methods.sort());
  });

  it('lets reads through and refuses every write before a byte leaves', async () => {
    const client = f.clientFor(f.bot.userId, { readOnly: true });
    const seen: { method: string; path: string }[] = [];
    const stop = f.sim.onRequest((r) => seen.push({ method: r.method, path: r.path }));
    const messagesBefore = f.sim.realm.messageCount();
    for (const [name, call] of Object.entries(everyMethod(client))) {
      const outcome = await call().then(
        () => 'ok',
        (err: unknown) => (isZmcpError(err) ? err.code : String(err)),
      );
      if (READS.has(name)) expect(outcome, name).not.toBe('CORE_READ_ONLY');
      else expect(outcome, name).toBe('CORE_READ_ONLY');
    }
    // The layers above the client go through it too.
    await expect(EventQueue.open(client)).rejects.toMatchObject({ code: 'CORE_READ_ONLY' });
    await new HistoryPager(client, { narrow: [{ operator: 'channel', operand: 'general' }] }).newest(10);
    stop();
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.filter((r) => r.method !== 'GET')).toEqual([]);
    expect(f.sim.realm.messageCount()).toBe(messagesBefore);
    expect(f.sim.realm.message(messageId)?.content).toBe('hello');
  });
});
