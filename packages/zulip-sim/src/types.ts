// The public shapes of @zmcp/zulip-sim. Names and fields here are a contract with the
// packages that test against the simulator.

/** A logger the simulator reports unexpected failures to (answered as HTTP 500); silent by default. */
export interface SimLogger {
  debug?(message: string, context?: unknown): void;
  error?(message: string, context?: unknown): void;
}

/** Options of `startZulipSim`. */
export interface ZulipSimOptions {
  /** Interface to listen on; loopback by default. */
  host?: string;
  /** Port; 0 (the default) picks a free one. */
  port?: number;
  realmName?: string;
  realmSubdomain?: string;
  /** How long a blocked GET /events waits before a heartbeat is queued (Zulip: 45-55 s). Default 50 000. */
  heartbeatIntervalMs?: number;
  /** Idle time after which a queue with no poll connected is garbage-collected. Default 600 000. */
  queueIdleTimeoutMs?: number;
  /** Per-user request budget, or `false` for none. Default 200 requests per 60 000 ms. */
  rateLimit?: { requests: number; windowMs: number } | false;
  /** Largest upload accepted, in MiB. Default 25. */
  maxFileUploadMib?: number;
  /** Content length (code points) after which messages are truncated. Default 10 000. */
  maxMessageLength?: number;
  /** Window for content edits by the sender, in seconds (Zulip adds a 20 s grace). Default 600. */
  messageEditLimitSeconds?: number;
  /** Millisecond clock driving timestamps, edit limits, queue expiry and rate-limit windows. */
  now?: () => number;
  /** Called once with the realm before the listener opens. */
  seed?: (realm: SimRealm) => void | Promise<void>;
  /** How many recent requests `sim.requests` keeps. Default 1000. */
  requestLogSize?: number;
  /** Told about unexpected failures; the simulator never prints. */
  logger?: SimLogger;
  /**
   * The realm's `zulip_feature_level`, 421 (Zulip 11.0, the default) to 512 (Zulip 13.0-dev).
   * Each API change listed in the README's Behaviour section answers only from its level on.
   */
  zulipFeatureLevel?: number;
  /** The `zulip_version` (and `zulip_merge_base`) reported; by default derived from the level: `11.0`, `12.0-dev` above 421, `13.0-dev` from 502. */
  zulipVersion?: string;
}

/**
 * A group-setting value: a system group by name (`'role:everyone'`, `'role:members'`,
 * `'role:moderators'`, `'role:administrators'`, `'role:owners'`, `'role:nobody'`) or a set of users.
 */
export type SimGroupSetting = SimSystemGroup | { users: number[]; groups?: SimSystemGroup[] };

/** The system groups a {@link SimGroupSetting} can name. */
export type SimSystemGroup =
  | 'role:everyone'
  | 'role:members'
  | 'role:fullmembers'
  | 'role:moderators'
  | 'role:administrators'
  | 'role:owners'
  | 'role:nobody';

/** A channel's policy for the empty "general chat" topic; `empty_topic_only` needs feature level 404. */
export type SimTopicsPolicy = 'inherit' | 'allow_empty_topic' | 'disable_empty_topic' | 'empty_topic_only';

/** A channel folder (FL389). */
export interface SimChannelFolder {
  readonly id: number;
  readonly name: string;
  readonly description: string;
}

/** An undelivered reminder. */
export interface SimReminder {
  readonly reminderId: number;
  readonly userId: number;
  readonly targetMessageId: number;
  /** The Markdown Notification Bot will send. */
  readonly content: string;
  /** UNIX seconds. */
  readonly deliverAt: number;
}

/** A user as the simulator stores it. */
export interface SimUser {
  readonly userId: number;
  /** The API email (what GET /users shows as `email`). */
  readonly email: string;
  /** The real address; Basic auth compares against it. */
  readonly deliveryEmail: string;
  readonly fullName: string;
  readonly apiKey: string;
  readonly isBot: boolean;
  readonly botType: 1 | 2 | 3 | 4 | null;
  readonly botOwnerId: number | null;
  readonly role: 100 | 200 | 300 | 400 | 600;
  readonly timezone: string;
  readonly isActive: boolean;
  /** Milliseconds since the epoch. */
  readonly dateJoined: number;
  readonly profileData: Readonly<Record<number, string>>;
  readonly alertWords: readonly string[];
}

