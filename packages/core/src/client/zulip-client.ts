import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  isGetEventsResponseFast,
  isGetMessageResponseFast,
  isGetMessagesResponseFast,
} from '../api/fast-check.js';
import { hasFeature, ZULIP_FEATURES, type ZulipFeature } from '../api/features.js';
import type {
  CreateReminderParams,
  DownloadOptions,
  GetEventsParams,
  GetMessageParams,
  GetMessagesParams,
  GetStreamsParams,
  GetUsersParams,
  ReactionParams,
  RegisterParams,
  SendMessageParams,
  SubscribeParams,
  TypingParams,
  UnsubscribeParams,
  UpdateFlagsForNarrowParams,
  UpdateFlagsParams,
  UpdateMessageParams,
  UploadFileParams,
} from '../api/params.js';
import {
  type CreateReminderResponse,
  CreateReminderResponseSchema,
  EmptyResponseSchema,
  GetAttachmentsResponseSchema,
  type GetEventsResponse,
  GetEventsResponseSchema,
  type GetMessageResponse,
  GetMessageResponseSchema,
  type GetMessagesResponse,
  GetMessagesResponseSchema,
  GetProfileFieldsResponseSchema,
  GetRealmEmojiResponseSchema,
  GetRemindersResponseSchema,
  GetStreamIdResponseSchema,
  GetStreamMembersResponseSchema,
  GetStreamsResponseSchema,
  GetSubscriptionsResponseSchema,
  GetTopicsResponseSchema,
  GetUserResponseSchema,
  GetUsersResponseSchema,
  type OwnUser,
  OwnUserSchema,
  type RegisterResponse,
  RegisterResponseSchema,
  type SendMessageResponse,
  SendMessageResponseSchema,
  type ServerSettings,
  ServerSettingsSchema,
  type SubscribeResponse,
  SubscribeResponseSchema,
  TemporaryUploadUrlResponseSchema,
  type UnsubscribeResponse,
  UnsubscribeResponseSchema,
  type UpdateFlagsForNarrowResponse,
  UpdateFlagsForNarrowResponseSchema,
  type UpdateFlagsResponse,
  UpdateFlagsResponseSchema,
  type UpdateMessageResponse,
  UpdateMessageResponseSchema,
  UploadResponseSchema,
  type ZulipAttachment,
} from '../api/responses.js';
import type {
  ProfileField,
  RealmEmoji,
  Reminder,
  Stream,
  Subscription,
  Topic,
  User,
} from '../api/schemas.js';
import { credentialProblem } from '../credentials.js';
import { ZmcpError } from '../errors.js';
import { validateNarrow } from '../history/narrow.js';
import { type Clock, systemClock } from './clock.js';
import type { Logger } from './logger.js';
import { noopLogger } from './logger.js';
import { multipartFileBody } from './multipart.js';
import { defaultRetryPolicy, type RetryPolicy } from './retry.js';
import { parseSite } from './site.js';
import { type ApiCall, type CallOptions, type HttpMethod, Transport } from './transport.js';
import { resolveUploadLocation } from './upload-path.js';

/** How to build a {@link ZulipClient}. `site`, `email` and `apiKey` are what {@link loadCredentials} returns. */
export interface ZulipClientOptions {
  /** The realm: `https://acme.zulipchat.com` (a trailing `/api` or `/api/v1` is dropped). */
  site: string;
  email: string;
  apiKey: string;
  /** Accept `http://` beyond loopback. Off by default. */
  allowInsecureHttp?: boolean | undefined;
  /** Refuse every non-GET request before it is sent (`CORE_READ_ONLY`). */
  readOnly?: boolean | undefined;
  /** Default deadline of a call, retries included. Default 15 s. */
  timeoutMs?: number | undefined;
  /** Default deadline of an upload or download. Default 5 minutes. */
  uploadTimeoutMs?: number | undefined;
  /** Overrides of the retry policy; see {@link defaultRetryPolicy}. */
  retry?: Partial<RetryPolicy> | undefined;
  logger?: Logger | undefined;
  /** An undici dispatcher to send through (tests inject a `MockAgent`); not closed by {@link ZulipClient.close}. */
  dispatcher?: Dispatcher | undefined;
  /** Connections of the keep-alive pool. Default 8. */
  connections?: number | undefined;
  userAgent?: string | undefined;
  /** Largest JSON response accepted. Default 64 MiB. */
  maxResponseBytes?: number | undefined;
  /** Slow down as `X-RateLimit-Remaining` runs low, before Zulip refuses. Default true. */
  pacing?: boolean | undefined;
  /** Time source for backoff and pacing; tests inject one. */
  clock?: Clock | undefined;
  /** Source of jitter, in [0, 1). */
  random?: (() => number) | undefined;
}

/** A file stored on the realm by {@link ZulipClient.uploadFile}. */
export interface UploadedFile {
  /** Server-relative path, `/user_uploads/...`, as Zulip returns it: link it in a message. */
  url: string;
  /** The same on the realm's host. */
  absoluteUrl: string;
  /** The name Zulip stored (FL286), else the one sent. */
  filename: string;
}

