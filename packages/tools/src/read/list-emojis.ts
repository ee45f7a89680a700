import { escapeMsgName } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  itemNotes,
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
  name_contains: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .optional()
    .describe('Only emoji whose name contains this text.'),
  limit: z.number().int().min(1).max(500).default(100).describe('Most emoji per page (1-500, default 100).'),
  cursor: CursorSchema,
});

const EmojiSchema = z.object({
  id: z.string(),
  name: z.string().describe('Use as :name: in a message, or as the emoji name of a reaction'),
  author_id: z.number().int().nullable(),
});

const OutputSchema = z.object({
  emojis: z.array(EmojiSchema).describe('Sorted by name'),
  total: z.number().int().describe('Active custom emoji matching, across all pages'),
  ...OFFSET_PAGE_FIELDS,
});

type Emoji = z.infer<typeof EmojiSchema>;

/** `list_emojis`: the realm's active custom emoji. */
export const listEmojisTool = defineTool({
  name: NAME,
  title: 'List custom emoji',
  description:
    'List the realm’s own custom emoji (deactivated ones left out), sorted by name, one line each as ":name:". Write one as :name: in a message or pass its name to add_reaction. Standard Unicode emoji are not listed but work the same way by their Zulip names (:thumbs_up:, :tada:, :eyes:). Pages of `limit`; the first line gives the cursor for the next page.',
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'people',
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
        emojis: page.items,
        total: emojis.length,
        offset,
        truncated: page.truncated,
        next_cursor: cursor,
      },
    };
  },
});
