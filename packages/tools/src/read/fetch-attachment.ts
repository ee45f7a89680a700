import { escapeMsgName, escapeMsgText } from '@zmcp/core';
import { fetchAttachment } from '@zmcp/uploads';
import { z } from 'zod';
import { truncateToBytes } from '../page.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  CursorSchema,
  checkDeadline,
  itemBudget,
  mismatchedCursor,
  nextCursor,
  offsetFrom,
  queryOf,
  READ_ANNOTATIONS,
  readCursor,
} from './shared.js';

const NAME = 'fetch_attachment';
const encoder = new TextEncoder();

const InputSchema = z.object({
  path: z
    .string()
    .trim()
    .min(1)
    .max(2000)
    .describe(
      'The file: a /user_uploads/... path as it appears in a message (or its full URL on this realm). Files elsewhere are refused.',
    ),
  cursor: CursorSchema.describe(
    'next_cursor of a previous call with the same path: continues a text or binary file that did not fit one page.',
  ),
});

const OutputSchema = z.object({
  name: z.string().describe('File name'),
  kind: z.enum(['image', 'text', 'binary']).describe('How the file is returned'),
  mime_type: z.string(),
  size: z.number().int().describe('Size of the file on the realm, in bytes'),
  width: z.number().int().nullable().describe('Images: width as returned (downsampled when large)'),
  height: z.number().int().nullable().describe('Images: height as returned'),
  content: z
    .string()
    .nullable()
    .describe('Text files: this page of the text, with every "<" written as "&lt;"'),
  base64: z.string().nullable().describe('Binary files: this page of the bytes, base64-encoded'),
  offset: z.number().int().describe('Where this page starts: characters of text, or bytes of a binary file'),
  truncated: z.boolean().describe('More of the file remains beyond this page'),
  next_cursor: z
    .string()
    .nullable()
    .describe('Pass as cursor (with the same path) to read on; null at the end'),
});

function bytesOf(text: string): number {
  return encoder.encode(text).length;
}

function humanSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** The longest prefix of `text` whose escaped form fits `budget` bytes; returns both forms. */
function fitEscaped(text: string, budget: number): { raw: string; escaped: string } {
  let limit = budget;
  for (;;) {
    const raw = truncateToBytes(text, limit);
    const escaped = escapeMsgText(raw);
    const over = bytesOf(escaped) - budget;
    if (over <= 0 || raw === '') return { raw, escaped };
    limit = Math.max(0, limit - over);
  }
}

/** `fetch_attachment`: reads a file people posted on the realm. */
export const fetchAttachmentTool = defineTool({
  name: NAME,
  title: 'Fetch an attachment',
  description:
    'Read a file someone posted: pass the /user_uploads/... path from a message (or its full URL on this realm). Images come back as an image to look at (downsampled when large) with a line giving size and type; text files as text (every "<" shown as "&lt;"), a page at a time; other files as base64, a page at a time. When a file does not fit one page the first line says so and gives the cursor to pass back (with the same path) for the next page. Only this realm’s own uploads can be read, up to the server’s file size cap.',
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'files',
  async handler(services: ToolServices, input, context) {
    checkDeadline(context);
    const query = queryOf(input);
    const offset = offsetFrom(readCursor(NAME, query, input.cursor, ['offset']));
    const budget = itemBudget(services);
    const file = await fetchAttachment(services.client, services.site, input.path, {
      maxBytes: services.maxFileBytes,
      textMaxChars: offset + budget,
      signal: context.signal,
    });
    const name = escapeMsgName(file.name);

    if (file.kind === 'image') {
      if (offset > 0) throw mismatchedCursor(NAME);
      const sent = Buffer.byteLength(file.data, 'base64');
      const resized = sent !== file.originalBytes ? `; sent as ${humanSize(sent)}` : '';
      return {
        text: `Image ${name}: ${file.width}×${file.height} ${file.mimeType}, ${humanSize(file.originalBytes)} on the realm${resized}. The image follows.`,
        data: {
          name: file.name,
          kind: 'image' as const,
          mime_type: file.mimeType,
          size: file.originalBytes,
          width: file.width,
          height: file.height,
          content: null,
          base64: null,
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
      let head = `Text file ${name} (${file.mimeType}, ${humanSize(file.size)})`;
      head +=
        offset === 0 && !more
          ? ', complete:'
          : `, characters ${offset + 1}–${end}${more ? '' : ' (the end)'}:`;
      if (cursor !== null) head = `${head.slice(0, -1)}; more remains: call again with cursor "${cursor}".`;
      return {
        text: `${head}\n${escaped}`,
        data: {
          name: file.name,
          kind: 'text' as const,
          mime_type: file.mimeType,
          size: file.size,
          width: null,
          height: null,
          content: escaped,
          base64: null,
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
    let head = `Binary file ${name} (${file.mimeType}, ${humanSize(file.size)})`;
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
        name: file.name,
        kind: 'binary' as const,
        mime_type: file.mimeType,
        size: file.size,
        width: null,
        height: null,
        content: null,
        base64: data,
        offset,
        truncated: more,
        next_cursor: cursor,
      },
    };
  },
});
