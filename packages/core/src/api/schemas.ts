import { z } from 'zod';

// Zulip's objects, validated leniently: fields we don't list pass through untouched, optional
// fields may be absent, and only what the library relies on is required. Names stay snake_case,
// exactly as Zulip sends them.

/** One emoji reaction on a message. */
export const ReactionSchema = z.looseObject({
  emoji_name: z.string(),
  emoji_code: z.string(),
  reaction_type: z.string(),
  user_id: z.number().int(),
});
/** One emoji reaction on a message. */
export type Reaction = z.infer<typeof ReactionSchema>;

/** A participant of a direct message, as listed in `display_recipient`. */
export const DisplayRecipientUserSchema = z.looseObject({
  id: z.number().int(),
  email: z.string(),
  full_name: z.string(),
});
/** A participant of a direct message, as listed in `display_recipient`. */
export type DisplayRecipientUser = z.infer<typeof DisplayRecipientUserSchema>;

/** A message as GET /messages, GET /messages/{id} and `message` events carry it. */
export const MessageSchema = z.looseObject({
  id: z.number().int(),
  type: z.enum(['stream', 'private']),
  sender_id: z.number().int(),
  sender_email: z.string(),
  sender_full_name: z.string(),
  /** Stream messages: the stream's name. Direct messages: every participant, sender included. */
  display_recipient: z.union([z.string(), z.array(DisplayRecipientUserSchema)]),
  /** The topic; `""` for direct messages. */
  subject: z.string(),
  content: z.string(),
  /** UNIX seconds. */
  timestamp: z.number(),
  stream_id: z.number().int().optional(),
  content_type: z.string().optional(),
  recipient_id: z.number().int().optional(),
  sender_realm_str: z.string().optional(),
  topic_links: z.array(z.looseObject({ text: z.string(), url: z.string() })).optional(),
  reactions: z.array(ReactionSchema).optional(),
  submessages: z.array(z.unknown()).optional(),
  is_me_message: z.boolean().optional(),
  client: z.string().optional(),
  avatar_url: z.string().nullable().optional(),
  last_edit_timestamp: z.number().optional(),
  last_moved_timestamp: z.number().optional(),
  edit_history: z.array(z.looseObject({ timestamp: z.number() })).optional(),
  /** Per-user flags (`read`, `mentioned`...): present in GET /messages; merged in from `message` events by the event queue. */
  flags: z.array(z.string()).optional(),
  match_content: z.string().optional(),
  match_subject: z.string().optional(),
});
/** A message as GET /messages, GET /messages/{id} and `message` events carry it. */
export type Message = z.infer<typeof MessageSchema>;

/** A user of the realm (GET /users, /users/{id}, /users/{email}, `realm_users` in register). */
export const UserSchema = z.looseObject({
  user_id: z.number().int(),
  email: z.string(),
  full_name: z.string(),
  delivery_email: z.string().nullable().optional(),
  is_bot: z.boolean().optional(),
  is_active: z.boolean().optional(),
  is_owner: z.boolean().optional(),
  is_admin: z.boolean().optional(),
  is_guest: z.boolean().optional(),
  role: z.number().int().optional(),
  bot_type: z.number().int().nullable().optional(),
  bot_owner_id: z.number().int().nullable().optional(),
  timezone: z.string().optional(),
  avatar_url: z.string().nullable().optional(),
  avatar_version: z.number().optional(),
  date_joined: z.string().optional(),
  profile_data: z.record(z.string(), z.unknown()).optional(),
});
/** A user of the realm. */
export type User = z.infer<typeof UserSchema>;

const streamFields = {
  stream_id: z.number().int(),
  name: z.string(),
  /** Required: access decisions depend on it, so a stream without it is a bad response. */
  invite_only: z.boolean(),
  description: z.string().optional(),
  rendered_description: z.string().optional(),
  date_created: z.number().optional(),
  is_web_public: z.boolean().optional(),
  history_public_to_subscribers: z.boolean().optional(),
  first_message_id: z.number().int().nullable().optional(),
  message_retention_days: z.number().nullable().optional(),
  stream_weekly_traffic: z.number().nullable().optional(),
  is_archived: z.boolean().optional(),
  is_default: z.boolean().optional(),
  creator_id: z.number().int().nullable().optional(),
  subscriber_count: z.number().optional(),
};

/** A stream (channel) as GET /streams lists it. */
export const StreamSchema = z.looseObject(streamFields);
/** A stream (channel). */
export type Stream = z.infer<typeof StreamSchema>;

/** The caller's subscription to a stream: the stream's fields plus per-user settings. */
export const SubscriptionSchema = z.looseObject({
  ...streamFields,
  color: z.string().optional(),
  is_muted: z.boolean().optional(),
  in_home_view: z.boolean().optional(),
  pin_to_top: z.boolean().optional(),
  desktop_notifications: z.boolean().nullable().optional(),
  audible_notifications: z.boolean().nullable().optional(),
  push_notifications: z.boolean().nullable().optional(),
  email_notifications: z.boolean().nullable().optional(),
  wildcard_mentions_notify: z.boolean().nullable().optional(),
  subscribers: z.array(z.number().int()).optional(),
});
/** The caller's subscription to a stream. */
export type Subscription = z.infer<typeof SubscriptionSchema>;

/** A topic of a stream with the id of its latest message. */
export const TopicSchema = z.looseObject({ name: z.string(), max_id: z.number().int() });
/** A topic of a stream. */
export type Topic = z.infer<typeof TopicSchema>;

/** A custom emoji of the realm. */
export const RealmEmojiSchema = z.looseObject({
  id: z.string(),
  name: z.string(),
  source_url: z.string(),
  still_url: z.string().nullable().optional(),
  deactivated: z.boolean(),
  author_id: z.number().int().nullable().optional(),
});
/** A custom emoji of the realm. */
export type RealmEmoji = z.infer<typeof RealmEmojiSchema>;

/** A custom profile field defined by the realm (GET /realm/profile_fields). */
export const ProfileFieldSchema = z.looseObject({
  id: z.number().int(),
  name: z.string(),
  type: z.number().int(),
  hint: z.string().optional(),
  field_data: z.string().optional(),
  order: z.number().optional(),
  display_in_profile_summary: z.boolean().optional(),
  required: z.boolean().optional(),
});
/** A custom profile field defined by the realm. */
export type ProfileField = z.infer<typeof ProfileFieldSchema>;

/**
 * A reminder not delivered yet (GET /reminders): Notification Bot sends `content` to its owner as
 * a direct message at `scheduled_delivery_timestamp`. `content` quotes the message it is about,
 * so it is untrusted text.
 */
export const ReminderSchema = z.looseObject({
  reminder_id: z.number().int(),
  type: z.string().optional(),
  to: z.array(z.number().int()).optional(),
  content: z.string(),
  rendered_content: z.string().optional(),
  scheduled_delivery_timestamp: z.number(),
  failed: z.boolean().optional(),
  reminder_target_message_id: z.number().int(),
});
/** A reminder not delivered yet. */
export type Reminder = z.infer<typeof ReminderSchema>;

/** One of the account's uploads as GET /attachments lists it, in either shape Zulip has used. */
export const RawAttachmentSchema = z.looseObject({
  id: z.number().int(),
  name: z.string(),
  path_id: z.string(),
  size: z.number().int(),
  create_time: z.number(),
  /** Feature level 472 and above. */
  message_ids: z.array(z.number().int()).optional(),
  /** Below feature level 472: the messages linking the file, with their send times. */
  messages: z.array(z.looseObject({ id: z.number().int(), date_sent: z.number().optional() })).optional(),
});
