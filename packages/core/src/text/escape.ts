import { ZmcpError } from '../errors.js';
import { foldHeaderField } from './unicode.js';

// The trust boundary. Message bodies shown to a model inside `<msg>` blocks are written by anyone in
// the realm; escaping keeps a body from closing its block or forging another one. The guard is about
// who said what: every `<` in a body is escaped (code blocks included: a reader that looks at the
// surrounding text cannot tell a fence from prose), tag characters are dropped (they are invisible
// and can carry hidden text), and attribute values cannot break out of their quotes.

const TEXT_RE = /<|\uDB40[\uDC00-\uDC7F]/g;

/**
 * Escapes a message body for a `<msg>` block: every `<` becomes `&lt;` and Unicode tag characters
 * (U+E0000–U+E007F) are removed. Nothing else changes (`&`, `>` and bidi controls stay, so text
 * and code read as written); the escaping is one-way.
 */
export function escapeMsgText(body: string): string {
  if (!body.includes('<') && !body.includes('\uDB40')) return body;
  return body.replace(TEXT_RE, (ch) => (ch === '<' ? '&lt;' : ''));
}

const ATTR_RE = /[&<>"]/g;
const ATTR_ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
};

/**
 * Escapes a value for a double-quoted `<msg>` attribute: `&`, `<`, `>` and `"` become entities,
 * tag characters and bidi controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) are
 * removed so a name cannot render reversed, and other control characters and line breaks become
 * spaces. {@link unescapeMsgAttr} reverses it for values that had none of the removed characters.
 */
export function escapeMsgAttr(value: string): string {
  const folded = foldHeaderField(value);
  return ATTR_RE.test(folded) ? folded.replace(ATTR_RE, (ch) => ATTR_ENTITIES[ch] as string) : folded;
}

const ENTITY_RE = /&(amp|lt|gt|quot);/g;
const ENTITY_CHARS: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"' };

/** Reverses {@link escapeMsgAttr}'s entities (`&amp;`, `&lt;`, `&gt;`, `&quot;`). */
export function unescapeMsgAttr(value: string): string {
  return value.includes('&')
    ? value.replace(ENTITY_RE, (_, name: string) => ENTITY_CHARS[name] as string)
    : value;
}

/**
 * Escapes a name (stream, topic, user) for a header line printed above `<msg>` blocks: `<` becomes
 * `&lt;`, tag characters and bidi controls are removed, control characters and line breaks become
 * spaces, so a name cannot open a block, span lines or render reversed.
 */
export function escapeMsgName(value: string): string {
  const folded = foldHeaderField(value);
  return folded.includes('<') ? folded.replaceAll('<', '&lt;') : folded;
}

/** One `<msg>` block's content. */
export interface MsgBlockInput {
  readonly id: number | string;
  /** The sender's display name. */
  readonly from: string;
  /** The message body, raw; it is escaped here. */
  readonly body: string;
  /**
   * Further attributes, written after `id` and `from` in this order. `undefined` and `false` values
   * are left out, `true` is written as `"true"`.
   */
  readonly attributes?: Readonly<Record<string, string | number | boolean | undefined>> | undefined;
}

const ATTR_NAME_RE = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/**
 * Builds `<msg id=".." from="..">body</msg>` with every attribute escaped by
 * {@link escapeMsgAttr} and the body by {@link escapeMsgText}.
 *
 * @throws `CORE_INVALID_ARGUMENT` when an attribute name is not a plain identifier
 *   (`[A-Za-z_][A-Za-z0-9_.-]*`) or repeats `id`/`from`.
 */
export function formatMsgBlock(input: MsgBlockInput): string {
  let attrs = `id="${escapeMsgAttr(String(input.id))}" from="${escapeMsgAttr(input.from)}"`;
  if (input.attributes !== undefined) {
    for (const [name, value] of Object.entries(input.attributes)) {
      if (!ATTR_NAME_RE.test(name) || name === 'id' || name === 'from') {
        throw new ZmcpError(
          'CORE_INVALID_ARGUMENT',
          `Invalid <msg> attribute name ${JSON.stringify(name)}.`,
          {
            details: { name },
          },
        );
      }
      if (value === undefined || value === false) continue;
      attrs += ` ${name}="${escapeMsgAttr(value === true ? 'true' : String(value))}"`;
    }
  }
  return `<msg ${attrs}>${escapeMsgText(input.body)}</msg>`;
}
