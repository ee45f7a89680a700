import {
  type CallOptions,
  escapeMsgName,
  formatTimestamp,
  isNoBotsMessage,
  type Message,
  readMessages,
  type ZulipAttachment,
} from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineListTool } from './list-tool.js';
import { conversationOf } from './message-access.js';
import { plural } from './shared.js';

/** Messages named per file; the rest are counted. */
const MAX_LINKS_SHOWN = 10;

interface Listed {
  id: number;
  name: string;
  path: string;
  size: number;
  uploaded: string;
  /** The messages linking the file that this session may read, by ascending id. */
  linked: { id: number; where: string }[];
  /** Messages linking it that this session may not read (or that opted out of bots). */
  withheld: number;
}

/** The files listed, and how many were left out because only closed conversations link them. */
interface AttachmentListing {
  items: Listed[];
  closed: number;
}

/** Reads every message that links one of the files, once, through the read gate. */
async function linkingMessages(
  services: ToolServices,
  files: readonly ZulipAttachment[],
  call: CallOptions,
): Promise<Map<number, Message>> {
  const ids = files.flatMap((f) => f.message_ids);
  const { messages } = await readMessages(services.client, services.policy, ids, {
    streams: await services.directory.streamLookup(call),
    call,
  });
  return new Map(messages.filter((m) => !isNoBotsMessage(m)).map((m) => [m.id, m]));
}

/**
 * `list_attachments`: the files the bot uploaded, each with the messages that link it. A file
 * linked only from messages this session may not read is counted, not named: its name and path
 * belong to those conversations.
 */
export const listAttachmentsTool = defineListTool({
  name: 'list_attachments',
  title: 'List my uploaded files',
  description:
    'List the files you uploaded, newest first, each with the messages that link it (fetch_around shows one in context, fetch_attachment reads the file).',
  toolset: 'files',
  query: {},
  limit: { max: 200, fallback: 50 },
  output: {
    closed_files: z.number().int().describe('Files linked only from conversations you may not read'),
    attachments: z.array(
      z.object({
        id: z.number().int(),
        path: z.string().describe('/user_uploads/... path'),
        size: z.number().int(),
        message_ids: z.array(z.number().int()).describe('Messages linking it that you may read'),
        withheld: z.number().int().describe('Messages linking it that you may not read'),
      }),
    ),
  },
  noun: 'files',
  async list(services, _input, call): Promise<AttachmentListing> {
    const files = await services.client.getAttachments(call);
    const readable = await linkingMessages(services, files, call);
    const items: Listed[] = [];
    let closed = 0;
    for (const f of [...files].sort((a, b) => b.id - a.id)) {
      const linked = f.message_ids
        .map((id) => readable.get(id))
        .filter((m): m is Message => m !== undefined)
        .map((m) => ({ id: m.id, where: conversationOf(services, m).label }));
      if (linked.length === 0 && f.message_ids.length > 0) {
        closed++;
        continue;
      }
      items.push({
        id: f.id,
        name: escapeMsgName(f.name),
        path: escapeMsgName(`/user_uploads/${f.path_id}`),
        size: f.size,
        uploaded: formatTimestamp(f.create_time, { timeZone: services.timeZone }),
        linked,
        withheld: f.message_ids.length - linked.length,
      });
    }
    return { items, closed };
  },
  line(f) {
    const shown = f.linked.slice(0, MAX_LINKS_SHOWN).map((l) => `${l.id} (${l.where})`);
    const more = f.linked.length - shown.length;
    let links = shown.length === 0 ? 'linked from no message' : `linked from ${shown.join(', ')}`;
    if (more > 0) links += ` and ${more} more`;
    if (f.withheld > 0) links += `; ${plural(f.withheld, 'message')} you may not read`;
    return `${f.name} (${plural(f.size, 'byte')}, ${f.path}, uploaded ${f.uploaded}): ${links}`;
  },
  summary: ({ items, closed }, range) => {
    const left =
      closed === 0 ? '' : ` ${plural(closed, 'more file')} only in conversations you may not read.`;
    return items.length === 0
      ? `No files you uploaded to show.${left}`
      : `${plural(items.length, 'file')} you uploaded (${range}).${left}`;
  },
  data: ({ closed }, shown) => ({
    closed_files: closed,
    attachments: shown.map((f) => ({
      id: f.id,
      path: f.path,
      size: f.size,
      message_ids: f.linked.map((l) => l.id),
      withheld: f.withheld,
    })),
  }),
});
