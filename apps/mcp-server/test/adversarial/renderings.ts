// What must hold of every model-visible rendering (issue 9): the `content` text and the JSON of
// `structuredContent` (what Claude Code hands the model). Written from the issue, not from the
// server: no raw `<`, no control characters a model could read as structure, and every line that
// starts at the margin with `[` (or `→ [`) is the true head of the message whose id it names.
import type { ZulipSim } from '@zmcp/zulip-sim';

/** A problem found in one rendering, with where it was. */
export interface Finding {
  where: string;
  problem: string;
  line?: string;
}

/** What the realm holds for one message, as a head must show it. */
export interface HeldMessage {
  id: number;
  type: 'stream' | 'direct';
  stream?: string;
  topic?: string;
  sender: string;
  senderId: number;
  /** Names of the participants other than the sender and the reader (group DMs). */
  others: string[];
  /** Their user ids, in the same order. */
  otherIds: number[];
  participants: number;
  /** The reader's flags say it mentions them. */
  mentioned: boolean;
}

const TAG_RE = /[\u{E0000}-\u{E007F}]/gu;
const BIDI_RE = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/g;
// Controls, their visible glyphs (U+2400 block) and the separators: each may be shown as a space or a glyph.
const SHOWN_AS_SPACE_RE = /[\u0000-\u001F\u007F-\u009F\u2028\u2029\u2400-\u2421]/g;
/** Characters no rendering may carry: C0 but TAB and LF, DEL, C1, LS, PS, tag characters. */
const FORBIDDEN_RE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u2028\u2029]|[\u{E0000}-\u{E007F}]/u;
/** Invisible characters that could hide a head behind what looks like the margin. */
const INVISIBLE_PREFIX_RE = /^[\u202A-\u202E\u2066-\u2069\u200B-\u200F\u061C\uFEFF\u{E0000}-\u{E007F}]+/u;

/**
 * A name as a head must print it, up to how controls are shown: tag characters and bidi controls
 * removed, controls as spaces, `<` as `&lt;`. Applied to both sides of a comparison.
 */
export function expectedName(raw: string): string {
  return canon(raw).replaceAll('<', '&lt;');
}

function canon(s: string): string {
  return s.replace(TAG_RE, '').replace(BIDI_RE, '').replace(SHOWN_AS_SPACE_RE, ' ');
}

/** The realm's view of its messages, from the simulator, with snapshots kept for deleted ones. */
export class RealmView {
  readonly #sim: ZulipSim;
  readonly #selfId: number;
  readonly #snapshots = new Map<number, HeldMessage[]>();

  constructor(sim: ZulipSim, selfId: number) {
    this.#sim = sim;
    this.#selfId = selfId;
  }

