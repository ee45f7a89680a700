import { describe, expect, it } from 'vitest';
import { createStreamLookup, foldStreamName, sameStreamName } from '../policy/streams.js';
import { conversationKey, dmOthers, foldTopic, messageConversation, sameTopic } from './conversation.js';

const people = (...ids: number[]) => ids.map((id) => ({ id, email: `u${id}@x`, full_name: `U ${id}` }));

describe('dmOthers', () => {
  it('is everyone but the reader, ascending and once each; the reader alone for a DM with itself', () => {
    expect(dmOthers(people(21, 8, 3), 8)).toEqual([3, 21]);
    expect(dmOthers(people(9, 4, 9), 1)).toEqual([4, 9]);
    expect(dmOthers(people(8), 8)).toEqual([8]);
    expect(dmOthers([], 8)).toEqual([8]);
    expect(dmOthers('general', 8)).toEqual([8]);
  });
});

describe('conversationKey', () => {
  it('keys a topic by stream id and the topic as Zulip matches it, and a DM by its other people', () => {
    expect(conversationKey({ kind: 'stream', streamId: 12, topic: 'Deploys' })).toBe('stream:12:deploys');
    expect(conversationKey({ kind: 'stream', streamId: 12, topic: 'deploys' })).toBe(
      conversationKey({ kind: 'stream', streamId: 12, topic: 'DEPLOYS' }),
    );
    // A stream never by name, and another stream's same topic is another conversation.
    expect(conversationKey({ kind: 'stream', streamId: 13, topic: 'deploys' })).not.toBe('stream:12:deploys');
    expect(conversationKey({ kind: 'dm', userIds: [21, 8, 21] })).toBe('dm:8,21');
  });

  it('cannot be forged by a topic: the stream id comes first and is digits only', () => {
    const forged = conversationKey({ kind: 'stream', streamId: 1, topic: '2:x' });
    expect(forged).toBe('stream:1:2:x');
    expect(forged).not.toBe(conversationKey({ kind: 'stream', streamId: 12, topic: 'x' }));
  });
});

describe('messageConversation', () => {
  it('is the stream and topic of a stream message, and the other people of a DM', () => {
    const base = { content: '', sender_full_name: 'A', sender_id: 3, timestamp: 0 } as const;
    expect(
      messageConversation(
        { ...base, type: 'stream', display_recipient: 'ops', subject: 'T', stream_id: 4 },
        8,
      ),
    ).toEqual({ kind: 'stream', streamId: 4, topic: 'T' });
    expect(messageConversation({ ...base, type: 'stream', display_recipient: 'ops', subject: 'T' }, 8)).toBe(
      undefined,
    );
    expect(
      messageConversation({ ...base, type: 'private', display_recipient: people(8, 3), subject: '' }, 8),
    ).toEqual({ kind: 'dm', userIds: [3] });
  });
});

describe('one folding rule for topics and stream names: case only', () => {
  it('folds case and nothing else', () => {
    expect(sameTopic('Release 2.0', 'release 2.0')).toBe(true);
    expect(sameTopic(' release', 'release')).toBe(false);
    expect(sameTopic('cafe\u0301', 'café')).toBe(false);
    expect(foldTopic('ÉTÉ')).toBe('été');
    expect(sameStreamName('General', 'general')).toBe(true);
    expect(sameStreamName('general ', 'general')).toBe(false);
    expect(sameStreamName('cafe\u0301', 'café')).toBe(false);
    expect(foldStreamName('OPS')).toBe('ops');
  });

  it('is the rule the stream lookup resolves a typed name by', () => {
    const lookup = createStreamLookup([
      { name: 'café', stream_id: 1, invite_only: false },
      { name: 'cafe\u0301', stream_id: 2, invite_only: true },
    ]);
    expect(lookup('CAFÉ')?.stream_id).toBe(1);
    expect(lookup('CAFE\u0301')?.stream_id).toBe(2);
  });
});
