// The realm's records and the index structures behind them. Internal: the public API
// hands out snapshots (see types.ts), never these objects.

/** Per-user message flag bits, stored in a Uint16Array. */
export const Flag = {
  read: 1,
  starred: 2,
  collapsed: 4,
  mentioned: 8,
  streamWildcard: 16,
  topicWildcard: 32,
  alert: 64,
  historical: 128,
} as const;

/** Flags as Zulip lists them, in its order, with the deprecated `wildcard_mentioned` OR. */
export function flagNames(bits: number): string[] {
  const out: string[] = [];
  if (bits & Flag.read) out.push('read');
  if (bits & Flag.starred) out.push('starred');
  if (bits & Flag.collapsed) out.push('collapsed');
  if (bits & Flag.mentioned) out.push('mentioned');
  if (bits & Flag.streamWildcard) out.push('stream_wildcard_mentioned');
  if (bits & Flag.topicWildcard) out.push('topic_wildcard_mentioned');
  if (bits & (Flag.streamWildcard | Flag.topicWildcard)) out.push('wildcard_mentioned');
  if (bits & Flag.alert) out.push('has_alert_word');
  if (bits & Flag.historical) out.push('historical');
  return out;
}

/** Flags a user may change through POST /messages/flags. */
export const EDITABLE_FLAGS: Record<string, number> = {
  read: Flag.read,
  starred: Flag.starred,
  collapsed: Flag.collapsed,
};

/** Flags Zulip knows but does not let users change. */
export const NON_EDITABLE_FLAGS = new Set([
  'mentioned',
  'stream_wildcard_mentioned',
  'topic_wildcard_mentioned',
  'wildcard_mentioned',
  'has_alert_word',
  'historical',
]);

/**
 * One user's UserMessage rows: message ids ascending with their flag bits, in typed
 * arrays (compact for 100k+ rows, binary-searched, appended in O(1) as ids only grow).
 */
export class UserMessages {
  ids = new Int32Array(16);
  flags = new Uint16Array(16);
  length = 0;

  /** Position of `id`, or `-(insertion point) - 1` when absent. */
  search(id: number): number {
    let lo = 0;
    let hi = this.length - 1;
    const ids = this.ids;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = ids[mid] as number;
      if (v < id) lo = mid + 1;
      else if (v > id) hi = mid - 1;
      else return mid;
    }
    return -lo - 1;
  }

  get(id: number): number | undefined {
    const i = this.search(id);
    return i >= 0 ? this.flags[i] : undefined;
  }

  has(id: number): boolean {
    return this.search(id) >= 0;
  }

  private grow(): void {
    const ids = new Int32Array(this.ids.length * 2);
    ids.set(this.ids);
    const flags = new Uint16Array(this.flags.length * 2);
    flags.set(this.flags);
    this.ids = ids;
    this.flags = flags;
  }

  /** Inserts or overwrites the row for `id`. */
  set(id: number, bits: number): void {
    if (this.length > 0 && id > (this.ids[this.length - 1] as number)) {
      if (this.length === this.ids.length) this.grow();
      this.ids[this.length] = id;
      this.flags[this.length] = bits;
      this.length++;
      return;
    }
    const i = this.search(id);
    if (i >= 0) {
      this.flags[i] = bits;
      return;
    }
    const at = -i - 1;
    if (this.length === this.ids.length) this.grow();
    this.ids.copyWithin(at + 1, at, this.length);
    this.flags.copyWithin(at + 1, at, this.length);
    this.ids[at] = id;
    this.flags[at] = bits;
    this.length++;
  }

  remove(id: number): boolean {
    const i = this.search(id);
    if (i < 0) return false;
    this.ids.copyWithin(i, i + 1, this.length);
    this.flags.copyWithin(i, i + 1, this.length);
    this.length--;
    return true;
  }

  /** The ids as a live view (valid until the next write). */
  view(): Int32Array {
    return this.ids.subarray(0, this.length);
  }
}

export interface UserRecord {
  id: number;
  email: string;
  deliveryEmail: string;
  fullName: string;
  apiKey: string;
  isBot: boolean;
  botType: 1 | 2 | 3 | 4 | null;
  botOwnerId: number | null;
  role: 100 | 200 | 300 | 400 | 600;
  timezone: string;
  isActive: boolean;
  dateJoined: number;
  profileData: Map<number, string>;
  alertWords: string[];
  /** The recipient id of the user's self-DM conversation. */
  recipientId: number;
  /** A cross-realm system bot (Notification Bot): not listed among the realm's members. */
  system: boolean;
  messages: UserMessages;
}

