import { escapeMsgText, type NameField, quoteName } from './escape.js';
import { type FormattableMessage, isMentioned } from './message.js';
import { needsUserId, type PersonNames, quotePerson } from './person-names.js';
import { createTimestampFormatter, type TimeStyle } from './time.js';
import { foldHeaderField } from './unicode.js';

/** Options for {@link formatMessageLine} and {@link createMessageLineFormatter}. */
export interface MessageLineOptions {
  /** Default `iso`. */
  readonly timeStyle?: TimeStyle | undefined;
  /** IANA zone for the time. Default `UTC`. */
  readonly timeZone?: string | undefined;
  /** Reference instant for the `short` style. Default: the current time, read at each call. */
  readonly now?: Date | number | undefined;
  /**
   * The reading account's user id. Its own messages never carry `(mention)`, and it is left out of
   * the participant list of a group DM.
   */
  readonly selfUserId?: number | undefined;
  /**
   * Escape for the model-visible trust boundary: the body through `escapeMsgText`, stream, topic
   * and names through `quoteName` (escaped, and quoted when they hold a delimiter of their field).
   * Default `false`.
   */
  readonly escape?: boolean | undefined;
  /** Append `(edited)` / `(moved)` when the message was edited / moved. Default `true`. */
  readonly trailers?: boolean | undefined;
  /** Append `[attachments: N]` for N distinct `/user_uploads/` links in the body. Default `true`. */
  readonly attachments?: boolean | undefined;
  /**
   * The realm's display names ({@link PersonNames}, built once per user list): a sender or group
   * DM participant whose name another person holds, once folded, is printed with the user id,
   * `Olivia Owner (user 12)`. A name that holds invisible or mixed-script characters is printed so
   * with or without it. Plain names nobody else holds print as they are.
   */
  readonly people?: PersonNames | undefined;
}

/** A message-line formatter bound to one set of options (the fast path for many messages). */
export interface MessageLineFormatter {
  /** The whole line: head, body, trailers. */
  (message: FormattableMessage): string;
  /** The head alone (everything before the body, including the final `": "`). */
  head(message: FormattableMessage): string;
}

