import { ApiError, badRequest } from './errors.js';
import { escapeHtml } from './markdown.js';
import { Flag, lowerBound, type MessageRecord, type UserRecord } from './model.js';
import { FL, LARGER_THAN_MAX_MESSAGE_ID, type Realm } from './realm.js';

/** A narrow term as it arrived (object or legacy pair form), after shape validation. */
export interface RawTerm {
  operator: string;
  operand: unknown;
  negated: boolean;
}

function badNarrow(desc: string): ApiError {
  return new ApiError(400, 'BAD_NARROW', `Invalid narrow operator: ${desc}`, { desc });
}

const ID_OPERATORS = new Set(['stream', 'channel', 'id', 'sender', 'group-pm-with', 'dm-including', 'with']);
const IDS_OPERATORS = new Set(['pm-with', 'dm']);

/**
 * Validates the decoded `narrow` parameter the way Zulip's NarrowParameter does; `mentions`
 * takes an id operand only where the realm knows the operator (FL446).
 */
export function parseNarrowParam(value: unknown, withMentions = false): RawTerm[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw badRequest('Invalid narrow: argument is not a list');
  return value.map((elem): RawTerm => {
    let term: RawTerm;
    if (Array.isArray(elem)) {
      if (elem.length !== 2 || elem.some((x) => typeof x !== 'string')) {
        throw badRequest('Invalid narrow: element is not a string pair');
      }
      term = { operator: elem[0] as string, operand: elem[1] as string, negated: false };
    } else if (elem !== null && typeof elem === 'object') {
      const o = elem as Record<string, unknown>;
      if (o.operand === undefined || o.operand === null)
        throw badRequest('Invalid narrow: operand is missing');
      if (o.operator === undefined || o.operator === null)
        throw badRequest('Invalid narrow: operator is missing');
      const negated = o.negated ?? false;
      if (typeof negated !== 'boolean') throw badRequest('negated is not a boolean');
      if (typeof o.operator !== 'string') throw badRequest('operator is not a string');
      term = { operator: o.operator, operand: o.operand, negated };
    } else {
      throw badRequest('Invalid narrow: element is not a dictionary');
    }
    const operand = term.operand;
    if (ID_OPERATORS.has(term.operator) || (withMentions && term.operator === 'mentions')) {
      if (typeof operand !== 'string' && !(typeof operand === 'number' && Number.isInteger(operand))) {
        throw badRequest('operand is not a string or an integer');
      }
    } else if (IDS_OPERATORS.has(term.operator)) {
      const ok =
        typeof operand === 'string' ||
        (Array.isArray(operand) && operand.every((x) => typeof x === 'number' && Number.isInteger(x)));
      if (!ok) throw badRequest('operand is not a string or an integer list');
    } else if (term.operator === 'search') {
      if (typeof operand !== 'string') throw badRequest('operand is not a string');
      if (operand.trim() === '') throw badRequest('operand cannot be blank.');
    } else if (typeof operand !== 'string') {
      throw badRequest('operand is not a string');
    }
    return term;
  });
}

type Pred = (m: MessageRecord, bits: number | undefined) => boolean;

/** A narrow resolved against the realm for one user: a candidate index and a predicate. */
export interface CompiledNarrow {
  /** Sorted ids that contain every match. */
  source: ArrayLike<number>;
  /** The narrow's terms plus the own-history rule. */
  match: Pred;
  /** The narrow's terms alone. */
  matchTerms: Pred;
  /** Whether messages the user never received (history) are included. */
  includeHistory: boolean;
  searchWords: string[] | null;
}

function resolveUser(realm: Realm, operand: unknown): UserRecord | undefined {
  if (typeof operand === 'number') return realm.user(operand);
  const s = String(operand);
  if (/^\d+$/.test(s)) return realm.user(Number(s)) ?? realm.userByEmail(s);
  return realm.userByEmail(s);
}

