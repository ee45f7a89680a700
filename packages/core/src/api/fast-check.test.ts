import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { MessageEventSchema } from './events.js';
import {
  isGetEventsResponseFast,
  isGetMessageResponseFast,
  isGetMessagesResponseFast,
  isMessageEventFast,
  isMessageFast,
} from './fast-check.js';
import { GetEventsResponseSchema, GetMessageResponseSchema, GetMessagesResponseSchema } from './responses.js';
import { MessageSchema } from './schemas.js';

// The guards may be stricter than zod (zod then decides), never more lenient: every value a
// guard accepts must be one its schema accepts.

const full = {
  id: 4710,
  type: 'private',
  sender_id: 8,
  sender_email: 'alice@acme.example',
  sender_full_name: 'Alice',
  display_recipient: [{ id: 8, email: 'alice@acme.example', full_name: 'Alice', is_mirror_dummy: false }],
  subject: '',
  content: 'hi',
  timestamp: 1767225600,
  stream_id: 12,
  content_type: 'text/x-markdown',
  recipient_id: 31,
  sender_realm_str: 'acme',
  topic_links: [{ text: 'x', url: 'https://x' }],
  reactions: [{ emoji_name: 'tada', emoji_code: '1f389', reaction_type: 'unicode_emoji', user_id: 21 }],
  submessages: [],
  is_me_message: false,
  client: 'website',
  avatar_url: null,
  last_edit_timestamp: 1767225700,
  last_moved_timestamp: 1767225800,
  edit_history: [{ timestamp: 1767225700, user_id: 8 }],
  flags: ['read'],
  match_content: '<p>hi</p>',
  match_subject: '',
  future_field: { anything: true },
};

const odd: unknown[] = [
  undefined,
  null,
  '',
  'x',
  0,
  1,
  -1,
  1.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  2 ** 60,
  true,
  false,
  [],
  {},
  [1],
  ['x'],
  [{}],
  [null],
  [{ id: 1 }],
  [{ text: 'x', url: 1 }],
  [{ timestamp: 'x' }],
  [{ emoji_name: 'a', emoji_code: 'b', reaction_type: 'c', user_id: 1.5 }],
  [{ id: 1, email: 'a', full_name: 1 }],
];

function mutations(base: Record<string, unknown>, keys: string[]): unknown[] {
  const out: unknown[] = [];
  for (const key of keys) {
    for (const value of odd) {
      const copy: Record<string, unknown> = { ...base };
      if (value === undefined) delete copy[key];
      else copy[key] = value;
      out.push(copy);
    }
  }
  return out;
}

function agree(guard: (v: unknown) => boolean, schema: z.ZodType, values: unknown[]): void {
  for (const v of values) {
    if (guard(v)) expect(schema.safeParse(v).success, JSON.stringify(v)).toBe(true);
  }
}

describe('fast guards never accept what the schema refuses', () => {
  const keys = [...Object.keys(MessageSchema.shape), 'future_field'];

  it('message: accepts a full message as zod does', () => {
    expect(isMessageFast(full)).toBe(true);
    expect(MessageSchema.safeParse(full).success).toBe(true);
    const stream = { ...full, type: 'stream', display_recipient: 'general', subject: 'deploys' };
    expect(isMessageFast(stream)).toBe(true);
  });

  it('message: every field, every odd value', () => {
    agree(isMessageFast, MessageSchema, mutations(full, keys));
    agree(isMessageFast, MessageSchema, [null, [], 'x', 1]);
    // Nested items, one at a time.
    for (const key of ['display_recipient', 'reactions', 'topic_links', 'edit_history']) {
      const item = (full[key as keyof typeof full] as Record<string, unknown>[])[0] as Record<
        string,
        unknown
      >;
      const items = mutations(item, Object.keys(item)).map((bad) => ({ ...full, [key]: [bad] }));
      agree(isMessageFast, MessageSchema, items);
    }
  });

  it('a required field missing is refused by both', () => {
    for (const key of Object.keys(MessageSchema.shape)) {
      const copy: Record<string, unknown> = { ...full };
      delete copy[key];
      if (!MessageSchema.safeParse(copy).success) expect(isMessageFast(copy), key).toBe(false);
    }
  });

  it('message event, and the GET /messages, /messages/{id} and /events bodies', () => {
    const event = { type: 'message', id: 3, flags: [], local_message_id: '7', message: full };
    expect(isMessageEventFast(event)).toBe(true);
    agree(isMessageEventFast, MessageEventSchema, mutations(event, Object.keys(MessageEventSchema.shape)));
    const many = {
      messages: [full, full],
      anchor: 1e16,
      found_anchor: false,
      found_oldest: true,
      found_newest: true,
    };
    expect(isGetMessagesResponseFast(many)).toBe(true);
    agree(isGetMessagesResponseFast, GetMessagesResponseSchema, mutations(many, Object.keys(many)));
    const one = { message: full, raw_content: 'hi' };
    expect(isGetMessageResponseFast(one)).toBe(true);
    agree(isGetMessageResponseFast, GetMessageResponseSchema, mutations(one, Object.keys(one)));
    const events = { events: [{ type: 'heartbeat', id: 1 }], queue_id: 'q' };
    expect(isGetEventsResponseFast(events)).toBe(true);
    agree(isGetEventsResponseFast, GetEventsResponseSchema, mutations(events, Object.keys(events)));
    agree(isGetEventsResponseFast, GetEventsResponseSchema, [
      { events: [{ type: 1, id: 1 }] },
      { events: [{ type: 'x', id: 1.5 }] },
      { events: [null] },
    ]);
  });
});
