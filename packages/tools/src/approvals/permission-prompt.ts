import { z } from 'zod';
import { callOptions, checkDeadline } from '../read/shared.js';
import type { SessionCore } from '../session/agent-session.js';
import { defineTool } from '../tool.js';
import { type ApprovalDecision, type ApprovalDesk, DEFAULT_APPROVAL_TIMEOUT_MS } from './desk.js';

// Claude Code's `--permission-prompt-tool`: with `claude -p`, a tool call its permission rules
// neither allow nor deny is put to this tool as `{ tool_name, input, tool_use_id }`, and the
// answer is read from the result's text as JSON: `{ "behavior": "allow", "updatedInput": {...} }`
// or `{ "behavior": "deny", "message": "..." }` (Claude Code 2.1.332's PermissionPromptToolResult).

/** What a permission prompt tool stands on: the session (where to ask) and the approvals desk. */
export interface PermissionPromptServices {
  session: SessionCore;
  desk: ApprovalDesk;
}

/** Claude Code's tool for asking its user a multiple-choice question. */
const ASK_USER_QUESTION = 'AskUserQuestion';
/** How much longer than the desk's default wait the call may take: posting and editing. */
const DEADLINE_MARGIN_MS = 60_000;

const inputSchema = z.object({
  tool_name: z.string().trim().min(1).max(300).describe('The tool asking for permission'),
  input: z.record(z.string(), z.unknown()).default({}).describe('The input the tool would run with'),
  tool_use_id: z.string().max(300).optional().describe('The tool call id'),
});

const outputSchema = z.object({
  behavior: z.enum(['allow', 'deny']),
  updatedInput: z.record(z.string(), z.unknown()).optional().describe('allow: the input to run with'),
  message: z.string().optional().describe('deny: why'),
  request_id: z.string().describe('The id the prompt in Zulip named'),
  outcome: z.enum(['allowed', 'denied', 'timed-out', 'ended']),
  decided_by: z.number().int().nullable().describe('Who answered, by user id'),
});

/** Fields that say what a well-known tool call does, in order of preference. */
const KEY_FIELDS = ['command', 'file_path', 'notebook_path', 'path', 'url', 'pattern', 'query', 'prompt'];

/** The argument a person needs to judge the call: the command, the path, the URL… */
export function keyArgument(input: Readonly<Record<string, unknown>>): string | undefined {
  for (const field of KEY_FIELDS) {
    const value = input[field];
    if (typeof value === 'string' && value.trim() !== '') return value;
  }
  const first = Object.values(input).find((v) => typeof v === 'string' && v.trim() !== '');
  if (typeof first === 'string') return first;
  const json = JSON.stringify(input);
  return json === '{}' ? undefined : json;
}

function denial(decision: ApprovalDecision): string {
  switch (decision.outcome) {
    case 'denied':
      return `A person denied this in Zulip (request ${decision.id}). Do not retry it; ask in the conversation what to do instead.`;
    case 'timed-out':
      return `Nobody answered the request in Zulip (${decision.id}) in time, which denies it.`;
    default:
      return `The request (${decision.id}) ended before anyone answered, which denies it.`;
  }
}

/** `permission_prompt`: asks the people of the conversation, in Zulip, whether a tool call may run. */
export const permissionPromptTool = defineTool({
  name: 'permission_prompt',
  title: 'Ask for permission in Zulip',
  description:
    "Claude Code's permission prompt: posts the request in the agent's conversation and waits for an allowed person's ✅ / ❌ (or yes/no <id>). Answers the JSON Claude Code reads.",
  inputSchema,
  outputSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  write: true,
  toolset: 'session',
  // Claude Code reads the decision from the first text block and refuses a structured result.
  textOnly: true,
  deadlineMs: () => DEFAULT_APPROVAL_TIMEOUT_MS + DEADLINE_MARGIN_MS,
  async handler({ session, desk }: PermissionPromptServices, input, context) {
    checkDeadline(context);
    // Claude Code offers AskUserQuestion when a host answers its prompts; in Zulip the people are
    // asked in the conversation itself, where their answers reach the agent.
    if (input.tool_name === ASK_USER_QUESTION) {
      const answer = {
        behavior: 'deny' as const,
        message:
          'Nobody answers that dialog here: ask in the Zulip conversation with reply, then wait for the answer with listen.',
      };
      return {
        text: JSON.stringify(answer),
        data: { ...answer, request_id: '', outcome: 'denied' as const, decided_by: null },
      };
    }
    const to = await session.conversation(callOptions(context));
    const decision = await desk.request({
      to,
      tool: input.tool_name,
      detail: keyArgument(input.input),
      signal: context.signal,
    });
    const answer = decision.allowed
      ? { behavior: 'allow' as const, updatedInput: input.input }
      : { behavior: 'deny' as const, message: denial(decision) };
    return {
      // The text is the JSON Claude Code parses (the result has no structured part: textOnly).
      text: JSON.stringify(answer),
      data: {
        ...answer,
        request_id: decision.id,
        outcome: decision.outcome,
        decided_by: decision.byUserId ?? null,
      },
    };
  },
});
