import { escapeMsgName, type User } from '@zmcp/core';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import {
  CursorSchema,
  callOptions,
  checkDeadline,
  checkStreamReadable,
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
  resolveStream,
  StreamRefSchema,
  userLine,
} from './shared.js';

const NAME = 'list_stream_members';

const InputSchema = z.object({
  stream: StreamRefSchema.describe('Stream name (or id).'),
  include_bots: z.boolean().default(true).describe('Include bot accounts (marked [bot]); default true.'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(500)
    .default(100)
    .describe('Most members per page (1-500, default 100).'),
  cursor: CursorSchema,
});

const MemberSchema = z.object({
  user_id: z.number().int(),
  full_name: z.string(),
  email: z.string(),
  is_bot: z.boolean(),
  is_active: z.boolean(),
});

const OutputSchema = z.object({
  stream: z.string(),
  stream_id: z.number().int(),
  members: z.array(MemberSchema).describe('Sorted by name'),
  total: z.number().int().describe('Members listed across all pages'),
  ...OFFSET_PAGE_FIELDS,
});

type Member = z.infer<typeof MemberSchema>;

/** `list_stream_members`: who is subscribed to a stream the bot may read. */
export const listStreamMembersTool = defineTool({
  name: NAME,
  title: 'List stream members',
  description:
    'List the people subscribed to a stream, sorted by name, one line each: "Name <email> (id N)" with [bot] and [deactivated] markers. Private streams this server is configured not to read are refused. Pages of `limit`; the first line gives the cursor for the next page.',
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
    let summary = `${plural(members.length, 'member')} of #${escapeMsgName(stream.name)} (${rangeOf(offset, page.items.length, members.length)}).`;
    summary += itemNotes(page, cursor, 'members');
    return {
      text: page.items.length === 0 ? summary : `${summary}\n${page.text}`,
      data: {
        stream: stream.name,
        stream_id: stream.stream_id,
        members: page.items,
        total: members.length,
        offset,
        truncated: page.truncated,
        next_cursor: cursor,
      },
    };
  },
});