/** Input of {@link SimRealm.addUser}. */
export interface SimUserInput {
  fullName: string;
  email?: string;
  isBot?: boolean;
  botType?: 1 | 2 | 3 | 4;
  botOwnerId?: number;
  role?: 100 | 200 | 300 | 400 | 600;
  timezone?: string;
  isActive?: boolean;
  profileData?: Record<number, string>;
  apiKey?: string;
  /** The real address used for Basic auth; defaults to `email`. `null` means the same. */
  deliveryEmail?: string | null;
  /** Words that set `has_alert_word` on messages this user receives. */
  alertWords?: string[];
}

/** A stream as the simulator stores it. */
export interface SimStream {
  readonly streamId: number;
  readonly name: string;
  readonly description: string;
  readonly inviteOnly: boolean;
  readonly isWebPublic: boolean;
  readonly historyPublicToSubscribers: boolean;
  /** UNIX seconds. */
  readonly dateCreated: number;
  readonly creatorId: number | null;
  readonly subscribers: readonly number[];
  readonly firstMessageId: number | null;
  readonly topicsPolicy: SimTopicsPolicy;
  /** Who may start a new topic (on realms at feature level 441 or later). */
  readonly canCreateTopicGroup: SimGroupSetting;
  readonly folderId: number | null;
}

/** Input of {@link SimRealm.addStream}. */
export interface SimStreamInput {
  name: string;
  description?: string;
  inviteOnly?: boolean;
  isWebPublic?: boolean;
  historyPublicToSubscribers?: boolean;
  subscribers?: number[];
  creatorId?: number;
  /** Default `'inherit'` (the realm's `allow_empty_topic`). */
  topicsPolicy?: SimTopicsPolicy;
  /** Default `'role:everyone'`; must stay that for private channels with protected history. Enforced from feature level 441. */
  canCreateTopicGroup?: SimGroupSetting;
  /** A folder made with {@link SimRealm.addChannelFolder}. */
  folderId?: number;
}

export interface SimReaction {
  readonly emojiName: string;
  readonly emojiCode: string;
  readonly reactionType: 'unicode_emoji' | 'realm_emoji' | 'zulip_extra_emoji';
  readonly userId: number;
}

export interface SimEditEntry {
  readonly userId: number;
  /** UNIX seconds. */
  readonly timestamp: number;
  readonly prevContent?: string;
  readonly prevRenderedContent?: string;
  readonly prevTopic?: string;
  readonly topic?: string;
  readonly prevStream?: number;
  readonly stream?: number;
}

/** A message as the simulator stores it. */
export interface SimMessage {
  readonly id: number;
  readonly type: 'stream' | 'direct';
  readonly senderId: number;
  /** Stream messages only. */
  readonly streamId?: number;
  /** Stream messages only. */
  readonly topic?: string;
  /** Direct messages only: every participant, sender included, ascending. */
  readonly recipientIds?: readonly number[];
  readonly recipientId: number;
  /** Raw Markdown. */
  readonly content: string;
  readonly renderedContent: string;
  /** UNIX seconds. */
  readonly timestamp: number;
  readonly client: string;
  readonly isMeMessage: boolean;
  readonly hasLink: boolean;
  readonly hasAttachment: boolean;
  readonly hasImage: boolean;
  readonly reactions: readonly SimReaction[];
  /** Newest first. */
  readonly editHistory: readonly SimEditEntry[];
  readonly lastEditTimestamp: number | null;
  readonly lastMovedTimestamp: number | null;
}

/** Input of {@link SimRealm.sendMessage}. */
export type SimSendInput =
  | {
      senderId: number;
      type: 'stream';
      stream: string;
      topic: string;
      content: string;
      timestamp?: number;
      client?: string;
      readBySender?: boolean;
    }
  | {
      senderId: number;
      type: 'direct';
      to: number[];
      content: string;
      timestamp?: number;
      client?: string;
      readBySender?: boolean;
    };

