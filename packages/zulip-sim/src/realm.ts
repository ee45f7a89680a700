import { createHash, randomBytes, randomInt } from 'node:crypto';
import { isUnicodeEmojiCode, unicodeEmojiCode, unicodeEmojiHasName, ZULIP_EXTRA_EMOJI } from './emoji.js';
import { ApiError, badRequest } from './errors.js';
import { type RenderContext, type RenderResult, renderMarkdown } from './markdown.js';
import {
  type ChannelFolderRecord,
  EDITABLE_FLAGS,
  Flag,
  flagNames,
  type GroupSetting,
  insertSorted,
  MessageRecord,
  MessageStore,
  NON_EDITABLE_FLAGS,
  NONE,
  type ProfileFieldRecord,
  type ReactionRecord,
  type RealmEmojiRecord,
  type ReminderRecord,
  removeSorted,
  type StreamRecord,
  type TopicsPolicy,
  type UploadRecord,
  UserMessages,
  type UserRecord,
} from './model.js';
import type { EventQueue, QueueManager } from './queues.js';
import { type MessageVariant, messageDict, streamDict, subscriptionDict } from './serialize.js';

/** Zulip's largest anchor: "newest". */
export const LARGER_THAN_MAX_MESSAGE_ID = 10_000_000_000_000_000;
export const ZULIP_VERSION = '11.0';
export const ZULIP_FEATURE_LEVEL = 421;
/** The feature levels the simulator models: Zulip 11.0 through 13.0-dev. */
export const MIN_FEATURE_LEVEL = 421;
export const MAX_FEATURE_LEVEL = 512;

/** Feature levels of the API changes the simulator switches on per realm. */
export const FL = {
  /** `can_create_topic_group` on channels. */
  canCreateTopicGroup: 441,
  /** `GET /users/{user_id}/channels`. */
  userChannels: 440,
  /** `is_imported_stub` on user objects. */
  importedStub: 433,
  /** Attachment `create_time` (and the old `messages[].date_sent`) in seconds, not milliseconds. */
  attachmentSeconds: 443,
  /** `anchor=date` with `anchor_date` on `GET /messages`. */
  anchorDate: 445,
  /** The `mentions` narrow operator. */
  mentionsOperator: 446,
  /** Attachments list `message_ids` instead of `messages`. */
  attachmentMessageIds: 472,
  /** `message_url` and `message_link` in the `POST /messages` response. */
  sendMessageUrl: 508,
} as const;

/** The Zulip version string a feature level belongs to (the default for `zulipVersion`). */
export function versionForFeatureLevel(level: number): string {
  if (level >= 502) return '13.0-dev';
  if (level > 421) return '12.0-dev';
  return ZULIP_VERSION;
}
export const REALM_ID = 2;
export const EMPTY_TOPIC_DISPLAY_NAME = 'general chat';
/** The realm's default `topics_policy` (register's `realm_topics_policy`). */
export const REALM_TOPICS_POLICY = 'allow_empty_topic';
const MAX_TOPIC_LENGTH = 60;
const MAX_STREAM_NAME_LENGTH = 60;
const MAX_STREAM_DESCRIPTION_LENGTH = 1024;
const EDIT_GRACE_SECONDS = 20;
const MOVE_LIMIT_SECONDS = 7 * 24 * 3600;
const DELETE_LIMIT_SECONDS = 600;
const MAX_STREAM_SIZE_FOR_TYPING = 100;
const RESOLVED_PREFIX = '✔ ';
/** How many messages keep their serialized JSON around for fast history reads. */
const JSON_CACHE_SIZE = 20_000;
const NOTIFICATION_TOPIC = 'channel events';
/** Zulip's system groups, by the ids the simulator gives them. */
export const SYSTEM_GROUPS = {
  'role:nobody': 1,
  'role:owners': 2,
  'role:administrators': 3,
  'role:moderators': 4,
  'role:fullmembers': 5,
  'role:members': 6,
  'role:everyone': 7,
} as const;
/** Zulip's `MAX_REMINDER_NOTE_LENGTH` setting (register's `max_reminder_note_length`). */
export const MAX_REMINDER_NOTE_LENGTH = 1000;
const MAX_CHANNEL_FOLDER_NAME_LENGTH = 60;
const STREAM_COLORS = [
  '#76ce90',
  '#fae589',
  '#a6c7e5',
  '#e79ab5',
  '#bfd56f',
  '#f4ae55',
  '#b0a5fd',
  '#addfe5',
  '#f5ce6e',
  '#c2726a',
];
const UI_CLIENTS = new Set([
  'zulipandroid',
  'zulipios',
  'zulipdesktop',
  'zulipmobile',
  'zulipelectron',
  'zulipterminal',
  'snipe',
  'website',
  'ios',
  'android',
]);

/** Whether Zulip treats messages from this client as read by their sender. */
export function defaultReadBySender(client: string): boolean {
  const name = client.toLowerCase();
  return UI_CLIENTS.has(name) || name.includes('desktop app');
}

export interface RealmConfig {
  realmName: string;
  subdomain: string;
  emailDomain: string;
  maxMessageLength: number;
  editLimitSeconds: number;
  maxUploadMib: number;
  now: () => number;
  /** The realm's `zulip_feature_level` (421..512). */
  featureLevel: number;
  /** The realm's `zulip_version` (and `zulip_merge_base`). */
  zulipVersion: string;
}

export type SendTarget =
  | { kind: 'stream'; stream: StreamRecord; topic: string }
  | { kind: 'private'; userIds: number[] };

export interface SendOptions {
  client: string;
  readBySender?: boolean | undefined;
  localId?: string | undefined;
  senderQueueId?: string | undefined;
  timestamp?: number | undefined;
}

export interface EditRequest {
  content?: string | undefined;
  topic?: string | undefined;
  streamId?: number | undefined;
  propagateMode: string;
  notifyOldThread: boolean;
  notifyNewThread: boolean;
}

export type ReactionType = 'unicode_emoji' | 'realm_emoji' | 'zulip_extra_emoji';

function randomKey(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(32);
  let out = '';
  for (const b of bytes) out += alphabet[b % alphabet.length];
  return out;
}

