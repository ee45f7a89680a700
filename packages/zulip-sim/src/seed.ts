// Seed files: a realm described as data (JSON or YAML), validated field by field, applied through
// the same SimRealm calls a programmatic seed makes.
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { SimError } from './errors.js';
import type {
  SimFaultRule,
  SimGroupSetting,
  SimRealm,
  SimSystemGroup,
  SimTopicsPolicy,
  SimUser,
  ZulipSimOptions,
} from './types.js';

/** A person in a seed file. */
export interface SimSeedUser {
  name: string;
  email?: string;
  role?: 'owner' | 'admin' | 'moderator' | 'member' | 'guest';
  timezone?: string;
  /** 32 ASCII letters or digits; random when absent. */
  apiKey?: string;
  alertWords?: string[];
}

/** A bot in a seed file. */
export interface SimSeedBot {
  name: string;
  email?: string;
  /** The email of the owning user. */
  owner?: string;
  type?: 'generic' | 'incoming_webhook' | 'outgoing_webhook' | 'embedded';
  apiKey?: string;
}

/** A channel in a seed file. */
export interface SimSeedChannel {
  name: string;
  description?: string;
  /** A private (invite-only) channel. */
  private?: boolean;
  webPublic?: boolean;
  /** For private channels: whether subscribers see history from before they joined (default false). */
  historyPublic?: boolean;
  /** Emails of the subscribers, or `everyone` (every user and bot). */
  subscribers?: string[] | 'everyone';
  topicsPolicy?: SimTopicsPolicy;
  /** Who may start topics: a system group name (`role:members`...) or a list of emails. */
  canCreateTopic?: SimSystemGroup | string[];
  /** The name of a folder of `folders`. */
  folder?: string;
}

/** A message in a seed file: `channel` and `topic`, or `to` (emails) for a direct message. */
export interface SimSeedMessage {
  from: string;
  content: string;
  channel?: string;
  topic?: string;
  to?: string[];
  /** When it was sent: an ISO 8601 date-time or UNIX seconds; now by default. */
  at?: string | number;
  /** Reactions as `{ by: email, emoji: name }`. */
  reactions?: { by: string; emoji: string }[];
}

/** A fault rule in a seed file: {@link SimFaultRule} with `path` a string, or `pathPattern` a regular expression. */
export interface SimSeedFault extends Omit<SimFaultRule, 'path'> {
  path?: string;
  pathPattern?: string;
}

/** A realm described as data: what `zulip-sim --seed FILE` reads. */
export interface SimSeed {
  realm?: { name?: string; subdomain?: string };
  server?: {
    zulipFeatureLevel?: number;
    zulipVersion?: string;
    heartbeatIntervalMs?: number;
    queueIdleTimeoutMs?: number;
    rateLimit?: { requests: number; windowMs: number } | false;
    maxFileUploadMib?: number;
    maxMessageLength?: number;
  };
  users?: SimSeedUser[];
  bots?: SimSeedBot[];
  folders?: { name: string; description?: string }[];
  channels?: SimSeedChannel[];
  messages?: SimSeedMessage[];
  faults?: SimSeedFault[];
}

function bad(field: string, problem: string, cause?: unknown): SimError {
  return new SimError('SIM_BAD_SEED', `${field}: ${problem}`, {
    details: { field },
    ...(cause === undefined ? {} : { cause }),
  });
}

type Obj = Record<string, unknown>;

function object(value: unknown, field: string): Obj {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw bad(field, 'must be an object');
  return value as Obj;
}

function only(o: Obj, field: string, keys: string[]): void {
  for (const k of Object.keys(o)) if (!keys.includes(k)) throw bad(`${field}.${k}`, 'is not a known field');
}

function list(value: unknown, field: string): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw bad(field, 'must be a list');
  return value;
}

