import { isIndentedLine, scanFences } from './fences.js';
import { findCodeSpans, type InlineSegment, isAsciiPunct, tokenizeInline } from './inline.js';

/** Options for {@link normalizeMarkdown}. */
export interface NormalizeMarkdownOptions {
  /** `false` returns the text unchanged (the operator's off switch). Default `true`. */
  readonly enabled?: boolean | undefined;
}

/**
 * Rewrites outgoing Markdown that Zulip's renderer gets wrong into forms it renders as intended,
 * and changes nothing else.
 *
 * Rules, each exempting fenced code (``` or ~~~, any length, as Zulip delimits it: an opener in
 * column 0, closed only by the identical fence) and indented code (a line starting with four spaces
 * or a tab); `quote`/`spoiler` blocks hold Markdown and are fixed like plain text:
 *
 * 1. **Blank line before a table.** Zulip renders a table only at the start of a block, so a header
 *    row directly under a paragraph line shows as raw pipes. A blank line is inserted (inside a
 *    `>` blockquote, a bare `>` line):
 *    `Results:\n| a | b |\n|---|---|` → `Results:\n\n| a | b |\n|---|---|`.
 *    A header row is a line with `|` whose next line is a separator row (`-`, `:`, `|`, spaces) with
 *    the same number of cells, as Python-Markdown's table extension decides.
 * 2. **Emphasis inside link text.** Zulip keeps link text literal, so `[**Docs**](u)` shows the
 *    asterisks. Emphasis wrapping the whole text moves outside the link:
 *    `[**Docs**](https://x.example)` → `**[Docs](https://x.example)**` (also `*…*` and `***…***`).
 *    Partial emphasis is removed, keeping the words: `[the **new** docs](u)` → `[the new docs](u)`.
 *    When moving it out would collide with surrounding asterisks (the link is already inside bold,
 *    or touches a `*`), the emphasis is removed instead: `**see [**this**](u)**` → `**see [this](u)**`.
 * 3. **Bare URL touching asterisks.** Zulip autolinks a bare URL only after whitespace or `'"(,:<`,
 *    and a URL followed by `**` swallows the asterisks into the link. Such a URL becomes an explicit
 *    link: `**https://x.example/a**` → `**[https://x.example/a](https://x.example/a)**`. Sentence
 *    punctuation after the URL stays outside it; a URL that contains `*` is cut at the asterisk.
 *
 * Rules 2 and 3 skip inline code spans, images and `<…>` autolinks. The result is idempotent:
 * `normalizeMarkdown(normalizeMarkdown(x))` equals `normalizeMarkdown(x)`. Runs in linear time.
 *
 * @throws never.
 */
export function normalizeMarkdown(text: string, options: NormalizeMarkdownOptions = {}): string {
  if (options.enabled === false) return text;
  const hasPipe = text.includes('|');
  const hasStar = text.includes('*');
  if (!hasPipe && !hasStar) return text;
  const lines = text.split('\n');
  const { kinds } = scanFences(lines);
  const out: string[] = [];
  let changed = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (kinds[i] !== 'text' || isIndentedLine(line)) {
      out.push(line);
      continue;
    }
    if (hasPipe && line.includes('|')) {
      const blank = blankLineBeforeTable(lines, kinds, i);
      if (blank !== undefined) {
        out.push(blank);
        changed = true;
      }
    }
    if (hasStar && line.includes('*')) {
      const fixed = fixEmphasisAndLinks(line);
      if (fixed !== line) changed = true;
      out.push(fixed);
    } else {
      out.push(line);
    }
  }
  return changed ? out.join('\n') : text;
}

// ---------------------------------------------------------------------------------------------
// Rule 1: tables

interface QuotePrefix {
  depth: number;
  /** Offset where the quoted content starts. */
  contentStart: number;
}

function quotePrefix(line: string): QuotePrefix {
  let depth = 0;
  let i = 0;
  let contentStart = 0;
  for (;;) {
    let j = i;
    while (j < i + 3 && line.charCodeAt(j) === 32) j++;
    if (line.charCodeAt(j) !== 62) break;
    depth++;
    i = j + 1;
    if (line.charCodeAt(i) === 32) i++;
    contentStart = i;
  }
  return { depth, contentStart };
}

/** The line to insert before line `i` (a table header right under text), or `undefined`. */
function blankLineBeforeTable(
  lines: readonly string[],
  kinds: readonly string[],
  i: number,
): string | undefined {
  if (i === 0 || i + 1 >= lines.length) return undefined;
  if (kinds[i - 1] !== 'text' || kinds[i + 1] !== 'text') return undefined;
  const header = lines[i] as string;
  const separator = lines[i + 1] as string;
  const previous = lines[i - 1] as string;
  if (isIndentedLine(separator)) return undefined;
  const hq = quotePrefix(header);
  const sq = quotePrefix(separator);
  const pq = quotePrefix(previous);
  if (hq.depth !== sq.depth || hq.depth !== pq.depth) return undefined;
  if (previous.slice(pq.contentStart).trim() === '') return undefined;
  const headerText = header.slice(hq.contentStart);
  if (hq.depth > 0 && isIndentedLine(headerText)) return undefined;
  if (!isTableStart(headerText, separator.slice(sq.contentStart))) return undefined;
  const blank = hq.depth === 0 ? '' : header.slice(0, hq.contentStart).trimEnd();
  return header.endsWith('\r') ? `${blank}\r` : blank;
}

