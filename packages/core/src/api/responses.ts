import { z } from 'zod';
import {
  MessageSchema,
  ProfileFieldSchema,
  RawAttachmentSchema,
  RealmEmojiSchema,
  ReminderSchema,
  StreamSchema,
  SubscriptionSchema,
  TopicSchema,
  UserSchema,
} from './schemas.js';

// One schema per endpoint's success body. `result`/`msg` are checked by the transport and
// pass through here like every other field we don't list.

/** GET /server_settings. */
export const ServerSettingsSchema = z.looseObject({
  zulip_version: z.string(),
  zulip_feature_level: z.number().int().optional(),
  zulip_merge_base: z.string().optional(),
  realm_url: z.string().optional(),
  realm_uri: z.string().optional(),
  realm_name: z.string().optional(),
  push_notifications_enabled: z.boolean().optional(),
  is_incompatible: z.boolean().optional(),
});
/** GET /server_settings. */
export type ServerSettings = z.infer<typeof ServerSettingsSchema>;

/** POST /register: the queue plus whatever initial state `fetch_event_types` asked for. */
export const RegisterResponseSchema = z.looseObject({
  queue_id: z.string(),
  last_event_id: z.number().int(),
  zulip_version: z.string().optional(),
  zulip_feature_level: z.number().int().optional(),
  zulip_merge_base: z.string().optional(),
  max_message_id: z.number().int().optional(),
  event_queue_longpoll_timeout_seconds: z.number().optional(),
  max_message_length: z.number().int().optional(),
  max_topic_length: z.number().int().optional(),
  max_file_upload_size_mib: z.number().optional(),
  realm_url: z.string().optional(),
  user_id: z.number().int().optional(),
  email: z.string().optional(),
  full_name: z.string().optional(),
  realm_users: z.array(UserSchema).optional(),
  realm_non_active_users: z.array(UserSchema).optional(),
  subscriptions: z.array(SubscriptionSchema).optional(),
  streams: z.array(StreamSchema).optional(),
});
/** POST /register. */
export type RegisterResponse = z.infer<typeof RegisterResponseSchema>;

/** GET /events: the raw events, each validated on its own by the event queue. */
export const GetEventsResponseSchema = z.looseObject({
  events: z.array(z.looseObject({ type: z.string(), id: z.number().int() })),
  queue_id: z.string().optional(),
});
/** GET /events. */
export type GetEventsResponse = z.infer<typeof GetEventsResponseSchema>;

/** A success body with nothing we read (`{"result":"success","msg":""}`). */
export const EmptyResponseSchema = z.looseObject({});
/** A success body with nothing we read. */
export type EmptyResponse = z.infer<typeof EmptyResponseSchema>;

/** GET /messages. */
export const GetMessagesResponseSchema = z.looseObject({
  messages: z.array(MessageSchema),
  /** Absent when `message_ids` was used. */
  anchor: z.number().optional(),
  found_anchor: z.boolean().optional(),
  found_oldest: z.boolean().optional(),
  found_newest: z.boolean().optional(),
  history_limited: z.boolean().optional(),
});
/** GET /messages. */
export type GetMessagesResponse = z.infer<typeof GetMessagesResponseSchema>;

/** GET /messages/{message_id}. */
export const GetMessageResponseSchema = z.looseObject({
  message: MessageSchema,
  raw_content: z.string().optional(),
});
/** GET /messages/{message_id}. */
export type GetMessageResponse = z.infer<typeof GetMessageResponseSchema>;

/** POST /messages. */
export const SendMessageResponseSchema = z.looseObject({
  id: z.number().int(),
  automatic_new_visibility_policy: z.number().optional(),
  /** The message's `near` permalink (FL508); check it with `checkedMessageUrl` before printing it. */
  message_url: z.string().optional(),
  /** A Markdown link to the message, `[#channel > topic @ 💬](URL)`, or the bare URL for a DM (FL508). */
  message_link: z.string().optional(),
});
/** POST /messages. */
export type SendMessageResponse = z.infer<typeof SendMessageResponseSchema>;

/** PATCH /messages/{message_id}. */
export const UpdateMessageResponseSchema = z.looseObject({
  detached_uploads: z.array(z.unknown()).optional(),
});
/** PATCH /messages/{message_id}. */
export type UpdateMessageResponse = z.infer<typeof UpdateMessageResponseSchema>;

/** POST /messages/flags. */
export const UpdateFlagsResponseSchema = z.looseObject({
  messages: z.array(z.number().int()),
  ignored_because_not_subscribed_channels: z.array(z.number().int()).optional(),
});
/** POST /messages/flags. */
export type UpdateFlagsResponse = z.infer<typeof UpdateFlagsResponseSchema>;

/** POST /messages/flags/narrow. */
export const UpdateFlagsForNarrowResponseSchema = z.looseObject({
  processed_count: z.number().int(),
  updated_count: z.number().int(),
  first_processed_id: z.number().int().nullable(),
  last_processed_id: z.number().int().nullable(),
  found_oldest: z.boolean(),
  found_newest: z.boolean(),
});
/** POST /messages/flags/narrow. */
export type UpdateFlagsForNarrowResponse = z.infer<typeof UpdateFlagsForNarrowResponseSchema>;