function str(o: Obj, key: string, field: string, required = false): string | undefined {
  const v = o[key];
  if (v === undefined) {
    if (required) throw bad(`${field}.${key}`, 'is required');
    return undefined;
  }
  if (typeof v !== 'string' || (required && v.trim() === '')) {
    throw bad(`${field}.${key}`, required ? 'must be a non-empty string' : 'must be a string');
  }
  return v;
}

function bool(o: Obj, key: string, field: string): boolean | undefined {
  const v = o[key];
  if (v !== undefined && typeof v !== 'boolean') throw bad(`${field}.${key}`, 'must be true or false');
  return v as boolean | undefined;
}

function num(o: Obj, key: string, field: string, positive = true): number | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || (positive && v <= 0)) {
    throw bad(`${field}.${key}`, positive ? 'must be a positive number' : 'must be a number');
  }
  return v;
}

function oneOf<T extends string>(o: Obj, key: string, field: string, values: readonly T[]): T | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !values.includes(v as T)) {
    throw bad(`${field}.${key}`, `must be one of ${values.join(', ')}`);
  }
  return v as T;
}

function strings(o: Obj, key: string, field: string): string[] | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string'))
    throw bad(`${field}.${key}`, 'must be a list of strings');
  return v as string[];
}

const ROLES = ['owner', 'admin', 'moderator', 'member', 'guest'] as const;
const BOT_TYPES = ['generic', 'incoming_webhook', 'outgoing_webhook', 'embedded'] as const;
const POLICIES = ['inherit', 'allow_empty_topic', 'disable_empty_topic', 'empty_topic_only'] as const;
const GROUPS = [
  'role:everyone',
  'role:members',
  'role:fullmembers',
  'role:moderators',
  'role:administrators',
  'role:owners',
  'role:nobody',
] as const;

/**
 * Validates a decoded seed file and returns it typed.
 * @throws SimError `SIM_BAD_SEED`, its message and `details.field` naming the field (`seed.users[2].email`).
 */
