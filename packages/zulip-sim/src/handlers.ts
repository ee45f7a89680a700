import { createHash } from 'node:crypto';
import { ApiError, badRequest } from './errors.js';
import {
  Flag,
  flagNames,
  type GroupSetting,
  type MessageRecord,
  type StreamRecord,
  type TopicsPolicy,
  type UserRecord,
} from './model.js';
import {
  compileNarrow,
  dateAnchor,
  fetchRange,
  firstUnreadAnchor,
  highlight,
  parseAnchor,
  parseAnchorDate,
  parseNarrowParam,
  type RawTerm,
} from './narrow.js';
import { missing, type Params } from './params.js';
import { badQueue, type QueueManager, type QueueSettings } from './queues.js';
import {
  defaultReadBySender,
  EMPTY_TOPIC_DISPLAY_NAME,
  FL,
  LARGER_THAN_MAX_MESSAGE_ID,
  MAX_REMINDER_NOTE_LENGTH,
  REALM_ID,
  REALM_TOPICS_POLICY,
  type Realm,
  type SendTarget,
} from './realm.js';
import { messageDict, streamDict, subscriptionDict } from './serialize.js';

/** A value already serialized as JSON (UTF-8 chunks), spliced into the response as is. */
export class RawJson {
  readonly chunks: Buffer[];

  constructor(chunks: Buffer[]) {
    this.chunks = chunks;
  }
}

const flagJsonCache = new Map<number, Buffer>();
const OPEN_LIST = Buffer.from('[');
const CLOSE_LIST = Buffer.from(']');
const COMMA = Buffer.from(',');

/** `,"flags":[...]}`: the tail closing a cached message object, one per flag combination. */
function flagsTail(bits: number | undefined): Buffer {
  const key = bits ?? -1;
  let bytes = flagJsonCache.get(key);
  if (bytes === undefined) {
    bytes = Buffer.from(`,"flags":${JSON.stringify(bitsFlags(bits))}}`);
    flagJsonCache.set(key, bytes);
  }
  return bytes;
}

/** A non-JSON answer (file bytes, HTML error pages). */
export class RawReply {
  readonly status: number;
  readonly contentType: string;
  readonly body: Buffer;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    contentType: string,
    body: Buffer | string,
    headers: Record<string, string> = {},
  ) {
    this.status = status;
    this.contentType = contentType;
    this.body = typeof body === 'string' ? Buffer.from(body) : body;
    this.headers = headers;
  }
}

export interface ApiContext {
  realm: Realm;
  queues: QueueManager;
  user: UserRecord;
  params: Params;
  /** Captured path segments of the route. */
  match: string[];
  client: string;
  site: string;
  /** Runs when the client goes away before the answer is written. */
  onClose(listener: () => void): void;
}

export type ApiResult = Record<string, unknown> | RawReply;
export type ApiHandler = (ctx: ApiContext) => ApiResult | Promise<ApiResult>;

export interface Route {
  method: string;
  pattern: RegExp;
  handler: ApiHandler;
  /** The feature level the endpoint arrived at; older realms answer 404 as for any unknown path. */
  minLevel?: number;
}

const MAX_MESSAGES_PER_FETCH = 5000;

function messageFor(ctx: ApiContext, id: number): MessageRecord {
  const msg = ctx.realm.messages.get(id);
  if (!msg || !ctx.realm.canAccessMessage(ctx.user, msg)) throw badRequest('Invalid message(s)');
  return msg;
}

function bitsFlags(bits: number | undefined): string[] {
  return bits === undefined ? ['read', 'historical'] : flagNames(bits);
}

function stringList(value: unknown, name: string): string[] {
  if (!Array.isArray(value)) throw badRequest(`${name} is not a list`);
  for (const [i, v] of value.entries())
    if (typeof v !== 'string') throw badRequest(`${name}[${i}] is not a string`);
  return value as string[];
}

function append(map: Record<string, string[]>, key: string, value: string): void {
  const list = map[key];
  if (list) list.push(value);
  else map[key] = [value];
}

function resolvePrincipals(ctx: ApiContext, value: unknown): UserRecord[] {
  if (value === undefined) return [ctx.user];
  if (!Array.isArray(value)) throw badRequest('principals is not a list');
  return value.map((v) => {
    const u =
      typeof v === 'number'
        ? ctx.realm.user(v)
        : typeof v === 'string'
          ? ctx.realm.userByEmail(v)
          : undefined;
    if (!u?.isActive || u.system) throw badRequest('No such user');
    return u;
  });
}

// ------------------------------------------------------------------ server settings, register, events

export function serverSettings(realm: Realm, site: string): Record<string, unknown> {
  return {
    result: 'success',
    msg: '',
    zulip_version: realm.config.zulipVersion,
    zulip_feature_level: realm.config.featureLevel,
    zulip_merge_base: realm.config.zulipVersion,
    push_notifications_enabled: false,
    is_incompatible: false,
    email_auth_enabled: true,
    require_email_format_usernames: true,
    authentication_methods: { password: true, dev: false, email: true, ldap: false, remoteuser: false },
    external_authentication_methods: [],
    realm_url: site,
    realm_uri: site,
    realm_name: realm.config.realmName,
    realm_icon: '/static/images/logo/zulip-icon-128x128.png',
    realm_description: `<p>${realm.config.realmName}, simulated.</p>`,
    realm_web_public_access_enabled: false,
  };
}

function eventNarrow(value: unknown): [string, string][] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw badRequest('narrow is not a list');
  return value.map((elem, i): [string, string] => {
    let pair: [string, string];
    if (Array.isArray(elem) && elem.length === 2 && elem.every((x) => typeof x === 'string')) {
      pair = [elem[0] as string, elem[1] as string];
    } else if (
      elem !== null &&
      typeof elem === 'object' &&
      typeof (elem as Record<string, unknown>).operator === 'string' &&
      typeof (elem as Record<string, unknown>).operand === 'string'
    ) {
      const o = elem as Record<string, unknown>;
      if (o.negated === true) throw badRequest(`Operator ${String(o.operator)} not supported.`);
      pair = [o.operator as string, o.operand as string];
    } else {
      throw badRequest(`narrow[${i}] is not a string pair`);
    }
    if (!['stream', 'channel', 'topic', 'sender', 'is'].includes(pair[0])) {
      throw badRequest(`Operator ${pair[0]} not supported.`);
    }
    return pair;
  });
}

function capabilities(value: unknown): Record<string, boolean> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw badRequest('client_capabilities is not a dict');
  }
  const out: Record<string, boolean> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = v === true;
  return out;
}

