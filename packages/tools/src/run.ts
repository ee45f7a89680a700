import { z } from 'zod';
import type { ToolCallContext, ToolDefinition, ToolFailure, ToolResult } from './tool.js';

/** Defines a tool with its input and output types inferred from the schemas. */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(
  tool: ToolDefinition<I, O>,
): ToolDefinition<I, O> {
  return tool;
}

/** Builds the failure a tool returns when it refuses on its own terms. */
export function toolFailure(code: string, what: string, hint?: string): ToolFailure {
  return { isError: true, code, text: hint === undefined ? what : `${what}\nHint: ${hint}` };
}

// What a model can do about each failure, by error code. Codes not listed get no hint.
const hints: Readonly<Record<string, string>> = {
  CORE_ACCESS_DENIED:
    'This server is configured not to read or write there; choose a stream it may use (list_streams).',
  CORE_READ_ONLY: 'The server runs in read-only mode; no tool can change the realm.',
  CORE_MESSAGE_TOO_LONG: 'Shorten the content, or split it into several messages.',
  CORE_USER_NOT_FOUND: 'Look the person up with find_user or list_users and pass their user id.',
  CORE_USER_AMBIGUOUS: 'Several users match; pass the user id of the one you mean.',
  CORE_NOT_FOUND: 'Check the id or name; list_streams, get_stream_topics and find_user show what exists.',
  CORE_TIMEOUT: 'Zulip did not answer in time; try again, perhaps with a smaller limit.',
  CORE_RATE_LIMITED: 'Zulip is rate limiting this bot; wait before calling again.',
  CORE_UNAUTHORIZED: 'The server’s Zulip credentials were refused; an operator must fix them.',
  CORE_NETWORK: 'Zulip could not be reached; try again shortly.',
  CORE_SERVER_ERROR: 'Zulip failed; try again shortly.',
  CORE_BAD_REQUEST: 'Zulip refused the request; read its message above and correct the arguments.',
  TOOLS_INVALID_INPUT: 'Correct the arguments named above and call again.',
  TOOLS_DEADLINE: 'The call ran out of time; try again, perhaps with a smaller limit.',
};

interface CodedError {
  code: string;
  message: string;
}

function isCoded(err: unknown): err is CodedError {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as { code?: unknown }).code === 'string' &&
    typeof (err as { message?: unknown }).message === 'string'
  );
}

/** Describes a zod validation failure by naming each offending field. */
export function describeInvalidInput(error: z.ZodError): string {
  const issues = error.issues.map((issue) => {
    const where = issue.path.length > 0 ? issue.path.join('.') : '(arguments)';
    return `${where}: ${issue.message}`;
  });
  return `Invalid arguments: ${issues.join('; ')}`;
}

// Failures after which the request may still have reached Zulip and taken effect.
const uncertain = new Set([
  'TOOLS_DEADLINE',
  'CORE_TIMEOUT',
  'CORE_ABORTED',
  'CORE_NETWORK',
  'CORE_SERVER_ERROR',
]);
const uncertainHint =
  'The change may or may not have been made: check (read the conversation or the message) before trying again, so nothing happens twice.';

function hintFor(code: string, idempotent: boolean): string | undefined {
  return !idempotent && uncertain.has(code) ? uncertainHint : hints[code];
}

/**
 * Turns anything a handler threw into a failure the model can act on. For a tool that is not
 * idempotent, a failure that may have come after Zulip acted says to check before retrying.
 * Credentials never appear: core errors are redacted at the source.
 */
export function failureFromError(
  err: unknown,
  signal?: AbortSignal,
  options: { idempotent?: boolean } = {},
): ToolFailure {
  const idempotent = options.idempotent ?? true;
  if (err instanceof z.ZodError) {
    return toolFailure('TOOLS_INVALID_INPUT', describeInvalidInput(err), hints.TOOLS_INVALID_INPUT);
  }
  if (signal?.aborted && !(isCoded(err) && err.code !== 'CORE_ABORTED')) {
    return toolFailure(
      'TOOLS_DEADLINE',
      'The tool call was cancelled or ran past its deadline.',
      hintFor('TOOLS_DEADLINE', idempotent),
    );
  }
  if (isCoded(err)) return toolFailure(err.code, err.message, hintFor(err.code, idempotent));
  return toolFailure(
    'TOOLS_INTERNAL',
    'The tool failed unexpectedly.',
    'Try again; if it keeps failing, report it.',
  );
}

/**
 * Validates raw arguments against the tool's input schema, runs the handler and turns
 * every failure into a `ToolFailure`. Apps call this; it never throws.
 */
export async function runTool<I extends z.ZodObject, O extends z.ZodObject>(
  tool: ToolDefinition<I, O>,
  args: unknown,
  context: ToolCallContext,
): Promise<ToolResult<z.infer<O>>> {
  const parsed = tool.inputSchema.safeParse(args ?? {});
  if (!parsed.success) return failureFromError(parsed.error);
  try {
    return await tool.handler(parsed.data, context);
  } catch (err) {
    return failureFromError(err, context.signal, { idempotent: tool.annotations.idempotentHint });
  }
}
