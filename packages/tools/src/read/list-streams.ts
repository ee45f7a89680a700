import { quoteName, type Stream } from '@zmcp/core';
import { z } from 'zod';
import { defineListTool } from './list-tool.js';
import { plural, shortText } from './shared.js';

const DESCRIPTION_CHARS = 100;

interface StreamItem {
  id: number;
  name: string;
  private: boolean;
  subscribed: boolean;
  description: string;
  archived: boolean;
}

function streamLine(s: StreamItem): string {
  const marks = [s.private ? 'private' : 'public'];
  if (s.subscribed) marks.push('subscribed');
  if (s.archived) marks.push('archived');
  const description = s.description === '' ? '' : ` — ${s.description}`;
  return `#${quoteName(s.name, 'person')} (id ${s.id}; ${marks.join(', ')})${description}`;
}

/** `list_streams`: the streams the bot can see and may read. */
export const listStreamsTool = defineListTool({
  name: 'list_streams',
  title: 'List streams',
  description:
    'List the streams you may read, by name: "#name (id N; public|private, subscribed) — description". Private streams this server may not read are only counted.',
  toolset: 'read',
  query: {
    name_contains: z.string().trim().min(1).max(100).optional().describe('Only names containing this'),
    subscribed_only: z.boolean().default(false),
  },
  limit: { max: 200, fallback: 50 },
  output: {
    ids: z.array(z.number().int()).describe('The streams listed, in order'),
    hidden_private: z.number().int().describe('Private streams this server may not read, left out'),
  },
  noun: 'streams',
  async list(services, input, call) {
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
    return { items, hiddenPrivate };
  },
  line: streamLine,
  summary: ({ items, hiddenPrivate }, range) =>
    `${plural(items.length, 'stream')} this bot may read (${range})` +
    (hiddenPrivate > 0
      ? `; ${plural(hiddenPrivate, 'private stream')} hidden: this server is configured not to read ${hiddenPrivate === 1 ? 'it' : 'them'}.`
      : '.'),
  data: ({ hiddenPrivate }, shown) => ({ ids: shown.map((i) => i.id), hidden_private: hiddenPrivate }),
});
