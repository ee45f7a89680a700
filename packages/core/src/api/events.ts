import { z } from 'zod';
import { ZmcpError } from '../errors.js';
import { isMessageEventFast } from './fast-check.js';
import { MessageSchema, RealmEmojiSchema, StreamSchema, SubscriptionSchema, UserSchema } from './schemas.js';

const eventId = z.number().int();
const typingUser = z.looseObject({ user_id: z.number().int(), email: z.string() });

/** A new message; `flags` sits next to the message, not inside it. */
export const MessageEventSchema = z.looseObject({
  type: z.literal('message'),
  id: eventId,
  message: MessageSchema,
  flags: z.array(z.string()).optional(),
  local_message_id: z.string().optional(),
});
/** A new message. */
export type MessageEvent = z.infer<typeof MessageEventSchema>;

/** An edit, a move, or a rendering-only update (`rendering_only: true`, not a user edit). */
export const UpdateMessageEventSchema = z.looseObject({
  type: z.literal('update_message'),
  id: eventId,
  user_id: z.number().int().nullable().optional(),
  edit_timestamp: z.number().optional(),
  message_id: z.number().int(),
  message_ids: z.array(z.number().int()).optional(),
  flags: z.array(z.string()).optional(),
  rendering_only: z.boolean().optional(),
  stream_id: z.number().int().optional(),
  new_stream_id: z.number().int().optional(),
  propagate_mode: z.string().optional(),
  orig_subject: z.string().optional(),
  subject: z.string().optional(),
  content: z.string().optional(),
  rendered_content: z.string().optional(),
  orig_content: z.string().optional(),
  orig_rendered_content: z.string().optional(),
  is_me_message: z.boolean().optional(),
});
/** An edit, a move, or a rendering-only update. */
export type UpdateMessageEvent = z.infer<typeof UpdateMessageEventSchema>;

/** A deletion: `message_ids` with the `bulk_message_deletion` capability, else one `message_id` per event. */
export const DeleteMessageEventSchema = z
  .looseObject({
    type: z.literal('delete_message'),
    id: eventId,
    message_id: z.number().int().optional(),
    message_ids: z.array(z.number().int()).optional(),
    message_type: z.string(),
    stream_id: z.number().int().optional(),
    topic: z.string().optional(),
  })
  .refine((e) => e.message_id !== undefined || e.message_ids !== undefined, {
    message: 'a delete_message event needs message_id or message_ids',
  });
/** A deletion. */
export type DeleteMessageEvent = z.infer<typeof DeleteMessageEventSchema>;

/** A reaction added or removed. */
export const ReactionEventSchema = z.looseObject({
  type: z.literal('reaction'),
  id: eventId,
  op: z.enum(['add', 'remove']),
  message_id: z.number().int(),
  user_id: z.number().int(),
  emoji_name: z.string(),
  emoji_code: z.string(),
  reaction_type: z.string(),
});
/** A reaction added or removed. */
export type ReactionEvent = z.infer<typeof ReactionEventSchema>;

/** A subscription change: `add` carries full subscriptions, `remove` only ids and names, `peer_*` ids. */
export const SubscriptionEventSchema = z.looseObject({
  type: z.literal('subscription'),
  id: eventId,
  op: z.string(),
  subscriptions: z
    .array(z.union([SubscriptionSchema, z.looseObject({ stream_id: z.number().int(), name: z.string() })]))
    .optional(),
  stream_ids: z.array(z.number().int()).optional(),
  user_ids: z.array(z.number().int()).optional(),
});
/** A subscription change. */
export type SubscriptionEvent = z.infer<typeof SubscriptionEventSchema>;

/** A stream created, deleted or updated. */
export const StreamEventSchema = z.looseObject({
  type: z.literal('stream'),
  id: eventId,
  op: z.string(),
  streams: z.array(z.union([StreamSchema, z.looseObject({ stream_id: z.number().int() })])).optional(),
  stream_id: z.number().int().optional(),
  property: z.string().optional(),
  value: z.unknown().optional(),
});
/** A stream created, deleted or updated. */
export type StreamEvent = z.infer<typeof StreamEventSchema>;

/** Someone started or stopped typing. */
export const TypingEventSchema = z.looseObject({
  type: z.literal('typing'),
  id: eventId,
  op: z.enum(['start', 'stop']),
  message_type: z.string(),
  sender: typingUser,
  recipients: z.array(typingUser).optional(),
  stream_id: z.number().int().optional(),
  topic: z.string().optional(),
});
/** Someone started or stopped typing. */
export type TypingEvent = z.infer<typeof TypingEventSchema>;

/** Flags changed on messages (`messages` lists only the ids that actually changed). */
export const UpdateMessageFlagsEventSchema = z.looseObject({
  type: z.literal('update_message_flags'),
  id: eventId,
  op: z.enum(['add', 'remove']),
  flag: z.string(),
  messages: z.array(z.number().int()),
  all: z.boolean().optional(),
  message_details: z.record(z.string(), z.unknown()).optional(),
});
/** Flags changed on messages. */
export type UpdateMessageFlagsEvent = z.infer<typeof UpdateMessageFlagsEventSchema>;

