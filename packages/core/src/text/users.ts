import { ZmcpError } from '../errors.js';
import { escapeMsgName, quoteName } from './escape.js';

/** The user fields {@link resolveUser} reads (Zulip's user object satisfies it). */
export interface ResolvableUser {
  readonly user_id: number;
  readonly email: string;
  readonly full_name: string;
  /** The real address when visible; matched like `email`. */
  readonly delivery_email?: string | null | undefined;
  /** `false` for a deactivated account. Absent counts as active. */
  readonly is_active?: boolean | undefined;
}

/** How a reference was matched, strongest first. */
export type UserMatchKind = 'id' | 'email' | 'name' | 'prefix' | 'substring';

/** The user a reference named. */
export interface ResolvedUser<U extends ResolvableUser> {
  readonly user: U;
  readonly matchedBy: UserMatchKind;
  /** True when the account is deactivated (it cannot receive messages). */
  readonly deactivated: boolean;
}

const MAX_CANDIDATES = 20;
const MENTION_RE = /^@_?\*\*(.*?)(?:\|(\d+))?\*\*$/s;

function normalizeName(s: string): string {
  return s.normalize('NFC').trim().replace(/\s+/g, ' ').toLowerCase();
}

/** Options of {@link resolveUser}. */
export interface ResolveUserOptions {
  /**
   * Only an id, an email or a full name spelled exactly so (mention syntax included): what a
   * write to a person must be addressed by, since display names are chosen by anyone. A reference
   * that is none of these matches nobody; the error lists the people it might have meant.
   */
  readonly exact?: boolean | undefined;
}

/**
 * Finds the one user a reference names. In order: a user id (a number or a digit string), Zulip
 * mention syntax (`@**Name|id**` uses the id, `@**Name**` the name), an email (case-insensitive,
 * against `email` and `delivery_email`), then the full name, case-insensitively: an exact match, else
 * a unique name prefix, else a unique substring. Each step that finds several users stops with
 * ambiguity rather than guessing; deactivated users are found and flagged.
 *
 * @throws `CORE_USER_NOT_FOUND` when nobody matches; `details.query`.
 * @throws `CORE_USER_AMBIGUOUS` when several users match at the deciding step; `details.candidates`
 *   lists `{ user_id, full_name, email, is_active }` (at most 20) and `details.count` how many.
 * @throws `CORE_INVALID_ARGUMENT` for an empty reference.
 */
export function resolveUser<U extends ResolvableUser>(
  users: Iterable<U>,
  query: string | number,
  options: ResolveUserOptions = {},
): ResolvedUser<U> {
  const list = Array.isArray(users) ? (users as readonly U[]) : [...users];
  const found = (user: U, matchedBy: UserMatchKind): ResolvedUser<U> => ({
    user,
    matchedBy,
    deactivated: user.is_active === false,
  });
  const notFound = (what: string): ZmcpError =>
    new ZmcpError('CORE_USER_NOT_FOUND', `No user matches ${what}.`, {
      details: { query: escapeMsgName(String(query).slice(0, 200)) },
    });

  if (typeof query === 'number') return byId(list, query, found, notFound);
  let text = query.trim();
  if (text === '') {
    throw new ZmcpError('CORE_INVALID_ARGUMENT', 'A user reference must not be empty.', {
      details: { query },
    });
  }
  const mention = MENTION_RE.exec(text);
  if (mention !== null) {
    if (mention[2] !== undefined) return byId(list, Number(mention[2]), found, notFound);
    text = (mention[1] as string).trim();
  } else if (text.startsWith('@') && !text.slice(1).includes('@')) {
    text = text.slice(1).trim();
  }
  if (/^\d+$/.test(text)) return byId(list, Number(text), found, notFound);

  if (text.includes('@')) {
    const email = text.toLowerCase();
    const matches = list.filter(
      (u) =>
        u.email.toLowerCase() === email ||
        (typeof u.delivery_email === 'string' && u.delivery_email.toLowerCase() === email),
    );
    if (matches.length === 0) throw notFound(`the email ${JSON.stringify(escapeMsgName(text))}`);
    return pick(matches, 'email', text, found);
  }

  if (options.exact === true) {
    const exact = list.filter((u) => u.full_name === text);
    if (exact.length > 0) return pick(exact, 'name', text, found);
    throw inexact(list, text, query);
  }
  const name = normalizeName(text);
  const names = list.map((u) => normalizeName(u.full_name));
  for (const kind of ['name', 'prefix', 'substring'] as const) {
    const matches: U[] = [];
    for (let i = 0; i < list.length; i++) {
      const n = names[i] as string;
      if (kind === 'name' ? n === name : kind === 'prefix' ? n.startsWith(name) : n.includes(name)) {
        matches.push(list[i] as U);
      }
    }
    if (matches.length > 0) return pick(matches, kind, text, found);
  }
  throw notFound(`the name ${JSON.stringify(escapeMsgName(text))}`);
}

/** No exact match: the people a loose reading would have found, to choose from by id. */
function inexact<U extends ResolvableUser>(
  list: readonly U[],
  text: string,
  query: string | number,
): ZmcpError {
  const name = normalizeName(text);
  const near = list.filter((u) => normalizeName(u.full_name).includes(name)).slice(0, MAX_CANDIDATES);
  const candidates = near.map(candidateOf);
  const listed = candidates.map((c) => `${quoteName(c.full_name, 'member')} (id ${c.user_id})`).join(', ');
  return new ZmcpError(
    'CORE_USER_NOT_FOUND',
    `No user is named exactly ${JSON.stringify(escapeMsgName(text))}${listed === '' ? '' : `; did you mean: ${listed}`}. Name the person by user id or email.`,
    { details: { query: escapeMsgName(String(query).slice(0, 200)), candidates } },
  );
}

function candidateOf(u: ResolvableUser): {
  user_id: number;
  full_name: string;
  email: string;
  is_active: boolean;
} {
  return { user_id: u.user_id, full_name: u.full_name, email: u.email, is_active: u.is_active !== false };
}

function byId<U extends ResolvableUser>(
  list: readonly U[],
  id: number,
  found: (u: U, k: UserMatchKind) => ResolvedUser<U>,
  notFound: (what: string) => ZmcpError,
): ResolvedUser<U> {
  if (!Number.isSafeInteger(id)) throw notFound(`the id ${String(id)}`);
  const user = list.find((u) => u.user_id === id);
  if (user === undefined) throw notFound(`the id ${id}`);
  return found(user, 'id');
}

function pick<U extends ResolvableUser>(
  matches: readonly U[],
  kind: UserMatchKind,
  query: string,
  found: (u: U, k: UserMatchKind) => ResolvedUser<U>,
): ResolvedUser<U> {
  if (matches.length === 1) return found(matches[0] as U, kind);
  const candidates = matches.slice(0, MAX_CANDIDATES).map(candidateOf);
  const listed = candidates.map((c) => `${quoteName(c.full_name, 'member')} (id ${c.user_id})`).join(', ');
  throw new ZmcpError(
    'CORE_USER_AMBIGUOUS',
    `${matches.length} users match ${JSON.stringify(escapeMsgName(query))}: ${listed}${matches.length > MAX_CANDIDATES ? ', …' : ''}. Use the user id or email instead.`,
    { details: { query, candidates, count: matches.length } },
  );
}
