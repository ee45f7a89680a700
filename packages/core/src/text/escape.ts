import { foldHeaderField } from './unicode.js';

// The trust boundary. Message bodies, names and topics shown to a model are written by anyone in
// the realm. The guard is about who said what: a body cannot close a block or forge the head of
// another message line (every `<` is escaped, every line terminator starts an indented
// continuation, control characters are shown, not obeyed), tag characters are dropped (they are
// invisible and can carry hidden text), and a name printed in a head cannot pass for a delimiter.

// Line terminators besides LF: CRLF, CR, VT, FF, FS/GS/RS, NEL, LINE and PARAGRAPH SEPARATOR.
const TERMINATOR_RE = /\r\n?|[\u000B\u000C\u001C-\u001E\u0085\u2028\u2029]/g;
// Everything a body may not carry as is: `<`, tag characters, C0 controls but tab and LF, DEL, C1.
const BODY_UNSAFE_RE = /[<\u0000-\u0008\u000B-\u001F\u007F-\u009F\u2028\u2029]|\uDB40[\uDC00-\uDC7F]/;
const BODY_CHAR_RE = /[<\u0000-\u0008\u000E-\u001B\u001F\u007F-\u0084\u0086-\u009F]|\uDB40[\uDC00-\uDC7F]/g;

/** A C0 control as its visible Control Pictures glyph (U+2400 block); DEL as U+2421; C1 dropped. */
function shownControl(ch: string): string {
  const c = ch.charCodeAt(0);
  if (c < 0x20) return String.fromCharCode(0x2400 + c);
  if (c === 0x7f) return '\u2421';
  return '';
}

/**
 * Escapes an untrusted body for the model: every `<` becomes `&lt;`, Unicode tag characters
 * (U+E0000–U+E007F) are removed, every line terminator (CR, CRLF, VT, FF, FS, GS, RS, NEL,
 * U+2028, U+2029) becomes LF, and the other C0 controls but tab (ESC, BEL, …) and DEL are shown as
 * their Control Pictures glyphs (`␛`); C1 controls are removed. `&`, `>` and bidi controls stay,
 * so text and code read as written; the escaping is one-way.
 */
export function escapeMsgText(body: string): string {
  if (!BODY_UNSAFE_RE.test(body)) return body;
  return body
    .replace(TERMINATOR_RE, '\n')
    .replace(BODY_CHAR_RE, (ch) => (ch === '<' ? '&lt;' : ch.length === 2 ? '' : shownControl(ch)));
}

/**
 * Escapes untrusted multi-line text (a message body, a file's contents, an interrupt note) with
 * {@link escapeMsgText} and indents every line after the first by `indent` (two spaces by
 * default), so no line of it starts at the margin where the server's own lines do.
 */
export function escapeIndented(text: string, indent = '  '): string {
  const escaped = escapeMsgText(text);
  return escaped.includes('\n') ? escaped.replaceAll('\n', `\n${indent}`) : escaped;
}

/**
 * Escapes a name (stream, topic, user) for one line of model-visible text: `<` becomes `&lt;`, tag
 * characters and bidi controls are removed, control characters and line breaks become spaces, so
 * a name cannot open a block, span lines or render reversed. Delimiters are not touched; a name
 * printed between delimiters goes through {@link quoteName}.
 */
export function escapeMsgName(value: string): string {
  const folded = foldHeaderField(value);
  return folded.includes('<') ? folded.replaceAll('<', '&lt;') : folded;
}

const ATTR_RE = /[&<>"]/g;
const ATTR_ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
};

/**
 * Escapes a value for a double-quoted attribute of a wrapper the model reads (`<missed
 * channel="…">`): `&`, `<`, `>` and `"` become entities, and the value is folded to one line
 * without bidi controls or tag characters, so it cannot leave its quotes or its line.
 */
export function escapeMsgAttr(value: string): string {
  const folded = foldHeaderField(value);
  return ATTR_RE.test(folded) ? folded.replace(ATTR_RE, (ch) => ATTR_ENTITIES[ch] as string) : folded;
}