const SEPARATOR_RE = /^[|:\- \t]+$/;

function isTableStart(header: string, separator: string): boolean {
  const h = header.trim();
  const s = separator.trim();
  if (!s.includes('-') || !SEPARATOR_RE.test(s)) return false;
  const bordered = h.startsWith('|') || h.endsWith('|');
  const headerCells = countCells(h);
  if (headerCells < 1 || (headerCells === 1 && !bordered)) return false;
  return countCells(s) === headerCells;
}

/** Cells in a table row as Python-Markdown splits it: pipes in code spans or escaped don't count. */
function countCells(row: string): number {
  let start = 0;
  let end = row.length;
  if (row.startsWith('|')) start = 1;
  if (end > start && row.endsWith('|') && row.charCodeAt(end - 2) !== 92) end--;
  const body = row.slice(start, end);
  const spans = findCodeSpans(body);
  let cells = 1;
  let span = 0;
  for (let i = 0; i < body.length; i++) {
    const s = spans[span];
    if (s !== undefined && i === s[0]) {
      i = s[1] - 1;
      span++;
      continue;
    }
    const c = body.charCodeAt(i);
    if (c === 92) i++;
    else if (c === 124) cells++;
  }
  return cells;
}

// ---------------------------------------------------------------------------------------------
// Rules 2 and 3: emphasis in link text, bare URLs touching asterisks