/** Bytes fetched by {@link ZulipClient.downloadUpload}. */
export interface DownloadedFile {
  bytes: Uint8Array;
  contentType: string | undefined;
  /** Where the bytes finally came from (after same-realm redirects). */
  url: string;
}

/** The default long-poll deadline when the realm's own timeout is not known: 90 s + 10 s margin. */
export const DEFAULT_LONG_POLL_TIMEOUT_MS = 100_000;

const VERSION = '0.1.0';

function invalid(message: string, details: Record<string, unknown> = {}): ZmcpError {
  return new ZmcpError('CORE_INVALID_ARGUMENT', message, { details });
}

function requireId(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw invalid(`${name} must be a positive integer id`, { [name]: value });
  }
  return value;
}

function requireCount(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalid(`${name} must be a non-negative integer`, { [name]: value });
  }
  return value;
}

function requireIds(name: string, values: readonly unknown[], max = 5000): readonly number[] {
  if (!Array.isArray(values) || values.length === 0 || values.length > max) {
    throw invalid(`${name} must list 1 to ${max} ids`);
  }
  for (const v of values) requireId(name, v);
  return values as readonly number[];
}

function requireText(name: string, value: unknown, allowEmpty = false): string {
  if (typeof value !== 'string' || (!allowEmpty && value.length === 0)) {
    throw invalid(`${name} must be a${allowEmpty ? '' : ' non-empty'} string`);
  }
  return value;
}

function requireOneOf<T extends string>(name: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalid(`${name} must be one of ${allowed.join(', ')}`, { [name]: value });
  }
  return value as T;
}

function recipients(
  name: string,
  to: readonly number[] | readonly string[],
): readonly number[] | readonly string[] {
  if (!Array.isArray(to) || to.length === 0) throw invalid(`${name} must list at least one recipient`);
  if (to.every((v) => typeof v === 'number')) return requireIds(name, to as readonly number[], 1000);
  if (to.every((v) => typeof v === 'string' && /^[^\s@,]+@[^\s@,]+$/.test(v))) return to;
  throw invalid(`${name} must be all user ids or all emails`);
}

/**
 * A client of one Zulip realm. Every method goes through one internal request path, which
 * holds the deadline, retries, rate-limit pacing, error mapping and read-only mode; there is no
 * other way to reach the realm. Many clients (many realms) may live in one process.
 */
export class ZulipClient {
  readonly #t: Transport;
  #featureLevel: number | undefined;