/** Resolves a narrow for `user`; `ownHistoryOnly` forces UserMessage rows (flags/narrow). */
export function compileNarrow(
  realm: Realm,
  user: UserRecord,
  input: RawTerm[],
  ownHistoryOnly = false,
): CompiledNarrow {
  let terms = input;
  const withTerms = terms.filter((t) => t.operator === 'with');
  if (withTerms.length > 1) throw badRequest("Duplicate 'with' operators.");
  if (withTerms.length === 1) {
    const w = withTerms[0] as RawTerm;
    terms = terms.filter((t) => t !== w);
    const id = Number(w.operand);
    if (!Number.isInteger(id)) throw badNarrow("Invalid 'with' operand");
    const msg = realm.messages.get(id);
    if (msg && realm.canAccessMessage(user, msg)) {
      const rest = terms.filter((t) => !['stream', 'channel', 'topic', 'dm', 'pm-with'].includes(t.operator));
      terms =
        msg.kind === 'stream'
          ? [
              { operator: 'channel', operand: msg.streamId, negated: false },
              { operator: 'topic', operand: msg.topic, negated: false },
              ...rest,
            ]
          : [
              { operator: 'dm', operand: msg.dmUserIds.filter((u) => u !== user.id), negated: false },
              ...rest,
            ];
    }
  }

  const preds: Pred[] = [];
  let includeHistory = false;
  let streamId: number | undefined;
  let topicLower: string | undefined;
  let conversation: number | null | undefined;
  let hasStreamTerm = false;
  let hasDmTerm = false;
  let searchWords: string[] | null = null;

  for (const term of terms) {
    const { operator, operand, negated } = term;
    let p: Pred;
    switch (operator) {
      case 'stream':
      case 'channel': {
        const stream =
          typeof operand === 'number' ? realm.stream(operand) : realm.streamByName(String(operand));
        if (!stream) throw badNarrow(`unknown channel ${String(operand)}`);
        const sid = stream.id;
        p = (m) => m.streamId === sid;
        if (!negated) {
          hasStreamTerm = true;
          streamId = sid;
          includeHistory = realm.canReadHistory(user, stream);
        }
        break;
      }
      case 'channels':
      case 'streams': {
        if (operand === 'public') {
          p = (m) => m.kind === 'stream' && !realm.stream(m.streamId)?.inviteOnly;
          if (!negated && !realm.isGuest(user)) includeHistory = true;
        } else if (operand === 'web-public') {
          p = (m) => m.kind === 'stream' && (realm.stream(m.streamId)?.isWebPublic ?? false);
        } else {
          throw badNarrow(`unknown channels operand ${String(operand)}`);
        }
        if (!negated) hasStreamTerm = true;
        break;
      }
      case 'topic': {
        const lower = String(operand).toLowerCase();
        p = (m) => m.kind === 'stream' && m.topic.toLowerCase() === lower;
        if (!negated) topicLower = lower;
        break;
      }
      case 'sender': {
        const sender = resolveUser(realm, operand);
        if (!sender) throw badNarrow(`unknown user ${String(operand)}`);
        const sid = sender.id;
        p = (m) => m.senderId === sid;
        break;
      }
      case 'dm':
      case 'pm-with': {
        let ids: number[];
        if (typeof operand === 'string') {
          const users = operand
            .split(',')
            .map((e) => e.trim())
            .filter((e) => e !== '')
            .map((e) => realm.userByEmail(e));
          if (users.length === 0 || users.some((u) => u === undefined)) {
            throw badNarrow(`unknown user in ${operand}`);
          }
          ids = users.map((u) => (u as UserRecord).id);
        } else {
          ids = operand as number[];
          if (ids.length === 0 || ids.some((id) => !realm.user(id))) {
            throw badNarrow(`unknown user in [${ids.join(', ')}]`);
          }
        }
        const rid = realm.conversationRecipient([...ids, user.id], false);
        p = (m) => m.kind === 'private' && m.recipientId === rid;
        if (!negated) {
          hasDmTerm = true;
          conversation = rid ?? null;
        }
        break;
      }
      case 'mentions': {
        if (!realm.has(FL.mentionsOperator)) throw badNarrow(`unknown operator ${operator}`);
        const target = resolveUser(realm, operand);
        if (!target) throw badNarrow(`unknown user ${String(operand)}`);
        const tid = target.id;
        p = (m) => m.mentionedUserIds.includes(tid);
        break;
      }
      case 'dm-including':
      case 'group-pm-with': {
        const other = resolveUser(realm, operand);
        if (!other) throw badNarrow(`unknown user ${String(operand)}`);
        const oid = other.id;
        p =
          operator === 'group-pm-with'
            ? (m) => m.kind === 'private' && m.dmUserIds.length > 2 && m.dmUserIds.includes(oid)
            : (m) => m.kind === 'private' && m.dmUserIds.includes(oid);
        if (!negated) hasDmTerm = true;
        break;
      }
      case 'id': {
        if (!/^\d+$/.test(String(operand))) throw badNarrow('Invalid message ID');
        const id = Number(operand);
        p = (m) => m.id === id;
        break;
      }
      case 'near':
        p = () => true;
        break;
      case 'is': {
        const o = String(operand);
        if (o === 'dm' || o === 'private') {
          p = (m) => m.kind === 'private';
          if (!negated) hasDmTerm = true;
        } else if (o === 'starred') p = (_m, b) => b !== undefined && (b & Flag.starred) !== 0;
        else if (o === 'unread') p = (_m, b) => b !== undefined && (b & Flag.read) === 0;
        else if (o === 'mentioned')
          p = (_m, b) =>
            b !== undefined && (b & (Flag.mentioned | Flag.streamWildcard | Flag.topicWildcard)) !== 0;
        else if (o === 'alerted') p = (_m, b) => b !== undefined && (b & Flag.alert) !== 0;
        else if (o === 'resolved') p = (m) => m.kind === 'stream' && m.topic.startsWith('✔ ');
        else if (o === 'followed' || o === 'muted') p = () => false;
        else throw badNarrow(`unknown 'is' operand ${o}`);
        break;
      }
      case 'has': {
        const o = String(operand);
        if (o === 'link') p = (m) => m.hasLink;
        else if (o === 'attachment') p = (m) => m.hasAttachment;
        else if (o === 'image') p = (m) => m.hasImage;
        else if (o === 'reaction') p = (m) => m.reactions.length > 0;
        else throw badNarrow(`unknown 'has' operand ${o}`);
        break;
      }
      case 'in': {
        const o = String(operand);
        if (o !== 'home' && o !== 'all') throw badNarrow(`unknown 'in' operand ${o}`);
        p = () => true;
        break;
      }
      case 'search': {
        const words = String(operand)
          .toLowerCase()
          .split(/\s+/)
          .filter((w) => w !== '');
        if (!negated) searchWords = [...(searchWords ?? []), ...words];
        p = (m) => {
          const hay = `${m.content.toLowerCase()}\n${m.topic.toLowerCase()}`;
          return words.every((w) => hay.includes(w));
        };
        break;
      }
      default:
        throw badNarrow(`unknown operator ${operator}`);
    }
    preds.push(negated ? (m, b) => !p(m, b) : p);
  }
  if (hasStreamTerm && hasDmTerm)
    throw badNarrow('No message can be both a channel message and direct message');
  for (const term of terms) {
    if (term.operator === 'is' && term.operand !== 'resolved' && term.operand !== 'followed')
      includeHistory = false;
  }
  if (ownHistoryOnly) includeHistory = false;

  let source: ArrayLike<number>;
  if (streamId !== undefined && topicLower !== undefined) {
    source = realm.byTopic.get(realm.topicKey(streamId, topicLower)) ?? [];
  } else if (streamId !== undefined) {
    source = realm.byStream.get(streamId) ?? [];
  } else if (conversation !== undefined) {
    source = conversation === null ? [] : (realm.byConversation.get(conversation) ?? []);
  } else if (includeHistory) {
    source = realm.allIds;
  } else {
    source = user.messages.view();
  }

  const history = includeHistory;
  const matchTerms: Pred = (m, b) => {
    for (const p of preds) if (!p(m, b)) return false;
    return true;
  };
  const match: Pred = (m, b) => (history || b !== undefined) && matchTerms(m, b);
  return { source, match, matchTerms, includeHistory, searchWords };
}

