import {
  type CallOptions,
  checkMessageLength,
  checkTopicName,
  decodePrintedName,
  dmOthers,
  errorCode,
  escapeMsgName,
  type Message,
  messagePermalink,
  normalizeMarkdown,
  type PersonNames,
  quotePerson,
  readMessage,
  type Stream,
  type StreamInfoLookup,
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
import { z } from 'zod';
import { asToolInput, ToolError } from '../errors.js';
import { mayHaveTakenEffect, toolFailure } from '../failure.js';
import { fitToBudget } from '../page.js';
import { streamLabel, topicLabel } from '../read/shared.js';
import type { ToolServices } from '../services.js';
import type { ToolFailure } from '../tool.js';

// Helpers shared by the write tools. Internal to the package: nothing here is exported from
// the package entry.

/** Upper bound of a content argument, before the realm's own limit is checked. */
const MAX_CONTENT_INPUT = 200_000;

/** A stream by name or id, as every write tool takes it. */
export { StreamRefSchema } from '../read/shared.js';

/** How a model attaches files to a message. */
export const ATTACHMENTS_HELP =
  'Up to 10 files, linked at the end: { file: "<root>/<path>" } under an upload root, or { data: "<base64>", name }';

/** How a model names one file to upload. */
export const ATTACHMENT_HELP =
  '{ file: "<root>/<path>" } under an upload root, or { data: "<base64>", name }';

/** A topic argument; {@link checkTopic} applies Zulip's rules on top. */
export const TopicArgSchema = z.string().max(2000);

/** A message body argument; the realm's limit is checked after normalization. */
export const ContentArgSchema = z.string().max(MAX_CONTENT_INPUT);

/** A message id argument. */
export { MessageIdSchema } from '../read/shared.js';

/** One uploaded attachment in tool output: where it is (the name and its Markdown link are in the text). */
export const UploadedOutputSchema = z.object({
  path: z.string().describe('Server-relative /user_uploads/... path'),
  url: z.string(),
  content_type: z.string(),
  size: z.number().int().describe('Bytes uploaded'),
});
/** One uploaded attachment in tool output. */
export type UploadedOutput = z.infer<typeof UploadedOutputSchema>;

/** Projects an upload onto {@link UploadedOutputSchema}, escaped for the model like every name. */
export function toUploadedOutput(u: UploadedAttachment): UploadedOutput {
  return { path: u.path, url: u.url, content_type: escapeMsgName(u.contentType), size: u.size };
}

/**
 * Core's topic rules (`checkTopicName`) as a refusal of the tool's own argument.
 * @throws ToolError `TOOLS_INVALID_INPUT` naming `field`.
 */
export function checkTopic(raw: string, field = 'topic'): string {
  return asToolInput(() => checkTopicName(decodePrintedName(raw.trim()), { field }));
}

/**
 * Refuses every write in read-only mode before anything is read or opened (the client's
 * transport refuses the request itself too).
 * @throws ZmcpError `CORE_READ_ONLY`.
 */
export function assertWritable(services: ToolServices): void {
  if (services.policy.readOnly) {
    throw new ZmcpError('CORE_READ_ONLY', 'Read-only mode refuses every write; nothing was changed.', {
      details: { reason: 'read-only' },
    });
  }
}

/** Call options carrying the tool's one shared deadline. */
export function callOf(signal: AbortSignal): CallOptions {
  return { signal };
}

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
function minimalLink(a: Attachment): { markdown: string } {
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
    if (links.length === 0 || !(err instanceof ZmcpError) || err.code !== 'CORE_MESSAGE_TOO_LONG') throw err;
    const length = Number(err.details?.length);
    const limit = services.maxMessageLength;
    throw new ZmcpError(
      'CORE_MESSAGE_TOO_LONG',
      `Message is ${estimated ? 'at least ' : ''}${length} characters long with the links to its ${links.length} attachment(s) (Unicode code points, after formatting fixes) but the realm accepts at most ${limit}; nothing was sent.${estimated ? ' Nothing was uploaded either.' : ' The uploaded files stay unreferenced and Zulip removes them later.'} Shorten the text, or attach fewer files.`,
      { cause: err, details: { length, limit, attachments: links.length } },
    );
  }
}