export interface SubscriptionProps {
  color: string;
  isMuted: boolean;
  pinToTop: boolean;
}

/**
 * A group-setting value as Zulip sends it: the id of a system group, or an anonymous group of
 * users (`direct_subgroups` are system group ids).
 */
export type GroupSetting = number | { direct_members: number[]; direct_subgroups: number[] };

/** A channel's policy for the empty "general chat" topic (FL392; `empty_topic_only` FL404). */
export type TopicsPolicy = 'inherit' | 'allow_empty_topic' | 'disable_empty_topic' | 'empty_topic_only';

export interface ChannelFolderRecord {
  id: number;
  name: string;
  description: string;
  renderedDescription: string;
  order: number;
  dateCreated: number;
  creatorId: number | null;
  isArchived: boolean;
}

/** A reminder (a scheduled message Notification Bot delivers to its owner). */
export interface ReminderRecord {
  id: number;
  userId: number;
  targetMessageId: number;
  content: string;
  renderedContent: string;
  /** UNIX seconds. */
  deliverAt: number;
}

export interface StreamRecord {
  id: number;
  name: string;
  description: string;
  renderedDescription: string;
  inviteOnly: boolean;
  isWebPublic: boolean;
  historyPublic: boolean;
  dateCreated: number;
  creatorId: number | null;
  recipientId: number;
  subscribers: Map<number, SubscriptionProps>;
  /** Users who were once subscribed (for `unsubscribed` in /register). */
  formerSubscribers: Set<number>;
  firstMessageId: number | null;
  topicsPolicy: TopicsPolicy;
  canCreateTopicGroup: GroupSetting;
  folderId: number | null;
}

export interface ReactionRecord {
  emojiName: string;
  emojiCode: string;
  reactionType: 'unicode_emoji' | 'realm_emoji' | 'zulip_extra_emoji';
  userId: number;
}

export interface EditRecord {
  userId: number;
  timestamp: number;
  prevContent?: string;
  prevRenderedContent?: string;
  prevTopic?: string;
  topic?: string;
  prevStream?: number;
  stream?: number;
}

/** A shared, frozen empty list: records point at it until they have something to hold. */
export const NONE: readonly never[] = Object.freeze([]);

const IS_ME = 1;
const HAS_LINK = 2;
const HAS_IMAGE = 4;
const HAS_ATTACHMENT = 8;
const STREAM_WILDCARD = 16;
const TOPIC_WILDCARD = 32;

/** Fields most messages never use, kept off the record until one is set. */
interface MessageExtra {
  uploadPaths: readonly string[];
  editHistory: readonly EditRecord[];
  lastEditTimestamp: number | null;
  lastMovedTimestamp: number | null;
  json: (Buffer | undefined)[] | undefined;
}

/** What a message is created with. */
export interface MessageInit {
  id: number;
  senderId: number;
  kind: 'stream' | 'private';
  streamId: number;
  topic: string;
  recipientId: number;
  dmUserIds: readonly number[];
  content: string;
  rendered: string;
  timestamp: number;
  client: string;
}

/**
 * One message. Compact on purpose (the store holds 100k+): booleans share one bit field and
 * rarely used fields live in a side object created on first write.
 */
export class MessageRecord {
  id: number;
  senderId: number;
  kind: 'stream' | 'private';
  /** 0 for direct messages. */
  streamId: number;
  /** '' for direct messages. */
  topic: string;
  recipientId: number;
  /** Sorted participant ids of a direct message (sender included); empty for streams. */
  dmUserIds: readonly number[];
  content: string;
  rendered: string;
  timestamp: number;
  client: string;
  mentionedUserIds: readonly number[] = NONE;
  reactions: readonly ReactionRecord[] = NONE;
  private bits = 0;
  private extra: MessageExtra | undefined = undefined;

  constructor(init: MessageInit) {
    this.id = init.id;
    this.senderId = init.senderId;
    this.kind = init.kind;
    this.streamId = init.streamId;
    this.topic = init.topic;
    this.recipientId = init.recipientId;
    this.dmUserIds = init.dmUserIds;
    this.content = init.content;
    this.rendered = init.rendered;
    this.timestamp = init.timestamp;
    this.client = init.client;
  }

  private flag(bit: number): boolean {
    return (this.bits & bit) !== 0;
  }

  private setFlag(bit: number, on: boolean): void {
    this.bits = on ? this.bits | bit : this.bits & ~bit;
  }

