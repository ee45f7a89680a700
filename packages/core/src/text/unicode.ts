// Code-point and control-character helpers shared by the text modules. Only `codePointLength`
// is exported from the package entry: it is how Zulip counts message and topic lengths.

/** Number of Unicode code points in `s` (a surrogate pair counts once, a lone surrogate once). */
export function codePointLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/**
 * UTF-16 index reached by advancing `count` code points from `from` (clamped to the string's end).
 * Never lands between the halves of a surrogate pair.
 */
export function advanceCodePoints(s: string, from: number, count: number): number {
  let i = from;
  let left = count;
  while (left > 0 && i < s.length) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      i += d >= 0xdc00 && d <= 0xdfff ? 2 : 1;
    } else {
      i++;
    }
    left--;
  }
  return i;
}

// Removed from header fields: Unicode tag characters U+E0000–U+E007F (invisible; can smuggle
// text) and the bidirectional controls that can make a name render reversed or reordered
// (embeddings and overrides U+202A–U+202E, isolates U+2066–U+2069, marks U+200E, U+200F, U+061C).

/**
 * Folds `s` into something safe to print as one header field: bidi controls and tag characters
 * are removed; C0/C1 controls, DEL, and the line/paragraph separators U+2028/U+2029 become a space.
 */
export function foldHeaderField(s: string): string {
  // Fast path: the overwhelming majority of names and topics are plain.
  if (!NEEDS_FOLD_RE.test(s)) return s;
  return s.replace(FOLD_RE, (ch) => (ch.length === 2 || isBidi(ch) ? '' : ' '));
}

const NEEDS_FOLD_RE =
  /[\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C\uDB40]/;
const FOLD_RE =
  /\uDB40[\uDC00-\uDC7F]|[\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/g;

function isBidi(ch: string): boolean {
  const c = ch.charCodeAt(0);
  return (
    (c >= 0x202a && c <= 0x202e) ||
    (c >= 0x2066 && c <= 0x2069) ||
    c === 0x200e ||
    c === 0x200f ||
    c === 0x061c
  );
}