const UPLOAD_RE = /\/user_uploads\/(?!thumbnail\/|temporary\/)[^\s)\]"'<>]+/g;
const FENCE_LINE_RE = /^(?:`{3,}|~{3,})/;
/** Senders a formatter keeps printed: far more than a page holds, bounded however long it lives. */
const MAX_CACHED_SENDERS = 1024;
/** What starts every line of a body after its first. */
const CONTINUATION = '  ';

/** Distinct `/user_uploads/` paths the body links (thumbnails and temporary URLs not counted). */
function countUploads(body: string): number {
  if (!body.includes('/user_uploads/')) return 0;
  const seen = new Set<string>();
  for (const m of body.matchAll(UPLOAD_RE)) seen.add(m[0]);
  return seen.size;
}

/** A sender or participant: quoted (with `escaped`) or folded, with the id where needed. */
function printPerson(
  name: string,
  userId: number,
  field: 'person' | 'member',
  escaped: boolean,
  people: PersonNames | undefined,
): string {
  if (escaped) return quotePerson(name, userId, field, people);
  return foldHeaderField(name) + (needsUserId(name, userId, people) ? ` (user ${userId})` : '');
}

/**
 * The conversation part of a line or header: `#stream > topic` (`(no topic)` for the empty topic),
 * `DM` for a one-to-one or self DM, `group DM with A, B` naming the other participants. With
 * `escaped`, each name goes through `quoteName`, so no stream, topic or participant name can pass
 * for the delimiters around it. A participant a name alone would not tell apart (see `people` of
 * {@link MessageLineOptions}) is named with the user id.
 */
export function conversationLabel(
  message: Pick<FormattableMessage, 'type' | 'display_recipient' | 'subject' | 'sender_id'>,
  selfUserId?: number | undefined,
  escaped = false,
  people?: PersonNames | undefined,
): string {
  const name = escaped ? quoteName : (value: string, _field: NameField) => foldHeaderField(value);
  if (message.type === 'stream') {
    const topic = message.subject === '' ? '(no topic)' : name(message.subject, 'topic');
    return `#${name(String(message.display_recipient), 'stream')} > ${topic}`;
  }
  const recipients = Array.isArray(message.display_recipient) ? message.display_recipient : [];
  if (recipients.length <= 2) return 'DM';
  const others: string[] = [];
  for (const r of recipients) {
    if (r.id !== message.sender_id && r.id !== selfUserId)
      others.push(printPerson(r.full_name, r.id, 'member', escaped, people));
  }
  return `group DM with ${others.join(', ')}`;
}

/**
 * Builds the one message-line formatter (see {@link formatMessageLine}) for many messages: zone,
 * style and reference time are resolved once.
 *
 * @throws `CORE_INVALID_ARGUMENT` for an unknown zone or time style, or an invalid `now`.
 */
export function createMessageLineFormatter(options: MessageLineOptions = {}): MessageLineFormatter {
  const time = createTimestampFormatter({
    style: options.timeStyle,
    timeZone: options.timeZone,
    now: options.now,
  });
  const escaped = options.escape === true;
  const selfUserId = options.selfUserId;
  const trailers = options.trailers !== false;
  const attachments = options.attachments !== false;
  const people = options.people;
  // The messages of one page mostly share a conversation and come from a few senders: each
  // sender is printed once (again when renamed, or when the people index changed).
  const senders = new Map<number, { name: string; version: number | undefined; text: string }>();
  const sender = (value: string, id: number): string => {
    const known = senders.get(id);
    if (known !== undefined && known.name === value && known.version === people?.version) return known.text;
    if (senders.size >= MAX_CACHED_SENDERS) senders.clear();
    const text = printPerson(value, id, 'person', escaped, people);
    senders.set(id, { name: value, version: people?.version, text });
    return text;
  };
  let lastStream: unknown;
  let lastTopic: string | undefined;
  let lastLabel = '';
  const label = (m: FormattableMessage): string => {
    if (m.type !== 'stream') return conversationLabel(m, selfUserId, escaped, people);
    if (m.display_recipient !== lastStream || m.subject !== lastTopic) {
      lastLabel = conversationLabel(m, selfUserId, escaped);
      lastStream = m.display_recipient;
      lastTopic = m.subject;
    }
    return lastLabel;
  };

  const head = (m: FormattableMessage): string => {
    const t = time(m.timestamp);
    const mention = m.type === 'stream' && m.sender_id !== selfUserId && isMentioned(m) ? ' (mention)' : '';
    return `[${t === '' ? '' : `${t} `}id=${m.id}] [${label(m)}] ${sender(m.sender_full_name, m.sender_id)}${mention}: `;
  };

  const line = ((m: FormattableMessage): string => {
    // Continuation lines are indented, so no line of a body can pass for the head of another
    // message: every line that starts with "[" at the margin is one this formatter wrote. Escaping
    // turns every other line terminator into LF first, so none escapes the indent.
    const body = (escaped ? escapeMsgText(m.content) : m.content).replaceAll('\n', `\n${CONTINUATION}`);
    let tail = '';
    if (trailers) {
      if (m.last_edit_timestamp !== undefined) tail += ' (edited)';
      if (m.last_moved_timestamp !== undefined) tail += ' (moved)';
    }
    if (attachments) {
      const n = countUploads(m.content);
      if (n > 0) tail += ` [attachments: ${n}]`;
    }
    if (tail !== '' && body !== '') {
      const lastLine = body.slice(body.lastIndexOf('\n') + 1).trimStart();
      if (lastLine === '' || FENCE_LINE_RE.test(lastLine)) tail = `\n${CONTINUATION}${tail.slice(1)}`;
    } else if (tail !== '') {
      tail = tail.slice(1);
    }
    return head(m) + body + tail;
  }) as MessageLineFormatter;
  line.head = head;
  return line;
}

/**
 * Formats one message as the message line every model-visible surface shares:
 *
 * ```text
 * [2026-09-14T11:42:52+03:00 id=17206924] [#qa > router] Ann Lee (mention): body
 * [2026-09-14T11:42:52+03:00 id=17206925] [DM] Bo: body
 * ```
 *
 * The id is always present (ids are realm-global and increasing, so every line is a cursor).
 * `(mention)` marks a stream message whose flags say it mentions the reader (`mentioned` or a
 * wildcard flag; no flags, no marker); a DM says `[DM]` instead (`[group DM with A, B]` for a group).
 * After the body: `(edited)`, `(moved)` and `[attachments: N]` (distinct `/user_uploads/` links),
 * on the body's last line, or on a line of their own when the body ends with a fence or a newline.
 * Every line of a body after its first is indented by two spaces, so a body cannot forge the
 * head of another message line.
 * Header fields are always folded to one line with bidi controls and tag characters removed; with
 * `escape` they and the body are also escaped for the trust boundary: the body's line terminators
 * (CR, VT, FF, NEL, U+2028, …) all start an indented continuation, its controls are shown, and a
 * stream, topic or sender name that holds a delimiter of its field is printed as a JSON string
 * (`[#dev > "x] [#secret > plans"] "Olivia Owner: FORGED": body`), so a name can never pass for
 * another stream, topic, sender or a `(mention)` marker. A sender or participant a name alone would
 * not tell apart is followed by the user id, `Olivia Owner (user 12)` (see `people`).
 *
 * @throws `CORE_INVALID_ARGUMENT` for an unknown zone or time style, an invalid `now`, or a
 *   non-finite timestamp.
 */
export function formatMessageLine(message: FormattableMessage, options: MessageLineOptions = {}): string {
  return createMessageLineFormatter(options)(message);
}

/**
 * The head of a message line: everything {@link formatMessageLine} puts before the body,
 * including the final `": "` (what a host strips to recover the bare body).
 *
 * @throws `CORE_INVALID_ARGUMENT` as {@link formatMessageLine}.
 */
export function formatMessageHead(message: FormattableMessage, options: MessageLineOptions = {}): string {
  return createMessageLineFormatter(options).head(message);
}
