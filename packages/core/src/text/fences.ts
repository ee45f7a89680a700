// Zulip's fenced-block model, shared by the normalizer, the splitter and the /nobots scanner.
// Internal: not exported from the package entry.
//
// Zulip does not follow CommonMark here. Its fence preprocessor (zerver/lib/markdown/fenced_code.py)
// runs on raw lines after tabs are expanded:
// - an opener starts in column 0: three or more backticks or tildes, optional spaces, then
//   optionally a language and a header, with no backtick or tilde after the fence;
// - a closer is a line whose right-trimmed text equals the opener's fence exactly (same character,
//   same length): a longer or shorter fence, or one with text after it, is content;
// - `quote`, `quoted` and `spoiler` blocks hold Markdown, and fences inside them open nested blocks;
//   every other block (any language, `math`, none) is raw code until its exact closer;
// - a block left open runs to the end of the message.

/** How a line takes part in Zulip's fenced-block structure. */
export type LineKind =
  /** Markdown text: outside any block, or inside a quote/spoiler block. */
  | 'text'
  /** Raw content of a code (or math) block. */
  | 'code'
  /** An opening or closing fence line. */
  | 'fence';

/** One outermost fenced block: lines `start`..`end` inclusive. */
export interface FenceBlock {
  readonly start: number;
  /** Index of the closing fence line, or of the last line when the block is never closed. */
  readonly end: number;
  readonly closed: boolean;
  /** The fence string that closes it, e.g. "```" or "~~~~". */
  readonly fence: string;
  /** The opening line as written (without a trailing carriage return). */
  readonly opener: string;
  /** True for quote/spoiler blocks, whose content is Markdown. */
  readonly container: boolean;
}

export interface FenceScan {
  readonly kinds: LineKind[];
  readonly blocks: FenceBlock[];
}

const LANG_START_RE = /^\{?\.?([a-zA-Z0-9_+\-./#]+)/;
const CONTAINER_LANGS = new Set(['quote', 'quoted', 'spoiler']);

/** Parses `line` as a Zulip fence opener; `undefined` when it is not one. */
export function parseFenceOpener(line: string): { fence: string; lang: string | undefined } | undefined {
  const c = line.charCodeAt(0);
  if (c !== 96 && c !== 126) return undefined;
  let n = 1;
  while (line.charCodeAt(n) === c) n++;
  if (n < 3) return undefined;
  let j = n;
  while (j < line.length && (line.charCodeAt(j) === 32 || line.charCodeAt(j) === 9)) j++;
  let rest = line.slice(j);
  if (rest.endsWith('\r')) rest = rest.slice(0, -1);
  const fence = line.slice(0, n);
  if (rest.trim() === '') return { fence, lang: undefined };
  if (rest.includes('`') || rest.includes('~')) return undefined;
  const m = LANG_START_RE.exec(rest);
  if (!m) return undefined;
  return { fence, lang: m[1] };
}

function isCloser(line: string, fence: string): boolean {
  // Python's str.rstrip(): trailing whitespace (carriage returns included) is ignored.
  return line.length >= fence.length && line.startsWith(fence) && line.slice(fence.length).trim() === '';
}

interface OpenBlock {
  fence: string;
  container: boolean;
}

/** Classifies every line of a message the way Zulip's fence preprocessor sees it. */
export function scanFences(lines: readonly string[]): FenceScan {
  const kinds: LineKind[] = new Array(lines.length);
  const blocks: FenceBlock[] = [];
  const stack: OpenBlock[] = [];
  let outer: { start: number; fence: string; opener: string; container: boolean } | undefined;

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const top = stack[stack.length - 1];
    if (top !== undefined) {
      if (isCloser(line, top.fence)) {
        kinds[i] = 'fence';
        stack.pop();
        if (stack.length === 0 && outer !== undefined) {
          blocks.push({ ...outer, end: i, closed: true });
          outer = undefined;
        }
        continue;
      }
      if (!top.container) {
        kinds[i] = 'code';
        continue;
      }
    }
    const opener = parseFenceOpener(line);
    if (opener !== undefined) {
      kinds[i] = 'fence';
      const container = opener.lang !== undefined && CONTAINER_LANGS.has(opener.lang.toLowerCase());
      if (stack.length === 0) {
        outer = {
          start: i,
          fence: opener.fence,
          opener: line.endsWith('\r') ? line.slice(0, -1) : line,
          container,
        };
      }
      stack.push({ fence: opener.fence, container });
      continue;
    }
    kinds[i] = 'text';
  }
  if (outer !== undefined) blocks.push({ ...outer, end: lines.length - 1, closed: false });
  return { kinds, blocks };
}

/** True for a line Python-Markdown may treat as indented code (four spaces or a tab first). */
export function isIndentedLine(line: string): boolean {
  return line.charCodeAt(0) === 9 || line.startsWith('    ');
}