/** A user added, changed or deactivated. `person` holds what changed (always `user_id`). */
export const RealmUserEventSchema = z.looseObject({
  type: z.literal('realm_user'),
  id: eventId,
  op: z.string(),
  person: z.union([UserSchema, z.looseObject({ user_id: z.number().int() })]),
});
/** A user added, changed or deactivated. */
export type RealmUserEvent = z.infer<typeof RealmUserEventSchema>;

/** The realm's custom emoji changed; carries the whole new set. */
export const RealmEmojiEventSchema = z.looseObject({
  type: z.literal('realm_emoji'),
  id: eventId,
  op: z.string(),
  realm_emoji: z.record(z.string(), RealmEmojiSchema),
});
/** The realm's custom emoji changed. */
export type RealmEmojiEvent = z.infer<typeof RealmEmojiEventSchema>;

/** Sent after about 50 s without events; acknowledged like any event. */
export const HeartbeatEventSchema = z.looseObject({ type: z.literal('heartbeat'), id: eventId });
/** A heartbeat. */
export type HeartbeatEvent = z.infer<typeof HeartbeatEventSchema>;

/** Every event type the library knows, discriminated on `type`. */
export const ZulipEventSchema = z.discriminatedUnion('type', [
  MessageEventSchema,
  UpdateMessageEventSchema,
  DeleteMessageEventSchema,
  ReactionEventSchema,
  SubscriptionEventSchema,
  StreamEventSchema,
  TypingEventSchema,
  UpdateMessageFlagsEventSchema,
  RealmUserEventSchema,
  RealmEmojiEventSchema,
  HeartbeatEventSchema,
]);
/** An event of a type the library knows. */
export type ZulipEvent = z.infer<typeof ZulipEventSchema>;
/** The `type` values of {@link ZulipEvent}. */
export type ZulipEventType = ZulipEvent['type'];

/** The fallback for event types the library does not know: just `type` and `id`, the rest passes through. */
export const UnknownEventSchema = z.looseObject({ type: z.string(), id: eventId });
/** An event of a type the library does not know. */
export type UnknownEvent = z.infer<typeof UnknownEventSchema>;

const knownSchemas: ReadonlyMap<string, z.ZodType<ZulipEvent>> = new Map<string, z.ZodType<ZulipEvent>>([
  ['message', MessageEventSchema],
  ['update_message', UpdateMessageEventSchema],
  ['delete_message', DeleteMessageEventSchema],
  ['reaction', ReactionEventSchema],
  ['subscription', SubscriptionEventSchema],
  ['stream', StreamEventSchema],
  ['typing', TypingEventSchema],
  ['update_message_flags', UpdateMessageFlagsEventSchema],
  ['realm_user', RealmUserEventSchema],
  ['realm_emoji', RealmEmojiEventSchema],
  ['heartbeat', HeartbeatEventSchema],
]);

/** The outcome of {@link parseZulipEvent}: a known event, an unknown one, or an invalid one. */
export type ParsedEvent =
  | { kind: 'event'; event: ZulipEvent }
  | { kind: 'unknown'; event: UnknownEvent }
  | { kind: 'invalid'; type: string | undefined; id: number | undefined; error: ZmcpError };

/**
 * Validates one raw event: a known `type` against its schema, any other type against the
 * unknown-event fallback. Never throws; a known event missing a required field comes back
 * as `invalid` with a `CORE_BAD_RESPONSE` error.
 */
export function parseZulipEvent(raw: unknown): ParsedEvent {
  if (isMessageEventFast(raw)) return { kind: 'event', event: raw };
  const type =
    typeof raw === 'object' && raw !== null && typeof (raw as { type?: unknown }).type === 'string'
      ? ((raw as { type: string }).type as string)
      : undefined;
  const rawId = typeof raw === 'object' && raw !== null ? (raw as { id?: unknown }).id : undefined;
  const id = typeof rawId === 'number' ? rawId : undefined;
  const schema = type === undefined ? undefined : knownSchemas.get(type);
  if (schema !== undefined) {
    const result = schema.safeParse(raw);
    if (result.success) return { kind: 'event', event: result.data };
    return {
      kind: 'invalid',
      type,
      id,
      error: new ZmcpError('CORE_BAD_RESPONSE', `Zulip sent a malformed ${type} event (id ${String(id)})`, {
        cause: result.error,
        details: { type, id },
      }),
    };
  }
  const result = UnknownEventSchema.safeParse(raw);
  if (result.success) return { kind: 'unknown', event: result.data };
  return {
    kind: 'invalid',
    type,
    id,
    error: new ZmcpError('CORE_BAD_RESPONSE', 'Zulip sent an event without a string type and integer id', {
      cause: result.error,
      details: { type, id },
    }),
  };
}
