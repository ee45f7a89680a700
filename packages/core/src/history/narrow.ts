import { ZmcpError } from '../errors.js';

/** One narrow term in Zulip's object form; `negated` excludes what the term matches. */
export interface NarrowTerm {
  readonly operator: NarrowOperator;
  readonly operand: string | number | readonly number[];
  readonly negated?: boolean | undefined;
}

/** The narrow operators Zulip understands (aliases included). */
export type NarrowOperator =
  | 'channel'
  | 'stream'
  | 'channels'
  | 'streams'
  | 'topic'
  | 'sender'
  | 'dm'
  | 'pm-with'
  | 'dm-including'
  | 'group-pm-with'
  | 'id'
  | 'with'
  | 'near'
  | 'is'
  | 'has'
  | 'in'
  | 'search'
  | 'mentions';

/** Values of the `is:` operator. */
export type IsOperand =
  | 'dm'
  | 'private'
  | 'starred'
  | 'mentioned'
  | 'alerted'
  | 'unread'
  | 'resolved'
  | 'followed'
  | 'muted';

/** Values of the `has:` operator. */
export type HasOperand = 'link' | 'attachment' | 'image' | 'reaction';

/** More terms than this are refused: narrows ride the query string of GET /messages. */
export const MAX_NARROW_TERMS = 50;
/** Longest accepted string operand, in UTF-16 units. */
export const MAX_OPERAND_LENGTH = 1000;

const IS_VALUES: ReadonlySet<string> = new Set([
  'dm',
  'private',
  'starred',
  'mentioned',
  'alerted',
  'unread',
  'resolved',
  'followed',
  'muted',
]);
const HAS_VALUES: ReadonlySet<string> = new Set(['link', 'attachment', 'image', 'reaction']);
const CHANNEL_OPS: ReadonlySet<string> = new Set(['channel', 'stream']);
const DM_OPS: ReadonlySet<string> = new Set(['dm', 'pm-with']);

function bad(message: string, term?: unknown): ZmcpError {
  return new ZmcpError('CORE_INVALID_ARGUMENT', `Invalid narrow: ${message}`, {
    details: term === undefined ? {} : { term: describe(term) },
  });
}

function describe(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 120 ? `${text.slice(0, 120)}...` : text;
}