/** Code-point length, computed only when it could matter. */
function codePointLength(text: string, limit: number): number {
  if (text.length <= limit) return text.length;
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** Zulip's sanitize_name for upload file names. */
export function sanitizeFilename(name: string): string {
  let value = name.normalize('NFKC');
  value = value.replace(/[^\p{L}\p{N}_\s.-]/gu, '').trim();
  value = value.replace(/[-\s]+/g, '-');
  if (value === '' || value === '.' || value === '..') return 'uploaded-file';
  return value;
}

/** The realm: every record, index and action, with Zulip's rules; events go to the queues. */
export class Realm {
  readonly config: RealmConfig;
  readonly queues: QueueManager;
  readonly users = new Map<number, UserRecord>();
  private readonly usersByEmail = new Map<string, UserRecord>();
  private readonly usersByKey = new Map<string, UserRecord>();
  readonly streams = new Map<number, StreamRecord>();
  private readonly streamsByName = new Map<string, StreamRecord>();
  readonly messages = new MessageStore();
  private readonly interned = new Map<string, string>();
  /** Every message id, ascending. */
  readonly allIds: number[] = [];
  readonly byStream = new Map<number, number[]>();
  readonly byTopic = new Map<string, number[]>();
  readonly byConversation = new Map<number, number[]>();
  private readonly conversations = new Map<string, number>();
  readonly realmEmoji = new Map<string, RealmEmojiRecord>();
  readonly profileFields = new Map<number, ProfileFieldRecord>();
  readonly uploads = new Map<string, UploadRecord>();
  private readonly uploadRefs = new Map<string, Set<number>>();
  private readonly temporaryUrls = new Map<string, { pathId: string; expires: number }>();
  private readonly avatarCache = new Map<number, string>();
  readonly notificationBot: UserRecord;
  readonly channelFolders = new Map<number, ChannelFolderRecord>();
  readonly reminders = new Map<number, ReminderRecord>();
  /** The site URL clients use (set by the HTTP front once it listens). */
  site: () => string = () => '';
  private reminderTimer: NodeJS.Timeout | null = null;
  private nextReminderId = 1;
  private nextUploadId = 1;
  private nextFolderId = 1;
  private nextUserId = 8;
  private nextStreamId = 10;
  private nextRecipientId = 1;
  private nextMessageId = 1;
  private nextEmojiId = 1;
  private nextProfileFieldId = 1;
  readonly renderContext: RenderContext;

  constructor(config: RealmConfig, queues: QueueManager) {
    this.config = config;
    this.queues = queues;
    this.renderContext = {
      user: (name, id) => this.mentionTarget(name, id),
      stream: (name) => {
        const s = this.streamByName(name);
        return s ? { id: s.id, name: s.name } : undefined;
      },
      realmEmoji: (name) => {
        const e = this.activeRealmEmoji(name);
        return e ? { id: e.id, url: this.emojiUrl(e) } : undefined;
      },
    };
    this.notificationBot = this.createUser(
      {
        fullName: 'Notification Bot',
        email: 'notification-bot@zulip.com',
        isBot: true,
        botType: 1,
      },
      1,
      true,
    );
  }

  now(): number {
    return this.config.now();
  }

  /** Whether the realm's feature level includes the change that came at `level`. */
  has(level: number): boolean {
    return this.config.featureLevel >= level;
  }

  /** One copy of each repeated string (topics, client names) however many messages use it. */
  intern(text: string): string {
    const known = this.interned.get(text);
    if (known !== undefined) return known;
    this.interned.set(text, text);
    return text;
  }

  /** Drops a message's serialized forms after any change to it. */
  touched(msg: MessageRecord): void {
    msg.json = undefined;
  }

  private readonly jsonRing: (MessageRecord | undefined)[] = new Array(JSON_CACHE_SIZE);
  private jsonNext = 0;

  /** The serialized message object (UTF-8, without its closing brace), cached for the most recently served messages. */
  messageJsonOpen(msg: MessageRecord, v: MessageVariant): Buffer {
    const slot = (v.applyMarkdown ? 1 : 0) | (v.clientGravatar ? 2 : 0) | (v.allowEmptyTopicName ? 4 : 0);
    let cache = msg.json;
    if (!cache) {
      cache = [];
      msg.json = cache;
      const evicted = this.jsonRing[this.jsonNext];
      if (evicted && evicted !== msg) evicted.json = undefined;
      this.jsonRing[this.jsonNext] = msg;
      this.jsonNext = (this.jsonNext + 1) % JSON_CACHE_SIZE;
    }
    let bytes = cache[slot];
    if (bytes === undefined) {
      bytes = Buffer.from(JSON.stringify(messageDict(this, msg, v)).slice(0, -1));
      cache[slot] = bytes;
    }
    return bytes;
  }

  nowSeconds(): number {
    return Math.floor(this.config.now() / 1000);
  }

  // ---------------------------------------------------------------- users

  createUser(
    input: {
      fullName: string;
      email?: string | undefined;
      isBot?: boolean | undefined;
      botType?: 1 | 2 | 3 | 4 | undefined;
      botOwnerId?: number | undefined;
      role?: 100 | 200 | 300 | 400 | 600 | undefined;
      timezone?: string | undefined;
      isActive?: boolean | undefined;
      profileData?: Record<number, string> | undefined;
      apiKey?: string | undefined;
      deliveryEmail?: string | null | undefined;
      alertWords?: string[] | undefined;
    },
    fixedId?: number,
    system = false,
  ): UserRecord {
    const id = fixedId ?? this.nextUserId++;
    const isBot = input.isBot ?? false;
    const local =
      input.fullName
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/^-|-$/g, '') || `user${id}`;
    const email = input.email ?? `${local}${isBot ? '-bot' : ''}@${this.config.emailDomain}`;
    const user: UserRecord = {
      id,
      email,
      deliveryEmail: input.deliveryEmail ?? email,
      fullName: input.fullName,
      apiKey: input.apiKey ?? randomKey(),
      isBot,
      botType: isBot ? (input.botType ?? 1) : null,
      botOwnerId: isBot ? (input.botOwnerId ?? null) : null,
      role: input.role ?? 400,
      timezone: input.timezone ?? '',
      isActive: input.isActive ?? true,
      dateJoined: this.now(),
      profileData: new Map(Object.entries(input.profileData ?? {}).map(([k, v]) => [Number(k), v])),
      alertWords: [...(input.alertWords ?? [])],
      recipientId: this.nextRecipientId++,
      system,
      messages: new UserMessages(),
    };
    this.users.set(id, user);
    this.usersByEmail.set(email.toLowerCase(), user);
    if (user.deliveryEmail.toLowerCase() !== email.toLowerCase()) {
      this.usersByEmail.set(user.deliveryEmail.toLowerCase(), user);
    }
    this.usersByKey.set(user.apiKey, user);
    if (!system) {
      this.broadcast(
        this.activeMemberIds(),
        { type: 'realm_user', op: 'add', person: { user_id: id } },
        (viewer) => ({
          type: 'realm_user',
          op: 'add',
          person: this.userDictFor(viewer, user),
        }),
      );
    }
    return user;
  }

  emailTaken(email: string): boolean {
    return this.usersByEmail.has(email.toLowerCase());
  }

  keyTaken(key: string): boolean {
    return this.usersByKey.has(key);
  }

  user(id: number): UserRecord | undefined {
    return this.users.get(id);
  }

  /** By API or delivery email, case-insensitively. */
  userByEmail(email: string): UserRecord | undefined {
    return this.usersByEmail.get(email.toLowerCase());
  }

  userByKey(key: string): UserRecord | undefined {
    return this.usersByKey.get(key);
  }

  /** Realm members (system bots excluded), in id order. */
  members(): UserRecord[] {
    return [...this.users.values()].filter((u) => !u.system);
  }

  activeMemberIds(): number[] {
    const out: number[] = [];
    for (const u of this.users.values()) if (!u.system && u.isActive) out.push(u.id);
    return out;
  }

  private mentionTarget(name: string, id: number | undefined): { id: number; fullName: string } | undefined {
    if (id !== undefined) {
      const u = this.users.get(id);
      if (!u || u.system) return undefined;
      if (name !== '' && u.fullName.toLowerCase() !== name.toLowerCase()) return undefined;
      return { id: u.id, fullName: u.fullName };
    }
    const lower = name.toLowerCase();
    let found: UserRecord | undefined;
    for (const u of this.users.values()) {
      if (u.system || u.fullName.toLowerCase() !== lower) continue;
      if (found) return undefined;
      found = u;
    }
    return found ? { id: found.id, fullName: found.fullName } : undefined;
  }

  /**
   * A confirmed change of address (Zulip's `do_change_user_delivery_email`): the delivery address
   * changes, and the public one with it when it is public (the same as the delivery address).
   */
  changeEmail(user: UserRecord, newEmail: string): void {
    const wasPublic = user.email.toLowerCase() === user.deliveryEmail.toLowerCase();
    this.usersByEmail.delete(user.deliveryEmail.toLowerCase());
    if (wasPublic) this.usersByEmail.delete(user.email.toLowerCase());
    user.deliveryEmail = newEmail;
    if (wasPublic) user.email = newEmail;
    this.usersByEmail.set(user.email.toLowerCase(), user);
    this.usersByEmail.set(newEmail.toLowerCase(), user);
    this.avatarCache.delete(user.id);
    const seesDelivery = this.activeMemberIds().filter((id) => {
      const v = this.users.get(id);
      return id === user.id || (v !== undefined && this.isAdmin(v));
    });
    this.broadcast(seesDelivery, {
      type: 'realm_user',
      op: 'update',
      person: { user_id: user.id, delivery_email: newEmail },
    });
    if (wasPublic) {
      this.broadcast(this.activeMemberIds(), {
        type: 'realm_user',
        op: 'update',
        person: { user_id: user.id, new_email: newEmail },
      });
    }
  }

  deactivate(user: UserRecord): void {
    user.isActive = false;
    this.queues.removeForUser(user.id);
    this.broadcast(this.activeMemberIds(), {
      type: 'realm_user',
      op: 'update',
      person: { user_id: user.id, is_active: false },
    });
  }

  avatarUrl(user: UserRecord): string {
    let url = this.avatarCache.get(user.id);
    if (!url) {
      const hash = createHash('md5').update(user.email.toLowerCase()).digest('hex');
      url = `https://secure.gravatar.com/avatar/${hash}?d=identicon&version=1`;
      this.avatarCache.set(user.id, url);
    }
    return url;
  }

  isAdmin(user: UserRecord): boolean {
    return user.role <= 200;
  }

  isModerator(user: UserRecord): boolean {
    return user.role <= 300;
  }

  isGuest(user: UserRecord): boolean {
    return user.role === 600;
  }

  /** GET /users shape of `user` as `viewer` sees it. */
  userDictFor(
    viewer: number,
    user: UserRecord,
    opts: { clientGravatar?: boolean; includeCustomProfileFields?: boolean } = {},
  ): Record<string, unknown> {
    const v = this.users.get(viewer);
    const seesDelivery = viewer === user.id || (v !== undefined && this.isAdmin(v));
    const out: Record<string, unknown> = {
      user_id: user.id,
      email: user.email,
      delivery_email: seesDelivery ? user.deliveryEmail : null,
      full_name: user.fullName,
      date_joined: new Date(user.dateJoined).toISOString().replace(/\.\d{3}Z$/, '+00:00'),
      is_active: user.isActive,
      is_owner: user.role === 100,
      is_admin: user.role <= 200,
      is_guest: user.role === 600,
      role: user.role,
      is_bot: user.isBot,
      timezone: user.timezone,
      avatar_url: (opts.clientGravatar ?? false) ? null : this.avatarUrl(user),
      avatar_version: 1,
    };
    if (this.has(FL.importedStub)) out.is_imported_stub = false;
    if (user.isBot) {
      out.bot_type = user.botType;
      out.bot_owner_id = user.botOwnerId;
    }
    if (opts.includeCustomProfileFields) {
      const data: Record<string, unknown> = {};
      for (const [fieldId, value] of user.profileData) {
        const field = this.profileFields.get(fieldId);
        if (!field) continue;
        data[String(fieldId)] =
          field.type === 1 || field.type === 2
            ? { value, rendered_value: renderMarkdown(value, this.renderContext).html }
            : { value };
      }
      out.profile_data = data;
    }
    return out;
  }

  // ---------------------------------------------------------------- streams

  streamByName(name: string): StreamRecord | undefined {
    return this.streamsByName.get(name.toLowerCase());
  }

  stream(id: number): StreamRecord | undefined {
    return this.streams.get(id);
  }

  canSeeStream(user: UserRecord, stream: StreamRecord): boolean {
    if (stream.subscribers.has(user.id)) return true;
    if (stream.inviteOnly) return false;
    return !this.isGuest(user) || stream.isWebPublic;
  }

  canReadHistory(user: UserRecord, stream: StreamRecord): boolean {
    if (!stream.inviteOnly && !this.isGuest(user)) return true;
    return stream.subscribers.has(user.id) && stream.historyPublic;
  }

  canAccessMessage(user: UserRecord, msg: MessageRecord): boolean {
    if (user.messages.has(msg.id)) return true;
    if (msg.kind !== 'stream') return false;
    const stream = this.streams.get(msg.streamId);
    return stream !== undefined && this.canReadHistory(user, stream);
  }

  validateStreamName(name: string): string {
    const trimmed = name.trim();
    if (trimmed === '') throw badRequest("Channel name can't be empty.");
    if (trimmed.length > MAX_STREAM_NAME_LENGTH) {
      throw badRequest(`Channel name too long (limit: ${MAX_STREAM_NAME_LENGTH} characters).`);
    }
    if (/[\u0000-\u001f\u007f]/.test(trimmed)) throw badRequest('Invalid character in channel name');
    return trimmed;
  }

  createStream(
    input: {
      name: string;
      description?: string | undefined;
      inviteOnly?: boolean | undefined;
      isWebPublic?: boolean | undefined;
      historyPublicToSubscribers?: boolean | undefined;
      topicsPolicy?: TopicsPolicy | undefined;
      canCreateTopicGroup?: GroupSetting | undefined;
      folderId?: number | null | undefined;
    },
    creatorId: number | null,
  ): StreamRecord {
    const name = this.validateStreamName(input.name);
    const topicsPolicy = input.topicsPolicy ?? 'inherit';
    if (topicsPolicy === 'empty_topic_only' && !this.has(404)) throw badRequest('Invalid topics_policy');
    const canCreateTopicGroup = input.canCreateTopicGroup ?? SYSTEM_GROUPS['role:everyone'];
    this.checkGroupSetting(canCreateTopicGroup, 'can_create_topic_group');
    const folderId = input.folderId ?? null;
    if (folderId !== null && !this.channelFolders.has(folderId))
      throw badRequest('Invalid channel folder ID');
    if (this.streamByName(name)) throw badRequest(`Channel '${name}' already exists`);
    const description = (input.description ?? '').replace(/\n/g, ' ');
    if (description.length > MAX_STREAM_DESCRIPTION_LENGTH) {
      throw badRequest(`Channel description too long (limit: ${MAX_STREAM_DESCRIPTION_LENGTH} characters).`);
    }
    const isWebPublic = input.isWebPublic ?? false;
    const inviteOnly = isWebPublic ? false : (input.inviteOnly ?? false);
    const historyPublic = inviteOnly ? (input.historyPublicToSubscribers ?? false) : true;
    // A channel with protected history must let everyone create topics (Zulip 12, FL441).
    if (!historyPublic && canCreateTopicGroup !== SYSTEM_GROUPS['role:everyone']) {
      throw badRequest(
        'Unsupported parameter combination: history_public_to_subscribers, can_create_topic_group',
      );
    }
    const stream: StreamRecord = {
      id: this.nextStreamId++,
      name,
      description,
      renderedDescription: description ? renderMarkdown(description, this.renderContext).html : '',
      inviteOnly,
      isWebPublic,
      historyPublic,
      dateCreated: this.nowSeconds(),
      creatorId,
      recipientId: this.nextRecipientId++,
      subscribers: new Map(),
      formerSubscribers: new Set(),
      firstMessageId: null,
      topicsPolicy,
      canCreateTopicGroup,
      folderId,
    };
    this.streams.set(stream.id, stream);
    this.streamsByName.set(name.toLowerCase(), stream);
    if (!inviteOnly) {
      const viewers = this.activeMemberIds().filter((id) =>
        this.canSeeStream(this.users.get(id) as UserRecord, stream),
      );
      this.broadcast(viewers, { type: 'stream', op: 'create', streams: [streamDict(this, stream)] });
    }
    return stream;
  }

  private pickColor(user: UserRecord): string {
    let count = 0;
    for (const s of this.streams.values()) if (s.subscribers.has(user.id)) count++;
    return STREAM_COLORS[count % STREAM_COLORS.length] as string;
  }

  /** Subscribes users; returns those newly subscribed. Emits subscription/peer events. */
  addSubscribers(stream: StreamRecord, userIds: number[], color?: string): number[] {
    const added: number[] = [];
    const wasPrivate = stream.inviteOnly;
    for (const id of userIds) {
      if (stream.subscribers.has(id)) continue;
      const user = this.users.get(id);
      if (!user) continue;
      stream.subscribers.set(id, { color: color ?? this.pickColor(user), isMuted: false, pinToTop: false });
      added.push(id);
    }
    if (added.length === 0) return added;
    if (wasPrivate) {
      // Newly subscribed users of a private stream learn it exists.
      for (const id of added) {
        this.broadcast([id], { type: 'stream', op: 'create', streams: [streamDict(this, stream)] });
      }
    }
    for (const id of added) {
      const user = this.users.get(id) as UserRecord;
      this.broadcast([id], {
        type: 'subscription',
        op: 'add',
        subscriptions: [subscriptionDict(this, stream, user, true)],
      });
    }
    const peers = this.peerViewers(stream).filter((id) => !added.includes(id));
    this.broadcast(peers, { type: 'subscription', op: 'peer_add', stream_ids: [stream.id], user_ids: added });
    return added;
  }

  removeSubscribers(stream: StreamRecord, userIds: number[]): number[] {
    const removed: number[] = [];
    for (const id of userIds) {
      if (!stream.subscribers.delete(id)) continue;
      stream.formerSubscribers.add(id);
      removed.push(id);
    }
    if (removed.length === 0) return removed;
    for (const id of removed) {
      this.broadcast([id], {
        type: 'subscription',
        op: 'remove',
        subscriptions: [{ stream_id: stream.id, name: stream.name }],
      });
    }
    this.broadcast(
      this.peerViewers(stream).filter((id) => !removed.includes(id)),
      {
        type: 'subscription',
        op: 'peer_remove',
        stream_ids: [stream.id],
        user_ids: removed,
      },
    );
    return removed;
  }

  /** Users who see a stream's subscriber list. */
  private peerViewers(stream: StreamRecord): number[] {
    if (stream.inviteOnly) return [...stream.subscribers.keys()];
    return this.activeMemberIds().filter((id) => !this.isGuest(this.users.get(id) as UserRecord));
  }

  activeSubscriberIds(stream: StreamRecord): number[] {
    const out: number[] = [];
    for (const id of stream.subscribers.keys()) if (this.users.get(id)?.isActive) out.push(id);
    return out;
  }

  // ---------------------------------------------------------------- group settings, folders

  /** Refuses a group-setting value naming no system group or an unknown user. */
  checkGroupSetting(value: GroupSetting, name: string): void {
    const groupIds = new Set<number>(Object.values(SYSTEM_GROUPS));
    if (typeof value === 'number') {
      if (!groupIds.has(value)) throw badRequest(`Invalid user group ID: ${value}`);
      return;
    }
    if (value === null || typeof value !== 'object' || !Array.isArray(value.direct_members)) {
      throw badRequest(`${name} is not a valid group-setting value`);
    }
    for (const id of value.direct_members) {
      const u = typeof id === 'number' ? this.users.get(id) : undefined;
      if (!u || u.system) throw badRequest(`Invalid user ID: ${String(id)}`);
    }
    for (const id of value.direct_subgroups ?? []) {
      if (!groupIds.has(id)) throw badRequest(`Invalid user group ID: ${String(id)}`);
    }
  }

  /** Whether `user` is in a system group (by id), following Zulip's role hierarchy. */
  private inSystemGroup(user: UserRecord, groupId: number): boolean {
    switch (groupId) {
      case SYSTEM_GROUPS['role:everyone']:
        return true;
      case SYSTEM_GROUPS['role:members']:
      case SYSTEM_GROUPS['role:fullmembers']:
        return user.role <= 400;
      case SYSTEM_GROUPS['role:moderators']:
        return user.role <= 300;
      case SYSTEM_GROUPS['role:administrators']:
        return user.role <= 200;
      case SYSTEM_GROUPS['role:owners']:
        return user.role === 100;
      default:
        return false;
    }
  }

  /** Whether `user` is in the set of users a group-setting value describes. */
  userInGroupSetting(user: UserRecord, value: GroupSetting): boolean {
    if (typeof value === 'number') return this.inSystemGroup(user, value);
    if (value.direct_members.includes(user.id)) return true;
    return (value.direct_subgroups ?? []).some((g) => this.inSystemGroup(user, g));
  }

  addChannelFolder(name: string, description: string, creatorId: number | null): ChannelFolderRecord {
    const trimmed = name.trim();
    if (trimmed === '') throw badRequest("Channel folder name can't be empty.");
    if (trimmed.length > MAX_CHANNEL_FOLDER_NAME_LENGTH) {
      throw badRequest(`Channel folder name too long (limit: ${MAX_CHANNEL_FOLDER_NAME_LENGTH} characters).`);
    }
    for (const f of this.channelFolders.values()) {
      if (f.name.toLowerCase() === trimmed.toLowerCase()) {
        throw badRequest(`Channel folder name already in use`);
      }
    }
    const folder: ChannelFolderRecord = {
      id: this.nextFolderId++,
      name: trimmed,
      description,
      renderedDescription: description ? renderMarkdown(description, this.renderContext).html : '',
      order: this.channelFolders.size,
      dateCreated: this.nowSeconds(),
      creatorId,
      isArchived: false,
    };
    this.channelFolders.set(folder.id, folder);
    this.broadcast(this.activeMemberIds(), {
      type: 'channel_folder',
      op: 'add',
      channel_folder: this.channelFolderDict(folder),
    });
    return folder;
  }

  channelFolderDict(f: ChannelFolderRecord): Record<string, unknown> {
    return {
      id: f.id,
      name: f.name,
      description: f.description,
      rendered_description: f.renderedDescription,
      order: f.order,
      date_created: f.dateCreated,
      creator_id: f.creatorId,
      is_archived: f.isArchived,
    };
  }

  // ---------------------------------------------------------------- emoji, fields

  activeRealmEmoji(name: string): RealmEmojiRecord | undefined {
    for (const e of this.realmEmoji.values()) if (e.name === name && !e.deactivated) return e;
    return undefined;
  }

  emojiUrl(e: RealmEmojiRecord): string {
    return `/user_avatars/${REALM_ID}/emoji/images/${e.id}.png`;
  }

  realmEmojiDict(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const e of this.realmEmoji.values()) {
      out[e.id] = {
        id: e.id,
        name: e.name,
        source_url: this.emojiUrl(e),
        still_url: null,
        deactivated: e.deactivated,
        author_id: e.authorId,
      };
    }
    return out;
  }

  addRealmEmoji(name: string, authorId: number, deactivated: boolean): RealmEmojiRecord {
    if (!/^[a-z0-9_-]+$/.test(name) || /^[_-]|[_-]$/.test(name)) {
      throw badRequest(
        'Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.',
      );
    }
    if (!deactivated && this.activeRealmEmoji(name))
      throw badRequest('A custom emoji with this name already exists.');
    const record: RealmEmojiRecord = { id: String(this.nextEmojiId++), name, authorId, deactivated };
    this.realmEmoji.set(record.id, record);
    this.broadcast(this.activeMemberIds(), {
      type: 'realm_emoji',
      op: 'update',
      realm_emoji: this.realmEmojiDict(),
    });
    return record;
  }

  addProfileField(name: string, type: number, hint: string, fieldData: string): ProfileFieldRecord {
    const field: ProfileFieldRecord = {
      id: this.nextProfileFieldId++,
      name,
      type,
      hint,
      fieldData,
      order: this.profileFields.size + 1,
    };
    this.profileFields.set(field.id, field);
    this.broadcast(this.activeMemberIds(), {
      type: 'custom_profile_fields',
      fields: this.profileFieldList(),
    });
    return field;
  }

  profileFieldList(): Record<string, unknown>[] {
    return [...this.profileFields.values()].map((f) => ({
      id: f.id,
      name: f.name,
      type: f.type,
      hint: f.hint,
      field_data: f.fieldData,
      order: f.order,
      display_in_profile_summary: false,
      required: false,
      editable_by_user: true,
    }));
  }

  // ---------------------------------------------------------------- events

  /** Sends one event (or a per-viewer variant) to every queue of the given users. */
  broadcast(
    userIds: Iterable<number>,
    event: Record<string, unknown> & { type: string },
    perUser?: (userId: number, queue: EventQueue) => (Record<string, unknown> & { type: string }) | null,
  ): void {
    const seen = new Set<number>();
    for (const id of userIds) {
      if (seen.has(id)) continue;
      seen.add(id);
      for (const queue of this.queues.forUser(id)) {
        const e = perUser ? perUser(id, queue) : event;
        if (e) this.queues.push(queue, e);
      }
    }
  }

  // ---------------------------------------------------------------- conversations

  conversationRecipient(userIds: readonly number[], create: boolean): number | undefined {
    const ids = [...new Set(userIds)].sort((a, b) => a - b);
    if (ids.length === 1) return this.users.get(ids[0] as number)?.recipientId;
    const key = ids.join(',');
    let rid = this.conversations.get(key);
    if (rid === undefined && create) {
      rid = this.nextRecipientId++;
      this.conversations.set(key, rid);
    }
    return rid;
  }

  topicKey(streamId: number, topic: string): string {
    return `${streamId}\u0000${topic.toLowerCase()}`;
  }

  private indexMessage(msg: MessageRecord): void {
    insertSorted(this.allIds, msg.id);
    if (msg.kind === 'stream') {
      this.listFor(this.byStream, msg.streamId, msg.id);
      this.listFor(this.byTopic, this.topicKey(msg.streamId, msg.topic), msg.id);
    } else {
      this.listFor(this.byConversation, msg.recipientId, msg.id);
    }
  }

  private unindexMessage(msg: MessageRecord): void {
    removeSorted(this.allIds, msg.id);
    if (msg.kind === 'stream') {
      const s = this.byStream.get(msg.streamId);
      if (s) removeSorted(s, msg.id);
      const key = this.topicKey(msg.streamId, msg.topic);
      const t = this.byTopic.get(key);
      if (t) {
        removeSorted(t, msg.id);
        if (t.length === 0) this.byTopic.delete(key);
      }
    } else {
      const c = this.byConversation.get(msg.recipientId);
      if (c) removeSorted(c, msg.id);
    }
  }

  private listFor<K>(map: Map<K, number[]>, key: K, id: number): void {
    let list = map.get(key);
    if (!list) {
      list = [];
      map.set(key, list);
    }
    insertSorted(list, id);
  }

  // ---------------------------------------------------------------- sending

  /** Zulip's content normalisation: strip, refuse empty or NUL, truncate with its marker. */
  normalizeContent(raw: string): string {
    const content = raw.replace(/\s+$/u, '').replace(/^\n+/, '');
    if (content === '') throw badRequest('Message must not be empty');
    if (content.includes('\u0000')) throw badRequest('Message must not contain null bytes');
    const max = this.config.maxMessageLength;
    if (codePointLength(content, max) > max) {
      const suffix = '\n[message truncated]';
      return Array.from(content)
        .slice(0, max - suffix.length)
        .join('')
        .concat(suffix);
    }
    return content;
  }

  /** Zulip's topic normalisation: strip, "(no topic)" means "", cut to 57 characters plus "...". */
  normalizeTopic(raw: string): string {
    let topic = raw.trim();
    if (topic.includes('\u0000')) throw badRequest('Topic must not contain null bytes');
    if (topic === '(no topic)') topic = '';
    if (codePointLength(topic, MAX_TOPIC_LENGTH) > MAX_TOPIC_LENGTH) {
      topic = `${Array.from(topic)
        .slice(0, MAX_TOPIC_LENGTH - 3)
        .join('')}...`;
    }
    return topic;
  }

  /** Checks that `sender` may post to `stream` (public, or subscribed). */
  checkCanPost(sender: UserRecord, stream: StreamRecord): void {
    if (sender.system) return;
    if (!stream.inviteOnly && !this.isGuest(sender)) return;
    if (stream.subscribers.has(sender.id)) return;
    throw badRequest(`Not authorized to send to channel '${stream.name}'`);
  }

  /** Whether any message is in this topic of this channel (topics match case-insensitively). */
  topicExists(stream: StreamRecord, topic: string): boolean {
    return (this.byTopic.get(this.topicKey(stream.id, topic))?.length ?? 0) > 0;
  }

  /**
   * The per-channel topic rules of a send or move: `can_create_topic_group` for a new topic
   * (FL441; a bot may use its owner's permission) and the channel's `topics_policy`.
   */
  checkTopicRules(sender: UserRecord, stream: StreamRecord, topic: string): void {
    if (sender.system) return;
    if (this.has(FL.canCreateTopicGroup) && !this.topicExists(stream, topic)) {
      const setting = stream.canCreateTopicGroup;
      const owner =
        sender.isBot && sender.botOwnerId !== null ? this.users.get(sender.botOwnerId) : undefined;
      const allowed =
        this.userInGroupSetting(sender, setting) ||
        (owner !== undefined && this.userInGroupSetting(owner, setting));
      if (!allowed) throw badRequest('You do not have permission to create new topics in this channel.');
    }
    const policy = stream.topicsPolicy === 'inherit' ? REALM_TOPICS_POLICY : stream.topicsPolicy;
    if (policy === 'disable_empty_topic' && topic === '') {
      throw badRequest(
        `Sending messages to the ${EMPTY_TOPIC_DISPLAY_NAME} topic is not allowed in this channel.`,
      );
    }
    if (policy === 'empty_topic_only' && topic !== '') {
      throw badRequest(`Only the ${EMPTY_TOPIC_DISPLAY_NAME} topic is allowed in this channel.`);
    }
  }

  render(content: string): RenderResult {
    return renderMarkdown(content, this.renderContext);
  }

  private topicParticipants(streamId: number, topic: string): Set<number> {
    const out = new Set<number>();
    for (const id of this.byTopic.get(this.topicKey(streamId, topic)) ?? []) {
      const m = this.messages.get(id);
      if (m) out.add(m.senderId);
    }
    return out;
  }

  private alertMatches(user: UserRecord, content: string): boolean {
    if (user.alertWords.length === 0) return false;
    const lower = content.toLowerCase();
    return user.alertWords.some((w) => {
      const word = w.toLowerCase();
      let at = lower.indexOf(word);
      while (at >= 0) {
        const before = at === 0 ? '' : (lower[at - 1] as string);
        const after = lower[at + word.length] ?? '';
        if (!/[\p{L}\p{N}_]/u.test(before) && !/[\p{L}\p{N}_]/u.test(after)) return true;
        at = lower.indexOf(word, at + 1);
      }
      return false;
    });
  }

  private mentionBits(
    user: UserRecord,
    msg: MessageRecord,
    participants: () => Set<number>,
    senderId: number,
  ): number {
    let bits = 0;
    if (msg.mentionedUserIds.includes(user.id)) bits |= Flag.mentioned;
    if (msg.streamWildcard) bits |= Flag.streamWildcard;
    if (msg.topicWildcard && (msg.kind === 'private' || participants().has(user.id)))
      bits |= Flag.topicWildcard;
    if (user.id !== senderId && this.alertMatches(user, msg.content)) bits |= Flag.alert;
    return bits;
  }

  /** Sends a message exactly as POST /messages does; returns the record. */
  send(sender: UserRecord, target: SendTarget, rawContent: string, opts: SendOptions): MessageRecord {
    const content = this.normalizeContent(rawContent);
    let recipientId: number;
    let dmUserIds: readonly number[] = NONE;
    let recipients: number[];
    if (target.kind === 'stream') {
      this.checkCanPost(sender, target.stream);
      this.checkTopicRules(sender, target.stream, target.topic);
      recipientId = target.stream.recipientId;
      recipients = this.activeSubscriberIds(target.stream);
    } else {
      dmUserIds = [...new Set([...target.userIds, sender.id])].sort((a, b) => a - b);
      recipientId = this.conversationRecipient(dmUserIds, true) as number;
      recipients = dmUserIds.filter((id) => !this.users.get(id)?.system || id === sender.id);
    }
    const rendered = this.render(content);
    const msg = new MessageRecord({
      id: this.nextMessageId++,
      senderId: sender.id,
      kind: target.kind,
      streamId: target.kind === 'stream' ? target.stream.id : 0,
      topic: target.kind === 'stream' ? this.intern(target.topic) : '',
      recipientId,
      dmUserIds,
      content,
      rendered: rendered.html,
      timestamp: opts.timestamp ?? this.nowSeconds(),
      client: this.intern(opts.client),
    });
    msg.isMeMessage = rendered.isMeMessage;
    msg.hasLink = rendered.hasLink;
    msg.hasImage = rendered.hasImage;
    msg.streamWildcard = rendered.streamWildcard;
    msg.topicWildcard = rendered.topicWildcard;
    if (rendered.mentionedUserIds.length > 0) msg.mentionedUserIds = rendered.mentionedUserIds;
    this.claimUploads(msg, rendered.uploadPaths, sender);
    let participants: Set<number> | undefined;
    const getParticipants = (): Set<number> => {
      if (!participants) {
        participants = target.kind === 'stream' ? this.topicParticipants(msg.streamId, msg.topic) : new Set();
        participants.add(sender.id);
      }
      return participants;
    };
    const readBySender = opts.readBySender ?? defaultReadBySender(opts.client);
    const flagsByUser = new Map<number, number>();
    for (const id of recipients) {
      const user = this.users.get(id) as UserRecord;
      let bits = this.mentionBits(user, msg, getParticipants, sender.id);
      if (id === sender.id && readBySender) bits |= Flag.read;
      user.messages.set(msg.id, bits);
      flagsByUser.set(id, bits);
    }
    this.messages.set(msg.id, msg);
    this.indexMessage(msg);
    if (target.kind === 'stream' && target.stream.firstMessageId === null)
      target.stream.firstMessageId = msg.id;
    this.emitMessage(msg, flagsByUser, opts.senderQueueId, opts.localId);
    return msg;
  }

  private emitMessage(
    msg: MessageRecord,
    flagsByUser: Map<number, number>,
    senderQueueId: string | undefined,
    localId: string | undefined,
  ): void {
    const variants = new Map<string, Record<string, unknown>>();
    const handled = new Set<string>();
    const deliver = (queue: EventQueue, bits: number, listedFlags: string[]): void => {
      if (!queue.accepts('message')) return;
      if (!this.eventNarrowMatches(queue, msg, bits)) return;
      const s = queue.settings;
      const allowEmpty = s.capabilities.empty_topic_name ?? false;
      const key = `${s.applyMarkdown ? 1 : 0}${s.clientGravatar ? 1 : 0}${allowEmpty ? 1 : 0}`;
      let dict = variants.get(key);
      if (!dict) {
        dict = messageDict(this, msg, {
          applyMarkdown: s.applyMarkdown,
          clientGravatar: s.clientGravatar,
          allowEmptyTopicName: allowEmpty,
        });
        variants.set(key, dict);
      }
      const event: Record<string, unknown> & { type: string } = {
        type: 'message',
        message: dict,
        flags: listedFlags,
      };
      if (queue.id === senderQueueId && localId !== undefined && queue.settings.userId === msg.senderId) {
        event.local_message_id = localId;
      }
      this.queues.push(queue, event);
    };
    for (const [userId, bits] of flagsByUser) {
      const names = flagNames(bits);
      for (const queue of this.queues.forUser(userId)) {
        handled.add(queue.id);
        deliver(queue, bits, names);
      }
    }
    if (msg.kind === 'stream') {
      const stream = this.streams.get(msg.streamId) as StreamRecord;
      if (!stream.inviteOnly) {
        for (const queue of this.queues.publicStreamQueues()) {
          if (handled.has(queue.id)) continue;
          const owner = this.users.get(queue.settings.userId);
          if (!owner || this.isGuest(owner)) continue;
          deliver(queue, 0, []);
        }
      }
    }
  }

  /** The register-time narrow of a queue, applied to a message event (legacy pairs only). */
  eventNarrowMatches(queue: EventQueue, msg: MessageRecord, bits: number): boolean {
    for (const [operator, operand] of queue.settings.narrow) {
      switch (operator) {
        case 'stream':
        case 'channel': {
          if (msg.kind !== 'stream') return false;
          const s = this.streams.get(msg.streamId);
          if (!s || s.name.toLowerCase() !== operand.toLowerCase()) return false;
          break;
        }
        case 'topic':
          if (msg.kind !== 'stream' || msg.topic.toLowerCase() !== operand.toLowerCase()) return false;
          break;
        case 'sender': {
          const u = this.users.get(msg.senderId);
          if (!u || u.email.toLowerCase() !== operand.toLowerCase()) return false;
          break;
        }
        case 'is':
          if (operand === 'dm' || operand === 'private') {
            if (msg.kind !== 'private') return false;
          } else if (operand === 'starred') {
            if (!(bits & Flag.starred)) return false;
          } else if (operand === 'unread') {
            if (bits & Flag.read) return false;
          } else if (operand === 'mentioned') {
            if (!(bits & (Flag.mentioned | Flag.streamWildcard | Flag.topicWildcard))) return false;
          } else if (operand === 'alerted') {
            if (!(bits & Flag.alert)) return false;
          } else if (operand === 'resolved') {
            if (msg.kind !== 'stream' || !msg.topic.startsWith(RESOLVED_PREFIX)) return false;
          } else {
            return false;
          }
          break;
        default:
          return false;
      }
    }
    return true;
  }

  /** Posts as Notification Bot (move breadcrumbs, stream creation, subscription notices). */
  private notify(target: SendTarget, content: string): void {
    this.send(this.notificationBot, target, content, { client: 'Internal' });
  }

  // ---------------------------------------------------------------- uploads

  private claimUploads(msg: MessageRecord, paths: string[], sender: UserRecord): void {
    for (const old of msg.uploadPaths) this.uploadRefs.get(old)?.delete(msg.id);
    const claimed: string[] = [];
    for (const path of paths) {
      const upload = this.uploads.get(path);
      // Zulip links an attachment only when its owner is the one posting it.
      if (!upload || upload.ownerId !== sender.id) continue;
      claimed.push(path);
      let refs = this.uploadRefs.get(path);
      if (!refs) {
        refs = new Set();
        this.uploadRefs.set(path, refs);
      }
      refs.add(msg.id);
    }
    msg.uploadPaths = claimed.length > 0 ? claimed : NONE;
    msg.hasAttachment = claimed.length > 0;
  }

  storeUpload(owner: UserRecord, filename: string, bytes: Buffer, contentType: string): UploadRecord {
    const limit = this.config.maxUploadMib * 1024 * 1024;
    if (bytes.length > limit) {
      throw badRequest(`Uploaded file is larger than the allowed limit of ${this.config.maxUploadMib} MiB`);
    }
    const name = sanitizeFilename(filename);
    const token = randomBytes(18).toString('base64url');
    const pathId = `${REALM_ID}/${randomInt(0, 256).toString(16)}/${token}/${name}`;
    const record: UploadRecord = {
      id: this.nextUploadId++,
      pathId,
      url: `/user_uploads/${pathId}`,
      filename: name,
      contentType: contentType || guessContentType(name),
      bytes,
      ownerId: owner.id,
      createdAt: this.now(),
    };
    this.uploads.set(pathId, record);
    return record;
  }

  /** Whether any message still links the upload. */
  uploadReferenced(pathId: string): boolean {
    return (this.uploadRefs.get(pathId)?.size ?? 0) > 0;
  }

  /** Whether `user` may read an upload: its owner, or someone who can see a message linking it. */
  canReadUpload(user: UserRecord, upload: UploadRecord): boolean {
    if (upload.ownerId === user.id) return true;
    for (const id of this.uploadRefs.get(upload.pathId) ?? []) {
      const msg = this.messages.get(id);
      if (msg && this.canAccessMessage(user, msg)) return true;
    }
    return false;
  }

  temporaryUrl(upload: UploadRecord): string {
    const token = randomBytes(16).toString('hex');
    this.temporaryUrls.set(token, { pathId: upload.pathId, expires: this.now() + 60_000 });
    return `/user_uploads/temporary/${token}/${encodeURIComponent(upload.filename)}`;
  }

  resolveTemporaryUrl(token: string): UploadRecord | undefined {
    const entry = this.temporaryUrls.get(token);
    if (!entry) return undefined;
    if (entry.expires <= this.now()) {
      this.temporaryUrls.delete(token);
      return undefined;
    }
    return this.uploads.get(entry.pathId);
  }

  // ---------------------------------------------------------------- edits and moves

  /** PATCH /messages/{id}: content edits and topic/stream moves, with Zulip's checks. */
  edit(actor: UserRecord, msg: MessageRecord, req: EditRequest): void {
    if (req.content === undefined && req.topic === undefined && req.streamId === undefined) {
      throw badRequest('Nothing to change');
    }
    if (!['change_one', 'change_later', 'change_all'].includes(req.propagateMode)) {
      throw badRequest('Invalid propagate_mode');
    }
    if (req.propagateMode !== 'change_one' && req.topic === undefined && req.streamId === undefined) {
      throw badRequest('Invalid propagate_mode without topic edit');
    }
    if (req.content !== undefined && req.streamId !== undefined) {
      throw badRequest('Cannot change message content while changing channel');
    }
    if (msg.kind === 'private') {
      if (req.streamId !== undefined) throw badRequest('Direct messages cannot be moved to channels.');
      if (req.topic !== undefined) throw badRequest('Direct messages cannot have topics.');
    }
    const now = this.nowSeconds();
    let newContent: string | undefined;
    if (req.content !== undefined) {
      if (msg.senderId !== actor.id) throw badRequest("You don't have permission to edit this message");
      if (now - msg.timestamp > this.config.editLimitSeconds + EDIT_GRACE_SECONDS) {
        throw badRequest('The time limit for editing this message has passed');
      }
      newContent = this.normalizeContent(req.content);
    }
    const oldStream = msg.kind === 'stream' ? (this.streams.get(msg.streamId) as StreamRecord) : undefined;
    let newTopic = req.topic === undefined ? undefined : this.normalizeTopic(req.topic);
    let newStream: StreamRecord | undefined;
    if (req.streamId !== undefined && oldStream) {
      const target = this.streams.get(req.streamId);
      if (!target || !this.canSeeStream(actor, target)) throw badRequest('Invalid channel ID');
      if (target.id !== oldStream.id) newStream = target;
    }
    if (newTopic !== undefined && newTopic === msg.topic) newTopic = undefined;
    const moving = newTopic !== undefined || newStream !== undefined;
    if (newContent === undefined && !moving) {
      if (req.content === undefined) throw badRequest('Nothing to change');
    }
    if (moving) {
      if (this.isGuest(actor)) throw badRequest("You don't have permission to edit this message");
      if (newStream) this.checkCanPost(actor, newStream);
      if (oldStream) this.checkTopicRules(actor, newStream ?? oldStream, newTopic ?? msg.topic);
      if (!this.isModerator(actor) && now - msg.timestamp > MOVE_LIMIT_SECONDS) {
        throw badRequest(
          newStream
            ? "The time limit for editing this message's channel has passed"
            : "The time limit for editing this message's topic has passed",
        );
      }
    }
    let moved: MessageRecord[] = [msg];
    if (moving && oldStream && req.propagateMode !== 'change_one') {
      const ids = this.byTopic.get(this.topicKey(msg.streamId, msg.topic)) ?? [];
      moved = ids
        .filter((id) => req.propagateMode === 'change_all' || id >= msg.id)
        .map((id) => this.messages.get(id) as MessageRecord)
        .filter((m) => this.canAccessMessage(actor, m));
      if (req.propagateMode === 'change_all' && !this.isModerator(actor)) {
        const allowed = moved.filter((m) => now - m.timestamp <= MOVE_LIMIT_SECONDS);
        if (allowed.length < moved.length) {
          throw new ApiError(
            400,
            'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED',
            `You only have permission to move the ${allowed.length}/${moved.length} most recent messages in this topic.`,
            {
              first_message_id_allowed_to_move: allowed[0]?.id ?? null,
              total_messages_in_topic: moved.length,
              total_messages_allowed_to_move: allowed.length,
            },
          );
        }
      }
    }

    // Who hears about it: recipients before the change, and shared-history subscribers.
    const audience = new Set<number>();
    const addHolders = (m: MessageRecord): void => {
      if (m.kind === 'private') {
        for (const id of m.dmUserIds) audience.add(id);
        return;
      }
      for (const u of this.users.values()) if (u.messages.has(m.id)) audience.add(u.id);
    };
    for (const m of moved) addHolders(m);
    if (oldStream?.historyPublic) for (const id of oldStream.subscribers.keys()) audience.add(id);
    if (newStream?.historyPublic) for (const id of newStream.subscribers.keys()) audience.add(id);

    const event: Record<string, unknown> & { type: string } = {
      type: 'update_message',
      user_id: actor.id,
      edit_timestamp: now,
      message_id: msg.id,
      message_ids: moved.map((m) => m.id).sort((a, b) => a - b),
      rendering_only: false,
    };
    if (oldStream) {
      event.stream_id = oldStream.id;
      event.stream_name = oldStream.name;
    }

    if (newContent !== undefined) {
      const prevContent = msg.content;
      const prevRendered = msg.rendered;
      const rendered = this.render(newContent);
      msg.content = newContent;
      msg.rendered = rendered.html;
      msg.isMeMessage = rendered.isMeMessage;
      msg.hasLink = rendered.hasLink;
      msg.hasImage = rendered.hasImage;
      msg.mentionedUserIds = rendered.mentionedUserIds.length > 0 ? rendered.mentionedUserIds : NONE;
      msg.streamWildcard = rendered.streamWildcard;
      msg.topicWildcard = rendered.topicWildcard;
      this.claimUploads(msg, rendered.uploadPaths, this.users.get(msg.senderId) as UserRecord);
      msg.lastEditTimestamp = now;
      const participants =
        msg.kind === 'stream' ? this.topicParticipants(msg.streamId, msg.topic) : new Set<number>();
      const mentionMask = Flag.mentioned | Flag.streamWildcard | Flag.topicWildcard | Flag.alert;
      for (const u of this.users.values()) {
        const bits = u.messages.get(msg.id);
        if (bits === undefined) continue;
        const fresh = this.mentionBits(u, msg, () => participants, msg.senderId);
        u.messages.set(msg.id, (bits & ~mentionMask) | fresh);
      }
      event.orig_content = prevContent;
      event.orig_rendered_content = prevRendered;
      event.content = newContent;
      event.rendered_content = rendered.html;
      event.is_me_message = rendered.isMeMessage;
      msg.editHistory = [
        {
          userId: actor.id,
          timestamp: now,
          prevContent,
          prevRenderedContent: prevRendered,
          ...(newTopic !== undefined ? { prevTopic: msg.topic, topic: newTopic } : {}),
        },
        ...msg.editHistory,
      ];
      this.touched(msg);
    }

    const losers = new Map<number, number[]>();
    const origTopic = msg.topic;
    if (moving && oldStream) {
      const target = newStream ?? oldStream;
      const topic = newTopic ?? origTopic;
      for (const m of moved) {
        this.unindexMessage(m);
        if (m !== msg || newContent === undefined) {
          m.editHistory = [
            {
              userId: actor.id,
              timestamp: now,
              ...(newTopic !== undefined ? { prevTopic: m.topic, topic } : {}),
              ...(newStream ? { prevStream: oldStream.id, stream: newStream.id } : {}),
            },
            ...m.editHistory,
          ];
        } else if (newStream) {
          Object.assign(m.editHistory[0] as object, { prevStream: oldStream.id, stream: newStream.id });
        }
        m.streamId = target.id;
        m.recipientId = target.recipientId;
        m.topic = this.intern(topic);
        m.lastMovedTimestamp = now;
        this.touched(m);
        this.indexMessage(m);
        if (target.firstMessageId === null || m.id < target.firstMessageId) target.firstMessageId = m.id;
      }
      if (newStream) {
        const firstLeft = this.byStream.get(oldStream.id)?.[0];
        oldStream.firstMessageId = firstLeft ?? null;
        for (const u of this.users.values()) {
          const lost: number[] = [];
          for (const m of moved) {
            if (!u.messages.has(m.id)) continue;
            if (!newStream.subscribers.has(u.id) && !this.canReadHistory(u, newStream)) {
              u.messages.remove(m.id);
              lost.push(m.id);
            }
          }
          if (lost.length > 0) losers.set(u.id, lost);
        }
        if (!newStream.historyPublic) {
          for (const id of this.activeSubscriberIds(newStream)) {
            const u = this.users.get(id) as UserRecord;
            for (const m of moved) if (!u.messages.has(m.id)) u.messages.set(m.id, Flag.read);
          }
        }
        event.new_stream_id = newStream.id;
      }
      event.propagate_mode = req.propagateMode;
      event.orig_subject = origTopic;
      if (newTopic !== undefined) {
        event.subject = newTopic;
        event.topic_links = [];
      }
    }
    if (newStream && !newStream.historyPublic)
      for (const id of this.activeSubscriberIds(newStream)) audience.add(id);

    this.broadcast(audience, event, (userId) => {
      if (losers.has(userId) && losers.get(userId)?.includes(msg.id)) return null;
      const bits = this.users.get(userId)?.messages.get(msg.id);
      return { ...event, flags: bits === undefined ? ['read'] : flagNames(bits) };
    });
    for (const [userId, ids] of losers) {
      this.emitDeletes([userId], ids, { kind: 'stream', streamId: oldStream?.id ?? 0, topic: origTopic });
    }

    if (moving && oldStream)
      this.moveBreadcrumbs(actor, oldStream, newStream, moved, req, newTopic, origTopic);
  }

  private moveBreadcrumbs(
    actor: UserRecord,
    oldStream: StreamRecord,
    newStream: StreamRecord | undefined,
    moved: MessageRecord[],
    req: EditRequest,
    newTopic: string | undefined,
    origTopic: string,
  ): void {
    const first = moved[0] as MessageRecord;
    const target = newStream ?? oldStream;
    const topic = first.topic;
    const user = `@_**${actor.fullName}|${actor.id}**`;
    if (!newStream && newTopic !== undefined) {
      const resolved = newTopic === `${RESOLVED_PREFIX}${origTopic}`;
      const unresolved = origTopic === `${RESOLVED_PREFIX}${newTopic}`;
      if (resolved || unresolved) {
        this.notify(
          { kind: 'stream', stream: target, topic },
          `${user} has marked this topic as ${resolved ? 'resolved' : 'unresolved'}.`,
        );
        return;
      }
    }
    const oldLocation = `#**${oldStream.name}>${origTopic}**`;
    const newLocation = `#**${target.name}>${topic}**`;
    const leftBehind = (this.byTopic.get(this.topicKey(oldStream.id, origTopic)) ?? []).length;
    const movedAll = leftBehind === 0;
    const n = moved.length;
    if (req.notifyNewThread) {
      const text = movedAll
        ? `This topic was moved here from ${oldLocation} by ${user}.`
        : n === 1
          ? `A message was moved here from ${oldLocation} by ${user}.`
          : `${n} messages were moved here from ${oldLocation} by ${user}.`;
      this.notify({ kind: 'stream', stream: target, topic }, text);
    }
    if (req.notifyOldThread) {
      const text = movedAll
        ? `This topic was moved to ${newLocation} by ${user}.`
        : n === 1
          ? `A message was moved from this topic to ${newLocation} by ${user}.`
          : `${n} messages were moved from this topic to ${newLocation} by ${user}.`;
      this.notify({ kind: 'stream', stream: oldStream, topic: origTopic }, text);
    }
  }

  /** A rendering-only update (e.g. a link preview arriving): not an edit, no history. */
  renderingUpdate(msg: MessageRecord, rendered: string): void {
    msg.rendered = rendered;
    this.touched(msg);
    const audience = this.holders(msg);
    const event = {
      type: 'update_message',
      user_id: null,
      edit_timestamp: this.nowSeconds(),
      message_id: msg.id,
      message_ids: [msg.id],
      rendering_only: true,
      content: msg.content,
      rendered_content: rendered,
    };
    this.broadcast(audience, event, (userId) => {
      const bits = this.users.get(userId)?.messages.get(msg.id);
      return { ...event, flags: bits === undefined ? ['read'] : flagNames(bits) };
    });
  }

  /** Users with the message, plus current subscribers of a shared-history stream. */
  holders(msg: MessageRecord): Set<number> {
    const out = new Set<number>();
    if (msg.kind === 'private') {
      for (const id of msg.dmUserIds) out.add(id);
      return out;
    }
    for (const u of this.users.values()) if (u.messages.has(msg.id)) out.add(u.id);
    const stream = this.streams.get(msg.streamId);
    if (stream?.historyPublic) for (const id of stream.subscribers.keys()) out.add(id);
    return out;
  }

  // ---------------------------------------------------------------- deletion

  checkCanDelete(actor: UserRecord, msg: MessageRecord): void {
    if (this.isAdmin(actor)) return;
    if (msg.senderId !== actor.id) throw badRequest("You don't have permission to delete this message");
    if (this.nowSeconds() - msg.timestamp > DELETE_LIMIT_SECONDS) {
      throw badRequest('The time limit for deleting this message has passed');
    }
  }

  /** Deletes messages (all of one conversation) and emits delete_message events. */
  deleteMessages(actor: UserRecord, msgs: MessageRecord[]): void {
    if (msgs.length === 0) return;
    const first = msgs[0] as MessageRecord;
    const audience = new Set<number>([actor.id]);
    for (const msg of msgs) for (const id of this.holders(msg)) audience.add(id);
    const ids = msgs.map((m) => m.id).sort((a, b) => a - b);
    const where =
      first.kind === 'stream'
        ? { kind: 'stream' as const, streamId: first.streamId, topic: first.topic }
        : { kind: 'private' as const };
    for (const msg of msgs) {
      this.unindexMessage(msg);
      this.messages.delete(msg.id);
      for (const path of msg.uploadPaths) this.uploadRefs.get(path)?.delete(msg.id);
      for (const u of this.users.values()) u.messages.remove(msg.id);
      if (msg.kind === 'stream') {
        const stream = this.streams.get(msg.streamId) as StreamRecord;
        if (stream.firstMessageId === msg.id)
          stream.firstMessageId = this.byStream.get(stream.id)?.[0] ?? null;
      }
    }
    this.emitDeletes([...audience], ids, where);
  }

  private emitDeletes(
    userIds: number[],
    ids: number[],
    where: { kind: 'stream'; streamId: number; topic: string } | { kind: 'private' },
  ): void {
    const extra: Record<string, unknown> =
      where.kind === 'stream'
        ? { message_type: 'stream', stream_id: where.streamId, topic: where.topic }
        : { message_type: 'private' };
    for (const userId of new Set(userIds)) {
      for (const queue of this.queues.forUser(userId)) {
        if (queue.settings.capabilities.bulk_message_deletion) {
          this.queues.push(queue, { type: 'delete_message', message_ids: ids, ...extra });
        } else {
          for (const id of ids) this.queues.push(queue, { type: 'delete_message', message_id: id, ...extra });
        }
      }
    }
  }

  // ---------------------------------------------------------------- reactions

  /** Resolves and validates an emoji the way Zulip's reaction endpoints do. */
  resolveEmoji(
    name: string,
    code: string | undefined,
    type: string | undefined,
  ): { name: string; code: string; type: ReactionType } {
    let emojiCode = code;
    let reactionType = type;
    if (emojiCode === undefined) {
      const found = this.emojiByName(name);
      if (!found) throw badRequest(`Emoji '${name}' does not exist`);
      emojiCode = found.code;
      reactionType ??= found.type;
    }
    if (reactionType === undefined) {
      const found = this.emojiByName(name);
      reactionType = found?.type ?? 'unicode_emoji';
    }
    if (reactionType === 'realm_emoji') {
      const e = this.realmEmoji.get(emojiCode);
      if (!e || e.deactivated) throw badRequest('Invalid custom emoji.');
      if (e.name !== name) throw badRequest('Invalid custom emoji name.');
    } else if (reactionType === 'zulip_extra_emoji') {
      if (emojiCode !== ZULIP_EXTRA_EMOJI) throw badRequest('Invalid emoji code.');
      if (name !== ZULIP_EXTRA_EMOJI) throw badRequest('Invalid emoji name.');
    } else if (reactionType === 'unicode_emoji') {
      if (!isUnicodeEmojiCode(emojiCode)) throw badRequest('Invalid emoji code.');
      if (!unicodeEmojiHasName(emojiCode, name)) throw badRequest('Invalid emoji name.');
    } else {
      throw badRequest('Invalid emoji type.');
    }
    return { name, code: emojiCode, type: reactionType };
  }

  emojiByName(name: string): { code: string; type: ReactionType } | undefined {
    const realm = this.activeRealmEmoji(name);
    if (realm) return { code: realm.id, type: 'realm_emoji' };
    if (name === ZULIP_EXTRA_EMOJI) return { code: ZULIP_EXTRA_EMOJI, type: 'zulip_extra_emoji' };
    const code = unicodeEmojiCode(name);
    return code ? { code, type: 'unicode_emoji' } : undefined;
  }

  /** Gives `user` a historical UserMessage row for an accessible message they never received. */
  ensureRow(user: UserRecord, msg: MessageRecord): void {
    if (!user.messages.has(msg.id)) user.messages.set(msg.id, Flag.read | Flag.historical);
  }

  addReaction(
    user: UserRecord,
    msg: MessageRecord,
    emoji: { name: string; code: string; type: ReactionType },
  ): void {
    if (
      msg.reactions.some(
        (r) => r.userId === user.id && r.emojiCode === emoji.code && r.reactionType === emoji.type,
      )
    ) {
      throw new ApiError(400, 'REACTION_ALREADY_EXISTS', 'Reaction already exists.');
    }
    // Another user's reaction with the same code keeps its name, as Zulip does.
    const sameCode = msg.reactions.find((r) => r.emojiCode === emoji.code && r.reactionType === emoji.type);
    const reaction: ReactionRecord = {
      emojiName: sameCode?.emojiName ?? emoji.name,
      emojiCode: emoji.code,
      reactionType: emoji.type,
      userId: user.id,
    };
    this.ensureRow(user, msg);
    msg.reactions = [...msg.reactions, reaction];
    this.touched(msg);
    this.emitReaction('add', user, msg, reaction);
  }

  removeReaction(user: UserRecord, msg: MessageRecord, code: string, type: string): void {
    const at = msg.reactions.findIndex(
      (r) => r.userId === user.id && r.emojiCode === code && r.reactionType === type,
    );
    if (at < 0) throw new ApiError(400, 'REACTION_DOES_NOT_EXIST', "Reaction doesn't exist.");
    const reaction = msg.reactions[at] as ReactionRecord;
    msg.reactions = msg.reactions.length === 1 ? NONE : msg.reactions.filter((_, i) => i !== at);
    this.touched(msg);
    this.emitReaction('remove', user, msg, reaction);
  }

  private emitReaction(op: 'add' | 'remove', user: UserRecord, msg: MessageRecord, r: ReactionRecord): void {
    this.broadcast(this.holders(msg), {
      type: 'reaction',
      op,
      message_id: msg.id,
      user_id: user.id,
      user: { user_id: user.id, email: user.email, full_name: user.fullName },
      emoji_name: r.emojiName,
      emoji_code: r.emojiCode,
      reaction_type: r.reactionType,
    });
  }

  // ---------------------------------------------------------------- flags

  /** POST /messages/flags semantics; returns ids that changed and stream ids ignored. */
  updateFlags(
    user: UserRecord,
    ids: number[],
    op: string,
    flag: string,
  ): { changed: number[]; ignoredStreams: number[] } {
    const bit = this.checkFlagRequest(op, flag);
    const historical: MessageRecord[] = [];
    for (const id of ids) {
      if (user.messages.has(id)) continue;
      const msg = this.messages.get(id);
      if (!msg || !this.canAccessMessage(user, msg)) throw badRequest('Invalid message(s)');
      historical.push(msg);
    }
    for (const msg of historical) this.ensureRow(user, msg);
    return this.applyFlag(user, ids, op, flag, bit);
  }

  checkFlagRequest(op: string, flag: string): number {
    const bit = EDITABLE_FLAGS[flag];
    if (bit === undefined) {
      if (NON_EDITABLE_FLAGS.has(flag)) throw badRequest(`Flag not editable: '${flag}'`);
      throw badRequest(`Invalid flag: '${flag}'`);
    }
    if (op !== 'add' && op !== 'remove') throw badRequest(`Invalid message flag operation: '${op}'`);
    return bit;
  }

  applyFlag(
    user: UserRecord,
    ids: number[],
    op: string,
    flag: string,
    bit: number,
  ): { changed: number[]; ignoredStreams: number[] } {
    const changed: number[] = [];
    const ignored = new Set<number>();
    for (const id of [...new Set(ids)].sort((a, b) => a - b)) {
      const bits = user.messages.get(id);
      if (bits === undefined) continue;
      if (op === 'remove' && flag === 'read') {
        const msg = this.messages.get(id);
        if (msg?.kind === 'stream' && !this.streams.get(msg.streamId)?.subscribers.has(user.id)) {
          ignored.add(msg.streamId);
          continue;
        }
      }
      const next = op === 'add' ? bits | bit : bits & ~bit;
      if (next === bits) continue;
      user.messages.set(id, next);
      changed.push(id);
    }
    const event: Record<string, unknown> & { type: string } = {
      type: 'update_message_flags',
      op,
      operation: op,
      flag,
      messages: changed,
      all: false,
    };
    if (op === 'remove' && flag === 'read') {
      const details: Record<string, unknown> = {};
      for (const id of changed) {
        const msg = this.messages.get(id) as MessageRecord;
        const bits = user.messages.get(id) ?? 0;
        const mentioned = (bits & (Flag.mentioned | Flag.streamWildcard | Flag.topicWildcard)) !== 0;
        details[String(id)] =
          msg.kind === 'stream'
            ? {
                type: 'stream',
                stream_id: msg.streamId,
                topic: msg.topic,
                unmuted_stream_msg: true,
                ...(mentioned ? { mentioned } : {}),
              }
            : {
                type: 'private',
                user_ids: msg.dmUserIds.filter((u) => u !== user.id),
                ...(mentioned ? { mentioned } : {}),
              };
      }
      event.message_details = details;
    }
    this.broadcast([user.id], event);
    return { changed, ignoredStreams: [...ignored] };
  }

  // ---------------------------------------------------------------- typing

  typingDirect(sender: UserRecord, op: string, to: UserRecord[]): void {
    const people = [...new Map([sender, ...to].map((u) => [u.id, u])).values()].sort((a, b) => a.id - b.id);
    const event = {
      type: 'typing',
      op,
      message_type: 'direct',
      sender: { user_id: sender.id, email: sender.email },
      recipients: people.map((u) => ({ user_id: u.id, email: u.email })),
    };
    this.broadcast(
      people.map((u) => u.id),
      event,
    );
  }

  typingStream(sender: UserRecord, op: string, stream: StreamRecord, topic: string): void {
    const subscribers = this.activeSubscriberIds(stream);
    if (subscribers.length > MAX_STREAM_SIZE_FOR_TYPING) return;
    const event = {
      type: 'typing',
      op,
      message_type: 'stream',
      sender: { user_id: sender.id, email: sender.email },
      stream_id: stream.id,
      topic,
    };
    this.broadcast(subscribers, event, (_id, queue) =>
      queue.settings.capabilities.stream_typing_notifications ? event : null,
    );
  }

  // ---------------------------------------------------------------- stream creation notices

  /** The "channel events" message Zulip posts in a stream created through the API. */
  announceNewStream(stream: StreamRecord, creator: UserRecord): void {
    const policy = stream.isWebPublic
      ? 'Web-public'
      : !stream.inviteOnly
        ? 'Public'
        : stream.historyPublic
          ? 'Private, shared history'
          : 'Private, protected history';
    const description = stream.description
      ? `\`\`\`\` quote\n${stream.description}\n\`\`\`\``
      : '*No description.*';
    this.notify(
      { kind: 'stream', stream, topic: stream.topicsPolicy === 'empty_topic_only' ? '' : NOTIFICATION_TOPIC },
      `**${policy}** channel created by @_**${creator.fullName}|${creator.id}**. **Description:**\n${description}`,
    );
  }

  /** The direct message Notification Bot sends someone subscribed by another user. */
  announceSubscribedBy(actor: UserRecord, user: UserRecord, streams: StreamRecord[]): void {
    const who = `@_**${actor.fullName}|${actor.id}**`;
    const text =
      streams.length === 1
        ? `${who} subscribed you to the channel #**${(streams[0] as StreamRecord).name}**.`
        : `${who} subscribed you to the following channels:\n\n${streams.map((s) => `* #**${s.name}**`).join('\n')}`;
    this.notify({ kind: 'private', userIds: [user.id] }, text);
  }

  // ---------------------------------------------------------------- message links

  /** Zulip's `message_link_url`: the `near` permalink of a message. */
  messageUrl(msg: MessageRecord): string {
    const site = this.site();
    if (msg.kind === 'stream') {
      const stream = this.streams.get(msg.streamId) as StreamRecord;
      return `${site}/#narrow/channel/${encodeChannel(stream.id, stream.name)}/topic/${encodeHashComponent(msg.topic)}/near/${msg.id}`;
    }
    return `${site}/#narrow/dm/${encodeUserIds(msg.dmUserIds)}/near/${msg.id}`;
  }

  /** The `message_link` of the send response (FL508): `[#channel > topic @ 💬](url)`, or the bare URL for a DM. */
  messageLink(msg: MessageRecord): string {
    const url = this.messageUrl(msg);
    if (msg.kind !== 'stream') return url;
    const stream = this.streams.get(msg.streamId) as StreamRecord;
    const topic = msg.topic === '' ? EMPTY_TOPIC_DISPLAY_NAME : msg.topic;
    return `[#${stream.name} > ${topic} @ 💬](${url})`;
  }

  // ---------------------------------------------------------------- reminders

  /** `POST /reminders`: a reminder Notification Bot will send `user` at `deliverAt` (UNIX seconds). */
  scheduleReminder(
    user: UserRecord,
    msg: MessageRecord,
    deliverAt: number,
    note: string | undefined,
  ): ReminderRecord {
    if (deliverAt <= this.nowSeconds()) throw badRequest('Scheduled delivery time must be in the future.');
    let cleanNote = note;
    if (cleanNote !== undefined) {
      cleanNote = cleanNote.replace(/\s+$/u, '').replace(/^\n+/, '');
      if (cleanNote.length > MAX_REMINDER_NOTE_LENGTH) {
        throw badRequest(`Maximum reminder note length: ${MAX_REMINDER_NOTE_LENGTH} characters`);
      }
    }
    const content = this.reminderContent(msg, cleanNote);
    const reminder: ReminderRecord = {
      id: this.nextReminderId++,
      userId: user.id,
      targetMessageId: msg.id,
      content,
      renderedContent: this.render(content).html,
      deliverAt,
    };
    this.reminders.set(reminder.id, reminder);
    this.broadcast([user.id], { type: 'reminders', op: 'add', reminders: [this.reminderDict(reminder)] });
    this.armReminderTimer();
    return reminder;
  }

  reminderDict(r: ReminderRecord): Record<string, unknown> {
    return {
      reminder_id: r.id,
      type: 'private',
      to: [r.userId],
      content: r.content,
      rendered_content: r.renderedContent,
      scheduled_delivery_timestamp: r.deliverAt,
      failed: false,
      reminder_target_message_id: r.targetMessageId,
    };
  }

  /** The user's undelivered reminders, by delivery time. */
  remindersOf(userId: number): ReminderRecord[] {
    return [...this.reminders.values()]
      .filter((r) => r.userId === userId)
      .sort((a, b) => a.deliverAt - b.deliverAt || a.id - b.id);
  }

  deleteReminder(user: UserRecord, id: number): void {
    const r = this.reminders.get(id);
    if (!r || r.userId !== user.id) throw new ApiError(404, 'BAD_REQUEST', 'Reminder does not exist');
    this.reminders.delete(id);
    this.broadcast([user.id], { type: 'reminders', op: 'remove', reminder_id: id });
  }

  /** Delivers every reminder due by the realm's clock, as Notification Bot DMs; returns how many. */
  deliverDueReminders(): number {
    const now = this.nowSeconds();
    const due = [...this.reminders.values()]
      .filter((r) => r.deliverAt <= now)
      .sort((a, b) => a.deliverAt - b.deliverAt || a.id - b.id);
    for (const r of due) {
      this.reminders.delete(r.id);
      const user = this.users.get(r.userId);
      if (user?.isActive) this.notify({ kind: 'private', userIds: [r.userId] }, r.content);
      this.broadcast([r.userId], { type: 'reminders', op: 'remove', reminder_id: r.id });
    }
    this.armReminderTimer();
    return due.length;
  }

  /** A real timer for the next reminder; with a hand-driven clock, `deliverDueReminders` does it. */
  private armReminderTimer(): void {
    if (this.reminderTimer) clearTimeout(this.reminderTimer);
    this.reminderTimer = null;
    if (this.disposed || this.reminders.size === 0) return;
    let next = Number.POSITIVE_INFINITY;
    for (const r of this.reminders.values()) next = Math.min(next, r.deliverAt);
    const wait = Math.min(Math.max(0, next * 1000 - this.now()), 2_147_483_647);
    this.reminderTimer = setTimeout(() => {
      this.reminderTimer = null;
      this.deliverDueReminders();
    }, wait);
    this.reminderTimer.unref();
  }

  private disposed = false;

  /** Stops the realm's timers (the simulator is closing). */
  dispose(): void {
    this.disposed = true;
    if (this.reminderTimer) clearTimeout(this.reminderTimer);
    this.reminderTimer = null;
  }

  /** Zulip's `get_reminder_formatted_content`. */
  private reminderContent(msg: MessageRecord, note: string | undefined): string {
    const sender = this.users.get(msg.senderId) as UserRecord;
    const silent = (u: { fullName: string; id: number }) => `@_**${u.fullName}|${u.id}**`;
    const url = this.messageUrl(msg);
    let content: string;
    let said: string;
    let sent: (widget: string) => string;
    if (msg.kind === 'stream') {
      const stream = this.streams.get(msg.streamId) as StreamRecord;
      content = note
        ? `You requested a reminder for the following message. Note:\n > ${note}`
        : 'You requested a reminder for the following message.';
      const pretty = `#**${stream.name}>${msg.topic}@${msg.id}**`;
      said = `${silent(sender)} [said](${url}) in ${pretty}:`;
      sent = (w) => `${silent(sender)} [sent](${url}) a ${w} in ${pretty}.`;
    } else {
      content = note
        ? `You requested a reminder for the following direct message. Note:\n > ${note}`
        : 'You requested a reminder for the following direct message.';
      let others = msg.dmUserIds
        .filter((id) => id !== sender.id)
        .map((id) => this.users.get(id) as UserRecord);
      if (others.length === 0) others = [sender];
      const names = others.map(silent);
      const list =
        names.length <= 2 ? names.join(' and ') : `${names.slice(0, -1).join(', ')}, and ${names.at(-1)}`;
      said = `${silent(sender)} [said](${url}) to ${list}:`;
      sent = (w) => `${silent(sender)} [sent](${url}) a ${w} to ${list}.`;
    }
    content += '\n\n';
    if (msg.content.startsWith('/poll')) return content + sent('poll');
    if (msg.content.startsWith('/todo')) return content + sent('todo list');
    content += `${said}\n`;
    let fence = '```';
    while (content.includes(fence)) fence += '`';
    const wrapper = `${fence}quote\n\n${fence}`;
    const room = this.config.maxMessageLength - (content.length + wrapper.length);
    let quoted = msg.content;
    if (quoted.length > room) quoted = `${quoted.slice(0, Math.max(0, room - 20))}\n[message truncated]`;
    return `${content}${fence}quote\n${quoted}\n${fence}`;
  }

  // ---------------------------------------------------------------- attachments

  /** An attachment object of `GET /attachments` and `detached_uploads`, shaped for the realm's feature level. */
  attachmentDict(upload: UploadRecord): Record<string, unknown> {
    const seconds = this.has(FL.attachmentSeconds);
    const ids = [...(this.uploadRefs.get(upload.pathId) ?? [])].sort((a, b) => a - b);
    const out: Record<string, unknown> = {
      id: upload.id,
      name: upload.filename,
      path_id: upload.pathId,
      size: upload.bytes.length,
      create_time: seconds ? Math.floor(upload.createdAt / 1000) : upload.createdAt,
    };
    if (this.has(FL.attachmentMessageIds)) {
      out.message_ids = ids;
    } else {
      out.messages = ids.map((id) => {
        const t = this.messages.get(id)?.timestamp ?? 0;
        return { id, date_sent: seconds ? t : t * 1000 };
      });
    }
    return out;
  }

  /** Deletes an upload of `user` (`DELETE /attachments/{id}`). */
  deleteUpload(user: UserRecord, id: number): void {
    const upload = [...this.uploads.values()].find((u) => u.id === id && u.ownerId === user.id);
    if (!upload) throw badRequest('Invalid attachment');
    this.uploads.delete(upload.pathId);
    this.uploadRefs.delete(upload.pathId);
  }

  maxMessageId(): number {
    return this.allIds[this.allIds.length - 1] ?? 0;
  }

  /** Highest message id `user` has a UserMessage row for (register's max_message_id). */
  maxMessageIdFor(user: UserRecord): number {
    return user.messages.length > 0 ? (user.messages.ids[user.messages.length - 1] as number) : -1;
  }
}

