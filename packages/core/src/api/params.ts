import type { UploadBody } from '../client/multipart.js';
import type { NarrowTerm } from '../history/narrow.js';

/** Where GET /messages starts: a message id, or one of Zulip's named anchors. */
export type MessageAnchor = number | 'newest' | 'oldest' | 'first_unread' | 'date';

/** Parameters of {@link ZulipClient.getMessages} (GET /messages). */
export interface GetMessagesParams {
  anchor?: MessageAnchor | undefined;
  /** With `anchor: 'date'` (servers at feature level 445+): the instant to anchor at. */
  anchorDate?: Date | string | undefined;
  numBefore?: number | undefined;
  numAfter?: number | undefined;
  includeAnchor?: boolean | undefined;
  narrow?: readonly NarrowTerm[] | undefined;
  /** HTML (true, Zulip's default) or the raw Markdown (false). */
  applyMarkdown?: boolean | undefined;
  clientGravatar?: boolean | undefined;
  /** Fetch exactly these messages (FL300); not combinable with the anchor parameters. */
  messageIds?: readonly number[] | undefined;
  allowEmptyTopicName?: boolean | undefined;
}

/** Parameters of {@link ZulipClient.getMessage} (GET /messages/{id}). */
export interface GetMessageParams {
  applyMarkdown?: boolean | undefined;
  allowEmptyTopicName?: boolean | undefined;
}

interface SendCommon {
  content: string;
  /** Mark the message read for its sender (FL236); API-sent messages otherwise start unread. */
  readBySender?: boolean | undefined;
  /** Local echo: the queue whose `message` event should carry `local_message_id`. */
  queueId?: string | undefined;
  localId?: string | undefined;
}

/** A stream message: to a stream by name or id, in a topic. */
export interface SendStreamMessageParams extends SendCommon {
  type: 'stream';
  to: string | number;
  topic: string;
}

/** A direct message to users by id (or by email). */
export interface SendDirectMessageParams extends SendCommon {
  type: 'direct';
  to: readonly number[] | readonly string[];
}

/** Parameters of {@link ZulipClient.sendMessage} (POST /messages). */
export type SendMessageParams = SendStreamMessageParams | SendDirectMessageParams;

/** Parameters of {@link ZulipClient.updateMessage} (PATCH /messages/{id}). */
export interface UpdateMessageParams {
  content?: string | undefined;
  topic?: string | undefined;
  streamId?: number | undefined;
  propagateMode?: 'change_one' | 'change_later' | 'change_all' | undefined;
  sendNotificationToOldThread?: boolean | undefined;
  sendNotificationToNewThread?: boolean | undefined;
  /** Refuse the edit if the content changed meanwhile (FL379). */
  prevContentSha256?: string | undefined;
}

/** The message flags a user may change. */
export type EditableFlag = 'read' | 'starred' | 'collapsed';

/** Parameters of {@link ZulipClient.updateMessageFlags} (POST /messages/flags). */
export interface UpdateFlagsParams {
  messages: readonly number[];
  op: 'add' | 'remove';
  flag: EditableFlag;
}

/** Parameters of {@link ZulipClient.updateMessageFlagsForNarrow} (POST /messages/flags/narrow). */
export interface UpdateFlagsForNarrowParams {
  anchor: number | 'newest' | 'oldest' | 'first_unread';
  numBefore: number;
  numAfter: number;
  includeAnchor?: boolean | undefined;
  narrow: readonly NarrowTerm[];
  op: 'add' | 'remove';
  flag: EditableFlag;
}

/** Parameters of {@link ZulipClient.addReaction} and {@link ZulipClient.removeReaction}. */
export interface ReactionParams {
  emojiName: string;
  emojiCode?: string | undefined;
  /** Needed to remove a custom emoji by name: Zulip defaults to `unicode_emoji`. */
  reactionType?: 'unicode_emoji' | 'realm_emoji' | 'zulip_extra_emoji' | undefined;
}

