// A small, linear-time inline tokenizer for one line of Zulip Markdown: code spans, links, images
// and autolinks, with everything else as text. It is not a renderer; it finds the regions the
// normalizer and the /nobots scanner must treat specially. Internal: not exported from the package.

/** A region of one line. `start`/`end` are UTF-16 offsets, `end` exclusive. */
export type InlineSegment =
  | { readonly kind: 'text' | 'code' | 'image' | 'autolink'; readonly start: number; readonly end: number }
  | {
      readonly kind: 'link';
      readonly start: number;
      readonly end: number;
      /** The link text sits between `[` at `start` and `]` at `textEnd`. */
      readonly textStart: number;
      readonly textEnd: number;
      /** The destination (and optional title) sits between `(` and `)`, exclusive. */
      readonly destStart: number;
      readonly destEnd: number;
    };

const BACKTICK = 96;
const BACKSLASH = 92;

/** True for the ASCII punctuation a backslash escapes in Markdown. */
export function isAsciiPunct(code: number): boolean {
  return (
    (code >= 33 && code <= 47) ||
    (code >= 58 && code <= 64) ||
    (code >= 91 && code <= 96) ||
    (code >= 123 && code <= 126)
  );
}

/**
 * Code spans as Python-Markdown finds them: a backtick run not escaped by an odd number of
 * backslashes opens; the span closes at the next maximal run of exactly the opener's length with
 * at least one character between. When no closer of the full length exists, a shorter prefix of the
 * opening run is tried (Python's regex backtracks that way). Returns `[start, end)` pairs, in order.
 */
export function findCodeSpans(line: string): Array<[number, number]> {
  const first = line.indexOf('`');
  if (first < 0) return [];
  // Maximal backtick runs (start, length), and for each length the starts of its runs in order.
  const runStart: number[] = [];
  const runLength: number[] = [];
  const byLength = new Map<number, number[]>();
  for (let i = first; i < line.length; i++) {
    if (line.charCodeAt(i) !== BACKTICK) continue;
    let j = i + 1;
    while (line.charCodeAt(j) === BACKTICK) j++;
    const len = j - i;
    runStart.push(i);
    runLength.push(len);
    let list = byLength.get(len);
    if (list === undefined) {
      list = [];
      byLength.set(len, list);
    }
    list.push(i);
    i = j;
  }
  // Openers move left to right, so each length's closer search only ever moves forward.
  const cursor = new Map<number, number>();
  const spans: Array<[number, number]> = [];
  let consumedTo = 0;
  for (let r = 0; r < runStart.length; r++) {
    let pos = runStart[r] as number;
    if (pos < consumedTo) continue;
    let len = runLength[r] as number;
    let slashes = 0;
    while (pos - slashes - 1 >= consumedTo && line.charCodeAt(pos - slashes - 1) === BACKSLASH) slashes++;
    if (slashes % 2 === 1) {
      // The first backtick is escaped; the rest of the run may still open a span.
      pos++;
      len--;
    }
    for (let k = len; k >= 1; k--) {
      const candidates = byLength.get(k);
      if (candidates === undefined) continue;
      const min = pos + k + 1;
      let c = cursor.get(k) ?? 0;
      while (c < candidates.length && (candidates[c] as number) < min) c++;
      cursor.set(k, c);
      const closer = candidates[c];
      if (closer !== undefined) {
        spans.push([pos, closer + k]);
        consumedTo = closer + k;
        break;
      }
    }
  }
  return spans;
}

