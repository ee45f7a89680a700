import type { RealmUserEvent } from '../api/events.js';
import type { RegisterResponse } from '../api/responses.js';
import type { Logger } from '../client/logger.js';
import { noopLogger } from '../client/logger.js';
import type { CallOptions } from '../client/transport.js';
import type { ZulipClient } from '../client/zulip-client.js';
import { ZmcpError } from '../errors.js';
import { EventQueue } from '../events/event-queue.js';

// Who may wake, reach, steer or answer an agent: one rule for every inbound path. Decided by user
// id; an email is resolved to the id of the one active user holding it, at start-up and again on
// every `realm_user` event (a user added, an address changed, a deactivation). Never by a display
// name: anyone can take a name.

/**
 * A way a person reaches an agent, named in refusal counts and logs: a mention that would wake it,
 * a DM, a follow-up in its conversation (an interrupt, a message `listen` would hand over), a
 * dismissal or an approval answered by reaction or text, any other reaction (an acknowledgement),
 * a Claude Code channel event.
 */
export type AdmissionPath =
  | 'mention'
  | 'dm'
  | 'follow-up'
  | 'dismissal'
  | 'approval'
  | 'reaction'
  | 'channel-event';

/** Every {@link AdmissionPath}, in a stable order. */
export const ADMISSION_PATHS: readonly AdmissionPath[] = [
  'mention',
  'dm',
  'follow-up',
  'dismissal',
  'approval',
  'reaction',
  'channel-event',
];

/** Who an admission list names: user ids, and email addresses (lower-cased) to resolve to ids. */
export interface AdmissionList {
  readonly ids: readonly number[];
  readonly emails: readonly string[];
}

/** Refusals counted since the gate was made: all of them, and per path. */
export interface AdmissionRefusals {
  readonly total: number;
  readonly byPath: Readonly<Record<AdmissionPath, number>>;
}

/** A user as the gate needs one: Zulip's user object (`GET /users`, `realm_users`) satisfies it. */
export interface AdmissionUser {
  readonly user_id: number;
  readonly email: string;
  readonly delivery_email?: string | null | undefined;
  readonly is_active?: boolean | undefined;
}

