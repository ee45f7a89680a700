import { isIndentedLine, scanFences } from './fences.js';
import { tokenizeInline } from './inline.js';
import type { FormattableMessage } from './message.js';

// The /nobots opt-out: people keep a topic or a message away from bots by writing `/nobots`.
//
// What counts as the marker: the word `/nobots` (any case) standing as its own token, so
// - before it: the start of the text, whitespace, or opening punctuation `( [ { " ' * _ ~ >`;
// - after it: the end, whitespace, or only closing punctuation `. , ; : ! ? ) ] } " ' * _ ~ <`
//   up to the next whitespace.
// So `/nobots`, `(/nobots)`, `**/NoBots**` and `/nobots.` count; `/nobots.txt`, `/nobots/x`,
// `foo/nobots` and `https://x.example/nobots` do not. In message content, inline code, fenced and
// indented code, link destinations, autolinks and bare URLs are skipped (someone explaining the
// feature writes `` `/nobots` ``); link text and quoted text count (hiding more is the safe side).

const OPENERS = new Set(['(', '[', '{', '"', "'", '*', '_', '~', '>']);
const CLOSERS = new Set(['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', "'", '*', '_', '~', '<']);
const MARKER = '/nobots';
// Case-insensitive without lowering a copy of every body (no other letter lowers to these).
const MARKER_ANY_CASE = /\/nobots/i;
const BARE_URL_RE = /\b(?:https?|ftp|mailto):\/?\/?[^\s<>]*/gi;

function isSpace(ch: string | undefined): boolean {
  return ch === undefined || /\s/.test(ch);
}

/** True when `text` holds the `/nobots` marker as a token (no Markdown awareness). */
function hasMarkerToken(text: string): boolean {
  const lower = text.toLowerCase();
  let at = lower.indexOf(MARKER);
  while (at >= 0) {
    let i = at - 1;
    while (i >= 0 && OPENERS.has(lower[i] as string)) i--;
    let j = at + MARKER.length;
    while (j < lower.length && CLOSERS.has(lower[j] as string)) j++;
    if (isSpace(lower[i]) && isSpace(lower[j])) return true;
    at = lower.indexOf(MARKER, at + 1);
  }
  return false;
}

/** True when a topic name carries the `/nobots` marker (see the module notes for the token rule). */
export function isNoBotsTopic(topic: string): boolean {
  return topic.length >= MARKER.length && hasMarkerToken(topic);
}

/**
 * True when message content carries the `/nobots` marker outside code, link destinations and
 * URLs. Raw Markdown is scanned with Zulip's fence rules; `contentType: 'text/html'` (content
 * fetched with `apply_markdown`) drops `<code>`/`<pre>` elements and tags first.
 */
export function isNoBotsContent(content: string, contentType?: string | undefined): boolean {
  if (!MARKER_ANY_CASE.test(content)) return false;
  if (contentType === 'text/html') {
    const text = content
      .replace(/<pre[\s>][\s\S]*?<\/pre>|<code[\s>][\s\S]*?<\/code>/gi, ' ')
      .replace(/<[^>]*>/g, ' ')
      .replace(BARE_URL_RE, ' ');
    return hasMarkerToken(text);
  }
  const lines = content.split('\n');
  const { kinds } = scanFences(lines);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (kinds[i] !== 'text' || isIndentedLine(line) || !line.toLowerCase().includes(MARKER)) continue;
    let visible = '';
    for (const seg of tokenizeInline(line)) {
      if (seg.kind === 'text') visible += ` ${line.slice(seg.start, seg.end).replace(BARE_URL_RE, ' ')} `;
      else if (seg.kind === 'link') visible += ` ${line.slice(seg.textStart, seg.textEnd)} `;
    }
    if (hasMarkerToken(visible)) return true;
  }
  return false;
}

/**
 * True when bots must not see the message: its content carries `/nobots` (see
 * {@link isNoBotsContent}) or it sits in a `/nobots` topic (see {@link isNoBotsTopic}).
 */
export function isNoBotsMessage(
  message: Pick<FormattableMessage, 'content' | 'subject' | 'content_type'>,
): boolean {
  return isNoBotsTopic(message.subject) || isNoBotsContent(message.content, message.content_type);
}