const URL_RE = /https?:\/\/[^\s<>[\]*`"|\\]+/gi;
const TRAILING_PUNCT_RE = /[.,;:!?']+$/;
const STARS_AFTER_RE = /^[.,;:!?')]*\*\*/;

function fixEmphasisAndLinks(line: string): string {
  // Links first, then bare URLs on the result: a link rewrite can put `**` next to a URL, and the
  // URL rule must see that to stay idempotent.
  let fixed = line;
  if (line.includes('[')) {
    const segments = tokenizeInline(line);
    const stars = starPrefix(line, segments);
    let out = '';
    // The last character written; reading it off `out` would flatten the string every time.
    let last = 0;
    for (let k = 0; k < segments.length; k++) {
      const seg = segments[k] as InlineSegment;
      const piece =
        seg.kind === 'link' ? fixLink(line, seg, stars, k, last === 42) : line.slice(seg.start, seg.end);
      if (piece.length > 0) last = piece.charCodeAt(piece.length - 1);
      out += piece;
    }
    fixed = out;
  }
  if (!fixed.includes('://')) return fixed;
  let out = '';
  for (const seg of tokenizeInline(fixed)) {
    out += seg.kind === 'text' ? fixBareUrls(fixed, seg.start, seg.end) : fixed.slice(seg.start, seg.end);
  }
  return out;
}

function fixBareUrls(line: string, start: number, end: number): string {
  const text = line.slice(start, end);
  if (!text.includes('://')) return text;
  URL_RE.lastIndex = 0;
  let out = '';
  let last = 0;
  for (let m = URL_RE.exec(text); m !== null; m = URL_RE.exec(text)) {
    const url = trimUnbalancedParens(m[0].replace(TRAILING_PUNCT_RE, '')).replace(TRAILING_PUNCT_RE, '');
    const abs = start + m.index;
    const after = line.slice(abs + url.length, Math.min(line.length, abs + url.length + 64));
    const before = abs > 0 ? line.charCodeAt(abs - 1) : 0;
    // After `\` the `[` would be escaped, after `!` the link would become an image.
    if (before === 92 || before === 33) continue;
    const starBefore = before === 42;
    if (url.length <= 'https://'.length || (!starBefore && !STARS_AFTER_RE.test(after))) continue;
    out += `${text.slice(last, m.index)}[${url}](${url})`;
    last = m.index + url.length;
    URL_RE.lastIndex = last;
  }
  return last === 0 ? text : out + text.slice(last);
}

/** Cuts a URL at its first unbalanced parenthesis, so `[url](url)` stays a valid link. */
function trimUnbalancedParens(url: string): string {
  const open: number[] = [];
  for (let i = 0; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 40) open.push(i);
    else if (c === 41 && open.pop() === undefined) return url.slice(0, i);
  }
  return open.length === 0 ? url : url.slice(0, open[0]);
}

interface StarRun {
  start: number;
  end: number;
  canOpen: boolean;
  canClose: boolean;
}

function isSpace(code: number): boolean {
  return code === 32 || code === 9 || code === 10 || code === 13 || code === 0xa0 || code === 0x3000;
}

/** Asterisk delimiter runs in `text`, outside code spans and escapes. */
function starRuns(text: string): StarRun[] {
  const spans = findCodeSpans(text);
  const runs: StarRun[] = [];
  let span = 0;
  for (let i = 0; i < text.length; i++) {
    const s = spans[span];
    if (s !== undefined && i === s[0]) {
      i = s[1] - 1;
      span++;
      continue;
    }
    const c = text.charCodeAt(i);
    if (c === 92) {
      if (i + 1 < text.length && isAsciiPunct(text.charCodeAt(i + 1))) i++;
      continue;
    }
    if (c !== 42) continue;
    let j = i + 1;
    while (text.charCodeAt(j) === 42) j++;
    const before = i > 0 ? text.charCodeAt(i - 1) : Number.NaN;
    const after = j < text.length ? text.charCodeAt(j) : Number.NaN;
    runs.push({
      start: i,
      end: j,
      canOpen: !Number.isNaN(after) && !isSpace(after),
      canClose: !Number.isNaN(before) && !isSpace(before),
    });
    i = j - 1;
  }
  return runs;
}

/**
 * Pairs emphasis runs with a plain stack, ignoring run lengths, so every run that could act as
 * emphasis is matched in one pass. Leftovers are closers seen with nothing open followed by
 * openers never closed; removing the pairs cannot pair them later, which keeps the rule idempotent.
 */
function pairRuns(runs: readonly StarRun[]): Array<[number, number]> {
  const pairs: Array<[number, number]> = [];
  const stack: number[] = [];
  for (let r = 0; r < runs.length; r++) {
    const run = runs[r] as StarRun;
    if (run.canClose && stack.length > 0) {
      pairs.push([stack.pop() as number, r]);
    } else if (run.canOpen) {
      stack.push(r);
    }
  }
  return pairs;
}

/** `prefix[k]`: unescaped asterisks in the text segments before segment `k` (one past the end too). */
function starPrefix(line: string, segments: readonly InlineSegment[]): Int32Array {
  const prefix = new Int32Array(segments.length + 1);
  let n = 0;
  for (let k = 0; k < segments.length; k++) {
    prefix[k] = n;
    const seg = segments[k] as InlineSegment;
    if (seg.kind !== 'text') continue;
    for (let i = seg.start; i < seg.end; i++) {
      const c = line.charCodeAt(i);
      if (c === 92) i++;
      else if (c === 42) n++;
    }
  }
  prefix[segments.length] = n;
  return prefix;
}

function fixLink(
  line: string,
  seg: Extract<InlineSegment, { kind: 'link' }>,
  stars: Int32Array,
  index: number,
  afterStar: boolean,
): string {
  const text = line.slice(seg.textStart, seg.textEnd);
  const original = line.slice(seg.start, seg.end);
  if (!text.includes('*')) return original;
  const runs = starRuns(text);
  const pairs = pairRuns(runs);
  if (pairs.length === 0) return original;

  const firstRun = runs[0];
  const lastRun = runs[runs.length - 1];
  let wrap: string | undefined;
  for (const [open, close] of pairs) {
    if (open !== 0 || close !== runs.length - 1 || firstRun === undefined || lastRun === undefined) continue;
    const openLen = firstRun.end - firstRun.start;
    if (
      firstRun.start === 0 &&
      lastRun.end === text.length &&
      openLen <= 3 &&
      openLen === lastRun.end - lastRun.start
    ) {
      wrap = '*'.repeat(openLen);
    }
  }
  if (wrap !== undefined) {
    const touchesStar = afterStar || line.charCodeAt(seg.end) === 42;
    const before = stars[index] as number;
    const after = (stars[stars.length - 1] as number) - (stars[index + 1] as number);
    const insideEmphasis = before % 2 === 1 || after % 2 === 1;
    if (touchesStar || insideEmphasis) wrap = undefined;
  }

  // Removing a run joins its neighbours; keep the pair when that would merge two backtick runs
  // (changing code spans) or turn `!` + `[` into an image.
  const safe = (run: StarRun): boolean => {
    const before = run.start > 0 ? text.charCodeAt(run.start - 1) : 91;
    const after = run.end < text.length ? text.charCodeAt(run.end) : 93;
    return !(before === 96 && after === 96) && !(before === 33 && after === 91);
  };
  const remove = new Uint8Array(runs.length);
  for (const [open, close] of pairs) {
    if (!safe(runs[open] as StarRun) || !safe(runs[close] as StarRun)) continue;
    remove[open] = 1;
    remove[close] = 1;
  }
  let stripped = '';
  let last = 0;
  for (let r = 0; r < runs.length; r++) {
    if (remove[r] !== 1) continue;
    const run = runs[r] as StarRun;
    stripped += text.slice(last, run.start);
    last = run.end;
  }
  stripped += text.slice(last);
  const dest = line.slice(seg.destStart, seg.destEnd);
  const link = `[${stripped}](${dest})`;
  return wrap === undefined ? link : `${wrap}${link}${wrap}`;
}