  /**
   * @throws {ZmcpError} `CORE_INSECURE_URL` for an unacceptable site; `CORE_INVALID_ARGUMENT`
   *   for a malformed email, API key or option.
   */
  constructor(options: ZulipClientOptions) {
    const site = parseSite(options.site, { allowInsecureHttp: options.allowInsecureHttp });
    // The one rule of each credential field; never echo the key, only say what is wrong with it.
    if (typeof options.email !== 'string' || credentialProblem('email', options.email) !== undefined) {
      throw invalid('email must be an address such as bot@example.com, without spaces or colons');
    }
    if (typeof options.apiKey !== 'string' || credentialProblem('apiKey', options.apiKey) !== undefined) {
      throw invalid('apiKey must be a Zulip API key: 32 letters and digits');
    }
    const positive = (name: string, v: number | undefined, fallback: number) => {
      if (v === undefined) return fallback;
      if (!Number.isFinite(v) || v <= 0) throw invalid(`${name} must be a positive number`, { [name]: v });
      return v;
    };
    this.#t = new Transport({
      site,
      email: options.email,
      apiKey: options.apiKey,
      readOnly: options.readOnly ?? false,
      timeoutMs: positive('timeoutMs', options.timeoutMs, 15_000),
      uploadTimeoutMs: positive('uploadTimeoutMs', options.uploadTimeoutMs, 300_000),
      retry: { ...defaultRetryPolicy, ...options.retry },
      logger: options.logger ?? noopLogger,
      clock: options.clock ?? systemClock,
      random: options.random ?? Math.random,
      userAgent: options.userAgent ?? `zmcp-core/${VERSION}`,
      maxResponseBytes: positive('maxResponseBytes', options.maxResponseBytes, 64 * 1024 * 1024),
      pacing: options.pacing ?? true,
      dispatcher: options.dispatcher,
      connections: Math.floor(positive('connections', options.connections, 8)),
    });
  }

  /** The normalized site URL. */
  get site(): string {
    return this.#t.site.url;
  }

  /** The account's email. */
  get email(): string {
    return this.#t.email;
  }

  /** Whether every non-GET request is refused. */
  get readOnly(): boolean {
    return this.#t.readOnly;
  }

  /** Whether {@link close} has been called. */
  get closed(): boolean {
    return this.#t.closed;
  }

  /** Keeps the key out of `util.inspect` and JSON. */
  toJSON(): Record<string, unknown> {
    return { site: this.site, email: this.email, readOnly: this.readOnly };
  }

  /**
   * Ends calls in flight with `CORE_CLOSED` and closes the connection pool. Idempotent.
   */
  async close(): Promise<void> {
    await this.#t.close();
  }

  #call<T>(
    method: HttpMethod,
    path: string,
    schema: z.ZodType<T>,
    params: Record<string, unknown> | undefined,
    options: CallOptions | undefined,
    extra: Partial<ApiCall<T>> = {},
  ): Promise<T> {
    return this.#t.request({ method, path, schema, params, ...extra }, options);
  }

  /**
   * GET /server_settings (sent without credentials): version and feature level.
   * @throws {ZmcpError} the request codes (`CORE_TIMEOUT`, `CORE_NETWORK`, `CORE_SERVER_ERROR`, `CORE_BAD_RESPONSE`...).
   */
  async getServerSettings(options?: CallOptions): Promise<ServerSettings> {
    const settings = await this.#call('GET', '/server_settings', ServerSettingsSchema, undefined, options, {
      auth: false,
    });
    this.#featureLevel = settings.zulip_feature_level ?? 0;
    return settings;
  }

  /**
   * The realm's API feature level: remembered from the last answer that carried it (GET
   * /server_settings, or POST /register, which reports it too), else fetched once with GET
   * /server_settings (a GET, so read-only mode allows it).
   * @throws {ZmcpError} as {@link getServerSettings}.
   */
  async getFeatureLevel(options?: CallOptions): Promise<number> {
    if (this.#featureLevel !== undefined) return this.#featureLevel;
    await this.getServerSettings(options);
    return this.#featureLevel ?? 0;
  }

  /**
   * Whether the realm has a Zulip API change (see {@link ZULIP_FEATURES}), by its feature level
   * ({@link getFeatureLevel}: no request once the level is known).
   * @throws {ZmcpError} as {@link getServerSettings}, when the level is not known yet.
   */
  async hasFeature(feature: ZulipFeature, options?: CallOptions): Promise<boolean> {
    return hasFeature(await this.getFeatureLevel(options), feature);
  }

  /**
   * Refuses, before anything is sent, what the realm's Zulip is too old for.
   * @throws {ZmcpError} `CORE_UNSUPPORTED` naming `what`, the level it needs and the realm's;
   *   as {@link getServerSettings} when the level is not known yet.
   */
  async requireFeature(feature: ZulipFeature, what: string, options?: CallOptions): Promise<void> {
    const level = await this.getFeatureLevel(options);
    if (hasFeature(level, feature)) return;
    const needs = ZULIP_FEATURES[feature];
    throw new ZmcpError(
      'CORE_UNSUPPORTED',
      `${what} needs Zulip feature level ${needs} or newer; this realm is at ${level}`,
      { details: { feature, featureLevel: level, needs } },
    );
  }

  /**
   * POST /register: creates an event queue and returns it with the initial state asked for.
   * Not retried (each attempt would create a queue). Refused in read-only mode.
   * @throws {ZmcpError} `CORE_READ_ONLY`, `CORE_BAD_REQUEST` (bad options), and the request codes.
   */
  async register(params: RegisterParams = {}, options?: CallOptions): Promise<RegisterResponse> {
    if (params.queueLifespanSecs !== undefined) requireCount('queueLifespanSecs', params.queueLifespanSecs);
    for (const t of params.eventTypes ?? []) requireText('eventTypes[]', t);
    for (const t of params.fetchEventTypes ?? []) requireText('fetchEventTypes[]', t);
    const state = await this.#call(
      'POST',
      '/register',
      RegisterResponseSchema,
      {
        event_types: params.eventTypes,
        fetch_event_types: params.fetchEventTypes,
        narrow: params.narrow,
        all_public_streams: params.allPublicStreams,
        apply_markdown: params.applyMarkdown,
        client_gravatar: params.clientGravatar,
        include_subscribers: params.includeSubscribers,
        client_capabilities: params.clientCapabilities,
        queue_lifespan_secs: params.queueLifespanSecs,
      },
      options,
    );
    // Every register answer carries the realm's feature level: remember it (a realm may have
    // been upgraded since it was last read).
    if (state.zulip_feature_level !== undefined) this.#featureLevel = state.zulip_feature_level;
    return state;
  }

  /**
   * GET /events: acknowledges events up to `lastEventId` and long-polls for newer ones. The
   * default deadline is {@link DEFAULT_LONG_POLL_TIMEOUT_MS}; the event queue passes the realm's own.
   * @throws {ZmcpError} `CORE_BAD_REQUEST` with `zulipCode: 'BAD_EVENT_QUEUE_ID'` when the queue is gone, and the request codes.
   */
  async getEvents(params: GetEventsParams, options?: CallOptions): Promise<GetEventsResponse> {
    requireText('queueId', params.queueId);
    if (!Number.isSafeInteger(params.lastEventId) || params.lastEventId < -1) {
      throw invalid('lastEventId must be an integer >= -1', { lastEventId: params.lastEventId });
    }
    return this.#call(
      'GET',
      '/events',
      GetEventsResponseSchema,
      { queue_id: params.queueId, last_event_id: params.lastEventId, dont_block: params.dontBlock },
      options,
      {
        defaultTimeoutMs: params.dontBlock ? undefined : DEFAULT_LONG_POLL_TIMEOUT_MS,
        fast: isGetEventsResponseFast,
      },
    );
  }

  /**
   * DELETE /events: deletes an event queue. Retried like a GET (deleting twice is harmless).
   * @throws {ZmcpError} `CORE_READ_ONLY`, `CORE_BAD_REQUEST` (`BAD_EVENT_QUEUE_ID`), and the request codes.
   */
  async deleteQueue(queueId: string, options?: CallOptions): Promise<void> {
    requireText('queueId', queueId);
    await this.#call('DELETE', '/events', EmptyResponseSchema, { queue_id: queueId }, options, {
      idempotent: true,
    });
  }

  /**
   * GET /messages: messages around an anchor, oldest first (at most 5000 per call; the history
   * pager crosses that cap).
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT` (bad counts or narrow), `CORE_BAD_REQUEST` (`BAD_NARROW`...), and the request codes.
   */
  async getMessages(params: GetMessagesParams, options?: CallOptions): Promise<GetMessagesResponse> {
    const wire: Record<string, unknown> = {
      narrow: params.narrow === undefined ? undefined : validateNarrow(params.narrow),
      apply_markdown: params.applyMarkdown,
      client_gravatar: params.clientGravatar,
      allow_empty_topic_name: params.allowEmptyTopicName,
    };
    if (params.messageIds !== undefined) {
      if (params.anchor !== undefined || params.numBefore !== undefined || params.numAfter !== undefined) {
        throw invalid('messageIds cannot be combined with anchor, numBefore or numAfter');
      }
      wire.message_ids = requireIds('messageIds', params.messageIds);
    } else {
      const numBefore = requireCount('numBefore', params.numBefore ?? 0);
      const numAfter = requireCount('numAfter', params.numAfter ?? 0);
      if (numBefore + numAfter > 5000) {
        throw invalid('numBefore + numAfter must not exceed 5000 (Zulip refuses more)', {
          numBefore,
          numAfter,
        });
      }
      const anchor = params.anchor ?? 'newest';
      if (typeof anchor === 'number') requireCount('anchor', anchor);
      else requireOneOf('anchor', anchor, ['newest', 'oldest', 'first_unread', 'date'] as const);
      if (anchor === 'date') {
        if (params.anchorDate === undefined) throw invalid("anchor 'date' needs anchorDate");
        const date = params.anchorDate instanceof Date ? params.anchorDate : new Date(params.anchorDate);
        if (Number.isNaN(date.getTime())) throw invalid('anchorDate is not a valid date');
        wire.anchor_date = date.toISOString();
      }
      wire.anchor = anchor;
      wire.num_before = numBefore;
      wire.num_after = numAfter;
      wire.include_anchor = params.includeAnchor;
    }
    return this.#call('GET', '/messages', GetMessagesResponseSchema, wire, options, {
      fast: isGetMessagesResponseFast,
    });
  }

  /**
   * GET /messages/{id}: one message with the caller's flags.
   * @throws {ZmcpError} `CORE_BAD_REQUEST` ("Invalid message(s)") when it does not exist or is not visible, and the request codes.
   */
  async getMessage(
    messageId: number,
    params: GetMessageParams = {},
    options?: CallOptions,
  ): Promise<GetMessageResponse> {
    requireId('messageId', messageId);
    return this.#call(
      'GET',
      `/messages/${messageId}`,
      GetMessageResponseSchema,
      { apply_markdown: params.applyMarkdown, allow_empty_topic_name: params.allowEmptyTopicName },
      options,
      { fast: isGetMessageResponseFast },
    );
  }

  /**
   * POST /messages: sends a stream or direct message. Never retried after it may have reached
   * Zulip (a repeat would post twice); a 429 or a refused connection is retried.
   * @throws {ZmcpError} `CORE_READ_ONLY`, `CORE_NOT_FOUND` (`STREAM_DOES_NOT_EXIST`), `CORE_BAD_REQUEST`, and the request codes.
   */
  async sendMessage(params: SendMessageParams, options?: CallOptions): Promise<SendMessageResponse> {
    requireText('content', params.content);
    const common = {
      content: params.content,
      read_by_sender: params.readBySender,
      queue_id: params.queueId,
      local_id: params.localId,
    };
    let wire: Record<string, unknown>;
    if (params.type === 'stream') {
      const to =
        typeof params.to === 'number'
          ? requireId('to', params.to)
          : JSON.stringify(requireText('to', params.to));
      wire = { type: 'stream', to, topic: requireText('topic', params.topic, true), ...common };
    } else if (params.type === 'direct') {
      wire = { type: 'direct', to: recipients('to', params.to), ...common };
    } else {
      throw invalid("type must be 'stream' or 'direct'");
    }
    return this.#call('POST', '/messages', SendMessageResponseSchema, wire, options);
  }

  /**
   * PATCH /messages/{id}: edits content, or moves the message to another topic or stream.
   * @throws {ZmcpError} `CORE_READ_ONLY`, `CORE_INVALID_ARGUMENT` (nothing to change), `CORE_BAD_REQUEST`, and the request codes.
   */
  async updateMessage(
    messageId: number,
    params: UpdateMessageParams,
    options?: CallOptions,
  ): Promise<UpdateMessageResponse> {
    requireId('messageId', messageId);
    if (params.content === undefined && params.topic === undefined && params.streamId === undefined) {
      throw invalid('updateMessage needs content, topic or streamId');
    }
    if (params.streamId !== undefined) requireId('streamId', params.streamId);
    return this.#call(
      'PATCH',
      `/messages/${messageId}`,
      UpdateMessageResponseSchema,
      {
        content: params.content,
        topic: params.topic,
        stream_id: params.streamId,
        propagate_mode: params.propagateMode,
        send_notification_to_old_thread: params.sendNotificationToOldThread,
        send_notification_to_new_thread: params.sendNotificationToNewThread,
        prev_content_sha256: params.prevContentSha256,
      },
      options,
    );
  }

  /**
   * DELETE /messages/{id}. Not retried once it may have reached Zulip.
   * @throws {ZmcpError} `CORE_READ_ONLY`, `CORE_BAD_REQUEST`, and the request codes.
   */
  async deleteMessage(messageId: number, options?: CallOptions): Promise<void> {
    requireId('messageId', messageId);
    await this.#call('DELETE', `/messages/${messageId}`, EmptyResponseSchema, undefined, options);
  }

  /**
   * POST /messages/flags: adds or removes `read`, `starred` or `collapsed`. Retried like a GET
   * (setting a flag twice is harmless).
   * @throws {ZmcpError} `CORE_READ_ONLY`, `CORE_INVALID_ARGUMENT` (unknown flag or op), and the request codes.
   */
  async updateMessageFlags(params: UpdateFlagsParams, options?: CallOptions): Promise<UpdateFlagsResponse> {
    return this.#call(
      'POST',
      '/messages/flags',
      UpdateFlagsResponseSchema,
      {
        messages: requireIds('messages', params.messages),
        op: requireOneOf('op', params.op, ['add', 'remove'] as const),
        flag: requireOneOf('flag', params.flag, ['read', 'starred', 'collapsed'] as const),
      },
      options,
      { idempotent: true },
    );
  }

  /**
   * POST /messages/flags/narrow (FL155): changes a flag on a range of a narrow.
   * @throws {ZmcpError} `CORE_READ_ONLY`, `CORE_INVALID_ARGUMENT`, and the request codes.
   */
  async updateMessageFlagsForNarrow(
    params: UpdateFlagsForNarrowParams,
    options?: CallOptions,
  ): Promise<UpdateFlagsForNarrowResponse> {
    const numBefore = requireCount('numBefore', params.numBefore);
    const numAfter = requireCount('numAfter', params.numAfter);
    if (numBefore + numAfter > 5000) throw invalid('numBefore + numAfter must not exceed 5000');
    if (typeof params.anchor === 'number') requireCount('anchor', params.anchor);
    else requireOneOf('anchor', params.anchor, ['newest', 'oldest', 'first_unread'] as const);
    return this.#call(
      'POST',
      '/messages/flags/narrow',
      UpdateFlagsForNarrowResponseSchema,
      {
        anchor: params.anchor,
        num_before: numBefore,
        num_after: numAfter,
        include_anchor: params.includeAnchor,
        narrow: validateNarrow(params.narrow),
        op: requireOneOf('op', params.op, ['add', 'remove'] as const),
        flag: requireOneOf('flag', params.flag, ['read', 'starred', 'collapsed'] as const),
      },
      options,
      { idempotent: true },
    );
  }

  #reactionParams(params: ReactionParams): Record<string, unknown> {
    return {
      emoji_name: requireText('emojiName', params.emojiName),
      emoji_code: params.emojiCode,
      reaction_type:
        params.reactionType === undefined
          ? undefined
          : requireOneOf('reactionType', params.reactionType, [
              'unicode_emoji',
              'realm_emoji',
              'zulip_extra_emoji',
            ] as const),
    };
  }

  /**
   * POST /messages/{id}/reactions.
   * @throws {ZmcpError} `CORE_READ_ONLY`, `CORE_BAD_REQUEST` (`REACTION_ALREADY_EXISTS`, unknown emoji), and the request codes.
   */
  async addReaction(messageId: number, params: ReactionParams, options?: CallOptions): Promise<void> {
    requireId('messageId', messageId);
    await this.#call(
      'POST',
      `/messages/${messageId}/reactions`,
      EmptyResponseSchema,
      this.#reactionParams(params),
      options,
    );
  }

  /**
   * DELETE /messages/{id}/reactions. Pass `reactionType: 'realm_emoji'` for a custom emoji.
   * @throws {ZmcpError} `CORE_READ_ONLY`, `CORE_BAD_REQUEST` (`REACTION_DOES_NOT_EXIST`), and the request codes.
   */
  async removeReaction(messageId: number, params: ReactionParams, options?: CallOptions): Promise<void> {
    requireId('messageId', messageId);
    await this.#call(
      'DELETE',
      `/messages/${messageId}/reactions`,
      EmptyResponseSchema,
      this.#reactionParams(params),
      options,
    );
  }

  #userParams(params: GetUsersParams): Record<string, unknown> {
    return {
      client_gravatar: params.clientGravatar,
      include_custom_profile_fields: params.includeCustomProfileFields,
    };
  }

  /**
   * GET /users: every user of the realm, bots and deactivated users included.
   * @throws {ZmcpError} the request codes.
   */
  async getUsers(params: GetUsersParams = {}, options?: CallOptions): Promise<User[]> {
    const wire = this.#userParams(params);
    if (params.userIds !== undefined) wire.user_ids = requireIds('userIds', params.userIds);
    const res = await this.#call('GET', '/users', GetUsersResponseSchema, wire, options);
    return res.members;
  }

  /**
   * GET /users/me: the account itself, with `max_message_id`.
   * @throws {ZmcpError} `CORE_UNAUTHORIZED` for bad credentials, and the request codes.
   */
  async getOwnUser(options?: CallOptions): Promise<OwnUser> {
    return this.#call('GET', '/users/me', OwnUserSchema, undefined, options);
  }

  /**
   * GET /users/{id}.
   * @throws {ZmcpError} `CORE_BAD_REQUEST` ("No such user"), and the request codes.
   */
  async getUser(userId: number, params: GetUsersParams = {}, options?: CallOptions): Promise<User> {
    requireId('userId', userId);
    const res = await this.#call(
      'GET',
      `/users/${userId}`,
      GetUserResponseSchema,
      this.#userParams(params),
      options,
    );
    return res.user;
  }

  /**
   * GET /users/{email}.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT` (not an email), `CORE_BAD_REQUEST` ("No such user"), and the request codes.
   */
  async getUserByEmail(email: string, params: GetUsersParams = {}, options?: CallOptions): Promise<User> {
    if (typeof email !== 'string' || !/^[^\s@/]+@[^\s@/]+$/.test(email))
      throw invalid('email is not an address');
    const res = await this.#call(
      'GET',
      `/users/${encodeURIComponent(email)}`,
      GetUserResponseSchema,
      this.#userParams(params),
      options,
    );
    return res.user;
  }

  /**
   * GET /streams: the streams the account can see.
   * @throws {ZmcpError} the request codes.
   */
  async getStreams(params: GetStreamsParams = {}, options?: CallOptions): Promise<Stream[]> {
    const res = await this.#call(
      'GET',
      '/streams',
      GetStreamsResponseSchema,
      {
        include_public: params.includePublic,
        include_web_public: params.includeWebPublic,
        include_subscribed: params.includeSubscribed,
        include_all_active: params.includeAllActive,
        include_default: params.includeDefault,
        include_owner_subscribed: params.includeOwnerSubscribed,
        exclude_archived: params.excludeArchived,
      },
      options,
    );
    return res.streams;
  }

  /**
   * GET /users/me/subscriptions.
   * @throws {ZmcpError} the request codes.
   */
  async getSubscriptions(
    params: { includeSubscribers?: boolean | undefined } = {},
    options?: CallOptions,
  ): Promise<Subscription[]> {
    const res = await this.#call(
      'GET',
      '/users/me/subscriptions',
      GetSubscriptionsResponseSchema,
      { include_subscribers: params.includeSubscribers },
      options,
    );
    return res.subscriptions;
  }

  /**
   * POST /users/me/subscriptions: subscribes (creating streams that don't exist).
   * @throws {ZmcpError} `CORE_READ_ONLY`, `CORE_BAD_REQUEST`, and the request codes.
   */
  async subscribe(params: SubscribeParams, options?: CallOptions): Promise<SubscribeResponse> {
    if (!Array.isArray(params.subscriptions) || params.subscriptions.length === 0) {
      throw invalid('subscriptions must list at least one stream');
    }
    const subscriptions = params.subscriptions.map((s) => {
      const entry: Record<string, string> = { name: requireText('subscriptions[].name', s.name) };
      if (s.description !== undefined) entry.description = s.description;
      if (s.color !== undefined) entry.color = s.color;
      return entry;
    });
    return this.#call(
      'POST',
      '/users/me/subscriptions',
      SubscribeResponseSchema,
      {
        subscriptions,
        principals: params.principals === undefined ? undefined : recipients('principals', params.principals),
        authorization_errors_fatal: params.authorizationErrorsFatal,
        announce: params.announce,
        invite_only: params.inviteOnly,
        is_web_public: params.isWebPublic,
        history_public_to_subscribers: params.historyPublicToSubscribers,
      },
      options,
    );
  }

  /**
   * DELETE /users/me/subscriptions.
   * @throws {ZmcpError} `CORE_READ_ONLY`, `CORE_BAD_REQUEST` (unknown stream), and the request codes.
   */
  async unsubscribe(params: UnsubscribeParams, options?: CallOptions): Promise<UnsubscribeResponse> {
    if (!Array.isArray(params.subscriptions) || params.subscriptions.length === 0) {
      throw invalid('subscriptions must list at least one stream name');
    }
    for (const name of params.subscriptions) requireText('subscriptions[]', name);
    return this.#call(
      'DELETE',
      '/users/me/subscriptions',
      UnsubscribeResponseSchema,
      {
        subscriptions: params.subscriptions,
        principals: params.principals === undefined ? undefined : recipients('principals', params.principals),
      },
      options,
    );
  }

  /**
   * GET /users/me/{stream_id}/topics: most recently active first.
   * @throws {ZmcpError} `CORE_BAD_REQUEST` ("Invalid channel ID"), and the request codes.
   */
  async getStreamTopics(
    streamId: number,
    params: { allowEmptyTopicName?: boolean | undefined } = {},
    options?: CallOptions,
  ): Promise<Topic[]> {
    requireId('streamId', streamId);
    const res = await this.#call(
      'GET',
      `/users/me/${streamId}/topics`,
      GetTopicsResponseSchema,
      { allow_empty_topic_name: params.allowEmptyTopicName },
      options,
    );
    return res.topics;
  }

  /**
   * GET /streams/{stream_id}/members: the user ids subscribed to a stream the account can access.
   * @throws {ZmcpError} `CORE_BAD_REQUEST` ("Invalid channel ID"), and the request codes.
   */
  async getStreamMembers(streamId: number, options?: CallOptions): Promise<number[]> {
    requireId('streamId', streamId);
    const res = await this.#call(
      'GET',
      `/streams/${streamId}/members`,
      GetStreamMembersResponseSchema,
      undefined,
      options,
    );
    return res.subscribers;
  }

  /**
   * GET /get_stream_id: a stream's id from its name.
   * @throws {ZmcpError} `CORE_BAD_REQUEST` ("Invalid channel name"), and the request codes.
   */
  async getStreamId(name: string, options?: CallOptions): Promise<number> {
    const res = await this.#call(
      'GET',
      '/get_stream_id',
      GetStreamIdResponseSchema,
      { stream: requireText('name', name) },
      options,
    );
    return res.stream_id;
  }

  /**
   * POST /typing: starts or stops the typing indicator in a DM or a stream topic. Retried like
   * a GET (the indicator is state, not an action).
   * @throws {ZmcpError} `CORE_READ_ONLY`, `CORE_INVALID_ARGUMENT`, and the request codes.
   */
  async setTyping(params: TypingParams, options?: CallOptions): Promise<void> {
    const op = requireOneOf('op', params.op, ['start', 'stop'] as const);
    let wire: Record<string, unknown>;
    if (params.type === 'direct') wire = { op, type: 'direct', to: requireIds('to', params.to, 1000) };
    else if (params.type === 'stream') {
      wire = {
        op,
        type: 'stream',
        stream_id: requireId('streamId', params.streamId),
        topic: requireText('topic', params.topic, true),
      };
    } else throw invalid("type must be 'direct' or 'stream'");
    await this.#call('POST', '/typing', EmptyResponseSchema, wire, options, { idempotent: true });
  }

  /**
   * POST /reminders: Zulip will send this account a direct message (from Notification Bot) quoting
   * the message at the given time. Not retried once it may have reached Zulip. Refused in
   * read-only mode.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT`, `CORE_UNSUPPORTED` (reminders need feature level
   *   399, a note 415), `CORE_READ_ONLY`, `CORE_BAD_REQUEST` (a time not in the future, a message
   *   this account cannot see, a note over 1000 characters), and the request codes.
   */
  async createReminder(params: CreateReminderParams, options?: CallOptions): Promise<CreateReminderResponse> {
    requireId('messageId', params.messageId);
    requireId('scheduledDeliveryTimestamp', params.scheduledDeliveryTimestamp);
    if (params.note !== undefined) requireText('note', params.note, true);
    await this.requireFeature('reminders', 'Reminders', options);
    if (params.note !== undefined) await this.requireFeature('reminderNote', 'A reminder note', options);
    return this.#call(
      'POST',
      '/reminders',
      CreateReminderResponseSchema,
      {
        message_id: params.messageId,
        scheduled_delivery_timestamp: params.scheduledDeliveryTimestamp,
        note: params.note,
      },
      options,
    );
  }

  /**
   * GET /reminders: this account's reminders not delivered yet.
   * @throws {ZmcpError} `CORE_UNSUPPORTED` (below feature level 399), and the request codes.
   */
  async getReminders(options?: CallOptions): Promise<Reminder[]> {
    await this.requireFeature('reminders', 'Reminders', options);
    return (await this.#call('GET', '/reminders', GetRemindersResponseSchema, undefined, options)).reminders;
  }

  /**
   * DELETE /reminders/{id}: cancels one of this account's reminders. Refused in read-only mode.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT`, `CORE_UNSUPPORTED`, `CORE_READ_ONLY`,
   *   `CORE_NOT_FOUND` (no such reminder of this account, or delivered already), and the request codes.
   */
  async deleteReminder(reminderId: number, options?: CallOptions): Promise<void> {
    requireId('reminderId', reminderId);
    await this.requireFeature('reminders', 'Reminders', options);
    await this.#call('DELETE', `/reminders/${reminderId}`, EmptyResponseSchema, undefined, options);
  }

  /**
   * GET /attachments: this account's uploads, each with the messages that link it, in one shape
   * whatever the realm's feature level (see {@link ZulipAttachment}).
   * @throws {ZmcpError} the request codes.
   */
  async getAttachments(options?: CallOptions): Promise<ZulipAttachment[]> {
    const res = await this.#call('GET', '/attachments', GetAttachmentsResponseSchema, undefined, options);
    const level = await this.getFeatureLevel(options);
    const seconds = hasFeature(level, 'attachmentSeconds');
    const ids = hasFeature(level, 'attachmentMessageIds');
    return res.attachments.map((a) => {
      const fromMessages = a.messages?.map((m) => m.id);
      const linked = (ids ? (a.message_ids ?? fromMessages) : (fromMessages ?? a.message_ids)) ?? [];
      return {
        id: a.id,
        name: a.name,
        path_id: a.path_id,
        size: a.size,
        create_time: seconds ? a.create_time : Math.floor(a.create_time / 1000),
        message_ids: [...linked].sort((x, y) => x - y),
      };
    });
  }

  /**
   * GET /realm/emoji: the realm's custom emoji (Unicode emoji are implicit).
   * @throws {ZmcpError} the request codes.
   */
  async getRealmEmoji(options?: CallOptions): Promise<RealmEmoji[]> {
    const res = await this.#call('GET', '/realm/emoji', GetRealmEmojiResponseSchema, undefined, options);
    return Object.values(res.emoji);
  }

  /**
   * GET /realm/profile_fields: the realm's custom profile fields.
   * @throws {ZmcpError} the request codes.
   */
  async getCustomProfileFields(options?: CallOptions): Promise<ProfileField[]> {
    const res = await this.#call(
      'GET',
      '/realm/profile_fields',
      GetProfileFieldsResponseSchema,
      undefined,
      options,
    );
    return res.custom_fields;
  }

  /**
   * POST /user_uploads: streams one file as multipart/form-data with an exact Content-Length,
   * never buffering it. Not retried: the body is consumed as it is sent.
   * @throws {ZmcpError} `CORE_READ_ONLY` (before the body is touched), `CORE_INVALID_ARGUMENT`
   *   (bad name or size, or a body longer or shorter than `size`), `CORE_BAD_REQUEST` (too large for the realm), and the request codes.
   */
  async uploadFile(params: UploadFileParams): Promise<UploadedFile> {
    const filename = requireText('filename', params.filename);
    if (filename.length > 255) throw invalid('filename must be at most 255 characters');
    requireCount('size', params.size);
    const body = multipartFileBody({
      field: 'file',
      filename,
      contentType: typeof params.contentType === 'string' ? params.contentType : 'application/octet-stream',
      size: params.size,
      body: params.body,
    });
    const res = await this.#t.upload('/user_uploads', body, UploadResponseSchema, {
      signal: params.signal,
      timeoutMs: params.timeoutMs,
    });
    const url = (res.url ?? res.uri) as string;
    return { url, absoluteUrl: new URL(url, `${this.site}/`).toString(), filename: res.filename ?? filename };
  }

  /**
   * Fetches a realm upload (`/user_uploads/...`, or its absolute URL) with the account's
   * credentials, following redirects only within the realm's uploads, and reading at most
   * `maxBytes`.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT` (another host, `..`, not an upload path),
   *   `CORE_TOO_LARGE` (over `maxBytes`, `details.maxBytes`), `CORE_BAD_RESPONSE` (a redirect out of the realm),
   *   `CORE_NOT_FOUND`, and the request codes.
   */
  async downloadUpload(path: string, options: DownloadOptions): Promise<DownloadedFile> {
    if (!Number.isSafeInteger(options.maxBytes) || options.maxBytes < 0) {
      throw invalid('maxBytes must be a non-negative integer', { maxBytes: options.maxBytes });
    }
    const site = this.#t.site;
    const location = resolveUploadLocation(path, site);
    const allow = (target: URL): boolean => {
      try {
        resolveUploadLocation(target.toString(), site);
        return true;
      } catch {
        return false;
      }
    };
    const res = await this.#t.download(location.url, allow, options.maxBytes, {
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
    return { bytes: res.bytes, contentType: res.contentType, url: res.url.toString() };
  }

  /**
   * GET /api/v1/user_uploads/...: a temporary URL for an upload that works without credentials
   * for about a minute, as an absolute URL on the realm.
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT` (not an upload path of this realm), and the request codes.
   */
  async getTemporaryUploadUrl(path: string, options?: CallOptions): Promise<string> {
    const location = resolveUploadLocation(path, this.#t.site);
    const res = await this.#call(
      'GET',
      `/user_uploads/${location.relative}`,
      TemporaryUploadUrlResponseSchema,
      undefined,
      options,
    );
    return new URL(res.url, `${this.site}/`).toString();
  }
}
