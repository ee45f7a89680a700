// The text helpers take structural types with Zulip's field names, so what the client validates
// must satisfy them as it is. These tests run the client's schemas on wire payloads from the
// reference and feed the results straight in.
import { describe, expect, it } from 'vitest';
import { MessageSchema, StreamSchema, UserSchema } from '../api/schemas.js';
import { AccessPolicy } from '../policy/policy.js';
import { createStreamLookup } from '../policy/streams.js';
import { formatMessageLine } from './message-line.js';
import { isNoBotsMessage } from './nobots.js';
import { messagePermalink } from './permalink.js';
import { resolveUser } from './users.js';

const wireMessage = {
  id: 4710,
  type: 'stream',
  stream_id: 12,
  display_recipient: 'general',
  subject: 'deploys',
  topic_links: [],
  content: 'shipped **v2**',
  content_type: 'text/x-markdown',
  sender_id: 8,
  sender_email: 'alice@acme.example',
  sender_full_name: 'Alice',
  sender_realm_str: 'acme',
  timestamp: 1767225660,
  recipient_id: 31,
  client: 'website',
  avatar_url: null,
  is_me_message: false,
  reactions: [],
  submessages: [],
  flags: ['mentioned'],
  last_edit_timestamp: 1767225700,
};

const wireDm = {
  ...wireMessage,
  id: 4711,
  type: 'private',
  stream_id: undefined,
  display_recipient: [
    { id: 8, email: 'alice@acme.example', full_name: 'Alice', is_mirror_dummy: false },
    { id: 21, email: 'helper-bot@acme.example', full_name: 'Helper', is_mirror_dummy: false },
  ],
  subject: '',
  flags: [],
};

describe('the client’s validated objects fit the text helpers', () => {
  const message = MessageSchema.parse(wireMessage);
  const dm = MessageSchema.parse(wireDm);

  it('formats messages', () => {
    expect(formatMessageLine(message, { timeStyle: 'none' })).toBe(
      '[id=4710] [#general > deploys] Alice (mention): shipped **v2** (edited)',
    );
    expect(formatMessageLine(dm, { timeStyle: 'none', escape: true })).toBe(
      '[id=4711] [DM] Alice: shipped **v2** (edited)',
    );
    expect(isNoBotsMessage(message)).toBe(false);
    expect(messagePermalink('https://acme.example', dm)).toBe(
      'https://acme.example/#narrow/dm/8,21-dm/near/4711',
    );
  });

  it('resolves users and builds stream lookups', () => {
    const users = [
      UserSchema.parse({
        user_id: 8,
        email: 'alice@acme.example',
        delivery_email: null,
        full_name: 'Alice',
        date_joined: '2025-11-02T09:14:00+00:00',
        is_active: true,
        is_owner: false,
        is_admin: false,
        is_guest: false,
        role: 400,
        is_bot: false,
        timezone: 'Europe/Oslo',
        avatar_url: null,
        avatar_version: 1,
      }),
    ];
    expect(resolveUser(users, 'alice').user.user_id).toBe(8);
    const streams = createStreamLookup([
      StreamSchema.parse({
        stream_id: 12,
        name: 'general',
        description: 'Everyone',
        rendered_description: '<p>Everyone</p>',
        date_created: 1761990000,
        invite_only: false,
        is_web_public: false,
        history_public_to_subscribers: true,
        first_message_id: 1,
        message_retention_days: null,
        stream_weekly_traffic: null,
        is_archived: false,
        creator_id: null,
      }),
    ]);
    const policy = new AccessPolicy({ readOnly: false });
    expect(policy.isReadable(message, streams)).toBe(true);
    expect(policy.isReadable(dm, streams)).toBe(false);
  });
});
