import { errorCode, escapeMsgName, type User } from '@zmcp/core';
import { z } from 'zod';
import { fitToBudget } from '../page.js';
import type { ToolServices } from '../services.js';
import { defineTool } from '../tool.js';
import { userItemLine } from './list-users.js';
import {
  callOptions,
  checkDeadline,
  ID_BYTES,
  itemBudget,
  plural,
  READ_ANNOTATIONS,
  UserRefSchema,
} from './shared.js';

const NAME = 'find_user';

const InputSchema = z.object({
  query: UserRefSchema.describe('A user id, email, @**mention**, or (part of) a full name'),
});

const OutputSchema = z.object({
  matched_by: z.enum(['id', 'email', 'name', 'prefix', 'substring']).nullable(),
  user_ids: z.array(z.number().int()).describe('The user found, or the candidates'),
  total: z.number().int(),
  ambiguous: z.boolean(),
  truncated: z.boolean(),
});

interface AmbiguityDetails {
  candidates?: { user_id: number }[];
  count?: number;
}

/** `find_user`: resolves a name, email or id fragment to the people it may mean. */
export const findUserTool = defineTool({
  name: NAME,
  title: 'Find a user',
  description:
    'Find a person by id, email, @**mention** or (part of) their name: one user, or the candidates to choose from, as "Name (email, id N)". Use the id in other tools.',
  inputSchema: InputSchema,
  outputSchema: OutputSchema,
  annotations: READ_ANNOTATIONS,
  write: false,
  toolset: 'read',
  async handler(services: ToolServices, input, context) {
    checkDeadline(context);
    const call = callOptions(context);
    let found: User[];
    let matchedBy: z.infer<typeof OutputSchema>['matched_by'];
    let total: number;
    let ambiguous = false;
    try {
      const resolved = await services.directory.user(input.query, call);
      found = [resolved.user];
      matchedBy = resolved.matchedBy;
      total = 1;
    } catch (err) {
      const code = errorCode(err);
      if (code === 'CORE_USER_NOT_FOUND') {
        const text = `No user matches ${JSON.stringify(escapeMsgName(String(input.query)))}. Try part of the name, an email, or browse with list_users (include_bots / include_deactivated to widen it).`;
        return {
          text,
          data: { matched_by: null, user_ids: [], total: 0, ambiguous: false, truncated: false },
        };
      }
      if (code !== 'CORE_USER_AMBIGUOUS') throw err;
      const details = ((err as { details?: AmbiguityDetails }).details ?? {}) as AmbiguityDetails;
      const ids = (details.candidates ?? []).map((c) => c.user_id);
      const byId = new Map((await services.directory.users(call)).map((u) => [u.user_id, u]));
      found = ids.map((id) => byId.get(id)).filter((u): u is User => u !== undefined);
      total = details.count ?? found.length;
      matchedBy = null;
      ambiguous = true;
    }
    const fit = fitToBudget(found.map(userItemLine), itemBudget(services), ID_BYTES);
    const shown = found.slice(0, fit.shown);
    const q = JSON.stringify(escapeMsgName(String(input.query)));
    let summary: string;
    if (!ambiguous) {
      summary = `Found 1 user for ${q} (matched by ${matchedBy}).`;
    } else {
      summary = `${plural(total, 'user')} match ${q}; pick one by user id.`;
      if (shown.length < total)
        summary += ` ${shown.length} listed; refine the query (a fuller name or an email) to see the rest.`;
    }
    return {
      text: `${summary}\n${fit.text}`,
      data: {
        matched_by: matchedBy,
        user_ids: shown.map((u) => u.user_id),
        total,
        ambiguous,
        truncated: fit.truncated || shown.length < total,
      },
    };
  },
});