/** Changes of {@link SimRealm.editMessage}. */
export interface SimEditChanges {
  content?: string;
  topic?: string;
  streamId?: number;
  propagateMode?: 'change_one' | 'change_later' | 'change_all';
  sendNotificationToOldThread?: boolean;
  sendNotificationToNewThread?: boolean;
}

/** Options of reaction calls. */
export interface SimReactionOptions {
  emojiCode?: string;
  reactionType?: 'unicode_emoji' | 'realm_emoji' | 'zulip_extra_emoji';
}

/** Target of {@link SimRealm.setTyping}. */
export type SimTypingTarget = { to: number[] } | { streamId: number; topic: string };

export interface SimUpload {
  readonly url: string;
  readonly bytes: Uint8Array;
  readonly filename: string;
  readonly ownerId: number;
  readonly contentType: string;
}

/** Seeds and inspects the realm; every mutation takes the same path as the HTTP API. */
export interface SimRealm {
  /** Adds a user (human or bot) and returns it with its id and API key.
   * @throws SimError `SIM_INVALID_ARGUMENT` for a missing name, taken email or malformed API key. */
  addUser(u: SimUserInput): SimUser;
  /** Deactivates a user: their credentials stop working and their queues are deleted.
   * @throws SimError `SIM_NOT_FOUND` for an unknown id. */
  deactivateUser(userId: number): void;
  /**
   * Changes a user's email address as Zulip does once the new address is confirmed: the delivery
   * address always, the public address too when it is the same as the delivery address (addresses
   * visible to everyone). Emits `realm_user` `update` events with `delivery_email` to the user and
   * the administrators, and with `new_email` to everyone when the public address changed.
   * @throws SimError `SIM_NOT_FOUND` for an unknown id; `SIM_INVALID_ARGUMENT` for a malformed or taken address.
   */
  changeUserEmail(userId: number, newEmail: string): void;
  /** Sets the words that flag received messages `has_alert_word` for this user.
   * @throws SimError `SIM_NOT_FOUND` for an unknown id. */
  setAlertWords(userId: number, words: string[]): void;
  /** Adds a custom profile field (type 1-8 as Zulip numbers them).
   * @throws SimError `SIM_INVALID_ARGUMENT` for a missing name or bad type. */
  addProfileField(f: { name: string; type?: number; hint?: string; fieldData?: string }): { id: number };
  /** Creates a stream with its first subscribers, emitting the events Zulip would.
   * @throws SimError `SIM_NOT_FOUND` for an unknown subscriber; `SIM_REJECTED` for a taken or invalid name. */
  addStream(s: SimStreamInput): SimStream;
  /** Subscribes a user, emitting subscription events.
   * @throws SimError `SIM_NOT_FOUND` for an unknown user or stream. */
  subscribe(userId: number, streamName: string): void;
  /** Unsubscribes a user, emitting subscription events.
   * @throws SimError `SIM_NOT_FOUND` for an unknown user or stream. */
  unsubscribe(userId: number, streamName: string): void;
  /** Adds a custom emoji and returns its id.
   * @throws SimError `SIM_NOT_FOUND` for an unknown id; `SIM_REJECTED` where Zulip would refuse. */
  addRealmEmoji(e: { name: string; authorId: number; deactivated?: boolean }): { id: string };
  /** Sends a message through the same path as POST /messages and returns its id.
   * @throws SimError `SIM_NOT_FOUND` for an unknown id; `SIM_REJECTED` where Zulip would refuse. */
  sendMessage(m: SimSendInput): number;
  /** Edits or moves a message as PATCH /messages/{id} does.
   * @throws SimError `SIM_NOT_FOUND` for an unknown id; `SIM_REJECTED` where Zulip would refuse. */
  editMessage(userId: number, messageId: number, changes: SimEditChanges): void;
  /** Deletes a message as DELETE /messages/{id} does.
   * @throws SimError `SIM_NOT_FOUND` for an unknown id; `SIM_REJECTED` where Zulip would refuse. */
  deleteMessage(userId: number, messageId: number): void;
  /** Adds a reaction as POST /messages/{id}/reactions does.
   * @throws SimError `SIM_NOT_FOUND` for an unknown id; `SIM_REJECTED` where Zulip would refuse. */
  addReaction(userId: number, messageId: number, emojiName: string, opts?: SimReactionOptions): void;
  /** Removes a reaction; the type defaults to the named emoji's own.
   * @throws SimError `SIM_NOT_FOUND` for an unknown id; `SIM_REJECTED` where Zulip would refuse. */
  removeReaction(userId: number, messageId: number, emojiName: string, opts?: SimReactionOptions): void;
  /** Changes read, starred or collapsed as POST /messages/flags does.
   * @throws SimError `SIM_NOT_FOUND` for an unknown id; `SIM_REJECTED` where Zulip would refuse. */
  setFlag(
    userId: number,
    messageIds: number[],
    flag: 'read' | 'starred' | 'collapsed',
    op: 'add' | 'remove',
  ): void;
  /** Emits typing events as POST /typing does.
   * @throws SimError `SIM_NOT_FOUND` for an unknown user or stream; `SIM_INVALID_ARGUMENT` for a bad op. */
  setTyping(userId: number, op: 'start' | 'stop', target: SimTypingTarget): void;
  /** Stores a file as POST /user_uploads does and returns its `/user_uploads/...` URL.
   * @throws SimError `SIM_NOT_FOUND` for an unknown id; `SIM_REJECTED` where Zulip would refuse. */
  upload(userId: number, filename: string, bytes: Uint8Array, contentType?: string): { url: string };
  /** Replaces a message's HTML and emits a rendering-only update_message (no edit history).
   * @throws SimError `SIM_NOT_FOUND` for an unknown message. */
  renderingUpdate(messageId: number, renderedContent: string): void;
  /** Adds a channel folder (register's `channel_folders`, `folder_id` on channels).
   * @throws SimError `SIM_REJECTED` for an empty, too long or taken name. */
  addChannelFolder(f: { name: string; description?: string; creatorId?: number }): SimChannelFolder;
  /** Schedules a reminder as POST /reminders does; Notification Bot delivers it at `deliverAt` (UNIX seconds) by the realm's clock.
   * @throws SimError `SIM_NOT_FOUND` for an unknown id; `SIM_REJECTED` where Zulip would refuse (a time not in the future). */
  addReminder(userId: number, messageId: number, deliverAt: number, note?: string): { reminderId: number };
  /** Undelivered reminders, optionally of one user, by delivery time. */
  reminders(userId?: number): SimReminder[];
  /** A user by id or email (API or delivery). */
  user(idOrEmail: number | string): SimUser | undefined;
  /** Every realm member, bots and deactivated users included. */
  users(): SimUser[];
  /** A stream by name (case-insensitive) or id. */
  stream(nameOrId: string | number): SimStream | undefined;
  /** Every stream. */
  streams(): SimStream[];
  /** A message with raw and rendered content, reactions and edit history. */
  message(id: number): SimMessage | undefined;
  /** The user's flags on a message; `[]` also when the user has no row for it.
   * @throws SimError `SIM_NOT_FOUND` for an unknown user. */
  flags(userId: number, messageId: number): string[];
  /** How many messages are stored. */
  messageCount(): number;
  /** The highest message id stored (0 if none). */
  maxMessageId(): number;
  /** Every upload with its stored bytes. */
  uploads(): SimUpload[];
}

