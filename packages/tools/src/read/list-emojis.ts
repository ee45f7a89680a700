import { escapeMsgName } from '@zmcp/core';
import { z } from 'zod';
import { defineListTool } from './list-tool.js';
import { plural } from './shared.js';

interface Emoji {
  id: string;
  name: string;
  author_id: number | null;
}

/** `list_emojis`: the realm's active custom emoji. */
export const listEmojisTool = defineListTool({
  name: 'list_emojis',
  title: 'List custom emoji',
  description:
    "List the realm's custom emoji as :name:. Unicode emoji work by their Zulip names (:tada:, :eyes:) and are not listed.",
  toolset: 'browse',
  query: { name_contains: z.string().trim().min(1).max(100).optional() },
  limit: { max: 500, fallback: 100 },
  output: {},
  noun: 'emoji',
  async list(services, input, call) {
    const needle = input.name_contains?.toLowerCase();
    const items: Emoji[] = (await services.client.getRealmEmoji(call))
      .filter((e) => !e.deactivated)
      .filter((e) => needle === undefined || e.name.toLowerCase().includes(needle))
      .map((e) => ({ id: e.id, name: e.name, author_id: e.author_id ?? null }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { items };
  },
  line: (e) => `:${escapeMsgName(e.name)}:`,
  summary: ({ items }, range) =>
    `${plural(items.length, 'custom emoji', 'custom emoji')} (${range}). Use them as :name:; Unicode emoji work by name too (:thumbs_up:, :tada:).`,
  data: () => ({}),
});
