// Zulip's JSON shapes for messages, streams and subscriptions.
import type { EditRecord, MessageRecord, StreamRecord, UserRecord } from './model.js';
import { FL, type Realm } from './realm.js';

/** System group ids used as the values of stream permission settings. */
const GROUP = { nobody: 1, owners: 2, administrators: 3, moderators: 4, members: 6, everyone: 7 } as const;

export interface MessageVariant {
  applyMarkdown: boolean;
  clientGravatar: boolean;
  allowEmptyTopicName: boolean;
}

function editHistoryDict(entry: EditRecord): Record<string, unknown> {
  const out: Record<string, unknown> = { user_id: entry.userId, timestamp: entry.timestamp };
  if (entry.prevContent !== undefined) {
    out.prev_content = entry.prevContent;
    out.prev_rendered_content = entry.prevRenderedContent;
  }
  if (entry.prevTopic !== undefined) {
    out.prev_topic = entry.prevTopic;
    out.topic = entry.topic;
  }
  if (entry.prevStream !== undefined) {
    out.prev_stream = entry.prevStream;
    out.stream = entry.stream;
  }
  return out;
}

/** The message object of GET /messages and `message` events (without `flags`). */
export function messageDict(realm: Realm, msg: MessageRecord, v: MessageVariant): Record<string, unknown> {
  const sender = realm.users.get(msg.senderId) as UserRecord;
  const topic =
    msg.kind === 'stream' && msg.topic === '' && !v.allowEmptyTopicName ? 'general chat' : msg.topic;
  let displayRecipient: unknown;
  if (msg.kind === 'stream') {
    displayRecipient = realm.streams.get(msg.streamId)?.name ?? '';
  } else {
    displayRecipient = msg.dmUserIds.map((id) => {
      const u = realm.users.get(id) as UserRecord;
      return { id: u.id, email: u.email, full_name: u.fullName, is_mirror_dummy: false };
    });
  }
  const out: Record<string, unknown> = {
    id: msg.id,
    sender_id: msg.senderId,
    content: v.applyMarkdown ? msg.rendered : msg.content,
    recipient_id: msg.recipientId,
    timestamp: msg.timestamp,
    client: msg.client,
    subject: topic,
    topic_links: [],
    is_me_message: msg.isMeMessage,
    reactions: msg.reactions.map((r) => ({
      emoji_name: r.emojiName,
      emoji_code: r.emojiCode,
      reaction_type: r.reactionType,
      user_id: r.userId,
    })),
    submessages: [],
    sender_full_name: sender.fullName,
    sender_email: sender.email,
    sender_realm_str: sender.system ? 'zulipinternal' : realm.config.subdomain,
    display_recipient: displayRecipient,
    type: msg.kind,
  };
  if (msg.kind === 'stream') out.stream_id = msg.streamId;
  out.avatar_url = v.clientGravatar ? null : realm.avatarUrl(sender);
  out.content_type = v.applyMarkdown ? 'text/html' : 'text/x-markdown';
  if (msg.lastEditTimestamp !== null) out.last_edit_timestamp = msg.lastEditTimestamp;
  if (msg.lastMovedTimestamp !== null) out.last_moved_timestamp = msg.lastMovedTimestamp;
  if (msg.editHistory.length > 0) out.edit_history = msg.editHistory.map(editHistoryDict);
  return out;
}

/** The stream object of GET /streams and `stream` events. */
export function streamDict(realm: Realm, stream: StreamRecord): Record<string, unknown> {
  const out: Record<string, unknown> = {
    stream_id: stream.id,
    name: stream.name,
    description: stream.description,
    rendered_description: stream.renderedDescription,
    date_created: stream.dateCreated,
    creator_id: stream.creatorId,
    invite_only: stream.inviteOnly,
    is_web_public: stream.isWebPublic,
    history_public_to_subscribers: stream.historyPublic,
    first_message_id: stream.firstMessageId,
    folder_id: stream.folderId,
    is_archived: false,
    is_recently_active: true,
    message_retention_days: null,
    stream_post_policy: 1,
    is_announcement_only: false,
    stream_weekly_traffic: null,
    subscriber_count: realm.activeSubscriberIds(stream).length,
    topics_policy: stream.topicsPolicy,
    can_add_subscribers_group: GROUP.members,
    can_administer_channel_group: GROUP.nobody,
    can_delete_any_message_group: GROUP.administrators,
    can_delete_own_message_group: GROUP.everyone,
    can_move_messages_out_of_channel_group: GROUP.members,
    can_move_messages_within_channel_group: GROUP.members,
    can_remove_subscribers_group: GROUP.administrators,
    can_resolve_topics_group: GROUP.members,
    can_send_message_group: GROUP.everyone,
    can_subscribe_group: GROUP.nobody,
  };
  if (realm.has(FL.canCreateTopicGroup)) {
    const g = stream.canCreateTopicGroup;
    out.can_create_topic_group =
      typeof g === 'number'
        ? g
        : { direct_members: [...g.direct_members], direct_subgroups: [...g.direct_subgroups] };
  }
  return out;
}

/** The subscription object of GET /users/me/subscriptions and `subscription` events. */
export function subscriptionDict(
  realm: Realm,
  stream: StreamRecord,
  user: UserRecord,
  includeSubscribers: boolean,
): Record<string, unknown> {
  const props = stream.subscribers.get(user.id) ?? { color: '#c2c2c2', isMuted: false, pinToTop: false };
  const out: Record<string, unknown> = {
    ...streamDict(realm, stream),
    color: props.color,
    is_muted: props.isMuted,
    in_home_view: !props.isMuted,
    pin_to_top: props.pinToTop,
    desktop_notifications: null,
    audible_notifications: null,
    push_notifications: null,
    email_notifications: null,
    wildcard_mentions_notify: null,
  };
  if (includeSubscribers) out.subscribers = realm.activeSubscriberIds(stream);
  return out;
}