function guessContentType(name: string): string {
  const ext = /\.([a-z0-9]+)$/i.exec(name)?.[1]?.toLowerCase() ?? '';
  const types: Record<string, string> = {
    png: 'image/png',
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
    gif: 'image/gif',
    webp: 'image/webp',
    svg: 'image/svg+xml',
    pdf: 'application/pdf',
    txt: 'text/plain',
    md: 'text/markdown',
    json: 'application/json',
    csv: 'text/csv',
    html: 'text/html',
    zip: 'application/zip',
  };
  return types[ext] ?? 'application/octet-stream';
}

/** Zulip's `encode_hash_component` for narrow URLs (Python `quote(s, safe="*")`, then `%`→`.`, `.`→`.2E`). */
export function encodeHashComponent(text: string): string {
  let out = '';
  for (const ch of text) {
    if (/^[A-Za-z0-9_~*-]$/.test(ch)) out += ch;
    else if (ch === '.') out += '.2E';
    else for (const b of Buffer.from(ch, 'utf8')) out += `.${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Zulip's `encode_channel`: `{id}-{name with spaces as dashes}`. */
export function encodeChannel(id: number, name: string): string {
  return `${id}-${encodeHashComponent(name.replace(/ /g, '-'))}`;
}

/** Zulip's `encode_user_ids`: sorted ids, `-group` for three or more. */
export function encodeUserIds(ids: readonly number[]): string {
  const sorted = [...ids].sort((a, b) => a - b);
  return `${sorted.join(',')}${sorted.length >= 3 ? '-group' : ''}`;
}
