import type { z } from 'zod';
import { ToolError } from '../errors.js';
import type { ToolServices } from '../services.js';
import { type BoundTool, bindTools, type PromptDefinition, type ToolDefinition } from '../tool.js';
import { type AgentSession, SessionCore } from './agent-session.js';
import { endSessionTool } from './end-session.js';
import { listenTool } from './listen.js';
import { teammatePrompt } from './prompt.js';
import { replyTool } from './reply.js';
import { setContextTool } from './set-context.js';

/** The session tools and prompt of one agent session. */
export interface SessionCatalog {
  /** `set_context`, `reply`, `listen`, `end_session`, bound to the session. */
  tools: BoundTool[];
  /** `zulip_teammate`. */
  prompts: PromptDefinition[];
}

/** The teammate tools' definitions (`set_context`, `reply`, `listen`, `end_session`), unbound. */
export const sessionTools: readonly ToolDefinition<z.ZodObject, z.ZodObject, SessionCore>[] = [
  setContextTool,
  replyTool,
  listenTool,
  endSessionTool,
];

/**
 * The agent-as-teammate tools (`set_context`, `reply`, `listen`, `end_session`) and the
 * `zulip_teammate` prompt, bound to one session. Build one per host session, beside the catalog.
 * @throws ToolError `TOOLS_INVALID_INPUT` when `session` was not made by `createAgentSession`
 *   with these services.
 */
export function sessionCatalog(services: ToolServices, session: AgentSession): SessionCatalog {
  if (!(session instanceof SessionCore) || session.services !== services) {
    throw new ToolError(
      'TOOLS_INVALID_INPUT',
      'sessionCatalog needs a session made by createAgentSession with the same services.',
      { field: 'session' },
    );
  }
  return { tools: bindTools(sessionTools, session), prompts: [teammatePrompt(session)] };
}