/** Parameters of {@link ZulipClient.getUsers}, {@link ZulipClient.getUser} and {@link ZulipClient.getUserByEmail}. */
export interface GetUsersParams {
  clientGravatar?: boolean | undefined;
  includeCustomProfileFields?: boolean | undefined;
  /** Only these users (FL384; GET /users only). */
  userIds?: readonly number[] | undefined;
}

/** Parameters of {@link ZulipClient.getStreams} (GET /streams). */
export interface GetStreamsParams {
  includePublic?: boolean | undefined;
  includeWebPublic?: boolean | undefined;
  includeSubscribed?: boolean | undefined;
  includeAllActive?: boolean | undefined;
  includeDefault?: boolean | undefined;
  includeOwnerSubscribed?: boolean | undefined;
  excludeArchived?: boolean | undefined;
}

/** Parameters of {@link ZulipClient.subscribe} (POST /users/me/subscriptions). */
export interface SubscribeParams {
  /** Streams to join; ones that don't exist are created. */
  subscriptions: readonly { name: string; description?: string | undefined; color?: string | undefined }[];
  /** Who to subscribe (user ids or emails); default the caller. */
  principals?: readonly number[] | readonly string[] | undefined;
  /** false: inaccessible streams come back under `unauthorized` instead of failing the call. */
  authorizationErrorsFatal?: boolean | undefined;
  announce?: boolean | undefined;
  inviteOnly?: boolean | undefined;
  isWebPublic?: boolean | undefined;
  historyPublicToSubscribers?: boolean | undefined;
}

/** Parameters of {@link ZulipClient.unsubscribe} (DELETE /users/me/subscriptions). */
export interface UnsubscribeParams {
  /** Stream names. */
  subscriptions: readonly string[];
  principals?: readonly number[] | readonly string[] | undefined;
}

/** Parameters of {@link ZulipClient.setTyping} (POST /typing). */
export type TypingParams =
  | { op: 'start' | 'stop'; type: 'direct'; to: readonly number[] }
  | { op: 'start' | 'stop'; type: 'stream'; streamId: number; topic: string };

/** Parameters of {@link ZulipClient.register} (POST /register). */
export interface RegisterParams {
  /** Event types to receive; absent means all. */
  eventTypes?: readonly string[] | undefined;
  /** State blocks to return; default `eventTypes`. */
  fetchEventTypes?: readonly string[] | undefined;
  /** Filters message events only: `[['channel', 'general'], ['topic', 'x']]`. */
  narrow?: readonly (readonly [string, string])[] | undefined;
  allPublicStreams?: boolean | undefined;
  /** Zulip's default here is false (raw Markdown), the opposite of GET /messages. */
  applyMarkdown?: boolean | undefined;
  clientGravatar?: boolean | undefined;
  includeSubscribers?: boolean | undefined;
  clientCapabilities?: Readonly<Record<string, boolean>> | undefined;
  /** Idle lifetime of the queue; 0 = the server default (10 minutes). */
  queueLifespanSecs?: number | undefined;
}

/** Parameters of {@link ZulipClient.getEvents} (GET /events). */
export interface GetEventsParams {
  queueId: string;
  lastEventId: number;
  dontBlock?: boolean | undefined;
}

/** What {@link ZulipClient.uploadFile} sends: one file, streamed. */
export interface UploadFileParams {
  filename: string;
  contentType: string;
  /** The exact byte length of `body`; the upload fails if the body yields more or fewer. */
  size: number;
  body: UploadBody;
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
}

/** Options of {@link ZulipClient.downloadUpload}. */
export interface DownloadOptions {
  /** Refuse (and stop reading) past this many bytes. */
  maxBytes: number;
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
}

/** Parameters of {@link ZulipClient.createReminder} (POST /reminders). */
export interface CreateReminderParams {
  /** The message to be reminded of; the reminder quotes it. */
  messageId: number;
  /** When Zulip delivers the reminder, UNIX seconds; it must be in the future. */
  scheduledDeliveryTimestamp: number;
  /** A note shown above the quoted message (feature level 415), at most 1000 characters. */
  note?: string | undefined;
}
