import { describe, expect, it } from 'vitest';
import { parseZulipEvent } from './events.js';

const message = {
  id: 4710,
  type: 'stream',
  stream_id: 12,
  display_recipient: 'general',
  subject: 'deploys',
  content: 'shipped **v2**',
  sender_id: 8,
  sender_email: 'alice@acme.example',
  sender_full_name: 'Alice',
  timestamp: 1767225660,
};

describe('parseZulipEvent', () => {
  it('validates known events and narrows on type', () => {
    const parsed = parseZulipEvent({ type: 'message', id: 3, flags: ['mentioned'], message });
    expect(parsed.kind).toBe('event');
    if (parsed.kind === 'event' && parsed.event.type === 'message') {
      expect(parsed.event.message.subject).toBe('deploys');
      expect(parsed.event.flags).toEqual(['mentioned']);
    }
    const reaction = parseZulipEvent({
      type: 'reaction',
      op: 'add',
      id: 13,
      message_id: 4710,
      user_id: 21,
      emoji_name: 'tada',
      emoji_code: '1f389',
      reaction_type: 'unicode_emoji',
      user: { user_id: 21 },
    });
    expect(reaction).toMatchObject({ kind: 'event', event: { type: 'reaction', user: { user_id: 21 } } });
    expect(
      parseZulipEvent({ type: 'delete_message', id: 12, message_id: 4711, message_type: 'private' }).kind,
    ).toBe('event');
    expect(
      parseZulipEvent({
        type: 'delete_message',
        id: 11,
        message_ids: [4707],
        message_type: 'stream',
        stream_id: 12,
      }).kind,
    ).toBe('event');
  });

  it('passes unknown event types through as unknown', () => {
    const parsed = parseZulipEvent({ type: 'presence', id: 5, email: 'a@b', server_timestamp: 1 });
    expect(parsed).toEqual({
      kind: 'unknown',
      event: { type: 'presence', id: 5, email: 'a@b', server_timestamp: 1 },
    });
  });

  it('reports a known event missing a required field as invalid, not a crash', () => {
    const { sender_id: _drop, ...broken } = message;
    const parsed = parseZulipEvent({ type: 'message', id: 9, message: broken });
    expect(parsed).toMatchObject({
      kind: 'invalid',
      type: 'message',
      id: 9,
      error: { code: 'CORE_BAD_RESPONSE' },
    });
    expect(parseZulipEvent({ type: 'delete_message', id: 1, message_type: 'stream' }).kind).toBe('invalid');
    expect(parseZulipEvent('junk')).toMatchObject({ kind: 'invalid', type: undefined });
    expect(parseZulipEvent({ type: 7, id: 1 }).kind).toBe('invalid');
  });
});
