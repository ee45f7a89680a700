import {
  type CallOptions,
  checkTopicName,
  decodePrintedName,
  dmOthers,
  escapeMsgName,
  type Message,
  messagePermalink,
  type PersonNames,
  quotePerson,
  readMessage,
  type Stream,
  type StreamInfoLookup,
  ZmcpError,
} from '@zmcp/core';
import type { UploadedAttachment } from '@zmcp/uploads';
import { z } from 'zod';
import { asToolInput } from '../errors.js';
import { fitToBudget } from '../page.js';
import { streamLabel, topicLabel } from '../read/shared.js';
import type { ToolServices } from '../services.js';
import type { ToolFailure } from '../tool.js';
import { type Posted, type PreparedPost, sendPost } from './post.js';

// Helpers shared by the write tools. Internal to the package: nothing here is exported from
// the package entry.

/** Upper bound of a content argument, before the realm's own limit is checked. */
const MAX_CONTENT_INPUT = 200_000;

/** A stream by name or id, as every write tool takes it. */
export { StreamRefSchema } from '../read/shared.js';

/** How a model attaches files to a message. */
export const ATTACHMENTS_HELP =
  'Up to 10 files, linked at the end: { file: "<root>/<path>" } (an upload root) or { data: "<base64>", name }';

/** How a model names one file to upload. */
export const ATTACHMENT_HELP =
  '{ file: "<root>/<path>" } under an upload root, or { data: "<base64>", name }';

/** A topic argument; {@link checkTopic} applies Zulip's rules on top. */
export const TopicArgSchema = z.string().max(2000);

/** A message body argument; the realm's limit is checked after normalization. */
export const ContentArgSchema = z.string().max(MAX_CONTENT_INPUT);

/** The `repeat` argument of every tool that posts: send-once's way to post the same text again on purpose. */
export const RepeatArgSchema = z
  .boolean()
  .optional()
  .describe('true: post it even if sent there minutes ago');

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

/** A message a send tool posted: what {@link sendPost} returns, with the first message read back. */
export interface Sent extends Posted {
  /** The first message's id. */
  readonly id: number;
  /** The first message as it now reads (as sent, when it cannot be read back). */
  readonly message: Message;
  /** Its message line, cut to the page budget. */
  readonly line: string;
}

/**
 * The send of send_message, send_dm and reply: {@link sendPost}, then the message read back
 * through the read gate for its line. `people` are the DM's recipients as the tool resolved them,
 * for the message as sent when it cannot be read back.
 */
export async function sendAndShow(
  services: ToolServices,
  prepared: PreparedPost,
  signal: AbortSignal,
  people: readonly { user_id: number; email: string; full_name: string }[] = [],
): Promise<Sent | ToolFailure> {
  const posted = await sendPost(services, prepared, signal);
  if ('isError' in posted) return posted;
  const id = posted.ids[0] as number;
  const content = posted.contents[0] as string;
  const { to } = prepared;
  const fallback =
    to.kind === 'stream'
      ? sentStreamMessage(
          services,
          id,
          { name: prepared.streamName ?? String(to.streamId), stream_id: to.streamId },
          to.topic,
          content,
        )
      : sentDirectMessage(services, id, people, content);
  // A DM's read gate needs no stream facts.
  const lookup =
    to.kind === 'stream' ? await services.directory.streamLookup(callOf(signal)) : () => undefined;
  const message = await readBack(services, fallback, lookup, signal);
  return { ...posted, id, message, line: await lineOf(services, message, callOf(signal)) };
}