export function parseSeed(input: unknown): SimSeed {
  const root = object(input, 'seed');
  only(root, 'seed', ['realm', 'server', 'users', 'bots', 'folders', 'channels', 'messages', 'faults']);
  const seed: SimSeed = {};
  if (root.realm !== undefined) {
    const r = object(root.realm, 'seed.realm');
    only(r, 'seed.realm', ['name', 'subdomain']);
    const name = str(r, 'name', 'seed.realm');
    const subdomain = str(r, 'subdomain', 'seed.realm');
    if (subdomain !== undefined && !/^[a-z0-9-]*$/.test(subdomain)) {
      throw bad('seed.realm.subdomain', 'must be lowercase letters, digits or dashes');
    }
    seed.realm = {
      ...(name === undefined ? {} : { name }),
      ...(subdomain === undefined ? {} : { subdomain }),
    };
  }
  if (root.server !== undefined) {
    const f = 'seed.server';
    const s = object(root.server, f);
    only(s, f, [
      'zulipFeatureLevel',
      'zulipVersion',
      'heartbeatIntervalMs',
      'queueIdleTimeoutMs',
      'rateLimit',
      'maxFileUploadMib',
      'maxMessageLength',
    ]);
    const server: NonNullable<SimSeed['server']> = {};
    const level = num(s, 'zulipFeatureLevel', f);
    if (level !== undefined) {
      if (!Number.isInteger(level) || level < 421 || level > 512) {
        throw bad(`${f}.zulipFeatureLevel`, 'must be an integer in 421..512');
      }
      server.zulipFeatureLevel = level;
    }
    const version = str(s, 'zulipVersion', f);
    if (version !== undefined) server.zulipVersion = version;
    for (const key of [
      'heartbeatIntervalMs',
      'queueIdleTimeoutMs',
      'maxFileUploadMib',
      'maxMessageLength',
    ] as const) {
      const v = num(s, key, f);
      if (v !== undefined) server[key] = v;
    }
    if (s.rateLimit !== undefined) {
      if (s.rateLimit === false) server.rateLimit = false;
      else {
        const rl = object(s.rateLimit, `${f}.rateLimit`);
        only(rl, `${f}.rateLimit`, ['requests', 'windowMs']);
        const requests = num(rl, 'requests', `${f}.rateLimit`);
        const windowMs = num(rl, 'windowMs', `${f}.rateLimit`);
        if (requests === undefined || windowMs === undefined) {
          throw bad(`${f}.rateLimit`, 'needs requests and windowMs (or false for none)');
        }
        server.rateLimit = { requests, windowMs };
      }
    }
    seed.server = server;
  }
  const emails = new Set<string>();
  const noteEmail = (email: string | undefined, field: string) => {
    if (email === undefined) return;
    if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw bad(field, 'must be an email address');
    if (emails.has(email.toLowerCase())) throw bad(field, `${email} is used twice`);
    emails.add(email.toLowerCase());
  };
  const apiKey = (o: Obj, field: string): string | undefined => {
    const key = str(o, 'apiKey', field);
    if (key !== undefined && !/^[A-Za-z0-9]{32}$/.test(key))
      throw bad(`${field}.apiKey`, 'must be 32 ASCII letters or digits');
    return key;
  };
  seed.users = list(root.users, 'seed.users').map((u, i) => {
    const f = `seed.users[${i}]`;
    const o = object(u, f);
    only(o, f, ['name', 'email', 'role', 'timezone', 'apiKey', 'alertWords']);
    const user: SimSeedUser = { name: str(o, 'name', f, true) as string };
    const email = str(o, 'email', f);
    noteEmail(email, `${f}.email`);
    if (email !== undefined) user.email = email;
    const role = oneOf(o, 'role', f, ROLES);
    if (role !== undefined) user.role = role;
    const tz = str(o, 'timezone', f);
    if (tz !== undefined) user.timezone = tz;
    const key = apiKey(o, f);
    if (key !== undefined) user.apiKey = key;
    const words = strings(o, 'alertWords', f);
    if (words !== undefined) user.alertWords = words;
    return user;
  });
  const userEmails = new Set(seed.users.flatMap((u) => (u.email ? [u.email.toLowerCase()] : [])));
  seed.bots = list(root.bots, 'seed.bots').map((b, i) => {
    const f = `seed.bots[${i}]`;
    const o = object(b, f);
    only(o, f, ['name', 'email', 'owner', 'type', 'apiKey']);
    const bot: SimSeedBot = { name: str(o, 'name', f, true) as string };
    const email = str(o, 'email', f);
    noteEmail(email, `${f}.email`);
    if (email !== undefined) bot.email = email;
    const owner = str(o, 'owner', f);
    if (owner !== undefined) {
      if (!userEmails.has(owner.toLowerCase()))
        throw bad(`${f}.owner`, `no user with email ${owner} in seed.users`);
      bot.owner = owner;
    }
    const type = oneOf(o, 'type', f, BOT_TYPES);
    if (type !== undefined) bot.type = type;
    const key = apiKey(o, f);
    if (key !== undefined) bot.apiKey = key;
    return bot;
  });
  const folderNames = new Set<string>();
  seed.folders = list(root.folders, 'seed.folders').map((x, i) => {
    const f = `seed.folders[${i}]`;
    const o = object(x, f);
    only(o, f, ['name', 'description']);
    const name = str(o, 'name', f, true) as string;
    if (folderNames.has(name.toLowerCase())) throw bad(`${f}.name`, `folder ${name} is defined twice`);
    folderNames.add(name.toLowerCase());
    const description = str(o, 'description', f);
    return description === undefined ? { name } : { name, description };
  });
  const channelNames = new Set<string>();
  seed.channels = list(root.channels, 'seed.channels').map((c, i) => {
    const f = `seed.channels[${i}]`;
    const o = object(c, f);
    only(o, f, [
      'name',
      'description',
      'private',
      'webPublic',
      'historyPublic',
      'subscribers',
      'topicsPolicy',
      'canCreateTopic',
      'folder',
    ]);
    const channel: SimSeedChannel = { name: str(o, 'name', f, true) as string };
    if (channelNames.has(channel.name.toLowerCase()))
      throw bad(`${f}.name`, `channel ${channel.name} is defined twice`);
    channelNames.add(channel.name.toLowerCase());
    const description = str(o, 'description', f);
    if (description !== undefined) channel.description = description;
    for (const key of ['private', 'webPublic', 'historyPublic'] as const) {
      const v = bool(o, key, f);
      if (v !== undefined) channel[key] = v;
    }
    if (o.subscribers === 'everyone') channel.subscribers = 'everyone';
    else {
      const subs = strings(o, 'subscribers', f);
      if (subs !== undefined) channel.subscribers = subs;
    }
    const policy = oneOf(o, 'topicsPolicy', f, POLICIES);
    if (policy !== undefined) channel.topicsPolicy = policy;
    if (o.canCreateTopic !== undefined) {
      if (typeof o.canCreateTopic === 'string') {
        const g = oneOf(o, 'canCreateTopic', f, GROUPS);
        if (g !== undefined) channel.canCreateTopic = g;
      } else channel.canCreateTopic = strings(o, 'canCreateTopic', f) as string[];
    }
    const folder = str(o, 'folder', f);
    if (folder !== undefined) {
      if (!folderNames.has(folder.toLowerCase()))
        throw bad(`${f}.folder`, `no folder ${folder} in seed.folders`);
      channel.folder = folder;
    }
    return channel;
  });
  seed.messages = list(root.messages, 'seed.messages').map((m, i) => {
    const f = `seed.messages[${i}]`;
    const o = object(m, f);
    only(o, f, ['from', 'content', 'channel', 'topic', 'to', 'at', 'reactions']);
    const msg: SimSeedMessage = {
      from: str(o, 'from', f, true) as string,
      content: str(o, 'content', f, true) as string,
    };
    const channel = str(o, 'channel', f);
    const to = strings(o, 'to', f);
    if ((channel === undefined) === (to === undefined))
      throw bad(f, 'needs either channel (with topic) or to');
    if (channel !== undefined) {
      msg.channel = channel;
      msg.topic = str(o, 'topic', f, false) ?? '';
    } else msg.to = to as string[];
    if (o.at !== undefined) {
      if (
        typeof o.at === 'number'
          ? !Number.isFinite(o.at)
          : typeof o.at !== 'string' || !Number.isFinite(Date.parse(o.at))
      ) {
        throw bad(`${f}.at`, 'must be an ISO 8601 date-time or UNIX seconds');
      }
      msg.at = o.at as string | number;
    }
    if (o.reactions !== undefined) {
      msg.reactions = list(o.reactions, `${f}.reactions`).map((r, j) => {
        const rf = `${f}.reactions[${j}]`;
        const ro = object(r, rf);
        only(ro, rf, ['by', 'emoji']);
        return { by: str(ro, 'by', rf, true) as string, emoji: str(ro, 'emoji', rf, true) as string };
      });
    }
    return msg;
  });
  seed.faults = list(root.faults, 'seed.faults').map((x, i) => {
    const f = `seed.faults[${i}]`;
    return parseFault(x, f);
  });
  return seed;
}

