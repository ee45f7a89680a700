import type { User } from '@zmcp/core';
import { z } from 'zod';
import { defineListTool } from './list-tool.js';
import {
  byFullName,
  checkStreamReadable,
  plural,
  resolveStream,
  StreamRefSchema,
  streamLabel,
  userLine,
} from './shared.js';

type Member = Pick<User, 'user_id' | 'full_name' | 'email' | 'is_bot' | 'is_active'>;

/** `list_stream_members`: who is subscribed to a stream the bot may read. */
export const listStreamMembersTool = defineListTool({
  name: 'list_stream_members',
  title: 'List stream members',
  description: 'List who is subscribed to a stream you may read: "Name (email, id N)" by name.',
  toolset: 'browse',
  query: { stream: StreamRefSchema, include_bots: z.boolean().default(true) },
  limit: { max: 500, fallback: 100 },
  output: {
    stream_id: z.number().int(),
    user_ids: z.array(z.number().int()).describe('The members listed, by name'),
  },
  noun: 'members',
  async list(services, input, call) {
    const stream = await resolveStream(services, input.stream, call);
    await checkStreamReadable(services, stream, call);
    const [subscribers, users] = await Promise.all([
      services.client.getStreamMembers(stream.stream_id, call),
      services.directory.users(call),
    ]);
    const byId = new Map<number, User>(users.map((u) => [u.user_id, u]));
    const items: Member[] = [];
    for (const id of subscribers) {
      const user = byId.get(id);
      const member: Member = {
        user_id: id,
        full_name: user?.full_name ?? `user ${id}`,
        email: user?.email ?? '',
        is_bot: user?.is_bot === true,
        is_active: user?.is_active !== false,
      };
      if (input.include_bots || !member.is_bot) items.push(member);
    }
    items.sort(byFullName);
    return { items, stream };
  },
  line: userLine,
  summary: ({ items, stream }, range) =>
    `${plural(items.length, 'member')} of ${streamLabel(stream.name)} (${range}).`,
  data: ({ stream }, shown) => ({ stream_id: stream.stream_id, user_ids: shown.map((m) => m.user_id) }),
});
