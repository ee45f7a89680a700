import { ApiError, rejected, SimError } from './errors.js';
import { directRecipients, streamForSend } from './handlers.js';
import {
  flagNames,
  type GroupSetting,
  type MessageRecord,
  type StreamRecord,
  type UserRecord,
} from './model.js';
import { type Realm, SYSTEM_GROUPS } from './realm.js';
import type {
  SimChannelFolder,
  SimEditChanges,
  SimGroupSetting,
  SimMessage,
  SimReactionOptions,
  SimRealm,
  SimReminder,
  SimSendInput,
  SimStream,
  SimStreamInput,
  SimSystemGroup,
  SimTypingTarget,
  SimUpload,
  SimUser,
  SimUserInput,
} from './types.js';

function invalid(message: string): SimError {
  return new SimError('SIM_INVALID_ARGUMENT', message);
}

/** Runs a realm action, turning a Zulip refusal into `SIM_REJECTED`. */
function guard<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof ApiError) throw rejected(error);
    throw error;
  }
}

function userSnapshot(u: UserRecord): SimUser {
  return Object.freeze({
    userId: u.id,
    email: u.email,
    deliveryEmail: u.deliveryEmail,
    fullName: u.fullName,
    apiKey: u.apiKey,
    isBot: u.isBot,
    botType: u.botType,
    botOwnerId: u.botOwnerId,
    role: u.role,
    timezone: u.timezone,
    isActive: u.isActive,
    dateJoined: u.dateJoined,
    profileData: Object.freeze(Object.fromEntries(u.profileData)),
    alertWords: Object.freeze([...u.alertWords]),
  });
}

const GROUP_NAMES = new Map<number, SimSystemGroup>(
  Object.entries(SYSTEM_GROUPS).map(([name, id]) => [id, name as SimSystemGroup]),
);

/** A {@link SimGroupSetting} in Zulip's wire form (system group ids, `direct_members`).
 * @throws SimError `SIM_INVALID_ARGUMENT` for an unknown group name. */
export function toGroupSetting(value: SimGroupSetting, where: string): GroupSetting {
  const id = (name: unknown): number => {
    const found = SYSTEM_GROUPS[name as SimSystemGroup];
    if (found === undefined) throw invalid(`${where}: unknown system group ${JSON.stringify(name)}`);
    return found;
  };
  if (typeof value === 'string') return id(value);
  if (value === null || typeof value !== 'object' || !Array.isArray(value.users)) {
    throw invalid(`${where}: a group setting is a system group name or { users, groups? }`);
  }
  return { direct_members: [...value.users], direct_subgroups: (value.groups ?? []).map(id) };
}

function fromGroupSetting(value: GroupSetting): SimGroupSetting {
  if (typeof value === 'number') return GROUP_NAMES.get(value) ?? 'role:nobody';
  return {
    users: [...value.direct_members],
    groups: value.direct_subgroups.map((g) => GROUP_NAMES.get(g) ?? 'role:nobody'),
  };
}

function streamSnapshot(realm: Realm, s: StreamRecord): SimStream {
  return Object.freeze({
    streamId: s.id,
    name: s.name,
    description: s.description,
    inviteOnly: s.inviteOnly,
    isWebPublic: s.isWebPublic,
    historyPublicToSubscribers: s.historyPublic,
    dateCreated: s.dateCreated,
    creatorId: s.creatorId,
    subscribers: Object.freeze(realm.activeSubscriberIds(s)),
    firstMessageId: s.firstMessageId,
    topicsPolicy: s.topicsPolicy,
    canCreateTopicGroup: fromGroupSetting(s.canCreateTopicGroup),
    folderId: s.folderId,
  });
}

function messageSnapshot(m: MessageRecord): SimMessage {
  const base = {
    id: m.id,
    type: m.kind === 'stream' ? ('stream' as const) : ('direct' as const),
    senderId: m.senderId,
    recipientId: m.recipientId,
    content: m.content,
    renderedContent: m.rendered,
    timestamp: m.timestamp,
    client: m.client,
    isMeMessage: m.isMeMessage,
    hasLink: m.hasLink,
    hasAttachment: m.hasAttachment,
    hasImage: m.hasImage,
    reactions: m.reactions.map((r) => ({ ...r })),
    editHistory: m.editHistory.map((e) => ({ ...e })),
    lastEditTimestamp: m.lastEditTimestamp,
    lastMovedTimestamp: m.lastMovedTimestamp,
  };
  return m.kind === 'stream'
    ? { ...base, streamId: m.streamId, topic: m.topic }
    : { ...base, recipientIds: [...m.dmUserIds] };
}

