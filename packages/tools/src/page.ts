import { createHash } from 'node:crypto';
import { ToolError } from './errors.js';

/** The default byte budget of one page of tool output. */
export const DEFAULT_PAGE_BUDGET_BYTES = 16_384;

const encoder = new TextEncoder();

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The code units JSON takes more bytes for than UTF-8 does: `"`, `\\`, C0 controls, surrogates. */
const JSON_GROWS = /["\\\u0000-\u001f\ud800-\udfff]/;

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

/**
 * The bytes `text` takes inside a JSON string (without the quotes), whichever way a client shows a
 * result: exactly what `JSON.stringify` writes, and never less than the text's UTF-8 length, so a
 * page that fits by this measure fits as plain text and as `JSON.stringify(structuredContent)`.
 */
export function jsonBytes(text: string): number {
  // Without these, JSON.stringify writes every code unit as is: the size is the UTF-8 length.
  if (!JSON_GROWS.test(text)) return byteLength(text);
  let n = 0;
  for (let i = 0; i < text.length; i++) n += unitJsonBytes(text, i);
  return n;
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

/** A stable fingerprint of a tool's query arguments (without the cursor itself). */
export function queryFingerprint(tool: string, query: unknown): string {
  return createHash('sha256')
    .update(`${tool}\0${stableJson(query)}`)
    .digest('base64url')
    .slice(0, 16);
}

/** JSON with object keys sorted, for fingerprints. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
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
