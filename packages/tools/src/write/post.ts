import {
  type Conversation,
  checkedMessageUrl,
  checkMessageLength,
  errorCode,
  isZmcpError,
  measureMessageLength,
  normalizeMarkdown,
  permalink,
  splitMessage,
  type WriteTarget,
  ZmcpError,
} from '@zmcp/core';
import {
  type Attachment,
  appendAttachmentMarkdown,
  isUploadError,
  UploadError,
  type UploadedAttachment,
  uploadAttachments,
} from '@zmcp/uploads';
import { ToolError } from '../errors.js';
import { failureFromError, mayHaveTakenEffect, toolFailure } from '../failure.js';
import { streamLabel, topicLabel } from '../read/shared.js';
import type { ToolServices } from '../services.js';
import type { ToolFailure } from '../tool.js';
import { type EarlierSend, SendOnce } from './send-once.js';

// How a message is posted, once, for every tool and every host: normalization, the length check
// measured after it, the write policy, the send, and what came of it.

/** Markdown as it will be sent: normalized when the operator left the fixes on. */
export function prepareMarkdown(services: ToolServices, content: string): string {
  return services.markdownAutofix ? normalizeMarkdown(content) : content;
}

/** The base name of a `<root>/<path>` reference, as the upload will be named. */
function attachmentName(a: Attachment): string {
  if ('file' in a) {
    const parts = a.file.split('/').filter((p) => p !== '');
    return parts[parts.length - 1] ?? a.file;
  }
  return a.name;
}

/**
 * The shortest link Zulip can produce for an attachment: realm id, a two-level directory and a
 * 24-character token come before the file name. Used to refuse clearly over-long messages before
 * anything is uploaded; the exact links are measured again before the send.
 */
export function minimalLink(a: Attachment): { markdown: string } {
  const text = attachmentName(a).replace(/[[\]]/g, '');
  return { markdown: `[${text}](/user_uploads/1/a/${'x'.repeat(24)}/x)` };
}

/**
 * The length guard: measures the body plus the attachment links it will carry, in code points,
 * against the realm's limit, and refuses (never truncates).
 * @throws ZmcpError `CORE_MESSAGE_TOO_LONG` with `details: { length, limit }`.
 */
export function guardLength(
  services: ToolServices,
  body: string,
  links: readonly { markdown: string }[],
  estimated: boolean,
): { content: string; length: number } {
  const full = appendAttachmentMarkdown(body, links);
  try {
    const checked = checkMessageLength(full, { limit: services.maxMessageLength, normalize: false });
    return { content: checked.content, length: checked.length };
  } catch (err) {
    if (links.length === 0 || !isZmcpError(err, 'CORE_MESSAGE_TOO_LONG')) throw err;
    const length = Number(err.details?.length);
    const limit = services.maxMessageLength;
    throw new ZmcpError(
      'CORE_MESSAGE_TOO_LONG',
      `Message is ${estimated ? 'at least ' : ''}${length} characters long with the links to its ${links.length} attachment(s) (Unicode code points, after formatting fixes) but the realm accepts at most ${limit}; nothing was sent.${estimated ? ' Nothing was uploaded either.' : ' The uploaded files stay unreferenced and Zulip removes them later.'} Shorten the text, or attach fewer files.`,
      { cause: err, details: { length, limit, attachments: links.length } },
    );
  }
}

const PATH_CODES: ReadonlySet<string> = new Set([
  'UPLOAD_NO_ROOTS',
  'UPLOAD_LOCAL_FILES_UNSUPPORTED',
  'UPLOAD_ABSOLUTE_PATH',
  'UPLOAD_UNKNOWN_ROOT',
  'UPLOAD_INVALID_PATH',
  'UPLOAD_PATH_ESCAPE',
  'UPLOAD_FILE_NOT_FOUND',
  'UPLOAD_NOT_REGULAR_FILE',
]);

/** What a model can do about an upload failure, by code. */
function uploadHint(services: ToolServices, code: string): string | undefined {
  if (PATH_CODES.has(code)) {
    const names = services.uploadRoots?.names ?? [];
    return names.length === 0
      ? 'No upload roots are configured: attach inline data as { data: <base64>, name }.'
      : `A local file is <root>/<path> inside one of the upload roots: ${names.join(', ')}. Or attach inline data as { data: <base64>, name }.`;
  }
  if (code === 'UPLOAD_TOO_LARGE' || code === 'UPLOAD_TOTAL_TOO_LARGE' || code === 'UPLOAD_TOO_MANY_FILES') {
    return `Attach fewer or smaller files: at most 10 per message, ${services.maxFileBytes} bytes each.`;
  }
  if (code === 'UPLOAD_BAD_BASE64') return 'data must be standard base64 (A-Z, a-z, 0-9, +, /, = padding).';
  return undefined;
}