const ROLES = new Set([100, 200, 300, 400, 600]);

/** The programmatic face of the realm: seeding and inspection for tests and demos. */
export class SimRealmApi implements SimRealm {
  private readonly realm: Realm;
  private readonly assertOpen: () => void;

  constructor(realm: Realm, assertOpen: () => void) {
    this.realm = realm;
    this.assertOpen = assertOpen;
  }

  private userRecord(id: number): UserRecord {
    const u = this.realm.user(id);
    if (!u || u.system) throw new SimError('SIM_NOT_FOUND', `No user with id ${id}`);
    return u;
  }

  private messageRecord(id: number): MessageRecord {
    const m = this.realm.messages.get(id);
    if (!m) throw new SimError('SIM_NOT_FOUND', `No message with id ${id}`);
    return m;
  }

  private streamRecord(nameOrId: string | number): StreamRecord {
    const s = typeof nameOrId === 'number' ? this.realm.stream(nameOrId) : this.realm.streamByName(nameOrId);
    if (!s) throw new SimError('SIM_NOT_FOUND', `No stream ${JSON.stringify(nameOrId)}`);
    return s;
  }

  private accessible(user: UserRecord, id: number): MessageRecord {
    const msg = this.messageRecord(id);
    if (!this.realm.canAccessMessage(user, msg))
      throw rejected(new ApiError(400, 'BAD_REQUEST', 'Invalid message(s)'));
    return msg;
  }

  addUser(u: SimUserInput): SimUser {
    this.assertOpen();
    if (typeof u?.fullName !== 'string' || u.fullName.trim() === '')
      throw invalid('addUser: fullName is required');
    if (u.email !== undefined && !/^[^@\s]+@[^@\s]+$/.test(u.email))
      throw invalid(`addUser: bad email ${u.email}`);
    if (u.email !== undefined && this.realm.emailTaken(u.email))
      throw invalid(`addUser: email ${u.email} is taken`);
    if (u.deliveryEmail && this.realm.emailTaken(u.deliveryEmail)) {
      throw invalid(`addUser: delivery email ${u.deliveryEmail} is taken`);
    }
    if (u.apiKey !== undefined) {
      if (!/^[A-Za-z0-9]{32}$/.test(u.apiKey))
        throw invalid('addUser: apiKey must be 32 ASCII letters or digits');
      if (this.realm.keyTaken(u.apiKey)) throw invalid('addUser: apiKey is already in use');
    }
    if (u.role !== undefined && !ROLES.has(u.role)) throw invalid(`addUser: bad role ${u.role}`);
    if (u.botType !== undefined && ![1, 2, 3, 4].includes(u.botType))
      throw invalid(`addUser: bad botType ${u.botType}`);
    if (u.botOwnerId !== undefined) this.userRecord(u.botOwnerId);
    for (const id of Object.keys(u.profileData ?? {})) {
      if (!this.realm.profileFields.has(Number(id))) throw invalid(`addUser: no custom profile field ${id}`);
    }
    const record = this.realm.createUser({ ...u, fullName: u.fullName.trim() });
    if (u.email === undefined && this.realm.members().filter((m) => m.email === record.email).length > 1) {
      throw invalid(`addUser: derived email ${record.email} is taken; pass email`);
    }
    return userSnapshot(record);
  }

  deactivateUser(userId: number): void {
    this.realm.deactivate(this.userRecord(userId));
  }

  changeUserEmail(userId: number, newEmail: string): void {
    this.assertOpen();
    const user = this.userRecord(userId);
    if (typeof newEmail !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(newEmail))
      throw invalid(`changeUserEmail: bad email ${String(newEmail)}`);
    const holder = this.realm.userByEmail(newEmail);
    if (holder !== undefined && holder.id !== user.id)
      throw invalid(`changeUserEmail: email ${newEmail} is taken`);
    this.realm.changeEmail(user, newEmail);
  }

  setAlertWords(userId: number, words: string[]): void {
    this.userRecord(userId).alertWords = words.filter((w) => w.trim() !== '').map((w) => w.trim());
  }

  addProfileField(f: { name: string; type?: number; hint?: string; fieldData?: string }): { id: number } {
    if (typeof f?.name !== 'string' || f.name.trim() === '')
      throw invalid('addProfileField: name is required');
    const type = f.type ?? 1;
    if (!Number.isInteger(type) || type < 1 || type > 8) throw invalid(`addProfileField: bad type ${type}`);
    return { id: this.realm.addProfileField(f.name.trim(), type, f.hint ?? '', f.fieldData ?? '').id };
  }

