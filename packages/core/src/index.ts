// The public API of @zmcp/core. Every export below is a promise to users: adding a
// line is an API decision. Internal helpers stay unexported.

export type { ZmcpErrorCode, ZmcpErrorOptions, ZulipApiErrorInit } from './errors.js';
export { CodedError, errorCode, isCodedError, isZmcpError, ZmcpError, ZulipApiError } from './errors.js';

// --- client, credentials, API, event queue, history, access gates ---

export type {
  DeleteMessageEvent,
  HeartbeatEvent,
  MessageEvent,
  ReactionEvent,
  RealmEmojiEvent,
  RealmUserEvent,
  StreamEvent,
  SubscriptionEvent,
  TypingEvent,
  UnknownEvent,
  UpdateMessageEvent,
  UpdateMessageFlagsEvent,
  ZulipEvent,
  ZulipEventType,
} from './api/events.js';
export type { ZulipFeature } from './api/features.js';
export { hasFeature, ZULIP_FEATURES } from './api/features.js';
export type {
  CreateReminderParams,
  DownloadOptions,
  EditableFlag,
  GetEventsParams,
  GetMessageParams,
  GetMessagesParams,
  GetStreamsParams,
  GetUsersParams,
  MessageAnchor,
  ReactionParams,
  RegisterParams,
  SendDirectMessageParams,
  SendMessageParams,
  SendStreamMessageParams,
  SubscribeParams,
  TypingParams,
  UnsubscribeParams,
  UpdateFlagsForNarrowParams,
  UpdateFlagsParams,
  UpdateMessageParams,
  UploadFileParams,
} from './api/params.js';
export type {
  CreateReminderResponse,
  GetEventsResponse,
  GetMessageResponse,
  GetMessagesResponse,
  OwnUser,
  RegisterResponse,
  SendMessageResponse,
  ServerSettings,
  SubscribeResponse,
  UnsubscribeResponse,
  UpdateFlagsForNarrowResponse,
  UpdateFlagsResponse,
  UpdateMessageResponse,
  ZulipAttachment,
} from './api/responses.js';
export type {
  Message,
  ProfileField,
  Reaction,
  RealmEmoji,
  Reminder,
  Stream,
  Subscription,
  Topic,
  User,
} from './api/schemas.js';
export {
  DisplayRecipientUserSchema,
  MessageSchema,
  ProfileFieldSchema,
  ReactionSchema,
  RealmEmojiSchema,
  ReminderSchema,
  StreamSchema,
  SubscriptionSchema,
  TopicSchema,
  UserSchema,
} from './api/schemas.js';
export type { Clock } from './client/clock.js';
export type { Logger } from './client/logger.js';
export { learnSecret, noopLogger } from './client/logger.js';
export { isLoopbackHost } from './client/loopback.js';
export type { UploadBody } from './client/multipart.js';
export type { RetryPolicy } from './client/retry.js';
export { defaultRetryPolicy } from './client/retry.js';
export type { ParseSiteOptions, ZulipSite } from './client/site.js';
export { parseSite } from './client/site.js';
export type { CallOptions } from './client/transport.js';
export type { DownloadedFile, UploadedFile, ZulipClientOptions } from './client/zulip-client.js';
export { ZulipClient } from './client/zulip-client.js';
export type {
  CredentialField,
  CredentialSource,
  Credentials,
  LoadCredentialsOptions,
} from './credentials.js';
export { credentialProblem, loadCredentials, parseZuliprc } from './credentials.js';
export type { EventQueueOptions, EventQueuePosition, QueueGap, QueueItem } from './events/event-queue.js';
export { EventQueue } from './events/event-queue.js';
export type { HasOperand, IsOperand, NarrowOperator, NarrowTerm } from './history/narrow.js';
export {
  MAX_NARROW_TERMS,
  MAX_OPERAND_LENGTH,
  NarrowBuilder,
  narrow,
  validateNarrow,
} from './history/narrow.js';
export type { AroundResult, HistoryPagerOptions, HistoryResult } from './history/pager.js';
export { HistoryPager, MAX_MESSAGES_PER_REQUEST } from './history/pager.js';
export type {
  ReadMessageOptions,
  ReadMessagesResult,
  ReadNarrowQuery,
  ReadNarrowResult,
  ReadRange,
} from './read/read-gate.js';
export { readMessage, readMessages, readNarrow } from './read/read-gate.js';

