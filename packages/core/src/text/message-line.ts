import { escapeMsgName, escapeMsgText, formatMsgBlock } from './escape.js';
import { type FormattableMessage, isMentioned } from './message.js';
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
   * and names through `escapeMsgName`. Default `false`.
   */
  readonly escape?: boolean | undefined;
  /** Append `(edited)` / `(moved)` when the message was edited / moved. Default `true`. */
  readonly trailers?: boolean | undefined;
  /** Append `[attachments: N]` for N distinct `/user_uploads/` links in the body. Default `true`. */
  readonly attachments?: boolean | undefined;
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
/** What starts every line of a body after its first. */
const CONTINUATION = '  ';

/** Distinct `/user_uploads/` paths the body links (thumbnails and temporary URLs not counted). */
function countUploads(body: string): number {
  if (!body.includes('/user_uploads/')) return 0;
  const seen = new Set<string>();
  for (const m of body.matchAll(UPLOAD_RE)) seen.add(m[0]);
  return seen.size;
}

/**
 * The conversation part of a line or header: `#stream > topic` (`(no topic)` for the empty topic),
 * `DM` for a one-to-one or self DM, `group DM with A, B` naming the other participants.
 */
export function conversationLabel(
  message: Pick<FormattableMessage, 'type' | 'display_recipient' | 'subject' | 'sender_id'>,
  selfUserId?: number | undefined,
  escaped = false,
): string {
  const name = escaped ? escapeMsgName : foldHeaderField;
  if (message.type === 'stream') {
    const topic = message.subject === '' ? '(no topic)' : name(message.subject);
    return `#${name(String(message.display_recipient))} > ${topic}`;
  }
  const recipients = Array.isArray(message.display_recipient) ? message.display_recipient : [];
  if (recipients.length <= 2) return 'DM';
  const others: string[] = [];
  for (const r of recipients) {
    if (r.id !== message.sender_id && r.id !== selfUserId) others.push(name(r.full_name));
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
  const name = escaped ? escapeMsgName : foldHeaderField;

  const head = (m: FormattableMessage): string => {
    const t = time(m.timestamp);
    const mention = m.type === 'stream' && m.sender_id !== selfUserId && isMentioned(m) ? ' (mention)' : '';
    return `[${t === '' ? '' : `${t} `}id=${m.id}] [${conversationLabel(m, selfUserId, escaped)}] ${name(
      m.sender_full_name,
    )}${mention}: `;
  };

  const line = ((m: FormattableMessage): string => {
    // Continuation lines are indented, so no line of a body can pass for the head of another
    // message: every line that starts with "[" at the margin is one this formatter wrote.
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
 * `escape` they and the body are also escaped for the trust boundary.
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

/** Options for {@link formatMsgBlocks}. */
export interface MsgBlocksOptions {
  /** Style of the `time` attribute; `none` leaves it out. Default `iso`. */
  readonly timeStyle?: TimeStyle | undefined;
  readonly timeZone?: string | undefined;
  readonly now?: Date | number | undefined;
  /** As in {@link MessageLineOptions.selfUserId}. */
  readonly selfUserId?: number | undefined;
}

/**
 * Renders messages as `<msg>` blocks for a model, one per line, with a header line
 * `[#stream > topic]` / `[DM]` (names escaped) printed whenever the conversation changes:
 *
 * ```text
 * [#qa > router]
 * <msg id="17206924" from="Ann Lee" time="2026-09-14T11:42:52+03:00" mention="true">body</msg>
 * ```
 *
 * Attributes: `id`, `from`, `time` (unless the style is `none`), and `mention`, `edited`, `moved`
 * when true. Bodies are escaped with `escapeMsgText`, attributes with `escapeMsgAttr`.
 *
 * @throws `CORE_INVALID_ARGUMENT` for an unknown zone or time style, an invalid `now`, or a
 *   non-finite timestamp.
 */
export function formatMsgBlocks(
  messages: readonly FormattableMessage[],
  options: MsgBlocksOptions = {},
): string {
  const time = createTimestampFormatter({
    style: options.timeStyle,
    timeZone: options.timeZone,
    now: options.now,
  });
  const out: string[] = [];
  let previous: string | undefined;
  for (const m of messages) {
    const label = conversationLabel(m, options.selfUserId, true);
    if (label !== previous) {
      out.push(`[${label}]`);
      previous = label;
    }
    const t = time(m.timestamp);
    out.push(
      formatMsgBlock({
        id: m.id,
        from: m.sender_full_name,
        body: m.content,
        attributes: {
          time: t === '' ? undefined : t,
          mention: m.type === 'stream' && m.sender_id !== options.selfUserId && isMentioned(m),
          edited: m.last_edit_timestamp !== undefined,
          moved: m.last_moved_timestamp !== undefined,
        },
      }),
    );
  }
  return out.join('\n');
}
