import type { User } from '@zmcp/core';
import { z } from 'zod';
import { defineListTool } from './list-tool.js';
import { byFullName, plural, roleName, userLine } from './shared.js';

/** One line per user: the directory line plus a role other than member. */
export function userItemLine(user: User): string {
  const role = roleName(user.role, user);
  return role === 'member' ? userLine(user) : `${userLine(user)} [${role}]`;
}

/** `list_users`: the realm's people (and optionally bots and deactivated accounts). */
export const listUsersTool = defineListTool({
  name: 'list_users',
  title: 'List users',
  description:
    'List the realm\'s people by name: "Name (email, id N)", marked [bot], [deactivated] and by role. Active humans unless asked.',
  toolset: 'browse',
  query: {
    include_bots: z.boolean().default(false),
    include_deactivated: z.boolean().default(false),
  },
  limit: { max: 500, fallback: 100 },
  output: { user_ids: z.array(z.number().int()).describe('The users listed, by name') },
  noun: 'users',
  async list(services, input, call) {
    const items = (await services.directory.users(call))
      .filter((u) => input.include_bots || u.is_bot !== true)
      .filter((u) => input.include_deactivated || u.is_active !== false)
      .sort(byFullName);
    return { items };
  },
  line: userItemLine,
  summary({ items }, range, input) {
    const kinds = [
      'active humans',
      input.include_bots ? 'bots' : undefined,
      input.include_deactivated ? 'deactivated accounts' : undefined,
    ].filter((k) => k !== undefined);
    return `${plural(items.length, 'user')} (${kinds.join(', ')}; ${range}).`;
  },
  data: (_listing, shown) => ({ user_ids: shown.map((u) => u.user_id) }),
});