/** GET /users. */
export const GetUsersResponseSchema = z.looseObject({ members: z.array(UserSchema) });
/** GET /users. */
export type GetUsersResponse = z.infer<typeof GetUsersResponseSchema>;

/** GET /users/{user_id} and /users/{email}. */
export const GetUserResponseSchema = z.looseObject({ user: UserSchema });
/** GET /users/{user_id} and /users/{email}. */
export type GetUserResponse = z.infer<typeof GetUserResponseSchema>;

/** GET /users/me: the user object at the top level, plus `max_message_id`. */
export const OwnUserSchema = UserSchema.extend({ max_message_id: z.number().int().optional() });
/** GET /users/me. */
export type OwnUser = z.infer<typeof OwnUserSchema>;

/** GET /streams. */
export const GetStreamsResponseSchema = z.looseObject({ streams: z.array(StreamSchema) });
/** GET /streams. */
export type GetStreamsResponse = z.infer<typeof GetStreamsResponseSchema>;

/** GET /users/me/subscriptions. */
export const GetSubscriptionsResponseSchema = z.looseObject({ subscriptions: z.array(SubscriptionSchema) });
/** GET /users/me/subscriptions. */
export type GetSubscriptionsResponse = z.infer<typeof GetSubscriptionsResponseSchema>;

const userToStreams = z.record(z.string(), z.array(z.string()));

/** POST /users/me/subscriptions. Keys are user ids as strings (emails before FL289). */
export const SubscribeResponseSchema = z.looseObject({
  subscribed: userToStreams,
  already_subscribed: userToStreams,
  unauthorized: z.array(z.string()).optional(),
});
/** POST /users/me/subscriptions. */
export type SubscribeResponse = z.infer<typeof SubscribeResponseSchema>;

/** DELETE /users/me/subscriptions. */
export const UnsubscribeResponseSchema = z.looseObject({
  removed: z.array(z.string()),
  not_removed: z.array(z.string()),
});
/** DELETE /users/me/subscriptions. */
export type UnsubscribeResponse = z.infer<typeof UnsubscribeResponseSchema>;

/** GET /users/me/{stream_id}/topics, most recently active first. */
export const GetTopicsResponseSchema = z.looseObject({ topics: z.array(TopicSchema) });
/** GET /users/me/{stream_id}/topics. */
export type GetTopicsResponse = z.infer<typeof GetTopicsResponseSchema>;

/** GET /streams/{stream_id}/members. */
export const GetStreamMembersResponseSchema = z.looseObject({ subscribers: z.array(z.number().int()) });
/** GET /streams/{stream_id}/members. */
export type GetStreamMembersResponse = z.infer<typeof GetStreamMembersResponseSchema>;

/** GET /get_stream_id. */
export const GetStreamIdResponseSchema = z.looseObject({ stream_id: z.number().int() });
/** GET /get_stream_id. */
export type GetStreamIdResponse = z.infer<typeof GetStreamIdResponseSchema>;

/** POST /user_uploads. `url` since FL272, `uri` before (same value). */
export const UploadResponseSchema = z
  .looseObject({ url: z.string().optional(), uri: z.string().optional(), filename: z.string().optional() })
  .refine((r) => r.url !== undefined || r.uri !== undefined, { message: 'neither url nor uri is present' });
/** POST /user_uploads. */
export type UploadResponse = z.infer<typeof UploadResponseSchema>;

/** GET /api/v1/user_uploads/{realm_id}/{filename}: a temporary URL that needs no auth. */
export const TemporaryUploadUrlResponseSchema = z.looseObject({ url: z.string() });
/** GET /api/v1/user_uploads/{realm_id}/{filename}. */
export type TemporaryUploadUrlResponse = z.infer<typeof TemporaryUploadUrlResponseSchema>;

/** GET /realm/emoji: custom emoji keyed by id. */
export const GetRealmEmojiResponseSchema = z.looseObject({ emoji: z.record(z.string(), RealmEmojiSchema) });
/** GET /realm/emoji. */
export type GetRealmEmojiResponse = z.infer<typeof GetRealmEmojiResponseSchema>;

/** GET /realm/profile_fields. */
export const GetProfileFieldsResponseSchema = z.looseObject({
  custom_fields: z.array(ProfileFieldSchema),
});
/** GET /realm/profile_fields. */
export type GetProfileFieldsResponse = z.infer<typeof GetProfileFieldsResponseSchema>;

/** POST /reminders. */
export const CreateReminderResponseSchema = z.looseObject({ reminder_id: z.number().int() });
/** POST /reminders. */
export type CreateReminderResponse = z.infer<typeof CreateReminderResponseSchema>;

/** GET /reminders. */
export const GetRemindersResponseSchema = z.looseObject({ reminders: z.array(ReminderSchema) });

/** GET /attachments. */
export const GetAttachmentsResponseSchema = z.looseObject({
  attachments: z.array(RawAttachmentSchema),
  upload_space_used: z.number().optional(),
});

/**
 * One of the account's uploads (GET /attachments), the same whatever the realm's feature level:
 * `create_time` in UNIX seconds (milliseconds below feature level 443) and `message_ids`, the
 * messages that link it (from `messages[].id` below feature level 472).
 */
export interface ZulipAttachment {
  id: number;
  /** The file name. */
  name: string;
  /** The path after `/user_uploads/`. */
  path_id: string;
  size: number;
  create_time: number;
  message_ids: number[];
}
