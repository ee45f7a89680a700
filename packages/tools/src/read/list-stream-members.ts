import type { User } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  checkStreamReadable,
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
  resolveStream,
  StreamRefSchema,
  streamLabel,
  userLine,
} from './shared.js';

const NAME = 'list_stream_members';

const InputSchema = z.object({
  stream: StreamRefSchema,
  include_bots: z.boolean().default(true),
  limit: limitSchema(500, 100),
  cursor: CursorSchema,
});

interface MemberFields {
  user_id: number;
  full_name: string;
  email: string;
  is_bot: boolean;
  is_active: boolean;
}

const OutputSchema = z.object({
  stream_id: z.number().int(),
  user_ids: z.array(z.number().int()).describe('The members listed, by name'),
  total: z.number().int(),
  ...OFFSET_PAGE_FIELDS,
});

type Member = MemberFields;

/** `list_stream_members`: who is subscribed to a stream the bot may read. */
export const listStreamMembersTool = defineTool({
  name: NAME,
  title: 'List stream members',
  description: 'List who is subscribed to a stream you may read: "Name <email> (id N)" by name.',
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
    const stream = await resolveStream(services, input.stream, call);
    await checkStreamReadable(services, stream, call);
    const [subscribers, users] = await Promise.all([
      services.client.getStreamMembers(stream.stream_id, call),
      services.directory.users(call),
    ]);
    const byId = new Map<number, User>(users.map((u) => [u.user_id, u]));
    const members: Member[] = [];
    for (const id of subscribers) {
      const user = byId.get(id);
      const member: Member =
        user === undefined
          ? { user_id: id, full_name: `user ${id}`, email: '', is_bot: false, is_active: true }
          : {
              user_id: id,
              full_name: user.full_name,
              email: user.email,
              is_bot: user.is_bot === true,
              is_active: user.is_active !== false,
            };
      if (!input.include_bots && member.is_bot) continue;
      members.push(member);
    }
    members.sort(
      (a, b) =>
        a.full_name.localeCompare(b.full_name, 'en', { sensitivity: 'base' }) || a.user_id - b.user_id,
    );
    const page = pageItems(services, members, offset, input.limit, userLine);
    const cursor = nextCursor(
      NAME,
      query,
      page.nextOffset === undefined ? undefined : { kind: 'offset', offset: page.nextOffset },
    );
    let summary = `${plural(members.length, 'member')} of ${streamLabel(stream.name)} (${rangeOf(offset, page.items.length, members.length)}).`;
    summary += itemNotes(page, cursor, 'members');
    return {
      text: page.items.length === 0 ? summary : `${summary}\n${page.text}`,
      data: {
        stream_id: stream.stream_id,
        user_ids: page.items.map((m) => m.user_id),
        total: members.length,
        offset,
        truncated: page.truncated,
        next_cursor: cursor,
      },
    };
  },
});
