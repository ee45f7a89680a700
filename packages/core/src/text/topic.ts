import { ZmcpError } from '../errors.js';
import { codePointLength } from './unicode.js';

/** Zulip's longest topic, in code points (`max_topic_length`); it cuts longer topics silently. */
export const MAX_TOPIC_LENGTH = 60;

/** The prefix Zulip puts before a resolved topic's name. */
export const RESOLVED_TOPIC_PREFIX = '✔ ';

/** Options of {@link checkTopicName}. */
export interface CheckTopicOptions {
  /** The argument's name in messages. Default `topic`. */
  field?: string | undefined;
  /** The realm's `max_topic_length`. Default 60. */
  maxLength?: number | undefined;
}

/**
 * Applies Zulip's topic rules before sending, refusing what Zulip would change behind the
 * sender's back: it trims, files an empty topic (or "(no topic)") under the realm's general
 * chat, and cuts a topic over the limit to its first characters plus "...". Returns the trimmed
 * topic.
 *
 * @throws `CORE_INVALID_ARGUMENT` naming the field: empty, a line break or control character,
 *   or longer than the limit (`details.length`, `details.limit`).
 */
export function checkTopicName(raw: string, options: CheckTopicOptions = {}): string {
  const field = options.field ?? 'topic';
  const limit = options.maxLength ?? MAX_TOPIC_LENGTH;
  const topic = raw.trim();
  if (topic === '' || topic === '(no topic)') {
    throw new ZmcpError(
      'CORE_INVALID_ARGUMENT',
      `${field} is empty; give the conversation a topic name (Zulip would otherwise file it under "general chat").`,
      { details: { field } },
    );
  }
  if (/[\u0000-\u001f\u007f]/.test(topic)) {
    throw new ZmcpError(
      'CORE_INVALID_ARGUMENT',
      `${field} contains a line break or control character; a topic is one line of text.`,
      { details: { field } },
    );
  }
  const length = codePointLength(topic);
  if (length > limit) {
    throw new ZmcpError(
      'CORE_INVALID_ARGUMENT',
      `${field} is ${length} characters long but Zulip keeps at most ${limit} and would cut the rest silently; nothing was sent. Use a shorter topic.`,
      { details: { field, length, limit } },
    );
  }
  return topic;
}