/** Matching `[`/`]` and `(`/`)` pairs outside code spans and escapes: index of the partner, or -1. */
function matchPairs(line: string, codeSpans: ReadonlyArray<[number, number]>): Int32Array {
  const partner = new Int32Array(line.length).fill(-1);
  const brackets: number[] = [];
  const parens: number[] = [];
  let span = 0;
  for (let i = 0; i < line.length; i++) {
    const s = codeSpans[span];
    if (s !== undefined && i === s[0]) {
      i = s[1] - 1;
      span++;
      continue;
    }
    const c = line.charCodeAt(i);
    if (c === BACKSLASH) {
      if (i + 1 < line.length && isAsciiPunct(line.charCodeAt(i + 1))) i++;
    } else if (c === 91) {
      brackets.push(i);
    } else if (c === 93) {
      const open = brackets.pop();
      if (open !== undefined) {
        partner[open] = i;
        partner[i] = open;
      }
    } else if (c === 40) {
      parens.push(i);
    } else if (c === 41) {
      const open = parens.pop();
      if (open !== undefined) {
        partner[open] = i;
        partner[i] = open;
      }
    }
  }
  return partner;
}

const AUTOLINK_RE = /^[a-zA-Z][a-zA-Z0-9+.-]{1,31}:[^\s<>]*$/;

/** Splits one line into text, code, link, image and autolink segments covering it exactly. */
export function tokenizeInline(line: string): InlineSegment[] {
  const segments: InlineSegment[] = [];
  const hasBracket = line.includes('[');
  const hasAngle = line.includes('<');
  const codeSpans = findCodeSpans(line);
  if (!hasBracket && !hasAngle && codeSpans.length === 0) {
    return line.length === 0 ? [] : [{ kind: 'text', start: 0, end: line.length }];
  }
  const partner = hasBracket ? matchPairs(line, codeSpans) : undefined;
  let textStart = 0;
  let span = 0;
  let nextGt = -1;
  const push = (seg: InlineSegment): void => {
    if (seg.start > textStart) segments.push({ kind: 'text', start: textStart, end: seg.start });
    segments.push(seg);
    textStart = seg.end;
  };
  for (let i = 0; i < line.length; i++) {
    const s = codeSpans[span];
    if (s !== undefined && i === s[0]) {
      push({ kind: 'code', start: s[0], end: s[1] });
      i = s[1] - 1;
      span++;
      continue;
    }
    const c = line.charCodeAt(i);
    if (c === BACKSLASH) {
      if (i + 1 < line.length && isAsciiPunct(line.charCodeAt(i + 1))) i++;
      continue;
    }
    if (c === 60 && hasAngle) {
      if (nextGt < i) {
        nextGt = line.indexOf('>', i);
        if (nextGt < 0) nextGt = Number.POSITIVE_INFINITY;
      }
      if (nextGt === Number.POSITIVE_INFINITY) continue;
      if (AUTOLINK_RE.test(line.slice(i + 1, nextGt)) && !overlapsCode(codeSpans, span, i, nextGt)) {
        push({ kind: 'autolink', start: i, end: nextGt + 1 });
        i = nextGt;
      }
      continue;
    }
    if (partner === undefined) continue;
    const isImage = c === 33 && line.charCodeAt(i + 1) === 91;
    const open = isImage ? i + 1 : i;
    if (!isImage && c !== 91) continue;
    const close = partner[open] ?? -1;
    if (close < 0 || line.charCodeAt(close + 1) !== 40) continue;
    const parenClose = partner[close + 1] ?? -1;
    if (parenClose < 0) continue;
    if (isImage) {
      push({ kind: 'image', start: i, end: parenClose + 1 });
    } else {
      push({
        kind: 'link',
        start: i,
        end: parenClose + 1,
        textStart: i + 1,
        textEnd: close,
        destStart: close + 2,
        destEnd: parenClose,
      });
    }
    i = parenClose;
    while (span < codeSpans.length && (codeSpans[span] as [number, number])[0] < i) span++;
  }
  if (textStart < line.length) segments.push({ kind: 'text', start: textStart, end: line.length });
  return segments;
}

function overlapsCode(
  spans: ReadonlyArray<[number, number]>,
  from: number,
  start: number,
  end: number,
): boolean {
  const s = spans[from];
  return s !== undefined && s[0] < end && s[1] > start;
}