/** Where a name is printed: the characters that would end its field there. */
export type NameField =
  /** `#stream` in `[#stream > topic]` and in lists: `[`, `]`, `>`. */
  | 'stream'
  /** `topic` in `[#stream > topic]` and in lists: `[`, `]`. */
  | 'topic'
  /** A sender before `: body` or a person in a list: `:`, `(`, `)`, `[`, `]`, `>`. */
  | 'person'
  /** One name of a comma-separated list (group DM participants): a person's set and `,`. */
  | 'member';

const FIELD_UNSAFE: Readonly<Record<NameField, RegExp>> = {
  stream: /[[\]>]/,
  topic: /[[\]]/,
  person: /[:()[\]>]/,
  member: /[:()[\],>]/,
};

// What no name is printed with as it is: `"`, `\`, `<`, C0 and C1 controls, DEL, line and
// paragraph separators, bidi controls and tag characters.
const NAME_SPECIAL =
  /["\\<\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]|\uDB40[\uDC00-\uDC7F]/;
// What JSON.stringify leaves as it is but a reader must not see raw: written as `\uXXXX`.
const JSON_EXTRA =
  /[<\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]|\uDB40[\uDC00-\uDC7F]/g;

function hex4(unit: number): string {
  return `\\u${unit.toString(16).padStart(4, '0')}`;
}

/**
 * Prints a name (stream, topic, sender, participant) so that it cannot pass for a delimiter of the
 * line it sits in, and can be read back exactly: a plain name is printed as it is; a name that holds
 * a character that would end its field (see {@link NameField}), a `"`, `\` or `<`, a control,
 * separator, bidi control or tag character, or is empty or has spaces at an edge, is printed as a
 * JSON string with every such character written as a `\uXXXX` escape (`"x] [#secret > plans"`,
 * `"\u003cb>"`). A bare name never holds `"`, so a quoted one is unambiguous, and nothing in either
 * form renders reversed, spans lines or hides text. {@link readPrintedName} reads either form back.
 */
export function quoteName(value: string, field: NameField): string {
  if (value === '' || value.trim() !== value || NAME_SPECIAL.test(value) || FIELD_UNSAFE[field].test(value)) {
    return JSON.stringify(value).replace(JSON_EXTRA, (ch) =>
      ch.length === 2 ? hex4(ch.charCodeAt(0)) + hex4(ch.charCodeAt(1)) : hex4(ch.charCodeAt(0)),
    );
  }
  return value;
}

const FIELDS: readonly NameField[] = ['stream', 'topic', 'person', 'member'];

/**
 * The name a printed form stands for: when `printed` is exactly how {@link quoteName} writes some
 * name in some field (a JSON string it would produce), that name; otherwise `printed` itself. So a
 * quoted name passed back as an argument is read as the name it was printed from, and a literal
 * that merely looks quoted (`"foo"`, which would print bare) is read as written.
 */
export function decodePrintedName(printed: string): string {
  if (printed.length < 2 || !printed.startsWith('"') || !printed.endsWith('"')) return printed;
  let decoded: unknown;
  try {
    decoded = JSON.parse(printed);
  } catch {
    return printed;
  }
  if (typeof decoded !== 'string') return printed;
  return FIELDS.some((field) => quoteName(decoded as string, field) === printed) ? decoded : printed;
}

/**
 * What a name printed by {@link quoteName} (or escaped by {@link escapeMsgName}) may have been, most
 * likely first: the name it stands for ({@link decodePrintedName}), then the text as given, then
 * with `&lt;` turned back into `<` (as {@link escapeMsgName} writes it). A tool that takes a name
 * accepts what the server printed by trying each in turn against exact names; none of them widens
 * a match (no case folding, no partial names).
 */
export function readPrintedName(printed: string): string[] {
  const out = [decodePrintedName(printed)];
  if (!out.includes(printed)) out.push(printed);
  if (printed.includes('&lt;')) {
    const unescaped = printed.replaceAll('&lt;', '<');
    if (!out.includes(unescaped)) out.push(unescaped);
  }
  return out;
}