/** Validates one fault rule (of a seed file or a `--fault` option). */
export function parseFault(value: unknown, field: string): SimSeedFault {
  const o = object(value, field);
  only(o, field, [
    'method',
    'path',
    'pathPattern',
    'latencyMs',
    'status',
    'retryAfter',
    'dropConnection',
    'truncateBody',
    'times',
  ]);
  const fault: SimSeedFault = {};
  const method = str(o, 'method', field);
  if (method !== undefined) fault.method = method;
  const path = str(o, 'path', field);
  if (path !== undefined) fault.path = path;
  const pattern = str(o, 'pathPattern', field);
  if (pattern !== undefined) {
    try {
      new RegExp(pattern);
    } catch (error) {
      throw bad(`${field}.pathPattern`, 'is not a valid regular expression', error);
    }
    fault.pathPattern = pattern;
  }
  const latency = num(o, 'latencyMs', field, false);
  if (latency !== undefined) fault.latencyMs = latency;
  const status = num(o, 'status', field);
  if (status !== undefined) {
    if (![429, 500, 502, 503, 504].includes(status))
      throw bad(`${field}.status`, 'must be 429, 500, 502, 503 or 504');
    fault.status = status;
  }
  const retry = num(o, 'retryAfter', field);
  if (retry !== undefined) fault.retryAfter = retry;
  const drop = bool(o, 'dropConnection', field);
  if (drop !== undefined) fault.dropConnection = drop;
  const truncate = bool(o, 'truncateBody', field);
  if (truncate !== undefined) fault.truncateBody = truncate;
  const times = num(o, 'times', field);
  if (times !== undefined) fault.times = times;
  return fault;
}

