// Untrusted text shown inside a message the bot posts (a command awaiting approval, an agent's
// current step): one line, in a Markdown code span nothing inside can close, so no mention,
// link or formatting in it renders.

/** Controls, line breaks, bidi controls and tag characters: none of them is shown. */
const UNSHOWN =
  /[\u0000-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\u2028\u2029]|\uDB40[\uDC00-\uDC7F]/g;

/**
 * Folds untrusted text to one line for a message (controls, line breaks, bidi controls and tag
 * characters become spaces, runs of white space one space, trimmed) and cuts it to `limit` code
 * points (default 200), ending with `…` when cut.
 */
export function oneLineText(text: string, limit = 200): string {
  const folded = text.replace(UNSHOWN, ' ').replace(/\s+/g, ' ').trim();
  const points = [...folded];
  return points.length <= limit ? folded : `${points.slice(0, Math.max(1, limit - 1)).join('')}…`;
}

/**
 * Untrusted text as a Markdown code span Zulip renders verbatim: folded with {@link oneLineText},
 * fenced by more backticks than any run inside it (padded when it starts or ends with one).
 * Empty text is shown as `(empty)` in a span.
 */
export function inlineCode(text: string, limit = 200): string {
  const line = oneLineText(text, limit);
  if (line === '') return '`(empty)`';
  const runs = line.match(/`+/g) ?? [];
  const fence = '`'.repeat(Math.max(0, ...runs.map((r) => r.length)) + 1);
  const pad = line.startsWith('`') || line.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${line}${pad}${fence}`;
}
