import { ToolError } from './errors.js';

/** The default byte budget of one page of tool output. */
export const DEFAULT_PAGE_BUDGET_BYTES = 16_384;

const encoder = new TextEncoder();

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/**
 * The code units JSON takes more bytes for than UTF-8 does: `"`, `\\`, C0 controls and lone
 * surrogates (a well-formed pair takes four bytes either way).
 */
const JSON_GROWS =
  /["\\\u0000-\u001f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Whether a text may hold a unit {@link JSON_GROWS} matches other than LF (any surrogate, to be sure). */
const JSON_GROWS_BUT_LF = /["\\\u0000-\u0009\u000b-\u001f\ud800-\udfff]/;

/**
 * The JSON bytes of the code unit at `i` (without quotes): `"`, `\\` and the short escapes
 * (`\n`, …) take two, other C0 controls and lone surrogates six (`\u001b`), a surrogate pair
 * four (counted on its first unit, its second counts zero).
 */
function unitJsonBytes(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c < 0x80) {
    if (c >= 0x20) return c === 0x22 || c === 0x5c ? 2 : 1;
    return c === 0x0a || c === 0x0d || c === 0x09 || c === 0x08 || c === 0x0c ? 2 : 6;
  }
  if (c < 0x800) return 2;
  if (c >= 0xd800 && c <= 0xdbff) {
    const next = text.charCodeAt(i + 1);
    return next >= 0xdc00 && next <= 0xdfff ? 4 : 6;
  }
  if (c >= 0xdc00 && c <= 0xdfff) {
    const previous = text.charCodeAt(i - 1);
    return previous >= 0xd800 && previous <= 0xdbff ? 0 : 6;
  }
  return 3;
}

/** What JSON adds over UTF-8 for one unit {@link JSON_GROWS} matched (UTF-8 writes a lone surrogate as 3 bytes). */
function extraJsonBytes(unit: string): number {
  const c = unit.charCodeAt(0);
  if (c >= 0xd800) return 3;
  return c === 0x22 || c === 0x5c || c === 0x0a || c === 0x0d || c === 0x09 || c === 0x08 || c === 0x0c
    ? 1
    : 5;
}

/**
 * The bytes `text` takes inside a JSON string (without the quotes), whichever way a client shows a
 * result: exactly what `JSON.stringify` writes, and never less than the text's UTF-8 length, so a
 * page that fits by this measure fits as plain text and as `JSON.stringify(structuredContent)`.
 * A page of lines joined by `\n` measures as the sum of its lines plus two bytes per join.
 */
export function jsonBytes(text: string): number {
  // The UTF-8 length, natively, plus what each escaped unit adds. Most text has none but line
  // feeds (a page joins its lines with them), which are counted without a match each.
  let n = byteLength(text);
  if (!JSON_GROWS_BUT_LF.test(text)) {
    for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) n++;
    return n;
  }
  JSON_GROWS.lastIndex = 0;
  for (let m = JSON_GROWS.exec(text); m !== null; m = JSON_GROWS.exec(text)) n += extraJsonBytes(m[0]);
  return n;
}

/**
 * The lines joined, when all of them fit `budgetBytes` with `perItem` bytes each (the same
 * measure as the line-by-line fit, taken in one pass); undefined when some must be left out.
 */
export function wholePage(
  lines: readonly string[],
  budgetBytes: number,
  perItem: number,
): string | undefined {
  const text = lines.join('\n');
  return jsonBytes(text) + perItem * lines.length <= budgetBytes ? text : undefined;
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes without splitting a code point. */
export function truncateToBytes(text: string, maxBytes: number): string {
  if (maxBytes <= 0) return '';
  const bytes = encoder.encode(text);
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // Back off continuation bytes (10xxxxxx) so the cut lands on a code point boundary.
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.subarray(0, end));
}

/** The longest prefix of `text` whose JSON size ({@link jsonBytes}) is at most `maxBytes`; never splits a surrogate pair. */
export function truncateToJsonBytes(text: string, maxBytes: number): string {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const size = unitJsonBytes(text, i);
    const pair = size === 4;
    if (n + size > maxBytes) return text.slice(0, i);
    n += size;
    if (pair) i++;
  }
  return text;
}

/** One page of rendered items that fit a byte budget. */
export interface BudgetedPage {
  /** The rendered lines, joined by newlines; a cut item ends with an explicit marker. */
  text: string;
  /** How many items were rendered (a cut item counts as rendered). */
  shown: number;
  /** True when an item had to be cut or items were left out. */
  truncated: boolean;
}

/**
 * Renders items one per line until the next would push the text past `budgetBytes`, measured as
 * the text takes in JSON ({@link jsonBytes}) plus `perItem` bytes for each item's typed fields
 * (an id in a list, say). At least one item is always shown; an item that alone exceeds the
 * budget is cut with an explicit `[… truncated, N more bytes]` marker rather than dropped.
 */
