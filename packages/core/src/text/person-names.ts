import { type NameField, quoteName } from './escape.js';

// Telling people apart in a line. Display names are chosen by anyone: one that equals another's
// but for an invisible character, a compatibility form or a look-alike letter of another script
// prints as that person. The line then carries the user id, which names are never allowed to
// stand in for: `Olivia Owner (user 12)`. Plain names nobody else holds print as they are.

/** A person as a line names them: Zulip's user object, or a DM participant, satisfies it. */
export interface NamedPerson {
  readonly user_id: number;
  readonly full_name: string;
}

// Characters that render as nothing (or as a blank): Unicode's default-ignorable code points
// (format characters such as U+200B-U+200F, U+2060-U+2064, U+FEFF, the soft hyphen, variation
// selectors, Hangul fillers, tag characters) and the blank Braille pattern.
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\u2800]/u;
const INVISIBLE_ALL = /[\p{Default_Ignorable_Code_Point}\u2800]/gu;
// An emoji sequence's own joiners and presentation selectors are not hiding anything.
const EMOJI_SEQUENCE =
  /\p{Extended_Pictographic}[\u{1F3FB}-\u{1F3FF}\uFE0F]?(?:\u200D\p{Extended_Pictographic}[\u{1F3FB}-\u{1F3FF}\uFE0F]?)*/gu;
// A combining mark with nothing to combine with: at the start, or after a space.
const LONE_MARK = /(?:^|\s)\p{M}/u;
const LATIN = /\p{Script=Latin}/u;
const GREEK = /\p{Script=Greek}/u;
const CYRILLIC = /\p{Script=Cyrillic}/u;
const PLAIN = /^[\x20-\x7e]*$/;
const SPACES = /[\p{Z}\s]+/gu;

/**
 * True when a display name holds what hides or disguises it: an invisible character (a format
 * character such as a zero-width space, a variation selector outside an emoji, a Hangul filler,
 * a blank), a combining mark with no letter to sit on, or letters of more than one of Latin,
 * Greek and Cyrillic (whose look-alikes pass for each other). Such a name is always printed with
 * the user id.
 */
export function isDeceptiveName(name: string): boolean {
  if (PLAIN.test(name)) return false;
  const outsideEmoji = name.replace(EMOJI_SEQUENCE, '');
  if (INVISIBLE.test(outsideEmoji) || LONE_MARK.test(name)) return true;
  const scripts = (LATIN.test(name) ? 1 : 0) + (GREEK.test(name) ? 1 : 0) + (CYRILLIC.test(name) ? 1 : 0);
  return scripts > 1;
}

/**
 * What two display names collide on: invisible characters dropped, NFKC-folded (full-width and
 * other compatibility forms read as their plain letters), runs of spaces made one, trimmed, and
 * case-folded. Names with one key print alike, or nearly.
 */
export function displayNameKey(name: string): string {
  const folded = PLAIN.test(name)
    ? name
    : name.replace(INVISIBLE_ALL, '').normalize('NFKC').replace(INVISIBLE_ALL, '');
  return folded.replace(SPACES, ' ').trim().toLowerCase();
}

/**
 * The display names of a realm, indexed once per user list (and kept current with `set` as
 * people are renamed), so that every line can tell who shares a name. Pass it to the message-line
 * formatter (`people`) and to {@link personLabel}.
 */
export class PersonNames {
  readonly #holders = new Map<string, Set<number>>();
  readonly #keyOf = new Map<number, string>();
  #version = 0;

  constructor(people: Iterable<NamedPerson> = []) {
    for (const person of people) this.#add(person.user_id, person.full_name);
  }

  /** Changes with every change of the index: a formatter caching what it printed checks it. */
  get version(): number {
    return this.#version;
  }

  /** Replaces the whole index with a new user list. */
  replace(people: Iterable<NamedPerson>): void {
    this.#holders.clear();
    this.#keyOf.clear();
    for (const person of people) this.#add(person.user_id, person.full_name);
    this.#version++;
  }

  /** Records a person's current name (a new user, or a rename). */
  set(userId: number, name: string): void {
    const key = displayNameKey(name);
    if (this.#keyOf.get(userId) === key) return;
    this.#remove(userId);
    this.#add(userId, name, key);
    this.#version++;
  }

  /**
   * True when a line must print `userId` with its id beside `name`: the name is deceptive (see
   * {@link isDeceptiveName}), or another person holds a name with the same key (see
   * {@link displayNameKey}), or it is held by several.
   */
  needsUserId(name: string, userId: number): boolean {
    if (isDeceptiveName(name)) return true;
    const holders = this.#holders.get(displayNameKey(name));
    return holders !== undefined && (holders.size > 1 || !holders.has(userId));
  }

  #add(userId: number, name: string, key = displayNameKey(name)): void {
    this.#remove(userId);
    this.#keyOf.set(userId, key);
    let holders = this.#holders.get(key);
    if (holders === undefined) {
      holders = new Set();
      this.#holders.set(key, holders);
    }
    holders.add(userId);
  }

  #remove(userId: number): void {
    const key = this.#keyOf.get(userId);
    if (key === undefined) return;
    this.#keyOf.delete(userId);
    const holders = this.#holders.get(key);
    holders?.delete(userId);
    if (holders?.size === 0) this.#holders.delete(key);
  }
}

/** True when a line must print the person with their id: `people`'s rule, or without it, a deceptive name. */
export function needsUserId(name: string, userId: number, people?: PersonNames | undefined): boolean {
  return people === undefined ? isDeceptiveName(name) : people.needsUserId(name, userId);
}

/**
 * A person as every surface names them beside what they said, unquoted (for a structured field
 * such as a delivery's author): `name`, or `name (user <id>)` when a name alone would not tell
 * them apart (see {@link PersonNames.needsUserId}; without `people`, only deceptive names).
 */
export function personLabel(name: string, userId: number, people?: PersonNames | undefined): string {
  return needsUserId(name, userId, people) ? `${name} (user ${userId})` : name;
}

/**
 * A person as a model-visible line prints them: the name through `quoteName` for its field
 * (`person` before a body, `member` in a list), then ` (user <id>)` when a name alone would not
 * tell them apart (see {@link personLabel}). The id stays outside the quotes, and a name that
 * spells out an id itself is quoted, so it cannot pass for one.
 */
export function quotePerson(
  name: string,
  userId: number,
  field: Extract<NameField, 'person' | 'member'>,
  people?: PersonNames | undefined,
): string {
  const quoted = quoteName(name, field);
  return needsUserId(name, userId, people) ? `${quoted} (user ${userId})` : quoted;
}