  addStream(s: SimStreamInput): SimStream {
    this.assertOpen();
    if (typeof s?.name !== 'string') throw invalid('addStream: name is required');
    for (const id of s.subscribers ?? []) this.userRecord(id);
    if (s.creatorId !== undefined) this.userRecord(s.creatorId);
    const stream = guard(() =>
      this.realm.createStream(
        {
          name: s.name,
          description: s.description,
          inviteOnly: s.inviteOnly,
          isWebPublic: s.isWebPublic,
          historyPublicToSubscribers: s.historyPublicToSubscribers,
          topicsPolicy: s.topicsPolicy,
          canCreateTopicGroup:
            s.canCreateTopicGroup === undefined
              ? undefined
              : toGroupSetting(
                  s.canCreateTopicGroup,
                  `addStream(${JSON.stringify(s.name)}).canCreateTopicGroup`,
                ),
          folderId: s.folderId,
        },
        s.creatorId ?? null,
      ),
    );
    this.realm.addSubscribers(stream, s.subscribers ?? []);
    return streamSnapshot(this.realm, stream);
  }

  subscribe(userId: number, streamName: string): void {
    const user = this.userRecord(userId);
    this.realm.addSubscribers(this.streamRecord(streamName), [user.id]);
  }

  unsubscribe(userId: number, streamName: string): void {
    const user = this.userRecord(userId);
    this.realm.removeSubscribers(this.streamRecord(streamName), [user.id]);
  }

  addRealmEmoji(e: { name: string; authorId: number; deactivated?: boolean }): { id: string } {
    this.userRecord(e.authorId);
    return { id: guard(() => this.realm.addRealmEmoji(e.name, e.authorId, e.deactivated ?? false)).id };
  }

  sendMessage(m: SimSendInput): number {
    this.assertOpen();
    const sender = this.userRecord(m.senderId);
    if (typeof m.content !== 'string') throw invalid('sendMessage: content is required');
    return guard(() => {
      const opts = {
        client: m.client ?? 'website',
        readBySender: m.readBySender,
        timestamp: m.timestamp,
      };
      if (m.type === 'stream') {
        const stream = streamForSend(this.realm, m.stream);
        const topic = this.realm.normalizeTopic(m.topic);
        return this.realm.send(sender, { kind: 'stream', stream, topic }, m.content, opts).id;
      }
      if (m.type === 'direct') {
        if (!Array.isArray(m.to)) throw invalid('sendMessage: to must be a list of user ids');
        const to = directRecipients(this.realm, JSON.stringify(m.to));
        return this.realm.send(sender, { kind: 'private', userIds: to.map((u) => u.id) }, m.content, opts).id;
      }
      throw invalid(`sendMessage: bad type ${String((m as { type: unknown }).type)}`);
    });
  }

  editMessage(userId: number, messageId: number, changes: SimEditChanges): void {
    const user = this.userRecord(userId);
    const msg = this.accessible(user, messageId);
    guard(() =>
      this.realm.edit(user, msg, {
        content: changes.content,
        topic: changes.topic,
        streamId: changes.streamId,
        propagateMode: changes.propagateMode ?? 'change_one',
        notifyOldThread: changes.sendNotificationToOldThread ?? false,
        notifyNewThread: changes.sendNotificationToNewThread ?? true,
      }),
    );
  }

  deleteMessage(userId: number, messageId: number): void {
    const user = this.userRecord(userId);
    const msg = this.accessible(user, messageId);
    guard(() => {
      this.realm.checkCanDelete(user, msg);
      this.realm.deleteMessages(user, [msg]);
    });
  }

  addReaction(userId: number, messageId: number, emojiName: string, opts: SimReactionOptions = {}): void {
    const user = this.userRecord(userId);
    const msg = this.accessible(user, messageId);
    guard(() => {
      const emoji = this.realm.resolveEmoji(emojiName, opts.emojiCode, opts.reactionType);
      this.realm.addReaction(user, msg, emoji);
    });
  }

  removeReaction(userId: number, messageId: number, emojiName: string, opts: SimReactionOptions = {}): void {
    const user = this.userRecord(userId);
    const msg = this.accessible(user, messageId);
    guard(() => {
      const found = this.realm.emojiByName(emojiName);
      const code = opts.emojiCode ?? found?.code;
      if (code === undefined) throw new ApiError(400, 'BAD_REQUEST', `Emoji '${emojiName}' does not exist`);
      this.realm.removeReaction(user, msg, code, opts.reactionType ?? found?.type ?? 'unicode_emoji');
    });
  }

