import { escapeMsgName, type Stream } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  itemNotes,
  nextCursor,
  offsetFrom,
  pageItems,
  plural,
  queryOf,
  READ_ANNOTATIONS,
  rangeOf,
  readCursor,
  shortText,
} from './shared.js';

const NAME = 'list_streams';
const DESCRIPTION_CHARS = 100;

const InputSchema = z.object({
  name_contains: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .optional()
    .describe('Only streams whose name contains this text (case-insensitive).'),
  subscribed_only: z.boolean().default(false).describe('Only streams this bot is subscribed to.'),
  limit: z.number().int().min(1).max(200).default(50).describe('Most streams per page (1-200, default 50).'),
  cursor: CursorSchema,
});

const StreamItemSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  private: z.boolean(),
  subscribed: z.boolean().describe('This bot is subscribed (it receives the stream live)'),
  description: z.string().describe(`Shortened to ${DESCRIPTION_CHARS} characters`),
  archived: z.boolean(),
});

const OutputSchema = z.object({
  streams: z.array(StreamItemSchema).describe('Sorted by name'),
  total: z.number().int().describe('Streams matching, across all pages'),
  offset: z.number().int().describe('Index of the first stream of this page'),
  hidden_private: z
    .number()
    .int()
    .describe('Private streams the bot can see but this server is configured not to read; left out'),
  truncated: z.boolean().describe('The page byte budget cut the list'),
  next_cursor: z
    .string()
    .nullable()
    .describe('Pass as cursor (with the same arguments) to continue; null at the end'),
});

type StreamItem = z.infer<typeof StreamItemSchema>;

function streamLine(s: StreamItem): string {
  const marks = [s.private ? 'private' : 'public'];
  if (s.subscribed) marks.push('subscribed');
  if (s.archived) marks.push('archived');
  const description = s.description === '' ? '' : ` — ${s.description}`;
  return `#${escapeMsgName(s.name)} (id ${s.id}; ${marks.join(', ')})${description}`;
}

/** `list_streams`: the streams the bot can see and may read. */
export const listStreamsTool = defineTool({
  name: NAME,
  title: 'List streams',
  description:
    'List the streams (channels) this bot can see and is allowed to read, sorted by name, one line each: "#name (id N; public|private, subscribed) — description". Subscribed means the bot receives the stream live. Private streams this server is configured not to read are left out and only counted. Use the names with fetch_history, get_channel_history, get_stream_topics and search_messages. Pages of `limit`; the first line gives the cursor for the next page.',
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'read',
  async handler(services: ToolServices, input, context) {
    checkDeadline(context);
    const call = callOptions(context);
    const query = queryOf(input);
    const offset = offsetFrom(readCursor(NAME, query, input.cursor, ['offset']));
    const [streams, subscriptions, lookup] = await Promise.all([
      services.directory.streams(call),
      services.directory.subscriptions(call),
      services.directory.streamLookup(call),
    ]);
    const subscribed = new Set(subscriptions.map((s) => s.stream_id));
    const all = new Map<number, Stream>();
    for (const s of [...streams, ...subscriptions]) if (!all.has(s.stream_id)) all.set(s.stream_id, s);
    const needle = input.name_contains?.toLowerCase();
    let hiddenPrivate = 0;
    const items: StreamItem[] = [];
    for (const s of all.values()) {
      if (needle !== undefined && !s.name.toLowerCase().includes(needle)) continue;
      if (input.subscribed_only && !subscribed.has(s.stream_id)) continue;
      if (!services.policy.canReadStream(s.stream_id, lookup)) {
        hiddenPrivate++;
        continue;
      }
      items.push({
        id: s.stream_id,
        name: s.name,
        private: s.invite_only,
        subscribed: subscribed.has(s.stream_id),
        description: shortText(s.description ?? '', DESCRIPTION_CHARS),
        archived: s.is_archived === true,
      });
    }
    items.sort((a, b) => a.name.localeCompare(b.name, 'en', { sensitivity: 'base' }) || a.id - b.id);
    const page = pageItems(services, items, offset, input.limit, streamLine);
    const cursor = nextCursor(
      NAME,
      query,
      page.nextOffset === undefined ? undefined : { kind: 'offset', offset: page.nextOffset },
    );
    let summary = `${plural(items.length, 'stream')} this bot may read (${rangeOf(offset, page.items.length, items.length)})`;
    summary +=
      hiddenPrivate > 0
        ? `; ${plural(hiddenPrivate, 'private stream')} hidden: this server is configured not to read ${hiddenPrivate === 1 ? 'it' : 'them'}.`
        : '.';
    summary += itemNotes(page, cursor, 'streams');
    return {
      text: page.items.length === 0 ? summary : `${summary}\n${page.text}`,
      data: {
        streams: page.items,
        total: items.length,
        offset,
        hidden_private: hiddenPrivate,
        truncated: page.truncated,
        next_cursor: cursor,
      },
    };
  },
});