/**
 * Reads a seed file's text: JSON when it starts with `{`, YAML otherwise (or as `format` says).
 * @throws SimError `SIM_BAD_SEED` for text that does not parse (naming the line) or a bad field.
 */
export function readSeed(text: string, format?: 'json' | 'yaml'): SimSeed {
  const kind = format ?? (text.trimStart().startsWith('{') ? 'json' : 'yaml');
  let data: unknown;
  try {
    data = kind === 'json' ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    const where = error instanceof YAMLParseError && error.linePos ? ` at line ${error.linePos[0].line}` : '';
    throw bad(
      'seed',
      `is not valid ${kind.toUpperCase()}${where}: ${(error as Error).message.split('\n')[0]}`,
      error,
    );
  }
  return parseSeed(data ?? {});
}

/** The rules of a seed's `faults`, ready for `sim.faults.add`. */
export function seedFaultRules(seed: SimSeed): SimFaultRule[] {
  return (seed.faults ?? []).map(({ pathPattern, path, ...rest }) => ({
    ...rest,
    ...(pathPattern !== undefined ? { path: new RegExp(pathPattern) } : path !== undefined ? { path } : {}),
  }));
}

const ROLE_CODES = { owner: 100, admin: 200, moderator: 300, member: 400, guest: 600 } as const;
const BOT_CODES = { generic: 1, incoming_webhook: 2, outgoing_webhook: 3, embedded: 4 } as const;

/**
 * `startZulipSim` options for a seed: its realm and server settings, and a `seed` function that
 * creates its folders, people, bots, channels and messages (in that order).
 * @throws SimError `SIM_BAD_SEED` (from `startZulipSim`) when the realm refuses a seeded item, naming it.
 */
export function seedOptions(seed: SimSeed): ZulipSimOptions {
  const options: ZulipSimOptions = { ...seed.server, seed: (realm) => applySeed(realm, seed) };
  if (seed.realm?.name !== undefined) options.realmName = seed.realm.name;
  if (seed.realm?.subdomain !== undefined) options.realmSubdomain = seed.realm.subdomain;
  return options;
}

