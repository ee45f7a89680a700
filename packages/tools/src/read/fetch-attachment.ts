import {
  type CallOptions,
  errorCode,
  escapeIndented,
  escapeMsgName,
  isNoBotsMessage,
  type NarrowTerm,
  readNarrow,
} from '@zmcp/core';
import { fetchAttachment, parseUploadPath } from '@zmcp/uploads';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { jsonBytes, truncateToBytes } from '../page.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { readVisibleMessage } from './message-access.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  itemBudget,
  MessageIdSchema,
  mismatchedCursor,
  nextCursor,
  offsetFrom,
  queryOf,
  READ_ANNOTATIONS,
  readCursor,
} from './shared.js';

const NAME = 'fetch_attachment';

const InputSchema = z.object({
  path: z.string().trim().min(1).max(2000).describe('The /user_uploads/... path or its URL on this realm'),
  message_id: MessageIdSchema.optional().describe('The message that links the file'),
  cursor: CursorSchema,
});

const OutputSchema = z.object({
  kind: z.enum(['image', 'text', 'binary']),
  mime_type: z.string(),
  size: z.number().int(),
  width: z.number().int().nullable(),
  height: z.number().int().nullable(),
  offset: z.number().int().describe('Characters of text, or bytes, before this page'),
  truncated: z.boolean(),
  next_cursor: z.string().nullable(),
});

/** Messages searched for one that links the file, when no message id is given. */
const LINK_SEARCH_LIMIT = 100;

/**
 * The access policy holds for files too: a file is returned only when a message this session may
 * read links it — the message named by id, or one found by searching for the file's name — so a
 * file posted only in a closed stream or a DM stays closed even to someone who knows its path.
 * @throws ToolError `TOOLS_NOT_FOUND` when no readable message links it (the same answer whatever
 *   the reason, so a refusal tells nothing of where the file is).
 */
async function checkLinked(
  services: ToolServices,
  path: string,
  messageId: number | undefined,
  call: CallOptions,
): Promise<void> {
  const links = (content: string) => content.includes(path);
  const notLinked = () =>
    new ToolError(
      'TOOLS_NOT_FOUND',
      messageId === undefined
        ? 'No message this session may read links this file. Pass message_id: the id of a message (in a conversation this server reads) that links it.'
        : `Message ${messageId} is not available to this bot, or does not link this file.`,
    );
  if (messageId !== undefined) {
    let message: Awaited<ReturnType<typeof readVisibleMessage>>;
    try {
      message = await readVisibleMessage(services, messageId, call);
    } catch (err) {
      if (errorCode(err) === 'TOOLS_NOT_FOUND') throw notLinked();
      throw err;
    }
    if (!links(message.content)) throw notLinked();
    return;
  }
  const segments = path.split('/');
  let name = segments[segments.length - 1] ?? '';
  try {
    name = decodeURIComponent(name);
  } catch {
    // A name that does not decode is searched as written.
  }
  const lookup = await services.directory.streamLookup(call);
  const search = async (scope: NarrowTerm[]) =>
    (
      await readNarrow(services.client, services.policy, {
        narrow: [
          ...scope,
          { operator: 'search', operand: name.slice(0, 200) },
          { operator: 'has', operand: 'attachment' },
        ],
        range: { kind: 'newest', limit: LINK_SEARCH_LIMIT },
        streams: lookup,
        unscoped: 'public-streams',
        call,
      })
    ).messages.some((m) => !isNoBotsMessage(m) && links(m.content));
  // Everything readable when the policy reads everything; else the public streams, then each
  // private stream this session may read (an unscoped search leaves those out).
  if (await search([])) return;
  if (services.policy.canReadDms) throw notLinked();
  const subscribed = await services.directory.subscriptions(call);
  for (const s of subscribed) {
    if (!s.invite_only || !services.policy.canReadStream(s.stream_id, lookup)) continue;
    if (await search([{ operator: 'channel', operand: s.stream_id }])) return;
  }
  throw notLinked();
}

function humanSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** What the model reads of a text file: escaped, every line indented, so none starts at the margin. */
function shownText(raw: string): string {
  return `  ${escapeIndented(raw)}`;
}