const ID_ENTRY = /^[1-9][0-9]{0,15}$/;
// One `@`, something on each side, no blank, comma, quote or angle bracket: an address as Zulip
// stores it, not a display name (`Ann Lee`) and not a mention (`@**Ann**`).
const EMAIL_ENTRY = /^[^\s@,"'<>()[\]\\;:]+@[^\s@,"'<>()[\]\\;:]+$/;

function badEntry(setting: string, entry: string): ZmcpError {
  return new ZmcpError(
    'CORE_CONFIG_INVALID',
    `${setting}: ${JSON.stringify(entry.slice(0, 60))} is neither a user id nor an email address (names are not accepted: anyone can take a name).`,
    { details: { setting } },
  );
}

/**
 * Reads an admission list, the one parser of every setting that says who may reach an agent
 * (`ZULIP_AGENT_ALLOWED_USERS`, `ZULIP_ALLOWED_USERS`, `ZULIP_CHANNEL_USERS`, a filters file's
 * `dmUsers`): a comma list, or a list of strings and numbers. An entry is a user id (digits, or a
 * positive integer) or an email address (matched without case); entries are trimmed, empty ones
 * skipped, repeats dropped. Returns `undefined` for an unset or blank setting.
 *
 * @throws ZmcpError `CORE_CONFIG_INVALID` naming `setting` and the first entry that is neither (a
 *   display name, a mention), or for a list that names nobody (`,,`).
 */
export function parseAdmissionList(
  value: string | readonly (string | number)[] | undefined,
  setting: string,
): AdmissionList | undefined {
  if (value === undefined) return undefined;
  const entries = typeof value === 'string' ? value.split(',') : value;
  if (typeof value === 'string' && value.trim() === '') return undefined;
  const ids = new Set<number>();
  const emails = new Set<string>();
  for (const raw of entries) {
    if (typeof raw === 'number') {
      if (!Number.isSafeInteger(raw) || raw <= 0) throw badEntry(setting, String(raw));
      ids.add(raw);
      continue;
    }
    const entry = raw.trim();
    if (entry === '') continue;
    if (ID_ENTRY.test(entry) && Number.isSafeInteger(Number(entry))) ids.add(Number(entry));
    else if (EMAIL_ENTRY.test(entry)) emails.add(entry.toLowerCase());
    else throw badEntry(setting, entry);
  }
  if (ids.size === 0 && emails.size === 0 && typeof value === 'string') {
    throw new ZmcpError('CORE_CONFIG_INVALID', `${setting} names nobody.`, { details: { setting } });
  }
  return { ids: [...ids], emails: [...emails] };
}

/** Whether `value` is one entry an admission list accepts: a user id or an email address. */
export function isAdmissionEntry(value: string | number): boolean {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0;
  const entry = value.trim();
  return (ID_ENTRY.test(entry) && Number.isSafeInteger(Number(entry))) || EMAIL_ENTRY.test(entry);
}

interface Known {
  email: string | undefined;
  delivery: string | undefined;
  active: boolean;
}

/**
 * The realm's users as far as admission cares: which addresses each holds and whether it is
 * active. Loaded from a user list and kept current from `realm_user` events; several gates may
 * share one (a process's gate and a filters file's DM list).
 */
export class AdmissionDirectory {
  readonly #users = new Map<number, Known>();
  #loaded = false;
  readonly #listeners = new Set<() => void>();

  /** Whether a user list was loaded: until then no email resolves. */
  get loaded(): boolean {
    return this.#loaded;
  }

  /** Replaces what is known with a user list (`GET /users`, or a registration's users). */
  load(users: Iterable<AdmissionUser>): void {
    this.#users.clear();
    for (const u of users) this.#users.set(u.user_id, known(u));
    this.#loaded = true;
    this.#changed();
  }

  /** Loads the users a registration carries (`realm_users` and `realm_non_active_users`), when it fetched them. */
  loadRegistration(registration: RegisterResponse): boolean {
    const active = registration.realm_users;
    if (active === undefined) return false;
    const inactive = (registration.realm_non_active_users ?? []).map((u) => ({ ...u, is_active: false }));
    this.load([...active.map((u) => ({ ...u, is_active: u.is_active ?? true })), ...inactive]);
    return true;
  }

  /**
   * Applies a `realm_user` event: a user added, an address changed (`new_email`,
   * `delivery_email`), a deactivation or reactivation (`is_active`, or the older `remove`).
   * Returns whether anything admission depends on changed.
   */
  apply(event: RealmUserEvent): boolean {
    const person = event.person as Record<string, unknown> & { user_id: number };
    const id = person.user_id;
    const before = this.#users.get(id);
    let next: Known;
    if (event.op === 'add' && typeof person.email === 'string') {
      next = known(person as unknown as AdmissionUser);
    } else if (event.op === 'remove') {
      next = { email: before?.email, delivery: before?.delivery, active: false };
    } else if (event.op === 'update') {
      next = { email: before?.email, delivery: before?.delivery, active: before?.active ?? true };
      if (typeof person.new_email === 'string') next.email = person.new_email.toLowerCase();
      if ('delivery_email' in person) {
        next.delivery =
          typeof person.delivery_email === 'string' ? person.delivery_email.toLowerCase() : undefined;
      }
      if (typeof person.is_active === 'boolean') next.active = person.is_active;
    } else {
      return false;
    }
    if (
      before !== undefined &&
      before.email === next.email &&
      before.delivery === next.delivery &&
      before.active === next.active
    ) {
      return false;
    }
    this.#users.set(id, next);
    this.#changed();
    return true;
  }

  /** Whether a user of this id exists (active or not). */
  has(userId: number): boolean {
    return this.#users.has(userId);
  }

  /** The active users holding `email` (lower-cased) as their address or their delivery address. */
  holders(email: string): number[] {
    const out: number[] = [];
    for (const [id, u] of this.#users) {
      if (u.active && (u.email === email || u.delivery === email)) out.push(id);
    }
    return out;
  }

  /** Calls `listener` after every change; returns the way to stop. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}

function known(u: AdmissionUser): Known {
  return {
    email: u.email.toLowerCase(),
    delivery: typeof u.delivery_email === 'string' ? u.delivery_email.toLowerCase() : undefined,
    active: u.is_active !== false,
  };
}

/** Options of an {@link AdmissionGate}. */
export interface AdmissionGateOptions {
  /** Where the list came from (`ZULIP_AGENT_ALLOWED_USERS`), named in errors and logs. */
  setting: string;
  /** Refusals (path and user id, never content) and entries that stop resolving are logged here. */
  logger?: Logger | undefined;
  /** The users to resolve emails against; default a directory of the gate's own (see {@link AdmissionGate.open}). */
  directory?: AdmissionDirectory | undefined;
}

/** Options of {@link AdmissionGate.open}. */
export interface OpenAdmissionGateOptions extends AdmissionGateOptions {
  /**
   * Follow `realm_user` events on an event queue of the gate's own, so a changed address moves
   * the admission with it. Default: when the list names an email (ids need no following).
   */
  follow?: boolean | undefined;
  /** Deadline and cancellation of the start-up reads. */
  call?: CallOptions | undefined;
  /** Event-queue tuning (tests). */
  queue?: { longPollTimeoutMs?: number | undefined } | undefined;
}

/**
 * Who may wake, reach, steer or answer an agent, by user id. Its list's ids admit those users;
 * each email admits the one active user holding it now (as address or delivery address), and
 * nobody while no one does or while two do. {@link AdmissionGate.check} counts and logs each
 * refusal by path and user id, never with what was said.
 */
export class AdmissionGate {
  readonly list: AdmissionList;
  readonly setting: string;
  readonly directory: AdmissionDirectory;
  readonly #logger: Logger;
  #admitted = new Set<number>();
  #unresolved: string[] = [];
  readonly #refusals: Record<AdmissionPath, number> = Object.fromEntries(
    ADMISSION_PATHS.map((p) => [p, 0]),
  ) as Record<AdmissionPath, number>;
  #total = 0;
  #queue: EventQueue | undefined;
  #loop: Promise<void> | undefined;
  readonly #stopListening: () => void;

  /** A gate over `list`. Emails resolve only once its directory has users (see {@link AdmissionGate.open}). */
  constructor(list: AdmissionList, options: AdmissionGateOptions) {
    this.list = { ids: [...list.ids], emails: [...list.emails] };
    this.setting = options.setting;
    this.#logger = options.logger ?? noopLogger;
    this.directory = options.directory ?? new AdmissionDirectory();
    this.#resolve(false);
    this.#stopListening = this.directory.onChange(() => this.#resolve(true));
  }

  /**
   * Opens a gate at start-up: reads the realm's users (on a `realm_user` queue of its own when it
   * follows changes, else with `GET /users`) and resolves the list strictly.
   *
   * @throws ZmcpError `CORE_CONFIG_INVALID` naming `setting` and each entry that names nobody: an
   *   id of no user of the realm, an email no active user holds (or two do; a bot that may not see
   *   real addresses sees only their public ones: list the user id then). The request codes when
   *   the realm cannot be read. Nothing is left open on a throw.
   */
  static async open(
    client: ZulipClient,
    list: AdmissionList,
    options: OpenAdmissionGateOptions,
  ): Promise<AdmissionGate> {
    const gate = new AdmissionGate(list, options);
    const follow = options.follow ?? list.emails.length > 0;
    try {
      if (follow) {
        const queue = await EventQueue.open(client, {
          eventTypes: ['realm_user'],
          fetchEventTypes: ['realm_user'],
          signal: options.call?.signal,
          longPollTimeoutMs: options.queue?.longPollTimeoutMs,
          logger: options.logger,
        });
        gate.#queue = queue;
        if (!gate.directory.loadRegistration(queue.registration))
          gate.directory.load(await client.getUsers({}, options.call));
      } else {
        gate.directory.load(await client.getUsers({}, options.call));
      }
      gate.#checkResolved();
    } catch (err) {
      await gate.close();
      throw err;
    }
    if (gate.#queue !== undefined) gate.#loop = gate.#follow(gate.#queue);
    return gate;
  }

  async #follow(queue: EventQueue): Promise<void> {
    try {
      for await (const item of queue) {
        if (item.kind === 'gap') this.directory.loadRegistration(item.registration);
        else if (item.kind === 'event' && item.event.type === 'realm_user') this.directory.apply(item.event);
      }
    } catch (err) {
      // Addresses stop following; ids keep admitting, and emails keep what they resolved to last.
      this.#logger.warn('the admission gate stopped following user changes', { setting: this.setting, err });
    }
  }

  #checkResolved(): void {
    const missing = [
      ...this.list.ids.filter((id) => !this.directory.has(id)).map(String),
      ...this.#unresolved,
    ];
    if (missing.length === 0) return;
    throw new ZmcpError(
      'CORE_CONFIG_INVALID',
      `${this.setting}: ${missing.map((e) => JSON.stringify(e)).join(', ')} ${missing.length === 1 ? 'names' : 'name'} no active user of the realm (or more than one); list people by user id or by an address the bot can see.`,
      { details: { setting: this.setting, unresolved: missing.length } },
    );
  }

  #resolve(later: boolean): void {
    const admitted = new Set(this.list.ids);
    const unresolved: string[] = [];
    for (const email of this.list.emails) {
      const holders = this.directory.holders(email);
      if (holders.length === 1) admitted.add(holders[0] as number);
      else unresolved.push(email);
    }
    if (later) {
      const lost = unresolved.filter((e) => !this.#unresolved.includes(e));
      if (lost.length > 0) {
        this.#logger.warn('an admission entry names no active user now; it admits nobody', {
          setting: this.setting,
          entries: lost.length,
        });
      }
    }
    this.#admitted = admitted;
    this.#unresolved = unresolved;
  }

  /** Whether the user may reach the agent now. */
  admits(userId: number): boolean {
    return this.#admitted.has(userId);
  }

  /** {@link AdmissionGate.admits}, counting and logging a refusal (the path and user id; no content). */
  check(userId: number, path: AdmissionPath): boolean {
    if (this.#admitted.has(userId)) return true;
    this.#total += 1;
    this.#refusals[path] += 1;
    this.#logger.info('admission refused', { path, userId, setting: this.setting });
    return false;
  }

  /** The user ids admitted now, ascending. */
  get admitted(): readonly number[] {
    return [...this.#admitted].sort((a, b) => a - b);
  }

  /** The list's emails that admit nobody now. */
  get unresolved(): readonly string[] {
    return [...this.#unresolved];
  }

  /** The refusals counted so far. */
  refusals(): AdmissionRefusals {
    return { total: this.#total, byPath: { ...this.#refusals } };
  }

  /** Stops following user changes (when it did); the gate keeps deciding as it last resolved. Idempotent. */
  async close(): Promise<void> {
    this.#stopListening();
    const queue = this.#queue;
    this.#queue = undefined;
    await queue?.close();
    await this.#loop;
  }
}