function unreadMessages(realm: Realm, user: UserRecord): Record<string, unknown> {
  const pms = new Map<number, number[]>();
  const huddles = new Map<string, number[]>();
  const streams = new Map<string, { stream_id: number; topic: string; unread_message_ids: number[] }>();
  const mentions: number[] = [];
  let count = 0;
  const { ids, flags, length } = user.messages;
  for (let i = 0; i < length; i++) {
    const bits = flags[i] as number;
    if (bits & Flag.read) continue;
    const id = ids[i] as number;
    const msg = realm.messages.get(id);
    if (!msg) continue;
    if (msg.kind === 'stream') {
      const stream = realm.stream(msg.streamId);
      if (!stream?.subscribers.has(user.id)) continue;
      const key = `${msg.streamId}\u0000${msg.topic}`;
      let entry = streams.get(key);
      if (!entry) {
        entry = { stream_id: msg.streamId, topic: msg.topic, unread_message_ids: [] };
        streams.set(key, entry);
      }
      entry.unread_message_ids.push(id);
    } else if (msg.dmUserIds.length <= 2) {
      const other = msg.dmUserIds.find((u) => u !== user.id) ?? user.id;
      const list = pms.get(other) ?? [];
      list.push(id);
      pms.set(other, list);
    } else {
      const key = msg.dmUserIds.join(',');
      const list = huddles.get(key) ?? [];
      list.push(id);
      huddles.set(key, list);
    }
    if (bits & (Flag.mentioned | Flag.streamWildcard | Flag.topicWildcard)) mentions.push(id);
    count++;
  }
  return {
    count,
    pms: [...pms].map(([other, list]) => ({
      other_user_id: other,
      sender_id: other,
      unread_message_ids: list,
    })),
    streams: [...streams.values()],
    huddles: [...huddles].map(([key, list]) => ({ user_ids_string: key, unread_message_ids: list })),
    mentions,
    old_unreads_missing: false,
  };
}

function initialState(
  ctx: ApiContext,
  fetch: Set<string> | null,
  includeSubscribers: boolean,
  clientGravatar: boolean,
) {
  const { realm, user } = ctx;
  const want = (t: string): boolean => fetch === null || fetch.has(t);
  const state: Record<string, unknown> = {};
  if (want('message')) state.max_message_id = realm.maxMessageIdFor(user);
  if (want('realm')) {
    Object.assign(state, {
      realm_name: realm.config.realmName,
      realm_description: `<p>${realm.config.realmName}, simulated.</p>`,
      realm_url: ctx.site,
      realm_uri: ctx.site,
      realm_empty_topic_display_name: EMPTY_TOPIC_DISPLAY_NAME,
      realm_mandatory_topics: false,
      realm_topics_policy: REALM_TOPICS_POLICY,
      realm_allow_message_editing: true,
      realm_message_content_edit_limit_seconds: realm.config.editLimitSeconds,
      realm_message_content_delete_limit_seconds: 600,
      realm_move_messages_within_stream_limit_seconds: 604800,
      realm_move_messages_between_streams_limit_seconds: 604800,
      realm_inline_image_preview: true,
      max_message_length: realm.config.maxMessageLength,
      max_topic_length: 60,
      max_stream_name_length: 60,
      max_stream_description_length: 1024,
      max_file_upload_size_mib: realm.config.maxUploadMib,
      max_channel_folder_name_length: 60,
      max_channel_folder_description_length: 1024,
      max_reminder_note_length: MAX_REMINDER_NOTE_LENGTH,
      event_queue_longpoll_timeout_seconds: 90,
      server_typing_started_wait_period_milliseconds: 30000,
      server_typing_stopped_wait_period_milliseconds: 12000,
      server_typing_started_expiry_period_milliseconds: 45000,
      zulip_plan_is_not_limited: true,
    });
  }
  if (want('realm_user')) {
    const members = realm.members();
    Object.assign(state, {
      realm_users: members
        .filter((u) => u.isActive)
        .map((u) => {
          const d = realm.userDictFor(user.id, u, { clientGravatar, includeCustomProfileFields: true });
          delete d.is_active;
          return d;
        }),
      realm_non_active_users: members
        .filter((u) => !u.isActive)
        .map((u) => realm.userDictFor(user.id, u, { clientGravatar, includeCustomProfileFields: true })),
      cross_realm_bots: [realm.userDictFor(user.id, realm.notificationBot, { clientGravatar })].map((d) => ({
        ...d,
        is_system_bot: true,
      })),
      user_id: user.id,
      email: user.email,
      delivery_email: user.deliveryEmail,
      full_name: user.fullName,
      avatar_url: clientGravatar ? null : realm.avatarUrl(user),
      is_admin: user.role <= 200,
      is_owner: user.role === 100,
      is_moderator: user.role === 300,
      is_guest: user.role === 600,
      user_role: user.role,
    });
  }
  if (want('subscription')) {
    const subscriptions: unknown[] = [];
    const unsubscribed: unknown[] = [];
    const neverSubscribed: unknown[] = [];
    for (const stream of realm.streams.values()) {
      if (stream.subscribers.has(user.id)) {
        subscriptions.push(subscriptionDict(realm, stream, user, includeSubscribers));
      } else if (realm.canSeeStream(user, stream) || stream.formerSubscribers.has(user.id)) {
        const d = streamDict(realm, stream);
        if (includeSubscribers && realm.canSeeStream(user, stream))
          d.subscribers = realm.activeSubscriberIds(stream);
        (stream.formerSubscribers.has(user.id) ? unsubscribed : neverSubscribed).push(d);
      }
    }
    Object.assign(state, { subscriptions, unsubscribed, never_subscribed: neverSubscribed });
  }
  if (want('stream')) {
    state.streams = [...realm.streams.values()]
      .filter((s) => realm.canSeeStream(user, s))
      .map((s) => streamDict(realm, s));
  }
  if (want('realm_emoji')) state.realm_emoji = realm.realmEmojiDict();
  if (want('custom_profile_fields')) {
    state.custom_profile_fields = realm.profileFieldList();
    state.custom_profile_field_types = {
      SHORT_TEXT: { id: 1, name: 'Text (short)' },
      LONG_TEXT: { id: 2, name: 'Text (long)' },
      SELECT: { id: 3, name: 'List of options' },
      DATE: { id: 4, name: 'Date' },
      URL: { id: 5, name: 'Link' },
      USER: { id: 6, name: 'Users' },
      EXTERNAL_ACCOUNT: { id: 7, name: 'External account' },
      PRONOUNS: { id: 8, name: 'Pronouns' },
    };
  }
  if (want('alert_words')) state.alert_words = [...user.alertWords];
  if (want('channel_folders')) {
    state.channel_folders = [...realm.channelFolders.values()]
      .sort((a, b) => a.order - b.order)
      .map((f) => realm.channelFolderDict(f));
  }
  if (want('reminders')) state.reminders = realm.remindersOf(user.id).map((r) => realm.reminderDict(r));
  if (want('message') && want('update_message_flags')) state.unread_msgs = unreadMessages(realm, user);
  return state;
}