/** What {@link prepareBody} returns: the text to send before uploads, and its measures. */
export interface PreparedBody {
  /** Normalized body, without attachment links. */
  body: string;
  /** Whether normalization changed the text. */
  normalized: boolean;
}

/**
 * Normalizes the body and refuses an over-long message before any upload: the body plus the
 * shortest links its attachments can have must fit.
 * @throws ToolError `TOOLS_INVALID_INPUT` when there is neither content nor an attachment.
 * @throws ZmcpError `CORE_MESSAGE_TOO_LONG`.
 */
export function prepareBody(
  services: ToolServices,
  content: string | undefined,
  attachments: readonly Attachment[],
): PreparedBody {
  const raw = content ?? '';
  if (raw.trim() === '' && attachments.length === 0) {
    throw new ToolError(
      'TOOLS_INVALID_INPUT',
      'content is empty and there are no attachments; write a message, or attach a file.',
      { field: 'content' },
    );
  }
  const body = prepareMarkdown(services, raw);
  guardLength(services, body, attachments.map(minimalLink), true);
  return { body, normalized: body !== raw };
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

/** The write target of an existing message: its stream, or its DM participants other than the bot. */
export function writeTargetOf(
  services: ToolServices,
  message: Message,
): { stream: number | string } | { dm: number[] } {
  if (message.type === 'stream') return { stream: message.stream_id ?? String(message.display_recipient) };
  return { dm: dmOthers(message.display_recipient, services.identity.user_id) };
}

/** `#stream > topic` or `DM with ...`, for summaries; people named as message lines name them. */
export function whereOf(message: Message, people?: PersonNames): string {
  if (message.type === 'stream') return streamTopic(String(message.display_recipient), message.subject);
  const names = Array.isArray(message.display_recipient)
    ? message.display_recipient.map((r) => quotePerson(r.full_name, r.id, 'member', people)).join(', ')
    : '';
  return `DM with ${names}`;
}

/** `#stream > topic` with both names printed as message lines print them. */
export function streamTopic(stream: string, topic?: string): string {
  return topic === undefined ? streamLabel(stream) : `${streamLabel(stream)} > ${topicLabel(topic)}`;
}

/** A permalink, or null when the message lacks what one needs. */
export function permalinkOf(services: ToolServices, message: Message): string | null {
  try {
    return messagePermalink(services.site, message);
  } catch {
    return null;
  }
}

/** One message line, cut to the page budget. */
export async function lineOf(services: ToolServices, message: Message, call: CallOptions): Promise<string> {
  return fitToBudget(await services.lines([message], call), services.pageBudgetBytes).text;
}

/**
 * Reads a message the bot has just written, through the read gate. A write that went through
 * is never reported as failed because the read after it did not: the message as the tool
 * knows it is used instead.
 */
export async function readBack(
  services: ToolServices,
  fallback: Message,
  lookup: StreamInfoLookup,
  signal: AbortSignal,
): Promise<Message> {
  if (fallback.type === 'private' && !services.policy.canReadDms) return fallback;
  try {
    const message = await readMessage(services.client, services.policy, fallback.id, {
      streams: lookup,
      call: callOf(signal),
    });
    return message;
  } catch {
    return fallback;
  }
}

/** A stream message as the bot has just sent it, for when it cannot be read back. */
export function sentStreamMessage(
  services: ToolServices,
  id: number,
  stream: Pick<Stream, 'name' | 'stream_id'>,
  topic: string,
  content: string,
): Message {
  return {
    id,
    type: 'stream',
    sender_id: services.identity.user_id,
    sender_email: services.identity.email,
    sender_full_name: services.identity.full_name,
    display_recipient: stream.name,
    stream_id: stream.stream_id,
    subject: topic,
    content: content.trimEnd(),
    timestamp: Math.floor(services.now() / 1000),
  };
}

/** A direct message as the bot has just sent it. */
export function sentDirectMessage(
  services: ToolServices,
  id: number,
  recipients: readonly { user_id: number; email: string; full_name: string }[],
  content: string,
): Message {
  const me = services.identity;
  const people = new Map<number, { id: number; email: string; full_name: string }>();
  for (const r of [...recipients, me]) {
    people.set(r.user_id, { id: r.user_id, email: r.email, full_name: r.full_name });
  }
  return {
    id,
    type: 'private',
    sender_id: me.user_id,
    sender_email: me.email,
    sender_full_name: me.full_name,
    display_recipient: [...people.values()].sort((a, b) => a.id - b.id),
    subject: '',
    content: content.trimEnd(),
    timestamp: Math.floor(services.now() / 1000),
  };
}

/** Describes the attachments of a summary line: ` with 2 attachments`. */
export function attachmentsNote(n: number): string {
  return n === 0 ? '' : ` with ${n} attachment${n === 1 ? '' : 's'}`;
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

/** Where one message goes: a stream topic, or the people of a DM. */
export type Destination =
  | { readonly type: 'stream'; readonly stream: Pick<Stream, 'name' | 'stream_id'>; readonly topic: string }
  | {
      readonly type: 'direct';
      readonly users: readonly { user_id: number; email: string; full_name: string }[];
    };

/** A message that went out: its id, how it now reads, and what was uploaded with it. */
export interface Sent {
  readonly id: number;
  readonly message: Message;
  readonly permalink: string | null;
  /** Its message line, cut to the page budget. */
  readonly line: string;
  readonly uploaded: readonly UploadedAttachment[];
  /** Its length in code points, attachment links included. */
  readonly length: number;
}

/**
 * The one send pipeline of send_message, send_dm and reply, after the caller checked the target
 * and prepared the body ({@link prepareBody}): uploads the attachments one at a time, measures the
 * whole message against the realm's limit, posts it once (never retried here: the client does not
 * retry a send that may have arrived), and reads it back through the read gate. A failure whose
 * outcome is unknown comes back as a failure that says to look before sending again.
 * @throws the uploads' and the length guard's refusals, and definite refusals of the send.
 */
export async function sendPrepared(
  services: ToolServices,
  destination: Destination,
  prepared: PreparedBody,
  attachments: readonly Attachment[],
  signal: AbortSignal,
): Promise<Sent | ToolFailure> {
  const uploaded = await uploadAll(services, attachments, signal);
  const { content, length } = guardLength(services, prepared.body, uploaded, false);
  let id: number;
  try {
    // readBySender: the bot wrote it, so it is not unread for the bot.
    ({ id } = await services.client.sendMessage(
      destination.type === 'stream'
        ? {
            type: 'stream',
            to: destination.stream.stream_id,
            topic: destination.topic,
            content,
            readBySender: true,
          }
        : { type: 'direct', to: destination.users.map((u) => u.user_id), content, readBySender: true },
      callOf(signal),
    ));
  } catch (err) {
    return sendFailure(err);
  }
  const fallback =
    destination.type === 'stream'
      ? sentStreamMessage(services, id, destination.stream, destination.topic, content)
      : sentDirectMessage(services, id, destination.users, content);
  // A DM's read gate needs no stream facts.
  const lookup =
    destination.type === 'stream' ? await services.directory.streamLookup(callOf(signal)) : () => undefined;
  const message = await readBack(services, fallback, lookup, signal);
  return {
    id,
    message,
    permalink: permalinkOf(services, message),
    line: await lineOf(services, message, callOf(signal)),
    uploaded,
    length,
  };
}