export function fitToBudget(lines: readonly string[], budgetBytes: number, perItem = 0): BudgetedPage {
  const whole = lines.length > 0 ? wholePage(lines, budgetBytes, perItem) : undefined;
  if (whole !== undefined) return { text: whole, shown: lines.length, truncated: false };
  const out: string[] = [];
  let used = 0;
  for (const line of lines) {
    const size = jsonBytes(line) + perItem + (out.length > 0 ? 2 : 0);
    if (used + size <= budgetBytes) {
      out.push(line);
      used += size;
      continue;
    }
    if (out.length === 0) {
      const room = Math.max(0, budgetBytes - 64 - perItem);
      const kept = truncateToJsonBytes(line, room);
      const marker = ` [… truncated, ${byteLength(line) - byteLength(kept)} more bytes]`;
      out.push(kept + marker);
      return { text: out.join('\n'), shown: 1, truncated: true };
    }
    return { text: out.join('\n'), shown: out.length, truncated: true };
  }
  return { text: out.join('\n'), shown: out.length, truncated: false };
}

/** Where a continuation starts: after a message id (going older or newer), or at an item offset. */
export type CursorPosition =
  | { kind: 'before'; id: number }
  | { kind: 'after'; id: number }
  | { kind: 'offset'; offset: number };

interface CursorPayload {
  v: 1;
  t: string;
  q: string;
  p: CursorPosition;
}

/** One 32-bit multiplicative lane (FNV-1a's shape) over the UTF-16 code units of `text`. */
function lane(text: string, seed: number, prime: number): string {
  let h = seed;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), prime);
  return (h >>> 0).toString(16).padStart(8, '0');
}

/**
 * A stable fingerprint of a tool's query arguments (without the cursor itself): 64 bits in two
 * multiplicative lanes. It only tells one query from another so a cursor is not replayed against the
 * wrong one; it guards nothing (every read a cursor leads to passes the access policy again), so
 * it need not be a cryptographic hash, and the cursors of one version stay valid across restarts.
 */
export function queryFingerprint(tool: string, query: unknown): string {
  const text = `${tool}\0${stableJson(query)}`;
  return lane(text, 0x811c9dc5, 0x01000193) + lane(text, 0x050c5d1f, 0x5bd1e995);
}

/** JSON with object keys sorted, for fingerprints. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += `${i === 0 ? '' : ','}${stableJson(value[i])}`;
    return `${out}]`;
  }
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    let out = '{';
    for (const key of Object.keys(record).sort()) {
      const v = record[key];
      if (v === undefined) continue;
      out += `${out === '{' ? '' : ','}${JSON.stringify(key)}:${stableJson(v)}`;
    }
    return `${out}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * Encodes a continuation cursor. A cursor is position data, not a credential: it names
 * the tool and a fingerprint of the query so it cannot be replayed against another query,
 * and every read it leads to passes the access policy again.
 */
export function encodeCursor(tool: string, query: unknown, position: CursorPosition): string {
  const payload: CursorPayload = { v: 1, t: tool, q: queryFingerprint(tool, query), p: position };
  return Buffer.from(JSON.stringify(payload)).toString('base64url');
}

/**
 * Decodes and re-validates a cursor for this tool and query.
 * @throws ToolError `TOOLS_INVALID_CURSOR` when it is malformed or belongs to another tool or query.
 */
export function decodeCursor(tool: string, query: unknown, cursor: string): CursorPosition {
  const invalid = (why: string) =>
    new ToolError(
      'TOOLS_INVALID_CURSOR',
      `Invalid cursor: ${why}. Pass back the cursor exactly as a previous call of ${tool} with the same arguments returned it, or omit it to start over.`,
    );
  if (cursor.length > 512 || !/^[A-Za-z0-9_-]+$/.test(cursor))
    throw invalid('not a cursor this server issued');
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid('not a cursor this server issued');
  }
  const p = payload as Partial<CursorPayload>;
  if (
    p.v !== 1 ||
    typeof p.t !== 'string' ||
    typeof p.q !== 'string' ||
    typeof p.p !== 'object' ||
    p.p === null
  ) {
    throw invalid('not a cursor this server issued');
  }
  if (p.t !== tool) throw invalid(`it belongs to ${p.t.slice(0, 40)}`);
  if (p.q !== queryFingerprint(tool, query)) throw invalid('it was issued for different arguments');
  const pos = p.p as Partial<CursorPosition> & Record<string, unknown>;
  if (
    (pos.kind === 'before' || pos.kind === 'after') &&
    Number.isSafeInteger(pos.id) &&
    (pos.id as number) >= 0
  ) {
    return { kind: pos.kind, id: pos.id as number };
  }
  if (pos.kind === 'offset' && Number.isSafeInteger(pos.offset) && (pos.offset as number) >= 0) {
    return { kind: 'offset', offset: pos.offset as number };
  }
  throw invalid('its position is malformed');
}
