import { ZmcpError } from '../errors.js';
import { type NormalizeMarkdownOptions, normalizeMarkdown } from './markdown.js';
import { codePointLength } from './unicode.js';

/** Zulip's default `max_message_length`, in Unicode code points. */
export const DEFAULT_MAX_MESSAGE_LENGTH = 10_000;

/** Options for {@link checkMessageLength}. */
export interface MessageLengthOptions {
  /** The realm's `max_message_length` (or an operator override). Default 10000. */
  readonly limit?: number | undefined;
  /**
   * Whether to measure the content after {@link normalizeMarkdown}, since that is what is sent and
   * it can grow the text. `true` (default) normalizes; an options object is passed through;
   * `false` measures the content as given.
   */
  readonly normalize?: boolean | NormalizeMarkdownOptions | undefined;
}

/** What {@link checkMessageLength} measured. */
export interface MessageLengthResult {
  /** The content to send: normalized when normalization was on, otherwise the input. */
  readonly content: string;
  /** Its length in code points, as Zulip counts it (after Zulip's own trimming). */
  readonly length: number;
  readonly limit: number;
}

/**
 * Length of `content` as Zulip measures it against `max_message_length`: Unicode code points,
 * after Zulip strips leading newlines and trailing whitespace.
 */
export function measureMessageLength(content: string): number {
  let end = content.length;
  while (end > 0 && isTrailingSpace(content.charCodeAt(end - 1))) end--;
  let start = 0;
  while (start < end && content.charCodeAt(start) === 10) start++;
  return codePointLength(start === 0 && end === content.length ? content : content.slice(start, end));
}

function isTrailingSpace(c: number): boolean {
  return (
    c === 32 ||
    (c >= 9 && c <= 13) ||
    (c >= 0x1c && c <= 0x1f) ||
    c === 0x85 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000
  );
}

/**
 * Refuses content Zulip would silently truncate: measures it after normalization (by default) in
 * code points against the realm's limit and throws when it is longer. Never truncates.
 *
 * @returns the content to send (normalized when normalization is on), its length and the limit.
 * @throws `CORE_MESSAGE_TOO_LONG` when the content is longer than the limit;
 *   `details: { length, limit }`.
 * @throws `CORE_INVALID_ARGUMENT` when `limit` is not a positive integer.
 */
export function checkMessageLength(content: string, options: MessageLengthOptions = {}): MessageLengthResult {
  const limit = options.limit ?? DEFAULT_MAX_MESSAGE_LENGTH;
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new ZmcpError(
      'CORE_INVALID_ARGUMENT',
      `Message length limit must be a positive integer, got ${String(limit)}.`,
      {
        details: { limit },
      },
    );
  }
  const normalize = options.normalize ?? true;
  const sent =
    normalize === false ? content : normalizeMarkdown(content, normalize === true ? {} : normalize);
  const length = measureMessageLength(sent);
  if (length > limit) {
    throw new ZmcpError(
      'CORE_MESSAGE_TOO_LONG',
      `Message is ${length} characters long (Unicode code points, after formatting fixes) but the realm accepts at most ${limit}; nothing was sent. Shorten it or split it into several messages.`,
      { details: { length, limit } },
    );
  }
  return { content: sent, length, limit };
}