function isId(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function checkText(operator: string, v: unknown, allowEmpty: boolean): string {
  if (typeof v !== 'string') throw bad(`${operator} needs a string operand`, v);
  if (!allowEmpty && v.trim() === '') throw bad(`${operator} needs a non-empty operand`, v);
  if (v.length > MAX_OPERAND_LENGTH) throw bad(`${operator} operand is longer than ${MAX_OPERAND_LENGTH}`);
  // Other control characters can be part of a real topic or stream name (the
  // trust boundary renders them visibly), so a name read from a list must be
  // usable as an operand. NUL cannot be stored by Zulip at all.
  if (v.includes('\u0000') || LONE_SURROGATE.test(v)) {
    throw bad(`${operator} operand contains NUL or broken Unicode`, v);
  }
  return v;
}

function checkEmail(operator: string, v: string): string {
  if (!/^[^\s@,]+@[^\s@,]+$/.test(v)) throw bad(`${operator} needs a user id or an email`, v);
  return v;
}

function checkIdLike(operator: string, v: unknown): number | string {
  if (isId(v)) return v;
  if (typeof v === 'string' && /^[1-9][0-9]{0,15}$/.test(v) && Number.isSafeInteger(Number(v))) return v;
  throw bad(`${operator} needs a positive message id`, v);
}

function checkOperand(operator: string, operand: unknown): NarrowTerm['operand'] {
  switch (operator) {
    case 'channel':
    case 'stream':
      if (isId(operand)) return operand;
      return checkText(operator, operand, false);
    case 'channels':
    case 'streams':
      if (operand === 'public' || operand === 'web-public') return operand;
      throw bad(`${operator} takes "public" or "web-public"`, operand);
    case 'topic':
      return checkText(operator, operand, true);
    case 'sender':
    case 'dm-including':
    case 'group-pm-with':
    case 'mentions':
      if (isId(operand)) return operand;
      if (operator === 'mentions') throw bad('mentions needs a user id', operand);
      return checkEmail(operator, checkText(operator, operand, false));
    case 'dm':
    case 'pm-with':
      if (Array.isArray(operand)) {
        if (operand.length === 0 || operand.length > 100 || !operand.every(isId)) {
          throw bad(`${operator} needs 1 to 100 positive user ids`, operand);
        }
        return Object.freeze([...operand]);
      }
      if (isId(operand)) return Object.freeze([operand]);
      for (const email of checkText(operator, operand, false).split(',')) checkEmail(operator, email.trim());
      return operand as string;
    case 'id':
    case 'with':
    case 'near':
      return checkIdLike(operator, operand);
    case 'is':
      if (typeof operand === 'string' && IS_VALUES.has(operand)) return operand;
      throw bad(`is takes one of ${[...IS_VALUES].join(', ')}`, operand);
    case 'has':
      if (typeof operand === 'string' && HAS_VALUES.has(operand)) return operand;
      throw bad(`has takes one of ${[...HAS_VALUES].join(', ')}`, operand);
    case 'in':
      if (operand === 'home' || operand === 'all') return operand;
      throw bad('in takes "home" or "all"', operand);
    case 'search':
      return checkText(operator, operand, false);
    default:
      throw bad(`unknown operator ${describe(operator)}`);
  }
}

/**
 * Checks a narrow (object-form terms or legacy `[operator, operand]` pairs) and returns it as
 * fresh, frozen object-form terms: known operators only, operands of the right kind, at most
 * {@link MAX_NARROW_TERMS} terms, and no combination Zulip refuses (two channels, two topics,
 * a channel with a direct-message conversation).
 *
 * @throws {ZmcpError} `CORE_INVALID_ARGUMENT` naming the offending term.
 */
export function validateNarrow(input: unknown): readonly NarrowTerm[] {
  if (!Array.isArray(input)) throw bad('a narrow is a list of terms', input);
  if (input.length > MAX_NARROW_TERMS) throw bad(`more than ${MAX_NARROW_TERMS} terms (${input.length})`);
  const out: NarrowTerm[] = [];
  for (const raw of input as unknown[]) {
    let operator: unknown;
    let operand: unknown;
    let negated: unknown = false;
    if (Array.isArray(raw)) {
      if (raw.length !== 2) throw bad('a legacy term is an [operator, operand] pair', raw);
      [operator, operand] = raw;
      // Zulip reads legacy pairs as strings only: a number there is refused (not as BAD_NARROW).
      if (typeof operand !== 'string') throw bad('a legacy pair takes a string operand', raw);
    } else if (typeof raw === 'object' && raw !== null) {
      const keys = Object.keys(raw);
      if (keys.some((k) => k !== 'operator' && k !== 'operand' && k !== 'negated')) {
        throw bad('a term has only operator, operand and negated', raw);
      }
      ({ operator, operand } = raw as { operator?: unknown; operand?: unknown });
      negated = (raw as { negated?: unknown }).negated ?? false;
    } else {
      throw bad('a term is an object or an [operator, operand] pair', raw);
    }
    if (typeof operator !== 'string') throw bad('operator must be a string', raw);
    if (typeof negated !== 'boolean') throw bad('negated must be a boolean', raw);
    const lower = operator.toLowerCase();
    const checked = checkOperand(lower, operand);
    out.push(
      Object.freeze(
        negated
          ? { operator: lower as NarrowOperator, operand: checked, negated: true }
          : { operator: lower as NarrowOperator, operand: checked },
      ),
    );
  }
  const positive = out.filter((t) => !t.negated);
  const count = (ops: ReadonlySet<string>) => positive.filter((t) => ops.has(t.operator)).length;
  if (count(CHANNEL_OPS) > 1) throw bad('more than one channel term');
  if (positive.filter((t) => t.operator === 'topic').length > 1) throw bad('more than one topic term');
  if (count(DM_OPS) > 1) throw bad('more than one dm term');
  if (count(CHANNEL_OPS) > 0 && count(DM_OPS) > 0) throw bad('a channel term with a dm term matches nothing');
  return Object.freeze(out);
}

/** Builds a validated narrow one term at a time. */
export class NarrowBuilder {
  readonly #terms: NarrowTerm[] = [];
  #negateNext = false;

  #add(operator: NarrowOperator, operand: unknown): this {
    const negated = this.#negateNext;
    this.#negateNext = false;
    const operandChecked = checkOperand(operator, operand);
    this.#terms.push(
      negated ? { operator, operand: operandChecked, negated } : { operator, operand: operandChecked },
    );
    return this;
  }

  /** Negates the next term: `narrow().channel('x').not().topic('noise')`. */
  not(): this {
    this.#negateNext = true;
    return this;
  }

  /** Messages in a stream, by name or id. */
  channel(nameOrId: string | number): this {
    return this.#add('channel', nameOrId);
  }

  /** Messages in every public stream (or every web-public one). */
  channels(which: 'public' | 'web-public' = 'public'): this {
    return this.#add('channels', which);
  }

  /** Messages in a topic (case-insensitive exact match). */
  topic(name: string): this {
    return this.#add('topic', name);
  }

  /** Messages sent by a user, by id or email. */
  sender(idOrEmail: number | string): this {
    return this.#add('sender', idOrEmail);
  }

  /** Exactly one direct-message conversation, by the other participants' ids (the caller is implied). */
  dm(userIds: number | readonly number[]): this {
    return this.#add('dm', userIds);
  }

  /** Every direct message that includes a user. */
  dmIncluding(idOrEmail: number | string): this {
    return this.#add('dm-including', idOrEmail);
  }

  /** Just one message. */
  id(messageId: number): this {
    return this.#add('id', messageId);
  }

  /** The conversation that now contains a message (survives moves; FL271). */
  with(messageId: number): this {
    return this.#add('with', messageId);
  }

  /** A message property: `is('unread')`, `is('mentioned')`, `is('dm')`... */
  is(what: IsOperand): this {
    return this.#add('is', what);
  }

  /** Messages with a link, attachment, image or reaction. */
  has(what: HasOperand): this {
    return this.#add('has', what);
  }

  /** Full-text search over content and topic. */
  search(text: string): this {
    return this.#add('search', text);
  }

  /** Messages that mention a user directly (FL446). */
  mentions(userId: number): this {
    return this.#add('mentions', userId);
  }

  /**
   * Returns the terms, checked as a whole (see {@link validateNarrow}).
   *
   * @throws {ZmcpError} `CORE_INVALID_ARGUMENT` for a dangling `not()` or a refused combination.
   */
  build(): readonly NarrowTerm[] {
    if (this.#negateNext) throw bad('not() must be followed by a term');
    return validateNarrow(this.#terms);
  }
}

/**
 * Starts a narrow: `narrow().channel('x').topic('y').sender(8).has('image').search('foo').build()`.
 * Each method checks its operand at once.
 *
 * @throws {ZmcpError} `CORE_INVALID_ARGUMENT` from any method given a bad operand.
 */
export function narrow(): NarrowBuilder {
  return new NarrowBuilder();
}