/** The longest prefix of `text` whose shown form fits `budget` bytes (as JSON too); returns both forms. */
function fitEscaped(text: string, budget: number): { raw: string; escaped: string } {
  let limit = budget;
  for (;;) {
    const raw = truncateToBytes(text, limit);
    const escaped = shownText(raw);
    const over = jsonBytes(escaped) - budget;
    if (over <= 0 || raw === '') return { raw, escaped };
    limit = Math.max(0, limit - over);
  }
}

/** `fetch_attachment`: reads a file people posted on the realm. */
export const fetchAttachmentTool = defineTool({
  name: NAME,
  title: 'Fetch an attachment',
  description:
    'Open a file attached to a message you may read (its /user_uploads/ path, and the message id if you have it): an image to look at, text as text, others as base64, a page at a time.',
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'read',
  async handler(services: ToolServices, input, context) {
    checkDeadline(context);
    const query = queryOf(input);
    const offset = offsetFrom(readCursor(NAME, query, input.cursor, ['offset']));
    const budget = itemBudget(services);
    await checkLinked(
      services,
      parseUploadPath(input.path, services.site),
      input.message_id,
      callOptions(context),
    );
    const file = await fetchAttachment(services.client, services.site, input.path, {
      maxBytes: services.maxFileBytes,
      textMaxChars: offset + budget,
      signal: context.signal,
    });
    const name = escapeMsgName(file.name);
    const mimeType = escapeMsgName(file.mimeType);

    if (file.kind === 'image') {
      if (offset > 0) throw mismatchedCursor(NAME);
      const sent = Buffer.byteLength(file.data, 'base64');
      const resized = sent !== file.originalBytes ? `; sent as ${humanSize(sent)}` : '';
      return {
        text: `Image ${name}: ${file.width}×${file.height} ${mimeType}, ${humanSize(file.originalBytes)} on the realm${resized}. The image follows.`,
        data: {
          kind: 'image' as const,
          mime_type: mimeType,
          size: file.originalBytes,
          width: file.width,
          height: file.height,
          offset: 0,
          truncated: false,
          next_cursor: null,
        },
        images: [{ data: file.data, mimeType: file.mimeType }],
      };
    }

    if (file.kind === 'text') {
      const rest = file.text.slice(offset);
      const { raw, escaped } = fitEscaped(rest, budget);
      const end = offset + raw.length;
      const more = end < file.text.length || file.truncated;
      const cursor = nextCursor(NAME, query, more ? { kind: 'offset', offset: end } : undefined);
      let head = `Text file ${name} (${mimeType}, ${humanSize(file.size)})`;
      head +=
        offset === 0 && !more
          ? ', complete:'
          : `, characters ${offset + 1}–${end}${more ? '' : ' (the end)'}:`;
      if (cursor !== null) head = `${head.slice(0, -1)}; more remains: call again with cursor "${cursor}".`;
      return {
        text: `${head}\n${escaped}`,
        data: {
          kind: 'text' as const,
          mime_type: mimeType,
          size: file.size,
          width: null,
          height: null,
          offset,
          truncated: more,
          next_cursor: cursor,
        },
      };
    }

    const bytes = Buffer.from(file.data, 'base64');
    const chunk = Math.max(3, Math.floor(budget / 4) * 3);
    const end = Math.min(bytes.length, offset + chunk);
    const data = offset < bytes.length ? bytes.subarray(offset, end).toString('base64') : '';
    const more = end < bytes.length;
    const cursor = nextCursor(NAME, query, more ? { kind: 'offset', offset: end } : undefined);
    let head = `Binary file ${name} (${mimeType}, ${humanSize(file.size)})`;
    if (offset === 0 && !more) head += ', as base64:';
    else {
      head += `: bytes ${offset}–${end} of ${file.size} as base64`;
      head +=
        cursor === null
          ? ' (the end):'
          : `; too large to inline in one page (about ${Math.ceil(bytes.length / chunk)} pages): call again with cursor "${cursor}" for the next bytes.`;
    }
    return {
      text: `${head}\n${data}`,
      data: {
        kind: 'binary' as const,
        mime_type: mimeType,
        size: file.size,
        width: null,
        height: null,
        offset,
        truncated: more,
        next_cursor: cursor,
      },
    };
  },
});