  private more(): MessageExtra {
    this.extra ??= {
      uploadPaths: NONE,
      editHistory: NONE,
      lastEditTimestamp: null,
      lastMovedTimestamp: null,
      json: undefined,
    };
    return this.extra;
  }

  get isMeMessage(): boolean {
    return this.flag(IS_ME);
  }
  set isMeMessage(on: boolean) {
    this.setFlag(IS_ME, on);
  }
  get hasLink(): boolean {
    return this.flag(HAS_LINK);
  }
  set hasLink(on: boolean) {
    this.setFlag(HAS_LINK, on);
  }
  get hasImage(): boolean {
    return this.flag(HAS_IMAGE);
  }
  set hasImage(on: boolean) {
    this.setFlag(HAS_IMAGE, on);
  }
  get hasAttachment(): boolean {
    return this.flag(HAS_ATTACHMENT);
  }
  set hasAttachment(on: boolean) {
    this.setFlag(HAS_ATTACHMENT, on);
  }
  get streamWildcard(): boolean {
    return this.flag(STREAM_WILDCARD);
  }
  set streamWildcard(on: boolean) {
    this.setFlag(STREAM_WILDCARD, on);
  }
  get topicWildcard(): boolean {
    return this.flag(TOPIC_WILDCARD);
  }
  set topicWildcard(on: boolean) {
    this.setFlag(TOPIC_WILDCARD, on);
  }

  get uploadPaths(): readonly string[] {
    return this.extra?.uploadPaths ?? NONE;
  }
  set uploadPaths(paths: readonly string[]) {
    if (paths.length > 0 || this.extra) this.more().uploadPaths = paths;
  }
  /** Newest first, as Zulip returns it. */
  get editHistory(): readonly EditRecord[] {
    return this.extra?.editHistory ?? NONE;
  }
  set editHistory(entries: readonly EditRecord[]) {
    this.more().editHistory = entries;
  }
  get lastEditTimestamp(): number | null {
    return this.extra?.lastEditTimestamp ?? null;
  }
  set lastEditTimestamp(t: number | null) {
    this.more().lastEditTimestamp = t;
  }
  get lastMovedTimestamp(): number | null {
    return this.extra?.lastMovedTimestamp ?? null;
  }
  set lastMovedTimestamp(t: number | null) {
    this.more().lastMovedTimestamp = t;
  }
  /** Serialized message objects (UTF-8, closing brace left off) per rendering variant; dropped on every change. */
  get json(): (Buffer | undefined)[] | undefined {
    return this.extra?.json;
  }
  set json(cache: (Buffer | undefined)[] | undefined) {
    if (cache !== undefined || this.extra) this.more().json = cache;
  }
}

/** Messages by id in a dense array (ids are small, increasing integers). */
export class MessageStore {
  private readonly slots: (MessageRecord | undefined)[] = [];
  private count = 0;

  get(id: number): MessageRecord | undefined {
    return Number.isInteger(id) && id >= 0 ? this.slots[id] : undefined;
  }

  set(id: number, msg: MessageRecord): void {
    while (this.slots.length < id) this.slots.push(undefined);
    if (this.slots[id] === undefined) this.count++;
    this.slots[id] = msg;
  }

  delete(id: number): boolean {
    if (this.slots[id] === undefined) return false;
    this.slots[id] = undefined;
    this.count--;
    return true;
  }

  get size(): number {
    return this.count;
  }
}

export interface UploadRecord {
  id: number;
  pathId: string;
  url: string;
  filename: string;
  contentType: string;
  bytes: Buffer;
  ownerId: number;
  createdAt: number;
}

export interface RealmEmojiRecord {
  id: string;
  name: string;
  authorId: number;
  deactivated: boolean;
}

export interface ProfileFieldRecord {
  id: number;
  name: string;
  type: number;
  hint: string;
  fieldData: string;
  order: number;
}

/** Inserts `id` into an ascending array (ids usually arrive in order: O(1) then). */
export function insertSorted(arr: number[], id: number): void {
  const n = arr.length;
  if (n === 0 || (arr[n - 1] as number) < id) {
    arr.push(id);
    return;
  }
  const at = lowerBound(arr, id);
  if (arr[at] === id) return;
  arr.splice(at, 0, id);
}

export function removeSorted(arr: number[], id: number): void {
  const at = lowerBound(arr, id);
  if (arr[at] === id) arr.splice(at, 1);
}

/** First index whose value is >= id. */
export function lowerBound(arr: ArrayLike<number>, id: number): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((arr[mid] as number) < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
