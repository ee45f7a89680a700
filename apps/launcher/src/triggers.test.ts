import { AdmissionDirectory, AdmissionGate, type Message } from '@zmcp/core';
import { describe, expect, it } from 'vitest';
import { classifyMessage, conversationSlug } from './triggers.js';

const BOT = 100;
const ANN = 1;

function stream(overrides: Partial<Message> = {}): Message {
  return {
    id: 500,
    type: 'stream',
    sender_id: ANN,
    sender_email: 'ann@example.test',
    sender_full_name: 'Ann Lee',
    display_recipient: 'general',
    stream_id: 7,
    subject: 'Deploy',
    content: '@**Helper** help',
    timestamp: 1_800_000_000,
    flags: ['mentioned'],
    ...overrides,
  };
}

function dm(ids: number[], overrides: Partial<Message> = {}): Message {
  return stream({
    type: 'private',
    display_recipient: ids.map((id) => ({ id, email: `u${id}@example.test`, full_name: `U${id}` })),
    stream_id: undefined,
    subject: '',
    flags: [],
    ...overrides,
  });
}

// Ann by id, Cy by email; Bo (2) holds an address that merely contains Cy's.
const directory = new AdmissionDirectory();
directory.load([
  { user_id: ANN, email: 'ann@example.test' },
  { user_id: 2, email: 'xcy@example.test' },
  { user_id: 9, email: 'Cy@Example.TEST' },
]);
const gate = new AdmissionGate({ ids: [ANN], emails: ['cy@example.test'] }, { setting: 'TEST', directory });
const options = {
  selfUserId: BOT,
  admit: (senderId: number) => gate.check(senderId, 'mention'),
  directMessages: true,
};

describe('classifyMessage', () => {
  it('makes a trigger of a direct mention in a stream topic, keyed by stream id and topic (any case)', () => {
    const c = classifyMessage(stream(), options);
    expect(c).toMatchObject({
      kind: 'trigger',
      trigger: {
        messageId: 500,
        kind: 'stream',
        conversation: 'stream:7:deploy',
        streamId: 7,
        topic: 'Deploy',
      },
    });
    const other = classifyMessage(stream({ id: 501, subject: 'DEPLOY' }), options);
    expect(other.kind === 'trigger' && other.trigger.conversation).toBe('stream:7:deploy');
  });

  it('makes a trigger of a one-to-one DM, and of a group DM only when it mentions the bot', () => {
    expect(classifyMessage(dm([ANN, BOT]), options)).toMatchObject({
      kind: 'trigger',
      trigger: { kind: 'dm', conversation: 'dm:1', dmUserIds: [ANN] },
    });
    expect(classifyMessage(dm([ANN, 3, BOT]), options)).toMatchObject({
      kind: 'ignored',
      reason: 'not-addressed',
    });
    expect(classifyMessage(dm([ANN, 3, BOT], { flags: ['mentioned'] }), options)).toMatchObject({
      kind: 'trigger',
      trigger: { conversation: 'dm:1,3' },
    });
    expect(classifyMessage(dm([ANN, BOT]), { ...options, directMessages: false })).toMatchObject({
      reason: 'direct-messages-off',
    });
  });

  it.each([
    ['the bot’s own message', stream({ sender_id: BOT }), 'own-message'],
    ['no mention', stream({ flags: [] }), 'not-addressed'],
    [
      'a wildcard mention',
      stream({ flags: ['wildcard_mentioned', 'stream_wildcard_mentioned'] }),
      'not-addressed',
    ],
    ['a /nobots topic', stream({ subject: 'notes /nobots' }), 'nobots'],
    ['/nobots in the message', stream({ content: '@**Helper** (/nobots)' }), 'nobots'],
    ['/nobots in a DM', dm([ANN, BOT], { content: '/nobots' }), 'nobots'],
    [
      'someone not on the allowlist',
      stream({ sender_id: 2, sender_email: 'bo@example.test' }),
      'not-allowed',
    ],
  ])('ignores %s', (_what, message, reason) => {
    expect(classifyMessage(message, options)).toMatchObject({ kind: 'ignored', reason });
  });
});

describe('the gate', () => {
  it('is asked by sender id, and an email admits its holder only, never a name or a part of an address', () => {
    expect(
      classifyMessage(stream({ sender_id: 9, sender_email: 'whatever@example.test' }), options),
    ).toMatchObject({
      kind: 'trigger',
    });
    for (const [id, email, name] of [
      [2, 'xcy@example.test', 'Cy'],
      [3, 'cy@example.test', 'Ann Lee'],
    ] as const) {
      expect(
        classifyMessage(stream({ sender_id: id, sender_email: email, sender_full_name: name }), options),
      ).toMatchObject({ kind: 'ignored', reason: 'not-allowed' });
    }
  });
});

describe('conversationSlug', () => {
  it('is safe as a file name whatever the topic', () => {
    const slug = conversationSlug({
      kind: 'stream',
      streamId: 7,
      topic: '../../etc/passwd\u0000',
      dmUserIds: undefined,
    });
    expect(slug).toMatch(/^stream-7-[0-9a-f]{12}$/);
    expect(conversationSlug({ kind: 'stream', streamId: 7, topic: 'A', dmUserIds: undefined })).toBe(
      conversationSlug({ kind: 'stream', streamId: 7, topic: 'a', dmUserIds: undefined }),
    );
    expect(conversationSlug({ kind: 'dm', streamId: undefined, topic: undefined, dmUserIds: [3, 9] })).toBe(
      'dm-3-9',
    );
  });
});