  /** The message as the realm holds it now, or undefined when it is gone. */
  current(id: number): HeldMessage | undefined {
    const realm = this.#sim.realm;
    const m = realm.message(id);
    if (m === undefined) return undefined;
    const user = (uid: number) => realm.user(uid)?.fullName ?? `?${uid}`;
    const flags = realm.flags(this.#selfId, id);
    const otherIds = (m.recipientIds ?? []).filter((u) => u !== m.senderId && u !== this.#selfId);
    const held: HeldMessage = {
      id,
      type: m.type,
      sender: user(m.senderId),
      senderId: m.senderId,
      others: otherIds.map(user),
      otherIds,
      participants: m.recipientIds?.length ?? 0,
      mentioned: flags.some((f) =>
        ['mentioned', 'wildcard_mentioned', 'stream_wildcard_mentioned', 'topic_wildcard_mentioned'].includes(
          f,
        ),
      ),
    };
    if (m.type === 'stream') {
      held.stream = realm.stream(m.streamId as number)?.name ?? '?';
      held.topic = m.topic ?? '';
    }
    return held;
  }

  /** Remembers what the messages look like now (before a call that may move or delete them). */
  snapshot(ids: Iterable<number>): void {
    for (const id of ids) {
      const held = this.current(id);
      if (held === undefined) continue;
      const list = this.#snapshots.get(id) ?? [];
      list.push(held);
      this.#snapshots.set(id, list);
    }
  }

  /** Every state the message has been seen in: now, and the snapshots. */
  states(id: number): HeldMessage[] {
    const now = this.current(id);
    return [...(now === undefined ? [] : [now]), ...(this.#snapshots.get(id) ?? [])];
  }
}

/** A parsed message head. */
export interface ParsedHead {
  anchor: boolean;
  id: number;
  conversation:
    | { kind: 'stream'; stream: string; topic: string | null }
    | { kind: 'dm' }
    | { kind: 'group'; members: string[]; memberIds: (number | undefined)[] };
  sender: string;
  /** The user id printed after the sender (`Olivia Owner (user 12)`), when one is. */
  senderId: number | undefined;
  mention: boolean;
}

class Cursor {
  pos = 0;
  constructor(readonly s: string) {}
  eat(literal: string): boolean {
    if (this.s.startsWith(literal, this.pos)) {
      this.pos += literal.length;
      return true;
    }
    return false;
  }
  expect(literal: string, what: string): void {
    if (!this.eat(literal)) throw new Error(`expected ${JSON.stringify(literal)} ${what} at ${this.pos}`);
  }
  peek(): string {
    return this.s[this.pos] ?? '';
  }
  /** A JSON string starting here. */
  quoted(): string {
    let i = this.pos + 1;
    while (i < this.s.length) {
      const ch = this.s[i];
      if (ch === '\\') i += 2;
      else if (ch === '"') break;
      else i++;
    }
    if (i >= this.s.length) throw new Error(`unterminated quoted field at ${this.pos}`);
    const literal = this.s.slice(this.pos, i + 1);
    this.pos = i + 1;
    const value: unknown = JSON.parse(literal);
    if (typeof value !== 'string') throw new Error('quoted field is not a string');
    return value;
  }
  /** A bare run of characters outside `stop`. */
  bare(stop: RegExp, what: string): string {
    const start = this.pos;
    while (this.pos < this.s.length && !stop.test(this.s[this.pos] as string)) this.pos++;
    if (this.pos === start) throw new Error(`empty bare ${what} at ${start}`);
    return this.s.slice(start, this.pos);
  }
}

/** A field: a JSON string, or a bare run without the field's delimiters. */
function field(c: Cursor, stop: RegExp, what: string): string {
  return c.peek() === '"' ? c.quoted() : c.bare(stop, what);
}

/**
 * A person: a field, then ` (user N)` when the line tells them apart by id. A bare name runs up
 * to the "(" of that marker, space included.
 */
function person(c: Cursor, stop: RegExp, what: string): { name: string; id: number | undefined } {
  const quoted = c.peek() === '"';
  let name = field(c, stop, what);
  const marker = /^\(user (\d+)\)/;
  const at = quoted ? (c.s.startsWith(' (user ', c.pos) ? c.pos + 1 : -1) : name.endsWith(' ') ? c.pos : -1;
  const found = at < 0 ? null : marker.exec(c.s.slice(at));
  if (found === null) return { name, id: undefined };
  if (!quoted) name = name.slice(0, -1);
  c.pos = at + found[0].length;
  return { name, id: Number(found[1]) };
}

/**
 * Parses a line that starts at the margin with `[` or `→ [` by the message-line grammar:
 * `[<time> id=N] [#<stream> > <topic>] <sender>[ (mention)]: ` (or `[DM]`, `[group DM with a, b]`).
 * @throws Error saying where the grammar broke.
 */
export function parseHead(line: string): ParsedHead {
  const c = new Cursor(line);
  const anchor = c.eat('→ ');
  c.expect('[', 'to open the head');
  const idMatch = /^(?:[^\s\]]+ )?id=(\d+)\] \[/.exec(line.slice(c.pos));
  if (idMatch === null) throw new Error('no "[<time> id=N] [" at the start');
  c.pos += idMatch[0].length;
  const id = Number(idMatch[1]);
  let conversation: ParsedHead['conversation'];
  if (c.eat('#')) {
    let stream: string;
    if (c.peek() === '"') stream = c.quoted();
    else {
      // A bare stream holds no `>`: it runs to the first one, which must be the separator.
      stream = c.bare(/[[\]>"]/, 'stream');
      if (!stream.endsWith(' ')) throw new Error('bare stream not followed by " > "');
      stream = stream.slice(0, -1);
      c.pos -= 1;
    }
    c.expect(' > ', 'between stream and topic');
    const topic = c.eat('(no topic)') ? null : field(c, /[[\]"]/, 'topic');
    conversation = { kind: 'stream', stream, topic };
  } else if (c.eat('DM')) {
    conversation = { kind: 'dm' };
  } else if (c.eat('group DM with ')) {
    const all = [person(c, /[:()[\],<>"]/, 'member')];
    while (c.eat(', ')) all.push(person(c, /[:()[\],<>"]/, 'member'));
    conversation = { kind: 'group', members: all.map((m) => m.name), memberIds: all.map((m) => m.id) };
  } else {
    throw new Error('unknown conversation label');
  }
  c.expect('] ', 'to close the conversation');
  const from = person(c, /[:()[\]<>"]/, 'sender');
  let sender = from.name;
  let mention = c.eat(' (mention)');
  // A bare sender runs up to the "(" of the marker, space included.
  if (!mention && sender.endsWith(' ') && c.eat('(mention)')) {
    sender = sender.slice(0, -1);
    mention = true;
  }
  c.expect(': ', 'after the sender');
  return { anchor, id, conversation, sender, senderId: from.id, mention };
}

/** Why a parsed head is not the true head of its message, or undefined when it is. */
function headMismatch(head: ParsedHead, states: HeldMessage[]): string | undefined {
  if (states.length === 0) return `message ${head.id} does not exist`;
  const reasons: string[] = [];
  for (const m of states) {
    const why = mismatchOne(head, m);
    if (why === undefined) return undefined;
    reasons.push(why);
  }
  return reasons.join('; ');
}

function mismatchOne(head: ParsedHead, m: HeldMessage): string | undefined {
  // A quoted field decodes to exactly the name it was printed from; a bare one is the name itself.
  const same = (printed: string, raw: string) => printed === raw;
  if (!same(head.sender, m.sender))
    return `sender ${JSON.stringify(head.sender)} is not ${JSON.stringify(m.sender)}`;
  if (head.senderId !== undefined && head.senderId !== m.senderId)
    return `sender id ${head.senderId} is not ${m.senderId}`;
  if (head.mention && !(m.type === 'stream' && m.mentioned))
    return '(mention) on a message that does not mention the reader';
  const conv = head.conversation;
  if (conv.kind === 'stream') {
    if (m.type !== 'stream') return 'a stream head on a DM';
    if (!same(conv.stream, m.stream ?? ''))
      return `stream ${JSON.stringify(conv.stream)} is not ${JSON.stringify(m.stream ?? '')}`;
    if (conv.topic === null ? m.topic !== '' : !same(conv.topic, m.topic ?? ''))
      return `topic ${JSON.stringify(conv.topic)} is not ${JSON.stringify(m.topic ?? '')}`;
    return undefined;
  }
  if (m.type !== 'direct') return 'a DM head on a stream message';
  if (conv.kind === 'dm') return m.participants <= 2 ? undefined : '[DM] on a group DM';
  for (const [i, printedId] of conv.memberIds.entries()) {
    const named = conv.members[i];
    if (printedId !== undefined && !m.others.some((name, j) => name === named && m.otherIds[j] === printedId))
      return `group member ${JSON.stringify(named)} is not user ${printedId}`;
  }
  const printed = [...conv.members].sort();
  const expected = [...m.others].sort();
  return JSON.stringify(printed) === JSON.stringify(expected)
    ? undefined
    : `group members ${JSON.stringify(printed)} are not ${JSON.stringify(expected)}`;
}

/** Checks one model-visible string: characters, and every line by the head grammar. */
export function checkString(value: string, where: string, view: RealmView, seen: Set<number>): Finding[] {
  const findings: Finding[] = [];
  if (value.includes('<')) {
    const at = value.indexOf('<');
    findings.push({ where, problem: 'raw "<"', line: value.slice(Math.max(0, at - 40), at + 40) });
  }
  const bad = FORBIDDEN_RE.exec(value);
  if (bad !== null) {
    const cp = (bad[0].codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0');
    findings.push({
      where,
      problem: `forbidden character U+${cp}`,
      line: value.slice(Math.max(0, bad.index - 40), bad.index + 40),
    });
  }
  for (const line of value.split('\n')) {
    const hidden = INVISIBLE_PREFIX_RE.exec(line);
    if (hidden !== null && /^(?:→ )?\[/.test(line.slice(hidden[0].length))) {
      findings.push({ where, problem: 'a head hidden behind invisible characters at the margin', line });
      continue;
    }
    if (!/^(?:→ )?\[/.test(line)) continue;
    let head: ParsedHead;
    try {
      head = parseHead(line);
    } catch (err) {
      findings.push({ where, problem: `line at the margin is not a head: ${(err as Error).message}`, line });
      continue;
    }
    const why = headMismatch(head, view.states(head.id));
    if (why !== undefined) findings.push({ where, problem: `forged head: ${why}`, line });
    else seen.add(head.id);
  }
  return findings;
}

/** Every string in a JSON value (keys included), with its path. */
export function* stringsOf(value: unknown, path = '$'): Generator<[string, string]> {
  if (typeof value === 'string') yield [path, value];
  else if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) yield* stringsOf(v, `${path}[${i}]`);
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      yield [`${path}{key}`, k];
      yield* stringsOf(v, `${path}.${k}`);
    }
  }
}

/** A tool result as the SDK client gets it. */
export interface Rendered {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
}

/**
 * Checks both renderings of a result: every text block of `content`, and every decoded string
 * of `structuredContent` (the JSON a client shows; `JSON.stringify` leaves `<`, U+2028 and
 * U+2029 as they are, so the decoded strings are what the model reads).
 */
export function checkResult(result: Rendered, where: string, view: RealmView, seen: Set<number>): Finding[] {
  const findings: Finding[] = [];
  const blocks = Array.isArray(result.content) ? (result.content as { type?: string; text?: string }[]) : [];
  for (const [i, block] of blocks.entries()) {
    if (block.type === 'text' && typeof block.text === 'string')
      findings.push(...checkString(block.text, `${where} text[${i}]`, view, seen));
  }
  if (result.structuredContent !== undefined) {
    const json = JSON.stringify(result.structuredContent);
    if (json.includes('<')) findings.push({ where: `${where} json`, problem: 'raw "<" in the JSON' });
    for (const [path, s] of stringsOf(result.structuredContent))
      findings.push(...checkString(s, `${where} json ${path}`, view, seen));
  }
  return findings;
}

/**
 * The printed name at the start of a list line, exactly as shown: a JSON string (quotes kept),
 * or the bare text up to `end`. Undefined when the line does not start with a name followed by `end`.
 */
export function printedNameAt(line: string, end: string): string | undefined {
  if (line.startsWith('"')) {
    const c = new Cursor(line);
    try {
      c.quoted();
    } catch {
      return undefined;
    }
    return line.startsWith(end, c.pos) ? line.slice(0, c.pos) : undefined;
  }
  const at = line.indexOf(end);
  return at > 0 ? line.slice(0, at) : undefined;
}