/** A fault rule: which requests it matches and what it does to them. */
export interface SimFaultRule {
  method?: string;
  /** Exact path (with or without `/api/v1`) or a pattern tested against the full path. */
  path?: string | RegExp;
  /** Delay before the request is handled. */
  latencyMs?: number;
  /** Answer with this status (5xx or 429) without handling the request. */
  status?: number;
  /** Retry-After seconds for a 429 (default 1). */
  retryAfter?: number;
  /** Handle the request, send the headers and part of the body, then destroy the socket. */
  dropConnection?: boolean;
  /** Handle the request and send a complete response whose body is cut mid-JSON. */
  truncateBody?: boolean;
  /** How many matching requests the rule affects; unlimited by default. */
  times?: number;
}

/** A fault rule once installed. */
export interface SimFaultHandle {
  remove(): void;
  readonly hits: number;
}

/** Fault injection. */
export interface SimFaults {
  /** Installs a rule; it applies to matching requests until removed or `times` is used up. */
  add(rule: SimFaultRule): SimFaultHandle;
  /** Removes every rule. */
  clear(): void;
}

/** A live event queue, for inspection. */
export interface SimQueueInfo {
  readonly queueId: string;
  readonly userId: number;
  /** Id of the newest event put in the queue (-1 if none yet). */
  readonly lastEventId: number;
  /** Highest id the client has acknowledged (-1 if none). */
  readonly acknowledgedEventId: number;
  /** Events queued and not yet acknowledged. */
  readonly pending: number;
  readonly polling: boolean;
  readonly eventTypes: readonly string[] | null;
  readonly narrow: readonly (readonly [string, string])[];
  readonly allPublicStreams: boolean;
  readonly applyMarkdown: boolean;
  readonly clientGravatar: boolean;
  readonly capabilities: Readonly<Record<string, boolean>>;
}

