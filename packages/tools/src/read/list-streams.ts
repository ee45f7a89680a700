import { quoteName, type Stream } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  itemNotes,
  limitSchema,
  nextCursor,
  OFFSET_PAGE_FIELDS,
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
  name_contains: z.string().trim().min(1).max(100).optional().describe('Only names containing this'),
  subscribed_only: z.boolean().default(false),
  limit: limitSchema(200, 50),
  cursor: CursorSchema,
});

interface StreamItemFields {
  id: number;
  name: string;
  private: boolean;
  subscribed: boolean;
  description: string;
  archived: boolean;
}

const OutputSchema = z.object({
  ids: z.array(z.number().int()).describe('The streams listed, in order'),
  total: z.number().int(),
  hidden_private: z.number().int().describe('Private streams this server may not read, left out'),
  ...OFFSET_PAGE_FIELDS,
});

type StreamItem = StreamItemFields;

function streamLine(s: StreamItem): string {
  const marks = [s.private ? 'private' : 'public'];
  if (s.subscribed) marks.push('subscribed');
  if (s.archived) marks.push('archived');
  const description = s.description === '' ? '' : ` — ${s.description}`;
  return `#${quoteName(s.name, 'person')} (id ${s.id}; ${marks.join(', ')})${description}`;
}

/** `list_streams`: the streams the bot can see and may read. */
export const listStreamsTool = defineTool({
  name: NAME,
  title: 'List streams',
  description:
    'List the streams you may read, by name: "#name (id N; public|private, subscribed) — description". Private streams this server may not read are only counted.',
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
        ids: page.items.map((i) => i.id),
        total: items.length,
        hidden_private: hiddenPrivate,
        offset,
        truncated: page.truncated,
        next_cursor: cursor,
      },
    };
  },
});
