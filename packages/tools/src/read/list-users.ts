import type { User } from '@zmcp/core';
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
  roleName,
  userLine,
} from './shared.js';

const NAME = 'list_users';

const InputSchema = z.object({
  include_bots: z.boolean().default(false).describe('Include bot accounts (marked [bot]); default false.'),
  include_deactivated: z
    .boolean()
    .default(false)
    .describe('Include deactivated accounts (marked [deactivated]); default false.'),
  limit: z.number().int().min(1).max(500).default(100).describe('Most users per page (1-500, default 100).'),
  cursor: CursorSchema,
});

/** A user in list output. */
export const UserItemSchema = z.object({
  user_id: z.number().int(),
  full_name: z.string(),
  email: z.string(),
  role: z.enum(['owner', 'admin', 'moderator', 'member', 'guest']),
  is_bot: z.boolean(),
  is_active: z.boolean(),
});

/** A user in list output. */
export type UserItem = z.infer<typeof UserItemSchema>;

/** Projects a realm user onto {@link UserItemSchema}. */
export function toUserItem(user: User): UserItem {
  return {
    user_id: user.user_id,
    full_name: user.full_name,
    email: user.email,
    role: roleName(user.role, user) as UserItem['role'],
    is_bot: user.is_bot === true,
    is_active: user.is_active !== false,
  };
}

/** One line per user: the directory line plus a role other than member. */
export function userItemLine(user: User): string {
  const role = roleName(user.role, user);
  return role === 'member' ? userLine(user) : `${userLine(user)} [${role}]`;
}

const OutputSchema = z.object({
  users: z.array(UserItemSchema).describe('Sorted by name'),
  total: z.number().int().describe('Users matching, across all pages'),
  ...OFFSET_PAGE_FIELDS,
});

/** `list_users`: the realm's people (and optionally bots and deactivated accounts). */
export const listUsersTool = defineTool({
  name: NAME,
  title: 'List users',
  description:
    'List the people of the realm, sorted by name, one line each: "Name <email> (id N)" with [bot], [deactivated] and role (owner, admin, moderator, guest) markers. Active humans by default; include_bots and include_deactivated widen it. To look someone up by name use find_user; for details get_user_profile. Pages of `limit`; the first line gives the cursor for the next page.',
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
    const users = (await services.directory.users(call))
      .filter((u) => input.include_bots || u.is_bot !== true)
      .filter((u) => input.include_deactivated || u.is_active !== false)
      .sort(
        (a, b) =>
          a.full_name.localeCompare(b.full_name, 'en', { sensitivity: 'base' }) || a.user_id - b.user_id,
      );
    const page = pageItems(services, users, offset, input.limit, userItemLine);
    const cursor = nextCursor(
      NAME,
      query,
      page.nextOffset === undefined ? undefined : { kind: 'offset', offset: page.nextOffset },
    );
    const kinds = [
      'active humans',
      input.include_bots ? 'bots' : undefined,
      input.include_deactivated ? 'deactivated accounts' : undefined,
    ].filter((k) => k !== undefined);
    let summary = `${plural(users.length, 'user')} (${kinds.join(', ')}; ${rangeOf(offset, page.items.length, users.length)}).`;
    summary += itemNotes(page, cursor, 'users');
    return {
      text: page.items.length === 0 ? summary : `${summary}\n${page.text}`,
      data: {
        users: page.items.map(toUserItem),
        total: users.length,
        offset,
        truncated: page.truncated,
        next_cursor: cursor,
      },
    };
  },
});