/**
 * Uploads attachments one at a time (streamed) and returns them in input order. Upload errors
 * are rethrown with a hint (the available upload roots, the size limits).
 * @throws UploadError (`UPLOAD_*`) with the hint appended to its message.
 */
export async function uploadAll(
  services: ToolServices,
  attachments: readonly Attachment[],
  signal: AbortSignal,
): Promise<UploadedAttachment[]> {
  if (attachments.length === 0) return [];
  try {
    return await uploadAttachments(services.client, services.uploadRoots, attachments, {
      site: services.site,
      maxFileBytes: services.maxFileBytes,
      signal,
    });
  } catch (err) {
    const hint = isUploadError(err) ? uploadHint(services, err.code) : undefined;
    if (isUploadError(err) && hint !== undefined) {
      throw new UploadError(err.code, `${err.message}.\nHint: ${hint}`, {
        cause: err,
        ...(err.details === undefined ? {} : { details: err.details }),
      });
    }
    throw err;
  }
}

/**
 * Turns a failed send into a result that does not invite a blind retry: when the outcome is
 * unknown the model is told to look before sending again (a second send would post twice).
 * Definite refusals are rethrown as they are.
 */
export function sendFailure(err: unknown): ToolFailure {
  const code = errorCode(err);
  const message = (err as { message?: unknown } | null)?.message;
  if (code !== undefined && typeof message === 'string' && mayHaveTakenEffect(code)) {
    return toolFailure(
      code,
      `${message}. The message may or may not have been posted.`,
      'Read the conversation (fetch_history) before sending again: a second send could post it twice.',
    );
  }
  throw err;
}

/**
 * What to do with text longer than the realm's limit (measured in code points after the Markdown
 * fixes, attachment links included). `refuse`: nothing is sent and `CORE_MESSAGE_TOO_LONG` says by
 * how much, since Zulip would cut the text silently (every send tool). `split`: several messages,
 * cut at paragraphs, then lines, then words, a code fence closed and reopened across a cut, for a
 * protocol that must deliver what it was handed (an MCPL publish, a Claude Code channel reply).
 */
export type OverLength = 'refuse' | 'split';

/** How {@link postMessage} posts. */
export interface PostOptions {
  /** What to do with over-long text: refuse it, or split it into several messages. */
  overLength: OverLength;
  /** Files uploaded one at a time and linked at the end of the text (the last part when split). */
  attachments?: readonly Attachment[] | undefined;
  /** The argument the text came in, named when it is empty (default `content`). */
  field?: string | undefined;
  /** Fires when the caller's deadline passes or it gives up; passed to every Zulip call. */
  signal: AbortSignal;
  /** Called with each message id as soon as Zulip has taken it (an MCPL host records them for rollback). */
  onSent?: ((id: number) => void) | undefined;
  /**
   * Send even when the same text went to the same conversation within the send-once window
   * (`services.sendOnce`); without it such a repeat is refused with `TOOLS_ALREADY_SENT`.
   */
  repeat?: boolean | undefined;
}

/** What {@link postMessage} sent. */
export interface Posted {
  /** The messages sent, in order: one, or the parts of a split text. */
  readonly ids: readonly number[];
  /** What each message carried, as sent (after the Markdown fixes, attachment links included). */
  readonly contents: readonly string[];
  /** A link to the first message, or null when none can be made. */
  readonly permalink: string | null;
  /** The files uploaded and linked. */
  readonly uploaded: readonly UploadedAttachment[];
  /** The length of the whole text in code points, attachment links included. */
  readonly length: number;
  /** Whether the Markdown fixes changed the text. */
  readonly normalized: boolean;
}

/** A post checked and normalized, nothing sent or uploaded yet. Internal to the package. */
export interface PreparedPost {
  readonly to: Conversation;
  readonly body: string;
  readonly normalized: boolean;
  readonly attachments: readonly Attachment[];
  readonly overLength: OverLength;
  /** The stream's name as the realm knows it, for the link. */
  readonly streamName: string | undefined;
  readonly onSent: ((id: number) => void) | undefined;
  /** The call means to repeat an identical recent send. */
  readonly repeat: boolean;
}

function writeTarget(to: Conversation): WriteTarget {
  return to.kind === 'stream' ? { stream: to.streamId } : { dm: [...to.userIds] };
}