export interface RangeResult {
  ids: number[];
  foundAnchor: boolean;
  foundOldest: boolean;
  foundNewest: boolean;
}

/**
 * Zulip's limit_query_to_range + post_process_limited_query over a sorted candidate list,
 * quirks included (with num_before = num_after = 0 the anchor comes back even if excluded).
 */
export function fetchRange(
  realm: Realm,
  user: UserRecord,
  narrow: CompiledNarrow,
  anchor: number,
  numBefore: number,
  numAfter: number,
  includeAnchor: boolean,
): RangeResult {
  const { source } = narrow;
  const ok = (id: number): boolean => {
    const m = realm.messages.get(id);
    return m !== undefined && narrow.match(m, user.messages.get(id));
  };
  const descending = (upTo: number, limit: number): number[] => {
    const out: number[] = [];
    if (limit <= 0) return out;
    for (let i = lowerBound(source, upTo + 1) - 1; i >= 0 && out.length < limit; i--) {
      const id = source[i] as number;
      if (ok(id)) out.push(id);
    }
    return out.reverse();
  };
  const ascending = (from: number, limit: number): number[] => {
    const out: number[] = [];
    if (limit <= 0) return out;
    for (let i = lowerBound(source, from); i < source.length && out.length < limit; i++) {
      const id = source[i] as number;
      if (ok(id)) out.push(id);
    }
    return out;
  };

  const anchoredLeft = anchor === 0;
  const anchoredRight = anchor === LARGER_THAN_MAX_MESSAGE_ID;
  const needBefore = !anchoredLeft && numBefore > 0;
  const needAfter = !anchoredRight && numAfter > 0;
  const inc = includeAnchor ? 1 : 0;
  let rows: number[];
  if (needBefore && needAfter) {
    rows = [...descending(anchor - 1, numBefore), ...ascending(anchor, numAfter + 1)];
  } else if (needBefore) {
    rows = descending(
      anchoredRight ? Number.MAX_SAFE_INTEGER : anchor - (1 - inc),
      numBefore + (anchoredRight ? 0 : inc),
    );
  } else if (needAfter) {
    rows = ascending(anchoredLeft ? 0 : anchor + (1 - inc), numAfter + inc);
  } else {
    rows =
      lowerBound(source, anchor) < source.length &&
      source[lowerBound(source, anchor)] === anchor &&
      ok(anchor)
        ? [anchor]
        : [];
  }

  let before: number[];
  let at: number[];
  let after: number[];
  if (anchoredRight) {
    before = rows;
    at = [];
    after = [];
    numAfter = 0;
  } else {
    before = rows.filter((id) => id < anchor);
    at = rows.filter((id) => id === anchor);
    after = rows.filter((id) => id > anchor);
  }
  if (numBefore) before = before.slice(-numBefore);
  if (numAfter) after = after.slice(0, numAfter);
  return {
    ids: [...before, ...at, ...after],
    foundAnchor: at.length === 1,
    foundOldest: anchoredLeft || before.length < numBefore,
    foundNewest: anchoredRight || after.length < numAfter,
  };
}