// --- text: markdown, length, escaping, message line, helpers, policy rules ---

export type {
  AdmissionGateOptions,
  AdmissionList,
  AdmissionPath,
  AdmissionRefusals,
  AdmissionUser,
  OpenAdmissionGateOptions,
} from './policy/admission.js';
export {
  ADMISSION_PATHS,
  AdmissionDirectory,
  AdmissionGate,
  isAdmissionEntry,
  parseAdmissionList,
} from './policy/admission.js';
export type { ResolvedStreamAllowlist, StreamAllowlist } from './policy/allowlist.js';
export { ALL_STREAMS, parseStreamAllowlist, resolveStreamAllowlist } from './policy/allowlist.js';
export type {
  AccessPolicyConfig,
  AccessPolicySettings,
  NarrowInput,
  NarrowScopeDecision,
  NarrowScopeKind,
  NarrowScopeOptions,
  PolicyMessage,
  WriteTarget,
} from './policy/policy.js';
export { AccessPolicy, parseReadOnlyFlag } from './policy/policy.js';
export type { StreamInfo, StreamInfoLookup } from './policy/streams.js';
export { createStreamLookup, foldStreamName, sameStreamName } from './policy/streams.js';
export type { Conversation } from './text/conversation.js';
export {
  conversationKey,
  dmOthers,
  foldTopic,
  messageConversation,
  sameTopic,
} from './text/conversation.js';
export { checkEmojiName, MAX_EMOJI_NAME_LENGTH } from './text/emoji.js';
export type { NameField } from './text/escape.js';
export {
  decodePrintedName,
  escapeIndented,
  escapeMsgAttr,
  escapeMsgName,
  escapeMsgText,
  quoteName,
  readPrintedName,
} from './text/escape.js';
export { inlineCode, oneLineText } from './text/inline-code.js';
export type { MessageLengthOptions, MessageLengthResult } from './text/length.js';
export { checkMessageLength, DEFAULT_MAX_MESSAGE_LENGTH, measureMessageLength } from './text/length.js';
export type { NormalizeMarkdownOptions } from './text/markdown.js';
export { normalizeMarkdown } from './text/markdown.js';
export type { MentionableUser, MentionOptions } from './text/mention.js';
export { mentionSyntax } from './text/mention.js';
export type { DisplayRecipientUser as FormattableRecipient, FormattableMessage } from './text/message.js';
export { isMentioned } from './text/message.js';
export type { MessageLineFormatter, MessageLineOptions } from './text/message-line.js';
export {
  conversationLabel,
  createMessageLineFormatter,
  formatMessageHead,
  formatMessageLine,
} from './text/message-line.js';
export { isNoBotsContent, isNoBotsMessage, isNoBotsTopic } from './text/nobots.js';
export type { PermalinkTarget } from './text/permalink.js';
export {
  checkedMessageUrl,
  decodeHashComponent,
  encodeHashComponent,
  messagePermalink,
  permalink,
} from './text/permalink.js';
export type { NamedPerson } from './text/person-names.js';
export { PersonNames, personLabel, quotePerson } from './text/person-names.js';
export { splitMessage } from './text/split.js';
export type {
  DateRange,
  FormatTimestampOptions,
  ParseDateRangeOptions,
  TimeStyle,
  TimestampFormatter,
} from './text/time.js';
export {
  createTimestampFormatter,
  formatTimestamp,
  isValidTimeZone,
  parseDateRange,
  parseFutureTime,
} from './text/time.js';
export type { CheckTopicOptions } from './text/topic.js';
export { checkTopicName, MAX_TOPIC_LENGTH, RESOLVED_TOPIC_PREFIX } from './text/topic.js';
export { codePointLength } from './text/unicode.js';
export type { ResolvableUser, ResolvedUser, ResolveUserOptions, UserMatchKind } from './text/users.js';
export { resolveUser } from './text/users.js';