function applySeed(realm: SimRealm, seed: SimSeed): void {
  const wrap = <T>(field: string, fn: () => T): T => {
    try {
      return fn();
    } catch (error) {
      if (error instanceof SimError && error.code !== 'SIM_CLOSED') throw bad(field, error.message, error);
      throw error;
    }
  };
  const byEmail = new Map<string, SimUser>();
  const person = (email: string, field: string): SimUser => {
    const u = byEmail.get(email.toLowerCase()) ?? realm.user(email);
    if (!u) throw bad(field, `no user or bot with email ${email}`);
    return u;
  };
  const folders = new Map<string, number>();
  (seed.folders ?? []).forEach((f, i) => {
    const folder = wrap(`seed.folders[${i}]`, () => realm.addChannelFolder(f));
    folders.set(f.name.toLowerCase(), folder.id);
  });
  (seed.users ?? []).forEach((u, i) => {
    const user = wrap(`seed.users[${i}]`, () =>
      realm.addUser({
        fullName: u.name,
        ...(u.email === undefined ? {} : { email: u.email }),
        ...(u.role === undefined ? {} : { role: ROLE_CODES[u.role] }),
        ...(u.timezone === undefined ? {} : { timezone: u.timezone }),
        ...(u.apiKey === undefined ? {} : { apiKey: u.apiKey }),
        ...(u.alertWords === undefined ? {} : { alertWords: u.alertWords }),
      }),
    );
    byEmail.set(user.email.toLowerCase(), user);
  });
  (seed.bots ?? []).forEach((b, i) => {
    const field = `seed.bots[${i}]`;
    const owner = b.owner === undefined ? undefined : person(b.owner, `${field}.owner`);
    const bot = wrap(field, () =>
      realm.addUser({
        fullName: b.name,
        isBot: true,
        botType: BOT_CODES[b.type ?? 'generic'],
        ...(b.email === undefined ? {} : { email: b.email }),
        ...(owner === undefined ? {} : { botOwnerId: owner.userId }),
        ...(b.apiKey === undefined ? {} : { apiKey: b.apiKey }),
      }),
    );
    byEmail.set(bot.email.toLowerCase(), bot);
  });
  (seed.channels ?? []).forEach((c, i) => {
    const field = `seed.channels[${i}]`;
    const subscribers =
      c.subscribers === 'everyone'
        ? [...byEmail.values()].map((u) => u.userId)
        : (c.subscribers ?? []).map((e, j) => person(e, `${field}.subscribers[${j}]`).userId);
    let canCreateTopicGroup: SimGroupSetting | undefined;
    if (Array.isArray(c.canCreateTopic)) {
      canCreateTopicGroup = {
        users: c.canCreateTopic.map((e, j) => person(e, `${field}.canCreateTopic[${j}]`).userId),
      };
    } else if (c.canCreateTopic !== undefined) canCreateTopicGroup = c.canCreateTopic;
    wrap(field, () =>
      realm.addStream({
        name: c.name,
        subscribers,
        ...(c.description === undefined ? {} : { description: c.description }),
        ...(c.private === undefined ? {} : { inviteOnly: c.private }),
        ...(c.webPublic === undefined ? {} : { isWebPublic: c.webPublic }),
        ...(c.historyPublic === undefined ? {} : { historyPublicToSubscribers: c.historyPublic }),
        ...(c.topicsPolicy === undefined ? {} : { topicsPolicy: c.topicsPolicy }),
        ...(canCreateTopicGroup === undefined ? {} : { canCreateTopicGroup }),
        ...(c.folder === undefined ? {} : { folderId: folders.get(c.folder.toLowerCase()) as number }),
      }),
    );
  });
  (seed.messages ?? []).forEach((m, i) => {
    const field = `seed.messages[${i}]`;
    const sender = person(m.from, `${field}.from`);
    const timestamp =
      m.at === undefined
        ? undefined
        : typeof m.at === 'number'
          ? Math.floor(m.at)
          : Math.floor(Date.parse(m.at) / 1000);
    const id = wrap(field, () =>
      m.channel !== undefined
        ? realm.sendMessage({
            senderId: sender.userId,
            type: 'stream',
            stream: m.channel,
            topic: m.topic ?? '',
            content: m.content,
            ...(timestamp === undefined ? {} : { timestamp }),
          })
        : realm.sendMessage({
            senderId: sender.userId,
            type: 'direct',
            to: (m.to ?? []).map((e, j) => person(e, `${field}.to[${j}]`).userId),
            content: m.content,
            ...(timestamp === undefined ? {} : { timestamp }),
          }),
    );
    (m.reactions ?? []).forEach((r, j) => {
      const by = person(r.by, `${field}.reactions[${j}].by`);
      wrap(`${field}.reactions[${j}]`, () => realm.addReaction(by.userId, id, r.emoji));
    });
  });
}