/**
 * The checks of a post, before anything is uploaded or sent: the write policy (read-only mode,
 * the write allowlist by stream id, private streams, DMs), something to send, the Markdown fixes,
 * and, when over-long text is refused, the length of the text with the shortest links its
 * attachments can have. Internal: {@link postMessage} is the public way in.
 * @throws ZmcpError `CORE_READ_ONLY`, `CORE_ACCESS_DENIED`, `CORE_MESSAGE_TOO_LONG`;
 *   ToolError `TOOLS_INVALID_INPUT` when there is neither text nor an attachment.
 */
export async function preparePost(
  services: ToolServices,
  to: Conversation,
  content: string | undefined,
  options: PostOptions,
): Promise<PreparedPost> {
  // A DM names no stream: the lookup is not consulted.
  const lookup =
    to.kind === 'stream'
      ? await services.directory.streamLookup({ signal: options.signal })
      : () => undefined;
  services.policy.checkWrite(writeTarget(to), lookup);
  const attachments = options.attachments ?? [];
  const raw = content ?? '';
  if (raw.trim() === '' && attachments.length === 0) {
    const field = options.field ?? 'content';
    throw new ToolError(
      'TOOLS_INVALID_INPUT',
      `${field} is empty and there are no attachments; write a message, or attach a file.`,
      { field },
    );
  }
  const body = prepareMarkdown(services, raw);
  if (options.overLength === 'refuse') guardLength(services, body, attachments.map(minimalLink), true);
  return {
    to,
    body,
    normalized: body !== raw,
    attachments,
    overLength: options.overLength,
    streamName: to.kind === 'stream' ? lookup(to.streamId)?.name : undefined,
    onSent: options.onSent,
    repeat: options.repeat === true,
  };
}

/** The text as it goes out: one message, or its parts, each within the realm's limit. */
function pieces(
  services: ToolServices,
  prepared: PreparedPost,
  uploaded: readonly UploadedAttachment[],
): { contents: string[]; length: number } {
  if (prepared.overLength === 'refuse') {
    const { content, length } = guardLength(services, prepared.body, uploaded, false);
    return { contents: [content], length };
  }
  const full = appendAttachmentMarkdown(prepared.body, uploaded);
  const limit = services.maxMessageLength;
  // Zulip refuses a message of white space alone: a run of it longer than the limit is no part.
  const contents = splitMessage(full, limit)
    .filter((piece) => piece.trim() !== '')
    .map((piece) => checkMessageLength(piece, { limit, normalize: false }).content);
  return { contents, length: measureMessageLength(full) };
}

/** A failure after some parts went out: what was posted, then what failed. */
function partFailure(err: unknown, sent: readonly number[], total: number): ToolFailure {
  const failure = failureFromError(err, undefined, { idempotent: false });
  return {
    isError: true,
    code: failure.code,
    text: `Sent ${sent.length} of ${total} parts (message ids ${sent.join(', ')}); part ${sent.length + 1} was not sent, or may not have been. Read the conversation before sending the rest.\n${failure.text}`,
  };
}

/** The refusal of a repeat: what went where before, and how to repeat on purpose. */
function alreadySent(services: ToolServices, prepared: PreparedPost, earlier: EarlierSend): ToolError {
  const { to } = prepared;
  const where =
    to.kind === 'stream'
      ? `${streamLabel(prepared.streamName ?? String(to.streamId))} > ${topicLabel(to.topic)}`
      : 'this DM conversation';
  const ago = Math.max(0, Math.round((services.now() - earlier.at) / 1000));
  const first = earlier.ids[0] as number;
  const parts = earlier.ids.length > 1 ? ` (with ${earlier.ids.length - 1} more part(s))` : '';
  return new ToolError(
    'TOOLS_ALREADY_SENT',
    `Not sent: the same text went to ${where} ${ago} s ago as message ${first}${parts}${earlier.permalink === null ? '' : ` (${earlier.permalink})`}. It is there already.`,
    { message_id: first, message_ids: [...earlier.ids], permalink: earlier.permalink, sent_at: earlier.at },
  );
}

/**
 * Sends a prepared post under the send-once rule: a post whose conversation and normalized text
 * (and attachments) equal a send that succeeded within the window is refused with
 * `TOOLS_ALREADY_SENT` naming the earlier message, unless the post says `repeat`; a post that went
 * out whole is remembered (a failed or partial one is not). Identical posts in one process run one
 * after the other, so two at once cannot both go out. Internal.
 * @throws ToolError `TOOLS_ALREADY_SENT`; the uploads' and the length check's refusals, and a
 *   definite refusal of the first send.
 */
