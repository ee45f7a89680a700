import { ToolError } from '../errors.js';
import type { AgentSession } from '../session/agent-session.js';
import { SessionCore } from '../session/agent-session.js';
import { type BoundTool, bindTool } from '../tool.js';
import type { ApprovalDesk } from './desk.js';
import { permissionPromptTool } from './permission-prompt.js';

/**
 * `permission_prompt` (Claude Code's `--permission-prompt-tool`) bound to one agent session and
 * the approvals desk: the prompt goes to the session's conversation.
 * @throws ToolError `TOOLS_INVALID_INPUT` when `session` was not made by `createAgentSession`.
 */
export function permissionPromptTools(session: AgentSession, desk: ApprovalDesk): BoundTool[] {
  if (!(session instanceof SessionCore)) {
    throw new ToolError(
      'TOOLS_INVALID_INPUT',
      'permissionPromptTools needs a session made by createAgentSession.',
      {
        field: 'session',
      },
    );
  }
  return [bindTool(permissionPromptTool, { session, desk })];
}