function register(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  p.known(
    'slim_presence',
    'presence_history',
    'include_streams',
    'user_list_incomplete',
    'user_settings_object',
  );
  const eventTypesRaw = p.json('event_types');
  const eventTypes = eventTypesRaw === undefined ? null : new Set(stringList(eventTypesRaw, 'event_types'));
  const fetchRaw = p.json('fetch_event_types');
  const fetch = fetchRaw === undefined ? eventTypes : new Set(stringList(fetchRaw, 'fetch_event_types'));
  const narrow = eventNarrow(p.json('narrow'));
  const includeSubscribersRaw = p.raw('include_subscribers');
  const includeSubscribers =
    includeSubscribersRaw === '"partial"' || includeSubscribersRaw === 'partial'
      ? true
      : p.bool('include_subscribers', false);
  const settings: QueueSettings = {
    userId: ctx.user.id,
    eventTypes,
    narrow,
    allPublicStreams: p.bool('all_public_streams', false),
    applyMarkdown: p.bool('apply_markdown', false),
    clientGravatar: p.bool('client_gravatar', true),
    capabilities: capabilities(p.json('client_capabilities')),
    lifespanMs: (p.int('queue_lifespan_secs') ?? 0) * 1000,
  };
  // State and queue are created in one synchronous step: nothing can slip in between.
  const state = initialState(ctx, fetch, includeSubscribers, settings.clientGravatar);
  const queue = ctx.queues.create(settings);
  return {
    queue_id: queue.id,
    last_event_id: -1,
    zulip_version: ctx.realm.config.zulipVersion,
    zulip_feature_level: ctx.realm.config.featureLevel,
    zulip_merge_base: ctx.realm.config.zulipVersion,
    ...state,
  };
}

function getEvents(ctx: ApiContext): ApiResult | Promise<ApiResult> {
  const p = ctx.params;
  const dontBlock = p.bool('dont_block', false);
  const queueId = p.raw('queue_id');
  if (queueId === undefined) {
    if (!dontBlock) throw badRequest("Missing 'queue_id' argument");
    const eventTypesRaw = p.json('event_types');
    const caps: Record<string, boolean> = {};
    for (const cap of [
      'bulk_message_deletion',
      'stream_typing_notifications',
      'empty_topic_name',
      'user_avatar_url_field_optional',
    ]) {
      caps[cap] = p.bool(cap, false);
    }
    const queue = ctx.queues.create({
      userId: ctx.user.id,
      eventTypes: eventTypesRaw === undefined ? null : new Set(stringList(eventTypesRaw, 'event_types')),
      narrow: eventNarrow(p.json('narrow')),
      allPublicStreams: p.bool('all_public_streams', false),
      applyMarkdown: p.bool('apply_markdown', false),
      clientGravatar: p.bool('client_gravatar', false),
      capabilities: caps,
      lifespanMs: (p.int('lifespan_secs') ?? 0) * 1000,
    });
    return { events: [], queue_id: queue.id };
  }
  const lastEventId = p.int('last_event_id');
  if (lastEventId === undefined) throw badRequest("Missing 'last_event_id' argument");
  const queue = ctx.queues.get(queueId);
  if (!queue || queue.settings.userId !== ctx.user.id) throw badQueue(queueId);
  ctx.queues.acknowledge(queue, lastEventId);
  ctx.queues.touch(queue);
  if (queue.events.length > 0 || dontBlock) {
    ctx.queues.release(queue);
    return { events: queue.events.slice() };
  }
  return new Promise<ApiResult>((resolve, reject) => {
    const poll = {
      deliver: (events: Record<string, unknown>[]) => resolve({ events }),
      fail: (error: ApiError) => reject(error),
    };
    ctx.queues.wait(queue, poll);
    ctx.onClose(() => {
      ctx.queues.abandon(queue, poll);
      resolve({ events: [] });
    });
  });
}

function deleteEvents(ctx: ApiContext): ApiResult {
  const queueId = ctx.params.requiredString('queue_id');
  const queue = ctx.queues.get(queueId);
  if (!queue || queue.settings.userId !== ctx.user.id) throw badQueue(queueId);
  ctx.queues.remove(queueId);
  return {};
}

// ------------------------------------------------------------------ messages

function dictWithFlags(
  ctx: ApiContext,
  msg: MessageRecord,
  v: { applyMarkdown: boolean; clientGravatar: boolean; allowEmptyTopicName: boolean },
): Record<string, unknown> {
  const dict = messageDict(ctx.realm, msg, v);
  dict.flags = bitsFlags(ctx.user.messages.get(msg.id));
  return dict;
}

function getMessages(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  const { realm, user } = ctx;
  const applyMarkdown = p.bool('apply_markdown', true);
  const clientGravatar = p.bool('client_gravatar', true);
  const allowEmptyTopicName = p.bool('allow_empty_topic_name', false);
  const variant = { applyMarkdown, clientGravatar, allowEmptyTopicName };
  const narrowTerms: RawTerm[] = parseNarrowParam(p.json('narrow'), realm.has(FL.mentionsOperator));
  const messageIds = p.intList('message_ids');
  const anchorRaw = p.raw('anchor');
  const numBeforeRaw = p.int('num_before');
  const numAfterRaw = p.int('num_after');
  const includeAnchorGiven = p.has('include_anchor');
  const useFirstUnread = p.bool('use_first_unread_anchor', false);

  const build = (ids: number[], searchWords: string[] | null): RawJson | Record<string, unknown>[] => {
    if (!searchWords) {
      const chunks: Buffer[] = [OPEN_LIST];
      for (const [i, id] of ids.entries()) {
        if (i > 0) chunks.push(COMMA);
        chunks.push(realm.messageJsonOpen(realm.messages.get(id) as MessageRecord, variant));
        chunks.push(flagsTail(user.messages.get(id)));
      }
      chunks.push(CLOSE_LIST);
      return new RawJson(chunks);
    }
    return ids.map((id) => {
      const msg = realm.messages.get(id) as MessageRecord;
      const dict = dictWithFlags(ctx, msg, variant);
      if (searchWords) {
        dict.match_content = highlight(msg.rendered, searchWords);
        dict.match_subject = highlight(
          (dict.subject as string).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'),
          searchWords,
        );
      }
      return dict;
    });
  };

  if (messageIds !== undefined) {
    const extra = [
      anchorRaw !== undefined ? 'anchor' : null,
      numBeforeRaw !== undefined ? 'num_before' : null,
      numAfterRaw !== undefined ? 'num_after' : null,
      includeAnchorGiven ? 'include_anchor' : null,
    ].filter((x) => x !== null);
    if (extra.length > 0) {
      throw badRequest(`Unsupported parameter combination: message_ids, ${extra.join(', ')}`);
    }
    const narrow = compileNarrow(realm, user, narrowTerms);
    const ids = [...new Set(messageIds)]
      .sort((a, b) => a - b)
      .filter((id) => {
        const msg = realm.messages.get(id);
        return (
          msg !== undefined &&
          realm.canAccessMessage(user, msg) &&
          narrow.matchTerms(msg, user.messages.get(id))
        );
      });
    return {
      found_anchor: false,
      found_oldest: false,
      found_newest: false,
      history_limited: false,
      messages: build(ids, narrow.searchWords),
    };
  }

  let anchorValue: number | 'first_unread' | 'date';
  if (anchorRaw === undefined) {
    if (!useFirstUnread) throw badRequest("Missing 'anchor' argument.");
    anchorValue = 'first_unread';
  } else {
    anchorValue = parseAnchor(anchorRaw, realm.has(FL.anchorDate));
  }
  // anchor_date is a parameter of FL445 realms (read even without anchor=date, as a typed endpoint does).
  const anchorDateRaw = realm.has(FL.anchorDate) ? p.raw('anchor_date') : undefined;
  let anchorDate: number | undefined;
  if (anchorValue === 'date') {
    if (anchorDateRaw === undefined) throw missing('anchor_date');
    anchorDate = parseAnchorDate(anchorDateRaw);
  }
  const numBefore = numBeforeRaw ?? 0;
  const numAfter = numAfterRaw ?? 0;
  for (const [name, value] of [
    ['num_before', numBefore],
    ['num_after', numAfter],
  ] as const) {
    if (value < 0) {
      throw new ApiError(400, 'REQUEST_VARIABLE_INVALID', `Bad value for '${name}': ${value}`, {
        var_name: name,
        bad_value: value,
      });
    }
  }
  if (numBefore + numAfter > MAX_MESSAGES_PER_FETCH) {
    throw badRequest(`Too many messages requested (maximum ${MAX_MESSAGES_PER_FETCH}).`);
  }
  const includeAnchor = p.bool('include_anchor', true);
  if (!includeAnchor && numBefore > 0 && numAfter > 0) {
    throw badRequest('The anchor can only be excluded at an end of the range');
  }
  const narrow = compileNarrow(realm, user, narrowTerms);
  const anchor =
    anchorValue === 'first_unread'
      ? firstUnreadAnchor(realm, user, narrow)
      : anchorValue === 'date'
        ? dateAnchor(realm, user, narrow, anchorDate as number)
        : anchorValue;
  const range = fetchRange(realm, user, narrow, anchor, numBefore, numAfter, includeAnchor);
  return {
    anchor,
    found_anchor: range.foundAnchor,
    found_oldest: range.foundOldest,
    found_newest: range.foundNewest,
    history_limited: false,
    messages: build(range.ids, narrow.searchWords),
  };
}

