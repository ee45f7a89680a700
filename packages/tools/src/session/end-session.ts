import { z } from 'zod';
import { checkDeadline } from '../read/shared.js';
import { defineTool } from '../tool.js';
import type { SessionCore } from './agent-session.js';

const inputSchema = z.object({});

const outputSchema = z.object({
  ended: z.boolean().describe('false: no conversation was bound'),
  last_seen_id: z.number().int(),
});

/** `end_session`: leaves the bound conversation. */
export const endSessionTool = defineTool({
  name: 'end_session',
  title: 'Leave the conversation',
  description:
    'End your session in the bound conversation (removes your listening indicator). Call it when done or dismissed.',
  inputSchema,
  outputSchema,
  // Clears the typing indicator and the bot's own listening reaction; in read-only mode there are none.
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  write: false,
  toolset: 'session',
  async handler(session: SessionCore, _input, context) {
    checkDeadline(context);
    const ended = session.ended;
    const was = session.unbind();
    await session.settled();
    const where = was ?? ended;
    const lastSeen = session.lastSeenId;
    if (where === undefined) {
      return {
        text: 'No session was bound; nothing to end.',
        data: { ended: false, last_seen_id: lastSeen },
      };
    }
    return {
      text: `Session in ${session.label(where)} ended${was === undefined ? ' (it had already been ended from the conversation)' : ''}. Call set_context to start another.`,
      data: { ended: was !== undefined, last_seen_id: lastSeen },
    };
  },
});