  setFlag(
    userId: number,
    messageIds: number[],
    flag: 'read' | 'starred' | 'collapsed',
    op: 'add' | 'remove',
  ): void {
    const user = this.userRecord(userId);
    guard(() => this.realm.updateFlags(user, messageIds, op, flag));
  }

  setTyping(userId: number, op: 'start' | 'stop', target: SimTypingTarget): void {
    const user = this.userRecord(userId);
    if (op !== 'start' && op !== 'stop') throw invalid(`setTyping: bad op ${String(op)}`);
    if ('to' in target) {
      this.realm.typingDirect(
        user,
        op,
        target.to.map((id) => this.userRecord(id)),
      );
    } else {
      const stream = this.streamRecord(target.streamId);
      this.realm.typingStream(user, op, stream, this.realm.normalizeTopic(target.topic));
    }
  }

  upload(userId: number, filename: string, bytes: Uint8Array, contentType?: string): { url: string } {
    const user = this.userRecord(userId);
    if (typeof filename !== 'string' || !(bytes instanceof Uint8Array)) {
      throw invalid('upload: filename and bytes are required');
    }
    const record = guard(() => this.realm.storeUpload(user, filename, Buffer.from(bytes), contentType ?? ''));
    return { url: record.url };
  }

  renderingUpdate(messageId: number, renderedContent: string): void {
    this.realm.renderingUpdate(this.messageRecord(messageId), renderedContent);
  }

  addChannelFolder(f: { name: string; description?: string; creatorId?: number }): SimChannelFolder {
    this.assertOpen();
    if (typeof f?.name !== 'string') throw invalid('addChannelFolder: name is required');
    if (f.creatorId !== undefined) this.userRecord(f.creatorId);
    const folder = guard(() => this.realm.addChannelFolder(f.name, f.description ?? '', f.creatorId ?? null));
    return Object.freeze({ id: folder.id, name: folder.name, description: folder.description });
  }

  addReminder(userId: number, messageId: number, deliverAt: number, note?: string): { reminderId: number } {
    this.assertOpen();
    const user = this.userRecord(userId);
    const msg = this.accessible(user, messageId);
    if (!Number.isInteger(deliverAt)) throw invalid('addReminder: deliverAt must be UNIX seconds');
    return { reminderId: guard(() => this.realm.scheduleReminder(user, msg, deliverAt, note)).id };
  }

  reminders(userId?: number): SimReminder[] {
    return [...this.realm.reminders.values()]
      .filter((r) => userId === undefined || r.userId === userId)
      .sort((a, b) => a.deliverAt - b.deliverAt || a.id - b.id)
      .map((r) =>
        Object.freeze({
          reminderId: r.id,
          userId: r.userId,
          targetMessageId: r.targetMessageId,
          content: r.content,
          deliverAt: r.deliverAt,
        }),
      );
  }

  user(idOrEmail: number | string): SimUser | undefined {
    const u = typeof idOrEmail === 'number' ? this.realm.user(idOrEmail) : this.realm.userByEmail(idOrEmail);
    return u ? userSnapshot(u) : undefined;
  }

  users(): SimUser[] {
    return this.realm.members().map(userSnapshot);
  }

  stream(nameOrId: string | number): SimStream | undefined {
    const s = typeof nameOrId === 'number' ? this.realm.stream(nameOrId) : this.realm.streamByName(nameOrId);
    return s ? streamSnapshot(this.realm, s) : undefined;
  }

  streams(): SimStream[] {
    return [...this.realm.streams.values()].map((s) => streamSnapshot(this.realm, s));
  }

  message(id: number): SimMessage | undefined {
    const m = this.realm.messages.get(id);
    return m ? messageSnapshot(m) : undefined;
  }

  flags(userId: number, messageId: number): string[] {
    const bits = this.userRecord(userId).messages.get(messageId);
    return bits === undefined ? [] : flagNames(bits);
  }

  messageCount(): number {
    return this.realm.messages.size;
  }

  maxMessageId(): number {
    return this.realm.maxMessageId();
  }

  uploads(): SimUpload[] {
    return [...this.realm.uploads.values()].map((u) => ({
      url: u.url,
      bytes: new Uint8Array(u.bytes),
      filename: u.filename,
      ownerId: u.ownerId,
      contentType: u.contentType,
    }));
  }
}