/**
 * `anchor_date` as Zulip reads it (FL445): an ISO 8601 date (midnight UTC) or date-time (UTC
 * when no offset is given); returns UNIX seconds.
 */
export function parseAnchorDate(value: string): number {
  const text = value.trim();
  const date = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  let ms: number;
  if (date) {
    ms = Date.UTC(Number(date[1]), Number(date[2]) - 1, Number(date[3]));
    const back = new Date(ms);
    if (back.getUTCMonth() !== Number(date[2]) - 1 || back.getUTCDate() !== Number(date[3])) ms = Number.NaN;
  } else if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i.test(text)) {
    const iso = text.replace(' ', 'T');
    ms = Date.parse(/(Z|[+-]\d{2}:?\d{2})$/i.test(iso) ? iso : `${iso}Z`);
  } else {
    ms = Number.NaN;
  }
  if (!Number.isFinite(ms)) throw badRequest(`Invalid anchor_date: ${value}`);
  return Math.floor(ms / 1000);
}

/** The id `anchor=date` resolves to: the first match sent at or after `seconds`, else "newest". */
export function dateAnchor(realm: Realm, user: UserRecord, narrow: CompiledNarrow, seconds: number): number {
  const { source } = narrow;
  for (let i = 0; i < source.length; i++) {
    const id = source[i] as number;
    const m = realm.messages.get(id);
    if (m && m.timestamp >= seconds && narrow.match(m, user.messages.get(id))) return id;
  }
  return LARGER_THAN_MAX_MESSAGE_ID;
}

/** The id "first_unread" resolves to: the oldest unread match, else "newest". */
export function firstUnreadAnchor(realm: Realm, user: UserRecord, narrow: CompiledNarrow): number {
  const { source } = narrow;
  for (let i = 0; i < source.length; i++) {
    const id = source[i] as number;
    const bits = user.messages.get(id);
    if (bits === undefined || bits & Flag.read) continue;
    const m = realm.messages.get(id);
    if (m && narrow.match(m, bits)) return id;
  }
  return LARGER_THAN_MAX_MESSAGE_ID;
}

/**
 * Zulip's anchor parsing: names, integers, negatives to 0, huge values clamped; `"date"` only
 * where the realm has it (FL445; older servers answer "Invalid anchor").
 */
export function parseAnchor(value: string, allowDate = false): number | 'first_unread' | 'date' {
  if (value === 'oldest') return 0;
  if (value === 'newest') return LARGER_THAN_MAX_MESSAGE_ID;
  if (value === 'first_unread') return 'first_unread';
  if (value === 'date' && allowDate) return 'date';
  if (!/^\s*[-+]?\d+\s*$/.test(value)) throw badRequest('Invalid anchor');
  const n = Number(value.trim());
  if (n < 0) return 0;
  return Math.min(n, LARGER_THAN_MAX_MESSAGE_ID);
}

/** Wraps search words in highlight spans, in text outside tags only. */
export function highlight(html: string, words: string[]): string {
  if (words.length === 0) return html;
  const pattern = new RegExp(
    `(${words.map((w) => escapeHtml(w).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})`,
    'gi',
  );
  return html
    .split(/(<[^>]*>)/)
    .map((part) => (part.startsWith('<') ? part : part.replace(pattern, '<span class="highlight">$1</span>')))
    .join('');
}
