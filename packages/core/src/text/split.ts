import { ZmcpError } from '../errors.js';
import { type FenceBlock, scanFences } from './fences.js';
import { advanceCodePoints, codePointLength } from './unicode.js';

interface Unit {
  readonly text: string;
  readonly length: number;
  /** Set for a fenced block. */
  readonly fence?: FenceBlock | undefined;
  /** The block's lines, each with its newline (fence units only). */
  readonly lines?: readonly string[] | undefined;
}

function unit(text: string, fence?: FenceBlock, lines?: readonly string[]): Unit {
  return { text, length: codePointLength(text), fence, lines };
}

/**
 * Splits `content` into pieces of at most `limit` code points each, for callers that opt into
 * sending an over-long message as several.
 *
 * Cuts fall on paragraph boundaries (after a blank line) where they can; a paragraph longer than
 * the limit is cut between lines, a line between words, a word by code points. A fenced block is
 * never cut unless it alone is longer than the limit; then each piece closes the fence and the
 * next reopens it with the original opening line, so every piece renders as code. Without such a
 * fence cut, `pieces.join('')` equals `content` exactly; with one, removing the added closing
 * fence lines and reopening lines restores it. Whitespace stays with the piece before a cut, so
 * a piece is whitespace-only only when the content holds a whitespace run longer than the limit.
 * Content that fits is returned as the single piece `[content]`.
 *
 * Known limit: when a `quote`/`spoiler` block longer than the limit holds a nested code fence, the
 * nested fence may be cut without being closed.
 *
 * @throws `CORE_INVALID_ARGUMENT` when `limit` is not a positive integer.
 */
export function splitMessage(content: string, limit: number): string[] {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new ZmcpError(
      'CORE_INVALID_ARGUMENT',
      `Split limit must be a positive integer, got ${String(limit)}.`,
      {
        details: { limit },
      },
    );
  }
  if (codePointLength(content) <= limit) return [content];

  const pieces: string[] = [];
  let current = '';
  let currentLength = 0;
  const add = (u: Unit): void => {
    if (currentLength + u.length <= limit) {
      current += u.text;
      currentLength += u.length;
      return;
    }
    if (currentLength > 0) pieces.push(current);
    current = u.text;
    currentLength = u.length;
  };
  for (const u of units(content)) {
    if (u.length <= limit) {
      add(u);
      continue;
    }
    const parts = u.fence === undefined ? splitText(u.text, limit) : splitFence(u, limit);
    for (const part of parts) add(part);
  }
  if (currentLength > 0 || pieces.length === 0) pieces.push(current);
  return pieces;
}

/** Paragraphs (with their trailing blank lines) and whole fenced blocks, covering `content`. */
function units(content: string): Unit[] {
  const raw = content.split('\n');
  const lines = raw.map((l, i) => (i < raw.length - 1 ? `${l}\n` : l));
  const { blocks } = scanFences(raw);
  const result: Unit[] = [];
  let block = 0;
  let text = '';
  let sawContent = false;
  let sawBlankAfterContent = false;
  const flush = (): void => {
    if (text !== '') result.push(unit(text));
    text = '';
    sawContent = false;
    sawBlankAfterContent = false;
  };
  for (let i = 0; i < lines.length; i++) {
    const b = blocks[block];
    if (b !== undefined && b.start === i) {
      flush();
      const blockLines = lines.slice(b.start, b.end + 1);
      result.push(unit(blockLines.join(''), b, blockLines));
      i = b.end;
      block++;
      continue;
    }
    const line = lines[i] as string;
    const blank = line.trim() === '';
    if (!blank && sawBlankAfterContent) flush();
    if (blank) {
      if (sawContent) sawBlankAfterContent = true;
    } else {
      sawContent = true;
    }
    text += line;
  }
  flush();
  return result;
}

/**
 * Cuts text longer than `limit` into pieces of at most `limit` code points: each cut is after the
 * last newline that fits, else after the last whitespace, else at `limit` code points. Linear.
 */
function splitText(text: string, limit: number): Unit[] {
  const out: Unit[] = [];
  let remaining = codePointLength(text);
  let pos = 0;
  while (remaining > limit) {
    const end = advanceCodePoints(text, pos, limit);
    // Scan the window once, backwards: the last newline wins, else the last whitespace.
    let cut = end;
    let space = -1;
    for (let i = end - 1; i > pos; i--) {
      const c = text.charCodeAt(i);
      if (c === 10) {
        space = -1;
        cut = i + 1;
        break;
      }
      if (space < 0 && isWhitespace(c)) space = i;
    }
    if (space >= 0) cut = space + 1;
    const piece = unit(text.slice(pos, cut));
    out.push(piece);
    remaining -= piece.length;
    pos = cut;
  }
  if (pos < text.length) out.push(unit(text.slice(pos)));
  return out;
}

function isWhitespace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x3000 || (c >= 0x2000 && c <= 0x200a);
}

/**
 * Cuts a fenced block longer than `limit` into self-contained blocks: the first keeps the opener,
 * every cut adds the closing fence, every continuation repeats the opener, the last keeps the
 * original closer. Falls back to plain text cuts when the limit cannot hold the fences.
 */
function splitFence(u: Unit, limit: number): Unit[] {
  const fence = u.fence as FenceBlock;
  const lines = u.lines as readonly string[];
  const opener = lines[0] as string;
  const openerText = opener.endsWith('\n') ? opener : `${opener}\n`;
  const closer = fence.closed ? (lines[lines.length - 1] as string) : '';
  const body = lines.slice(1, fence.closed ? -1 : undefined);
  const close = `${fence.fence}\n`;
  const overhead =
    codePointLength(openerText) + Math.max(codePointLength(close) + 1, codePointLength(closer));
  const budget = limit - overhead;
  if (budget < 1) return splitText(u.text, limit);

  // Body lines no longer than the budget; longer lines are cut by code points.
  const bodyParts: Unit[] = [];
  for (const line of body) {
    const length = codePointLength(line);
    if (length <= budget) {
      bodyParts.push({ text: line, length });
      continue;
    }
    for (let i = 0; i < line.length; ) {
      const j = advanceCodePoints(line, i, budget);
      bodyParts.push(unit(line.slice(i, j)));
      i = j;
    }
  }

  const chunks: string[] = [];
  let chunk = '';
  let chunkLength = 0;
  for (const part of bodyParts) {
    if (chunkLength + part.length > budget && chunkLength > 0) {
      chunks.push(chunk);
      chunk = '';
      chunkLength = 0;
    }
    chunk += part.text;
    chunkLength += part.length;
  }
  chunks.push(chunk);

  const out: Unit[] = [];
  for (let k = 0; k < chunks.length; k++) {
    const first = k === 0;
    const last = k === chunks.length - 1;
    const head = first ? opener : openerText;
    const bodyText = chunks[k] as string;
    let tail: string;
    if (last) {
      tail = closer;
      // An unterminated last line before the closer stays as written.
    } else {
      tail = bodyText.endsWith('\n') || bodyText === '' ? close : `\n${close}`;
    }
    const headText = first && !opener.endsWith('\n') ? `${opener}\n` : head;
    out.push(unit(headText + bodyText + tail));
  }
  return out;
}
