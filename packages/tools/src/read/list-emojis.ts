import { escapeMsgName } from '@zmcp/core';
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
} from './shared.js';

const NAME = 'list_emojis';

const InputSchema = z.object({
  name_contains: z.string().trim().min(1).max(100).optional(),
  limit: limitSchema(500, 100),
  cursor: CursorSchema,
});

interface EmojiFields {
  id: string;
  name: string;
  author_id: number | null;
}

const OutputSchema = z.object({
  total: z.number().int(),
  ...OFFSET_PAGE_FIELDS,
});

type Emoji = EmojiFields;

/** `list_emojis`: the realm's active custom emoji. */
export const listEmojisTool = defineTool({
  name: NAME,
  title: 'List custom emoji',
  description:
    "List the realm's custom emoji as :name:. Unicode emoji work by their Zulip names (:tada:, :eyes:) and are not listed.",
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'browse',
  async handler(services: ToolServices, input, context) {
    checkDeadline(context);
    const call = callOptions(context);
    const query = queryOf(input);
    const offset = offsetFrom(readCursor(NAME, query, input.cursor, ['offset']));
    const needle = input.name_contains?.toLowerCase();
    const emojis: Emoji[] = (await services.client.getRealmEmoji(call))
      .filter((e) => !e.deactivated)
      .filter((e) => needle === undefined || e.name.toLowerCase().includes(needle))
      .map((e) => ({ id: e.id, name: e.name, author_id: e.author_id ?? null }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const page = pageItems(services, emojis, offset, input.limit, (e) => `:${escapeMsgName(e.name)}:`);
    const cursor = nextCursor(
      NAME,
      query,
      page.nextOffset === undefined ? undefined : { kind: 'offset', offset: page.nextOffset },
    );
    let summary = `${plural(emojis.length, 'custom emoji', 'custom emoji')} (${rangeOf(offset, page.items.length, emojis.length)}). Use them as :name:; Unicode emoji work by name too (:thumbs_up:, :tada:).`;
    summary += itemNotes(page, cursor, 'emoji');
    return {
      text: page.items.length === 0 ? summary : `${summary}\n${page.text}`,
      data: {
        total: emojis.length,
        offset,
        truncated: page.truncated,
        next_cursor: cursor,
      },
    };
  },
});