/** One request the simulator answered (API keys are never recorded). */
export interface SimRequestRecord {
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  readonly params: Readonly<Record<string, unknown>>;
  readonly userId: number | null;
  readonly status: number;
  /** `Date.now()` when the request arrived. */
  readonly time: number;
  /** Milliseconds from arrival until the answer was handed to the socket (long-polls included). */
  readonly durationMs: number;
  /** The request's User-Agent (Zulip names the message `client` after it). */
  readonly userAgent?: string;
  /** Present when a fault rule set the status, dropped the connection or cut the body. */
  readonly fault?: true;
  /** The JSON body answered (`undefined` for non-JSON answers); only for `onRequest` listeners that asked for responses. */
  readonly response?: unknown;
}

/** Runtime knobs of a running simulator. */
export interface SimKnobs {
  heartbeatIntervalMs?: number;
  queueIdleTimeoutMs?: number;
  rateLimit?: { requests: number; windowMs: number } | false;
}

/** A running simulator. */
export interface ZulipSim {
  /** `http://127.0.0.1:PORT`; the API is at `${url}/api/v1`. */
  readonly url: string;
  readonly realm: SimRealm;
  readonly faults: SimFaults;
  /** The most recent requests, oldest first (at most `requestLogSize`). */
  readonly requests: readonly SimRequestRecord[];
  /** Calls `listener` after every answered request (with the parsed JSON `response` if `options.responses`); returns the unsubscribe function. */
  onRequest(listener: (request: SimRequestRecord) => void, options?: { responses?: boolean }): () => void;
  /** Delivers the reminders due by the realm's clock now (a real timer does it on time with the default clock); returns how many. */
  deliverDueReminders(): number;
  /** The realm's `zulip_feature_level` and `zulip_version`. */
  readonly zulipFeatureLevel: number;
  readonly zulipVersion: string;
  /** Changes heartbeat interval, idle timeout or rate limit at run time.
   * @throws SimError `SIM_INVALID_ARGUMENT` for a non-positive value. */
  configure(knobs: SimKnobs): void;
  /** Deletes a queue: the next poll (or one blocked on it now) gets BAD_EVENT_QUEUE_ID.
   * @throws SimError `SIM_NOT_FOUND` if no such queue is live. */
  expireQueue(queueId: string): void;
  /** Deletes every queue. */
  expireAllQueues(): void;
  /** The live queues, optionally of one user. */
  queues(userId?: number): SimQueueInfo[];
  /** Closes the listener and every socket, then reopens on the same port; the realm is kept, queues too unless `keepQueues: false`.
   * @throws SimError `SIM_CLOSED` after close; `SIM_LISTEN_FAILED` if the port was taken meanwhile. */
  restart(options?: { keepQueues?: boolean }): Promise<void>;
  /** Stops the listener, closes every connection and drops the queues' timers. */
  close(): Promise<void>;
  /** The site, delivery email and API key a client needs for this user.
   * @throws SimError `SIM_NOT_FOUND` for an unknown user. */
  credentials(userIdOrEmail: number | string): { site: string; email: string; apiKey: string };
  /** A zuliprc (`[api]` email, key, site) for this user.
   * @throws SimError `SIM_NOT_FOUND` for an unknown user. */
  zuliprc(userIdOrEmail: number | string): string;
}