export async function sendPost(
  services: ToolServices,
  prepared: PreparedPost,
  signal: AbortSignal,
): Promise<Posted | ToolFailure> {
  const once = services.sendOnce;
  const key = SendOnce.keyOf(prepared.to, prepared.body, prepared.attachments);
  return once.serialize(key, async () => {
    if (!prepared.repeat) {
      const earlier = await once.earlier(key);
      if (earlier !== undefined) throw alreadySent(services, prepared, earlier);
    }
    const posted = await sendOnce(services, prepared, signal);
    // The message is out: a memory that cannot be written must not turn that into a failure
    // (a model told "failed" would send it again). It only forgets this send.
    if (!('isError' in posted)) {
      await once.remember(key, { ids: posted.ids, permalink: posted.permalink }).catch(() => undefined);
    }
    return posted;
  });
}

/**
 * Sends a prepared post: uploads its attachments one at a time, measures (or splits) the whole
 * text, and posts each message once (never retried here: the client does not retry a send that may
 * have arrived). A failure whose outcome is unknown, or any failure after a part went out, comes
 * back as a failure that says what was posted and to look before sending again.
 */
async function sendOnce(
  services: ToolServices,
  prepared: PreparedPost,
  signal: AbortSignal,
): Promise<Posted | ToolFailure> {
  const uploaded = await uploadAll(services, prepared.attachments, signal);
  const { contents, length } = pieces(services, prepared, uploaded);
  if (contents.length === 0) {
    throw new ToolError('TOOLS_INVALID_INPUT', 'There is nothing to send but white space.', {
      field: 'content',
    });
  }
  const { to } = prepared;
  const ids: number[] = [];
  let sentUrl: string | undefined;
  for (const content of contents) {
    try {
      // readBySender: the bot wrote it, so it is not unread for the bot.
      const { id, message_url } = await services.client.sendMessage(
        to.kind === 'stream'
          ? { type: 'stream', to: to.streamId, topic: to.topic, content, readBySender: true }
          : { type: 'direct', to: [...to.userIds], content, readBySender: true },
        { signal },
      );
      if (ids.length === 0) sentUrl = checkedMessageUrl(message_url, services.site);
      ids.push(id);
      prepared.onSent?.(id);
    } catch (err) {
      if (ids.length === 0) return sendFailure(err);
      return partFailure(err, ids, contents.length);
    }
  }
  return {
    ids,
    contents,
    // Zulip's own link where it sends one (feature level 508), else built as Zulip builds it.
    permalink: sentUrl ?? linkTo(services, prepared, ids[0] as number),
    uploaded,
    length,
    normalized: prepared.normalized,
  };
}

function linkTo(services: ToolServices, prepared: PreparedPost, messageId: number): string | null {
  const { to } = prepared;
  try {
    return permalink(
      services.site,
      to.kind === 'stream'
        ? { streamId: to.streamId, streamName: prepared.streamName, topic: to.topic, messageId }
        : { dmUserIds: [...to.userIds, services.identity.user_id], messageId },
    );
  } catch {
    return null;
  }
}

/**
 * Posts a message, the one way every tool and host does: the write policy (read-only mode, the
 * write allowlist by stream id, private streams, DMs), the Markdown fixes (when the operator left
 * them on), the length measured after them with `overLength` deciding what over-long text does,
 * the attachments uploaded and linked, each message sent once, and the ids and a link to the
 * first. A send whose outcome is unknown, or a failure after some parts went out, is returned as a
 * {@link ToolFailure} that says what was posted and to read the conversation before sending again.
 * Send once: the same text (normalized) to the same conversation as a send that succeeded within
 * `services.sendOnce`'s window is refused, naming the earlier message, unless `repeat` is set.
 *
 * @throws ZmcpError `CORE_READ_ONLY`, `CORE_ACCESS_DENIED`, `CORE_MESSAGE_TOO_LONG` (with
 *   `refuse`); ToolError `TOOLS_INVALID_INPUT` for nothing to send, `TOOLS_ALREADY_SENT` for a
 *   repeat; UploadError `UPLOAD_*`; a definite refusal of the (first) send, with the client's
 *   request codes.
 */
export async function postMessage(
  services: ToolServices,
  to: Conversation,
  content: string | undefined,
  options: PostOptions,
): Promise<Posted | ToolFailure> {
  return sendPost(services, await preparePost(services, to, content, options), options.signal);
}
