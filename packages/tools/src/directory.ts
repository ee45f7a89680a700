import {
  type CallOptions,
  createStreamLookup,
  errorCode,
  escapeMsgName,
  PersonNames,
  type ResolvedUser,
  readPrintedName,
  resolveUser,
  type Stream,
  type StreamInfoLookup,
  type Subscription,
  type User,
  type ZulipClient,
} from '@zmcp/core';
import { ToolError } from './errors.js';

/** Options of {@link RealmDirectory}. */
export interface RealmDirectoryOptions {
  /** How long a fetched list stays fresh, in milliseconds. Default 60 s. */
  ttlMs?: number | undefined;
  /** Millisecond clock; tests inject one. */
  now?: (() => number) | undefined;
}

type ListName = 'streams' | 'subscriptions' | 'users';

interface Cached<T> {
  at: number;
  value: Promise<T>;
}

interface StreamIndex {
  streams: Stream[];
  subscriptions: Subscription[];
  byId: Map<number, Stream>;
  lookup: StreamInfoLookup;
}

/**
 * A short-lived cache of the realm's streams, the bot's subscriptions and its users, shared
 * by the tools of one server so that name resolution and access checks cost no extra round
 * trip per call. Anything it cannot find is re-fetched once before it is reported missing.
 */
export class RealmDirectory {
  readonly #client: ZulipClient;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #slots = new Map<ListName, Cached<unknown>>();
  #index: StreamIndex | undefined;
  /**
   * The display names of the last user list fetched, indexed once per list: what every message
   * line the tools print tells people apart by (see core's `PersonNames`).
   */
  readonly people = new PersonNames();

  constructor(client: ZulipClient, options: RealmDirectoryOptions = {}) {
    this.#client = client;
    this.#ttlMs = options.ttlMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  #cached<T>(name: ListName, load: () => Promise<T>): Promise<T> {
    const slot = this.#slots.get(name);
    if (slot !== undefined && this.#now() - slot.at < this.#ttlMs) return slot.value as Promise<T>;
    const entry: Cached<T> = { at: this.#now(), value: load() };
    this.#slots.set(name, entry);
    // A failed load is not kept: the next call tries again.
    entry.value.catch(() => {
      if (this.#slots.get(name) === entry) this.#slots.delete(name);
    });
    return entry.value;
  }

  /** Every stream the bot can see: public ones and those it is subscribed to. */
  streams(call?: CallOptions): Promise<Stream[]> {
    return this.#cached('streams', () => this.#client.getStreams({}, call));
  }

  /** The bot's subscriptions. */
  subscriptions(call?: CallOptions): Promise<Subscription[]> {
    return this.#cached('subscriptions', () => this.#client.getSubscriptions({}, call));
  }

  /** Every user of the realm, bots and deactivated users included. */
  users(call?: CallOptions): Promise<User[]> {
    return this.#cached('users', () =>
      this.#client.getUsers({}, call).then((users) => {
        this.people.replace(users);
        return users;
      }),
    );
  }

  /**
   * {@link people}, with the user list fetched first when it is stale (as {@link users}). A failed
   * fetch leaves the names known so far: a name that hides characters is told apart regardless.
   * @throws what the call's own abort signal throws.
   */
  async knownPeople(call?: CallOptions): Promise<PersonNames> {
    try {
      await this.users(call);
    } catch (err) {
      if (call?.signal?.aborted === true) throw err;
    }
    return this.people;
  }

  /** Forgets cached lists so the next call fetches them again (after subscribing, say). */
  invalidate(which: ListName | 'all' = 'all'): void {
    if (which === 'all') this.#slots.clear();
    else this.#slots.delete(which);
  }

  /**
   * The visible streams by id (a subscription's record over the stream list's) and their lookup,
   * built once per pair of fetched lists rather than on every call.
   */
  async #streamIndex(call: CallOptions | undefined): Promise<StreamIndex> {
    const [streams, subscriptions] = await Promise.all([this.streams(call), this.subscriptions(call)]);
    const last = this.#index;
    if (last?.streams === streams && last.subscriptions === subscriptions) return last;
    const byId = new Map<number, Stream>();
    for (const s of streams) byId.set(s.stream_id, s);
    for (const s of subscriptions) byId.set(s.stream_id, s);
    const index: StreamIndex = { streams, subscriptions, byId, lookup: createStreamLookup(byId.values()) };
    this.#index = index;
    return index;
  }

  /** The stream facts the access policy needs, from the streams the bot can see. */
  async streamLookup(call?: CallOptions): Promise<StreamInfoLookup> {
    return (await this.#streamIndex(call)).lookup;
  }

  /**
   * Finds a stream the bot can see by id, or by name as Zulip resolves names (exact, else up to
   * case; never a look-alike). A name as the tools print it (quoted, `&lt;` for `<`) is accepted.
   * @throws ToolError `TOOLS_NOT_FOUND` naming the stream when the bot cannot see it.
   */
  async stream(ref: string | number, call?: CallOptions): Promise<Stream> {
    const refs = typeof ref === 'number' ? [ref] : readPrintedName(ref.trim());
    const fromLists = async () => {
      const { byId, lookup } = await this.#streamIndex(call);
      for (const r of refs) {
        const info = lookup(r);
        if (info !== undefined) return byId.get(info.stream_id);
      }
      return undefined;
    };
    let found = await fromLists();
    if (found === undefined) {
      this.invalidate('streams');
      this.invalidate('subscriptions');
      found = await fromLists();
    }
    if (found === undefined) {
      throw new ToolError(
        'TOOLS_NOT_FOUND',
        `No stream ${typeof ref === 'number' ? `with id ${ref}` : JSON.stringify(escapeMsgName(ref.slice(0, 100)))} is visible to this bot.`,
      );
    }
    return found;
  }

  /**
   * Resolves a user by id, email or name (see core's `resolveUser`; `exact` for write targets:
   * only an id, an email or an exact full name). A name as the tools print it (quoted) is
   * accepted. Refetches the user list once when nobody matches, in case the user is new.
   * @throws ZmcpError `CORE_USER_NOT_FOUND` (with candidates when `exact`) or `CORE_USER_AMBIGUOUS`.
   */
  async user(
    query: string | number,
    call?: CallOptions,
    options: { exact?: boolean } = {},
  ): Promise<ResolvedUser<User>> {
    const queries = typeof query === 'number' ? [query] : readPrintedName(query);
    const attempt = (users: User[]): ResolvedUser<User> => {
      let first: unknown;
      for (const q of queries) {
        try {
          return resolveUser(users, q, options);
        } catch (err) {
          if (errorCode(err) !== 'CORE_USER_NOT_FOUND') throw err;
          first ??= err;
        }
      }
      throw first;
    };
    try {
      return attempt(await this.users(call));
    } catch (err) {
      if (errorCode(err) !== 'CORE_USER_NOT_FOUND') throw err;
      this.invalidate('users');
      return attempt(await this.users(call));
    }
  }
}