function getMessage(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  const msg = messageFor(ctx, Number(ctx.match[0]));
  const dict = dictWithFlags(ctx, msg, {
    applyMarkdown: p.bool('apply_markdown', true),
    clientGravatar: p.bool('client_gravatar', false),
    allowEmptyTopicName: p.bool('allow_empty_topic_name', false),
  });
  return { raw_content: msg.content, message: dict };
}

/** JSON.parse without the cost of an exception for values that plainly are not JSON. */
function maybeJson(raw: string): { ok: true; value: unknown } | { ok: false } {
  if (!/^\s*[[{"\d-]|^\s*(?:true|false|null)\s*$/.test(raw)) return { ok: false };
  try {
    return { ok: true, value: JSON.parse(raw) as unknown };
  } catch {
    return { ok: false };
  }
}

function parseStreamIndicator(raw: string): string | number {
  const parsed = maybeJson(raw);
  if (!parsed.ok) return raw;
  let data = parsed.value;
  if (Array.isArray(data)) {
    if (data.length !== 1) throw badRequest('Expected exactly one channel');
    data = data[0];
  }
  if (typeof data === 'string') return data;
  if (typeof data === 'number' && Number.isInteger(data)) return data;
  throw badRequest('Invalid data type for channel');
}

/** Resolves a stream by name or id for sending; unknown ones are STREAM_DOES_NOT_EXIST. */
export function streamForSend(realm: Realm, indicator: string | number): StreamRecord {
  if (typeof indicator === 'number') {
    const s = realm.stream(indicator);
    if (!s) {
      throw new ApiError(400, 'STREAM_DOES_NOT_EXIST', `Channel with ID '${indicator}' does not exist`, {
        stream_id: indicator,
      });
    }
    return s;
  }
  const s = realm.streamByName(indicator);
  if (!s) {
    throw new ApiError(400, 'STREAM_DOES_NOT_EXIST', `Channel '${indicator}' does not exist`, {
      stream: indicator,
    });
  }
  return s;
}

/** Resolves DM recipients given as ids or emails, with Zulip's errors. */
export function directRecipients(realm: Realm, raw: string): UserRecord[] {
  let list: unknown[];
  const parsed = maybeJson(raw);
  if (!parsed.ok) list = raw.split(',');
  else if (Array.isArray(parsed.value)) list = parsed.value;
  else if (typeof parsed.value === 'string') list = parsed.value.split(',');
  else if (typeof parsed.value === 'number') list = [parsed.value];
  else throw badRequest('Invalid data type for recipients');
  list = list.map((x) => (typeof x === 'string' ? x.trim() : x)).filter((x) => x !== '');
  if (list.length === 0) throw badRequest('Message must have recipients');
  const ints = list.filter((x) => typeof x === 'number');
  if (ints.length > 0 && ints.length < list.length) {
    throw badRequest('Recipient lists may contain emails or user IDs, but not both.');
  }
  return list.map((x) => {
    if (typeof x === 'number') {
      const u = realm.user(x);
      if (!u || (u.system && !u.isActive)) throw badRequest(`Invalid user ID ${x}`);
      if (!u.isActive) throw badRequest(`'${u.email}' is no longer using Zulip.`);
      return u;
    }
    if (typeof x !== 'string') throw badRequest('Invalid data type for recipients');
    const u = realm.userByEmail(x);
    if (!u) throw badRequest(`Invalid email '${x}'`);
    if (!u.isActive) throw badRequest(`'${x}' is no longer using Zulip.`);
    return u;
  });
}

function sendMessage(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  const { realm } = ctx;
  p.known('realm_str', 'forged', 'time', 'widget_content', 'sender');
  const type = p.requiredString('type');
  const content = p.requiredString('content');
  const localId = p.raw('local_id');
  const queueId = p.raw('queue_id');
  const readBySenderRaw = p.raw('read_by_sender');
  const readBySender = readBySenderRaw === undefined ? undefined : p.bool('read_by_sender', false);
  let target: SendTarget;
  if (type === 'stream' || type === 'channel') {
    const to = p.raw('to');
    if (to === undefined) throw missing('to');
    const topicRaw = p.raw('topic') ?? p.raw('subject');
    if (topicRaw === undefined) throw badRequest('Missing topic');
    const indicator = parseStreamIndicator(to);
    const topic = realm.normalizeTopic(topicRaw);
    realm.normalizeContent(content);
    target = { kind: 'stream', stream: streamForSend(realm, indicator), topic };
  } else if (type === 'direct' || type === 'private') {
    const to = p.raw('to');
    if (to === undefined) throw missing('to');
    realm.normalizeContent(content);
    target = { kind: 'private', userIds: directRecipients(realm, to).map((u) => u.id) };
  } else {
    throw badRequest('Invalid type');
  }
  const msg = realm.send(ctx.user, target, content, {
    client: ctx.client,
    readBySender: readBySender ?? defaultReadBySender(ctx.client),
    localId,
    senderQueueId: queueId,
  });
  if (!realm.has(FL.sendMessageUrl)) return { id: msg.id };
  return { id: msg.id, message_url: realm.messageUrl(msg), message_link: realm.messageLink(msg) };
}

function editMessage(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  const { realm } = ctx;
  const msg = messageFor(ctx, Number(ctx.match[0]));
  const content = p.raw('content');
  const topic = p.raw('topic') ?? p.raw('subject');
  const streamId = p.int('stream_id');
  const propagateMode = p.raw('propagate_mode') ?? 'change_one';
  const notifyOldThread = p.bool('send_notification_to_old_thread', false);
  const notifyNewThread = p.bool('send_notification_to_new_thread', true);
  const sha = p.raw('prev_content_sha256');
  if (sha !== undefined) {
    if (createHash('sha256').update(msg.content).digest('hex') !== sha.toLowerCase()) {
      throw new ApiError(
        400,
        'EXPECTATION_MISMATCH',
        "'prev_content_sha256' value does not match the expected value.",
      );
    }
  }
  const before = new Set(msg.uploadPaths);
  realm.edit(ctx.user, msg, { content, topic, streamId, propagateMode, notifyOldThread, notifyNewThread });
  const detached = [...before]
    .filter((path) => !msg.uploadPaths.includes(path) && !realm.uploadReferenced(path))
    .map((path) => realm.uploads.get(path))
    .filter((u) => u !== undefined)
    .map((u) => realm.attachmentDict(u));
  return { detached_uploads: detached };
}

function deleteMessage(ctx: ApiContext): ApiResult {
  const msg = messageFor(ctx, Number(ctx.match[0]));
  ctx.realm.checkCanDelete(ctx.user, msg);
  ctx.realm.deleteMessages(ctx.user, [msg]);
  return {};
}

function addReaction(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  const msg = messageFor(ctx, Number(ctx.match[0]));
  const name = p.requiredString('emoji_name');
  const emoji = ctx.realm.resolveEmoji(name, p.raw('emoji_code'), p.raw('reaction_type'));
  ctx.realm.addReaction(ctx.user, msg, emoji);
  return {};
}

function removeReaction(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  const msg = messageFor(ctx, Number(ctx.match[0]));
  const name = p.raw('emoji_name');
  let code = p.raw('emoji_code');
  const type = p.raw('reaction_type') ?? 'unicode_emoji';
  if (code === undefined) {
    if (name === undefined) {
      throw badRequest('At least one of the following arguments must be present: emoji_name, emoji_code');
    }
    const found = ctx.realm.emojiByName(name);
    if (!found) throw badRequest(`Emoji '${name}' does not exist`);
    code = found.code;
  }
  ctx.realm.removeReaction(ctx.user, msg, code, type);
  return {};
}

function updateFlags(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  const messages = p.intList('messages');
  if (messages === undefined) throw missing('messages');
  const op = p.requiredString('op');
  const flag = p.requiredString('flag');
  const { ignoredStreams } = ctx.realm.updateFlags(ctx.user, messages, op, flag);
  return { messages, ignored_because_not_subscribed_channels: ignoredStreams };
}

function updateFlagsForNarrow(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  const { realm, user } = ctx;
  const anchorRaw = p.raw('anchor');
  if (anchorRaw === undefined) throw badRequest("Missing 'anchor' argument.");
  const anchorValue = parseAnchor(anchorRaw);
  if (anchorValue === 'date') throw badRequest('Invalid anchor');
  let numBefore = p.requiredInt('num_before');
  let numAfter = p.requiredInt('num_after');
  if (numBefore < 0 || numAfter < 0) {
    const [name, value] = numBefore < 0 ? ['num_before', numBefore] : ['num_after', numAfter];
    throw new ApiError(400, 'REQUEST_VARIABLE_INVALID', `Bad value for '${name}': ${value}`, {
      var_name: name,
      bad_value: value,
    });
  }
  const includeAnchor = p.bool('include_anchor', true);
  const narrowTerms = parseNarrowParam(p.json('narrow'), realm.has(FL.mentionsOperator));
  const op = p.requiredString('op');
  const flag = p.requiredString('flag');
  const bit = realm.checkFlagRequest(op, flag);
  if (!includeAnchor && numBefore > 0 && numAfter > 0) {
    throw badRequest('The anchor can only be excluded at an end of the range');
  }
  numBefore = Math.min(numBefore, Math.max(MAX_MESSAGES_PER_FETCH - numAfter, 0));
  numAfter = Math.min(numAfter, MAX_MESSAGES_PER_FETCH - numBefore);
  const narrow = compileNarrow(realm, user, narrowTerms, true);
  const anchor = anchorValue === 'first_unread' ? firstUnreadAnchor(realm, user, narrow) : anchorValue;
  const range = fetchRange(realm, user, narrow, anchor, numBefore, numAfter, includeAnchor);
  const { changed, ignoredStreams } = realm.applyFlag(user, range.ids, op, flag, bit);
  return {
    processed_count: range.ids.length,
    updated_count: changed.length,
    first_processed_id: range.ids[0] ?? null,
    last_processed_id: range.ids[range.ids.length - 1] ?? null,
    found_oldest: range.foundOldest,
    found_newest: range.foundNewest,
    ignored_because_not_subscribed_channels: ignoredStreams,
  };
}

function renderMessage(ctx: ApiContext): ApiResult {
  const content = ctx.params.requiredString('content');
  return { rendered: ctx.realm.render(ctx.realm.normalizeContent(content)).html };
}

function messageHistory(ctx: ApiContext): ApiResult {
  const msg = messageFor(ctx, Number(ctx.match[0]));
  // Rebuild snapshots oldest first from the newest-first edit log.
  const snapshots: Record<string, unknown>[] = [];
  let content = msg.content;
  let rendered = msg.rendered;
  let topic = msg.topic;
  let streamId = msg.streamId;
  for (const entry of msg.editHistory) {
    const snap: Record<string, unknown> = {
      topic,
      content,
      rendered_content: rendered,
      user_id: entry.userId,
      timestamp: entry.timestamp,
    };
    if (msg.kind === 'stream') snap.stream = streamId;
    if (entry.prevContent !== undefined) {
      snap.prev_content = entry.prevContent;
      snap.prev_rendered_content = entry.prevRenderedContent;
      content = entry.prevContent;
      rendered = entry.prevRenderedContent ?? rendered;
    }
    if (entry.prevTopic !== undefined) {
      snap.prev_topic = entry.prevTopic;
      topic = entry.prevTopic;
    }
    if (entry.prevStream !== undefined) {
      snap.prev_stream = entry.prevStream;
      streamId = entry.prevStream;
    }
    snapshots.push(snap);
  }
  const original: Record<string, unknown> = {
    topic,
    content,
    rendered_content: rendered,
    user_id: msg.senderId,
    timestamp: msg.timestamp,
  };
  if (msg.kind === 'stream') original.stream = streamId;
  return { message_history: [original, ...snapshots.reverse()] };
}

// ------------------------------------------------------------------ users

function userOpts(p: Params): { clientGravatar: boolean; includeCustomProfileFields: boolean } {
  return {
    clientGravatar: p.bool('client_gravatar', true),
    includeCustomProfileFields: p.bool('include_custom_profile_fields', false),
  };
}

function getUsers(ctx: ApiContext): ApiResult {
  const opts = userOpts(ctx.params);
  const ids = ctx.params.intList('user_ids');
  let members = ctx.realm.members();
  if (ids !== undefined) {
    for (const id of ids)
      if (!ctx.realm.user(id) || ctx.realm.user(id)?.system) throw badRequest(`Invalid user ID: ${id}`);
    members = members.filter((u) => ids.includes(u.id));
  }
  return { members: members.map((u) => ctx.realm.userDictFor(ctx.user.id, u, opts)) };
}

function getMe(ctx: ApiContext): ApiResult {
  const dict = ctx.realm.userDictFor(ctx.user.id, ctx.user, { clientGravatar: false });
  return { ...dict, max_message_id: ctx.realm.maxMessageIdFor(ctx.user) };
}

function getUser(ctx: ApiContext): ApiResult {
  const key = decodeURIComponent(ctx.match[0] as string);
  const byId = /^\d+$/.test(key);
  const user = byId ? ctx.realm.user(Number(key)) : ctx.realm.userByEmail(key);
  // By email, only the API email matches (not the delivery address).
  if (!user || (!byId && user.email.toLowerCase() !== key.toLowerCase())) throw badRequest('No such user');
  return { user: ctx.realm.userDictFor(ctx.user.id, user, userOpts(ctx.params)) };
}

// ------------------------------------------------------------------ streams and subscriptions

function getStreams(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  const { realm, user } = ctx;
  const includePublic = p.bool('include_public', true);
  const includeWebPublic = p.bool('include_web_public', false);
  const includeSubscribed = p.bool('include_subscribed', true);
  const includeAll = p.bool('include_all', false) || p.bool('include_all_active', false);
  const includeDefault = p.bool('include_default', false);
  p.known('include_owner_subscribed', 'exclude_archived', 'include_can_access_content');
  const streams = [...realm.streams.values()].filter((s) => {
    if (includeAll && (realm.isAdmin(user) || realm.canSeeStream(user, s))) return true;
    if (includeSubscribed && s.subscribers.has(user.id)) return true;
    if (includePublic && !s.inviteOnly && !realm.isGuest(user)) return true;
    if (includeWebPublic && s.isWebPublic) return true;
    return false;
  });
  return {
    streams: streams.map((s) => {
      const d = streamDict(realm, s);
      if (includeDefault) d.is_default = false;
      return d;
    }),
  };
}

function getStream(ctx: ApiContext): ApiResult {
  const stream = ctx.realm.stream(Number(ctx.match[0]));
  if (!stream || !ctx.realm.canSeeStream(ctx.user, stream)) throw badRequest('Invalid channel ID');
  return { stream: streamDict(ctx.realm, stream) };
}

// GET /streams/{stream_id}/members: the subscribers of a stream the caller can access.
function getStreamMembers(ctx: ApiContext): ApiResult {
  const stream = ctx.realm.stream(Number(ctx.match[0]));
  if (!stream || !ctx.realm.canSeeStream(ctx.user, stream)) throw badRequest('Invalid channel ID');
  return { subscribers: ctx.realm.activeSubscriberIds(stream) };
}

function getSubscriptions(ctx: ApiContext): ApiResult {
  const include = ctx.params.raw('include_subscribers');
  const includeSubscribers =
    include === 'partial' || include === '"partial"' ? true : ctx.params.bool('include_subscribers', false);
  const subs = [...ctx.realm.streams.values()]
    .filter((s) => s.subscribers.has(ctx.user.id))
    .map((s) => subscriptionDict(ctx.realm, s, ctx.user, includeSubscribers));
  return { subscriptions: subs };
}

function subscribe(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  const { realm, user } = ctx;
  p.known('announce', 'is_default_stream', 'message_retention_days', 'stream_post_policy');
  for (const name of [
    'can_add_subscribers_group',
    'can_administer_channel_group',
    'can_delete_any_message_group',
    'can_delete_own_message_group',
    'can_move_messages_out_of_channel_group',
    'can_move_messages_within_channel_group',
    'can_remove_subscribers_group',
    'can_resolve_topics_group',
    'can_send_message_group',
    'can_subscribe_group',
  ]) {
    p.known(name);
  }
  const subsRaw = p.json('subscriptions');
  if (subsRaw === undefined) throw missing('subscriptions');
  if (!Array.isArray(subsRaw)) throw badRequest('subscriptions is not a list');
  const requests = subsRaw.map((s, i) => {
    if (s === null || typeof s !== 'object' || typeof (s as Record<string, unknown>).name !== 'string') {
      throw badRequest(`subscriptions[${i}]["name"] is not a string`);
    }
    const o = s as Record<string, unknown>;
    return {
      name: realm.validateStreamName(o.name as string),
      description: typeof o.description === 'string' ? o.description : '',
      color: typeof o.color === 'string' ? o.color : undefined,
    };
  });
  const principals = resolvePrincipals(ctx, p.json('principals'));
  const fatal = p.bool('authorization_errors_fatal', true);
  const inviteOnly = p.bool('invite_only', false);
  const isWebPublic = p.bool('is_web_public', false);
  const historyRaw = p.json('history_public_to_subscribers');
  const sendNotices = p.bool('send_new_subscription_messages', true);
  const settings = newChannelSettings(ctx);
  const targets: StreamRecord[] = [];
  const unauthorized: string[] = [];
  const created: StreamRecord[] = [];
  for (const r of requests) {
    const existing = realm.streamByName(r.name);
    if (existing) {
      const othersOnPrivate =
        existing.inviteOnly && !existing.subscribers.has(user.id) && !realm.isAdmin(user);
      if (!realm.canSeeStream(user, existing) || othersOnPrivate) {
        if (fatal) throw badRequest(`Unable to access channel (${r.name}).`);
        unauthorized.push(r.name);
        continue;
      }
      targets.push(existing);
    } else {
      if (realm.isGuest(user)) throw badRequest('Insufficient permission');
      const stream = realm.createStream(
        {
          name: r.name,
          description: r.description,
          inviteOnly,
          isWebPublic,
          historyPublicToSubscribers: typeof historyRaw === 'boolean' ? historyRaw : undefined,
          ...settings,
        },
        user.id,
      );
      created.push(stream);
      targets.push(stream);
    }
  }
  const subscribed: Record<string, string[]> = {};
  const already: Record<string, string[]> = {};
  const newlyByUser = new Map<number, StreamRecord[]>();
  for (const stream of targets) {
    const color = requests.find((r) => r.name.toLowerCase() === stream.name.toLowerCase())?.color;
    const fresh = principals.filter((u) => !stream.subscribers.has(u.id));
    for (const u of principals) {
      if (stream.subscribers.has(u.id)) append(already, String(u.id), stream.name);
    }
    const added = realm.addSubscribers(
      stream,
      fresh.map((u) => u.id),
      color,
    );
    for (const id of added) {
      append(subscribed, String(id), stream.name);
      const list = newlyByUser.get(id) ?? [];
      list.push(stream);
      newlyByUser.set(id, list);
    }
  }
  for (const stream of created) realm.announceNewStream(stream, user);
  if (sendNotices) {
    for (const [id, streams] of newlyByUser) {
      const target = realm.user(id) as UserRecord;
      if (id === user.id || target.isBot) continue;
      realm.announceSubscribedBy(user, target, streams);
    }
  }
  const out: Record<string, unknown> = { subscribed, already_subscribed: already };
  if (!fatal) out.unauthorized = unauthorized;
  return out;
}

/** The settings of channels created by `POST /users/me/subscriptions` that the simulator models. */
function newChannelSettings(ctx: ApiContext): {
  topicsPolicy?: TopicsPolicy;
  canCreateTopicGroup?: GroupSetting;
  folderId?: number | null;
} {
  const p = ctx.params;
  const out: { topicsPolicy?: TopicsPolicy; canCreateTopicGroup?: GroupSetting; folderId?: number | null } =
    {};
  const policyRaw = p.raw('topics_policy');
  if (policyRaw !== undefined) {
    const parsed = maybeJson(policyRaw);
    const policy = parsed.ok && typeof parsed.value === 'string' ? parsed.value : policyRaw;
    const known = ['inherit', 'allow_empty_topic', 'disable_empty_topic'];
    if (ctx.realm.has(404)) known.push('empty_topic_only');
    if (!known.includes(policy)) throw badRequest('Invalid topics_policy');
    if (policy !== 'inherit' && !ctx.realm.isModerator(ctx.user)) throw badRequest('Insufficient permission');
    out.topicsPolicy = policy as TopicsPolicy;
  }
  const folder = p.json('folder_id');
  if (folder !== undefined) {
    if (folder !== null && (typeof folder !== 'number' || !ctx.realm.channelFolders.has(folder))) {
      throw badRequest('Invalid channel folder ID');
    }
    out.folderId = folder as number | null;
  }
  if (ctx.realm.has(FL.canCreateTopicGroup)) {
    const group = p.json('can_create_topic_group');
    if (group !== undefined) {
      if (typeof group === 'object' && group !== null && !Array.isArray(group)) {
        const o = group as Record<string, unknown>;
        out.canCreateTopicGroup = {
          direct_members: Array.isArray(o.direct_members) ? (o.direct_members as number[]) : [],
          direct_subgroups: Array.isArray(o.direct_subgroups) ? (o.direct_subgroups as number[]) : [],
        };
      } else if (typeof group === 'number') {
        out.canCreateTopicGroup = group;
      } else {
        throw badRequest('can_create_topic_group is not a valid group-setting value');
      }
    }
  }
  return out;
}

function unsubscribe(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  const { realm, user } = ctx;
  const namesRaw = p.json('subscriptions');
  if (namesRaw === undefined) throw missing('subscriptions');
  const names = stringList(namesRaw, 'subscriptions');
  const principals = resolvePrincipals(ctx, p.json('principals'));
  const streams: StreamRecord[] = [];
  const unknown: string[] = [];
  for (const name of names) {
    const s = realm.streamByName(name);
    if (!s || !realm.canSeeStream(user, s)) unknown.push(name);
    else streams.push(s);
  }
  if (unknown.length > 0) throw badRequest(`Channel(s) (${unknown.join(', ')}) do not exist`);
  if (principals.some((u) => u.id !== user.id) && !realm.isAdmin(user))
    throw badRequest('Insufficient permission');
  const removed: string[] = [];
  const notRemoved: string[] = [];
  for (const stream of streams) {
    for (const u of principals) {
      if (stream.subscribers.has(u.id)) {
        realm.removeSubscribers(stream, [u.id]);
        removed.push(stream.name);
      } else {
        notRemoved.push(stream.name);
      }
    }
  }
  return { removed, not_removed: notRemoved };
}

function getTopics(ctx: ApiContext): ApiResult {
  const { realm, user } = ctx;
  const allowEmpty = ctx.params.bool('allow_empty_topic_name', false);
  const stream = realm.stream(Number(ctx.match[0]));
  if (!stream || !realm.canSeeStream(user, stream)) throw badRequest('Invalid channel ID');
  const history = realm.canReadHistory(user, stream);
  const ids = realm.byStream.get(stream.id) ?? [];
  const seen = new Set<string>();
  const topics: { name: string; max_id: number }[] = [];
  for (let i = ids.length - 1; i >= 0; i--) {
    const id = ids[i] as number;
    if (!history && !user.messages.has(id)) continue;
    const msg = realm.messages.get(id) as MessageRecord;
    const key = msg.topic.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    topics.push({ name: msg.topic === '' && !allowEmpty ? EMPTY_TOPIC_DISPLAY_NAME : msg.topic, max_id: id });
  }
  return { topics };
}

function getStreamId(ctx: ApiContext): ApiResult {
  const name = ctx.params.requiredString('stream');
  const stream = ctx.realm.streamByName(name);
  if (!stream || !ctx.realm.canSeeStream(ctx.user, stream))
    throw badRequest(`Invalid channel name '${name}'`);
  return { stream_id: stream.id };
}

function deleteTopic(ctx: ApiContext): ApiResult {
  const { realm, user } = ctx;
  const stream = realm.stream(Number(ctx.match[0]));
  if (!stream || !realm.canSeeStream(user, stream)) throw badRequest('Invalid channel ID');
  const topic = ctx.params.requiredString('topic_name');
  if (!realm.isAdmin(user)) throw badRequest('Must be an organization administrator');
  const ids = [...(realm.byTopic.get(realm.topicKey(stream.id, topic)) ?? [])];
  const msgs = ids
    .map((id) => realm.messages.get(id) as MessageRecord)
    .filter((m) => realm.canAccessMessage(user, m));
  realm.deleteMessages(user, msgs);
  return { complete: true };
}

// ------------------------------------------------------------------ uploads, typing, realm

function upload(ctx: ApiContext): ApiResult {
  const files = ctx.params.files;
  if (files.length === 0) throw badRequest('You must specify a file to upload');
  if (files.length > 1) throw badRequest('You may only upload one file at a time');
  const file = files[0] as (typeof files)[number];
  ctx.params.known(file.field);
  const record = ctx.realm.storeUpload(
    ctx.user,
    file.filename,
    file.data,
    file.contentType === 'application/octet-stream' ? '' : file.contentType,
  );
  return { url: record.url, uri: record.url, filename: record.filename };
}

/** HTML error pages Zulip serves for upload URLs. */
export const UPLOAD_NOT_FOUND = (): RawReply =>
  new RawReply(404, 'text/html; charset=utf-8', '<p>File not found.</p>');
export const UPLOAD_FORBIDDEN = (): RawReply =>
  new RawReply(403, 'text/html; charset=utf-8', '<p>You are not authorized to view this file.</p>');

function uploadTemporaryUrl(ctx: ApiContext): ApiResult {
  const pathId = `${ctx.match[0]}/${decodeURIComponent(ctx.match[1] as string)}`;
  const record = ctx.realm.uploads.get(pathId);
  if (!record) return UPLOAD_NOT_FOUND();
  if (!ctx.realm.canReadUpload(ctx.user, record)) return UPLOAD_FORBIDDEN();
  return { url: ctx.realm.temporaryUrl(record) };
}

function typing(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  const { realm, user } = ctx;
  const op = p.requiredString('op');
  if (op !== 'start' && op !== 'stop') throw badRequest('Invalid op');
  const type = p.raw('type') ?? 'direct';
  if (type === 'direct') {
    const to = p.json('to');
    if (to === undefined) throw missing('to');
    if (!Array.isArray(to)) throw badRequest('to is not a list');
    if (to.length === 0) throw badRequest("Empty 'to' list");
    const users = to.map((id) => {
      const u = typeof id === 'number' ? realm.user(id) : undefined;
      if (!u || u.system) throw badRequest(`Invalid user ID ${String(id)}`);
      return u;
    });
    realm.typingDirect(user, op, users);
  } else if (type === 'stream' || type === 'channel') {
    const streamId = p.int('stream_id');
    if (streamId === undefined) throw badRequest('Missing stream_id');
    const topicRaw = p.raw('topic');
    if (topicRaw === undefined) throw badRequest('Missing topic');
    const stream = realm.stream(streamId);
    if (!stream || !realm.canSeeStream(user, stream)) throw badRequest('Invalid channel ID');
    realm.typingStream(user, op, stream, realm.normalizeTopic(topicRaw));
  } else {
    throw badRequest('Invalid type');
  }
  return {};
}

function realmEmoji(ctx: ApiContext): ApiResult {
  return { emoji: ctx.realm.realmEmojiDict() };
}

function profileFields(ctx: ApiContext): ApiResult {
  return { custom_fields: ctx.realm.profileFieldList() };
}

// ------------------------------------------------------------------ reminders, attachments, folders

function createReminder(ctx: ApiContext): ApiResult {
  const p = ctx.params;
  const messageId = p.requiredInt('message_id');
  const deliverAt = p.requiredInt('scheduled_delivery_timestamp');
  const note = ctx.realm.has(415) ? p.raw('note') : undefined;
  const msg = messageFor(ctx, messageId);
  const reminder = ctx.realm.scheduleReminder(ctx.user, msg, deliverAt, note);
  return { reminder_id: reminder.id };
}

function getReminders(ctx: ApiContext): ApiResult {
  return { reminders: ctx.realm.remindersOf(ctx.user.id).map((r) => ctx.realm.reminderDict(r)) };
}

function deleteReminder(ctx: ApiContext): ApiResult {
  ctx.realm.deleteReminder(ctx.user, Number(ctx.match[0]));
  return {};
}

function getAttachments(ctx: ApiContext): ApiResult {
  const all = [...ctx.realm.uploads.values()];
  return {
    attachments: all.filter((u) => u.ownerId === ctx.user.id).map((u) => ctx.realm.attachmentDict(u)),
    upload_space_used: all.reduce((sum, u) => sum + u.bytes.length, 0),
  };
}

function deleteAttachment(ctx: ApiContext): ApiResult {
  ctx.realm.deleteUpload(ctx.user, Number(ctx.match[0]));
  return {};
}

function getChannelFolders(ctx: ApiContext): ApiResult {
  const includeArchived = ctx.params.bool('include_archived', false);
  return {
    channel_folders: [...ctx.realm.channelFolders.values()]
      .filter((f) => includeArchived || !f.isArchived)
      .sort((a, b) => a.order - b.order)
      .map((f) => ctx.realm.channelFolderDict(f)),
  };
}

// GET /users/{user_id}/channels (FL440): the target's subscriptions the caller has metadata access to.
function getUserChannels(ctx: ApiContext): ApiResult {
  const { realm, user } = ctx;
  const target = realm.user(Number(ctx.match[0]));
  if (!target || target.system) throw badRequest('No such user');
  const ids = [...realm.streams.values()]
    .filter((s) => s.subscribers.has(target.id) && (realm.isAdmin(user) || realm.canSeeStream(user, s)))
    .map((s) => s.id)
    .sort((a, b) => a - b);
  return { subscribed_channel_ids: ids };
}

function getAlertWords(ctx: ApiContext): ApiResult {
  return { alert_words: [...ctx.user.alertWords] };
}

/** Every authenticated API route, matched against the path after `/api/v1`. */
export const ROUTES: Route[] = [
  { method: 'POST', pattern: /^\/register$/, handler: register },
  { method: 'GET', pattern: /^\/events$/, handler: getEvents },
  { method: 'DELETE', pattern: /^\/events$/, handler: deleteEvents },
  { method: 'GET', pattern: /^\/messages$/, handler: getMessages },
  { method: 'POST', pattern: /^\/messages$/, handler: sendMessage },
  { method: 'POST', pattern: /^\/messages\/render$/, handler: renderMessage },
  { method: 'POST', pattern: /^\/messages\/flags$/, handler: updateFlags },
  { method: 'POST', pattern: /^\/messages\/flags\/narrow$/, handler: updateFlagsForNarrow },
  { method: 'GET', pattern: /^\/messages\/(\d+)$/, handler: getMessage },
  { method: 'PATCH', pattern: /^\/messages\/(\d+)$/, handler: editMessage },
  { method: 'DELETE', pattern: /^\/messages\/(\d+)$/, handler: deleteMessage },
  { method: 'GET', pattern: /^\/messages\/(\d+)\/history$/, handler: messageHistory },
  { method: 'POST', pattern: /^\/messages\/(\d+)\/reactions$/, handler: addReaction },
  { method: 'DELETE', pattern: /^\/messages\/(\d+)\/reactions$/, handler: removeReaction },
  { method: 'GET', pattern: /^\/users$/, handler: getUsers },
  { method: 'GET', pattern: /^\/users\/me$/, handler: getMe },
  { method: 'GET', pattern: /^\/users\/me\/subscriptions$/, handler: getSubscriptions },
  { method: 'POST', pattern: /^\/users\/me\/subscriptions$/, handler: subscribe },
  { method: 'DELETE', pattern: /^\/users\/me\/subscriptions$/, handler: unsubscribe },
  { method: 'GET', pattern: /^\/users\/me\/(\d+)\/topics$/, handler: getTopics },
  { method: 'GET', pattern: /^\/users\/([^/]+)$/, handler: getUser },
  { method: 'GET', pattern: /^\/streams$/, handler: getStreams },
  { method: 'GET', pattern: /^\/streams\/(\d+)$/, handler: getStream },
  { method: 'GET', pattern: /^\/streams\/(\d+)\/members$/, handler: getStreamMembers },
  { method: 'POST', pattern: /^\/streams\/(\d+)\/delete_topic$/, handler: deleteTopic },
  { method: 'GET', pattern: /^\/get_stream_id$/, handler: getStreamId },
  { method: 'POST', pattern: /^\/user_uploads$/, handler: upload },
  { method: 'GET', pattern: /^\/user_uploads\/(\d+)\/(.+)$/, handler: uploadTemporaryUrl },
  { method: 'POST', pattern: /^\/typing$/, handler: typing },
  { method: 'GET', pattern: /^\/realm\/emoji$/, handler: realmEmoji },
  { method: 'GET', pattern: /^\/realm\/profile_fields$/, handler: profileFields },
  { method: 'POST', pattern: /^\/reminders$/, handler: createReminder },
  { method: 'GET', pattern: /^\/reminders$/, handler: getReminders },
  { method: 'DELETE', pattern: /^\/reminders\/(\d+)$/, handler: deleteReminder },
  { method: 'GET', pattern: /^\/attachments$/, handler: getAttachments },
  { method: 'DELETE', pattern: /^\/attachments\/(\d+)$/, handler: deleteAttachment },
  { method: 'GET', pattern: /^\/channel_folders$/, handler: getChannelFolders },
  { method: 'GET', pattern: /^\/users\/me\/alert_words$/, handler: getAlertWords },
  {
    method: 'GET',
    pattern: /^\/users\/(\d+)\/channels$/,
    handler: getUserChannels,
    minLevel: FL.userChannels,
  },
];

export { LARGER_THAN_MAX_MESSAGE_ID, REALM_ID };
