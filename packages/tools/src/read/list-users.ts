import type { User } from '@zmcp/core';
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
  roleName,
  userLine,
} from './shared.js';

const NAME = 'list_users';

const InputSchema = z.object({
  include_bots: z.boolean().default(false),
  include_deactivated: z.boolean().default(false),
  limit: limitSchema(500, 100),
  cursor: CursorSchema,
});

/** One line per user: the directory line plus a role other than member. */
export function userItemLine(user: User): string {
  const role = roleName(user.role, user);
  return role === 'member' ? userLine(user) : `${userLine(user)} [${role}]`;
}

const OutputSchema = z.object({
  user_ids: z.array(z.number().int()).describe('The users listed, by name'),
  total: z.number().int(),
  ...OFFSET_PAGE_FIELDS,
});

/** `list_users`: the realm's people (and optionally bots and deactivated accounts). */
export const listUsersTool = defineTool({
  name: NAME,
  title: 'List users',
  description:
    'List the realm\'s people by name: "Name <email> (id N)", marked [bot], [deactivated] and by role. Active humans unless asked.',
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
        user_ids: page.items.map((u) => u.user_id),
        total: users.length,
        offset,
        truncated: page.truncated,
        next_cursor: cursor,
      },
    };
  },
});
