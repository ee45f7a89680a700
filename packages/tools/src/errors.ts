import { CodedError, isCodedError, isZmcpError } from '@zmcp/core';

/**
 * Codes of the failures the tools layer itself reports (core, upload and delivery codes pass
 * through the call contract as they are). Callers switch on `err.code`.
 */
export type ToolErrorCode =
  /** The arguments do not match the tool's input schema, or break a rule of the tool's own. */
  | 'TOOLS_INVALID_INPUT'
  /** A `cursor` is malformed, or was issued by another tool or for other arguments. */
  | 'TOOLS_INVALID_CURSOR'
  /** A stream, topic, message, user or resource the tool was pointed at is not visible. */
  | 'TOOLS_NOT_FOUND'
  /** A person reference matched several people, or none exactly; `details.candidates` lists them. */
  | 'TOOLS_AMBIGUOUS'
  /** The call's one shared deadline passed before the tool finished. */
  | 'TOOLS_DEADLINE'
  /** The host cancelled the call (the client sent a cancellation, or the session closed). */
  | 'TOOLS_CANCELLED'
  /** A session tool was called before `set_context` bound a conversation. */
  | 'TOOLS_NO_SESSION'
  /** The people in the conversation ended the session (dismissal); nothing was done. */
  | 'TOOLS_SESSION_ENDED'
  /** A `listen` is already running in this session. */
  | 'TOOLS_SESSION_BUSY'
  /**
   * The same text went to the same conversation within the send-once window; nothing was sent.
   * `details`: `message_id`, `message_ids`, `permalink`, `sent_at` of the earlier send.
   */
  | 'TOOLS_ALREADY_SENT'
  /** The call needed a person's yes (a tool's `confirm`) and the client's user declined or cancelled it. */
  | 'TOOLS_DECLINED'
  /** No tool of that name is served (a host maps it to its protocol's "unknown tool" error). */
  | 'TOOLS_UNKNOWN_TOOL'
  /** A request id was reused for a different call within one session. */
  | 'TOOLS_REQUEST_ID_REUSED'
  /** A catalog handed to the host is malformed: two tools share a name, or a name is not valid. */
  | 'TOOLS_INVALID_CATALOG'
  /** A toolset setting names no toolset. */
  | 'TOOLS_INVALID_TOOLSET'
  /** The tool failed unexpectedly, or produced a result that does not match its output schema. */
  | 'TOOLS_INTERNAL';

/**
 * The one error class of `@zmcp/tools`. Handlers throw it for refusals on their own terms; the
 * call contract turns it into an `isError` result carrying `code`. `instanceof` holds across
 * copies of the package (a brand, as undici does), but callers should switch on `code`.
 */
export class ToolError extends CodedError<ToolErrorCode> {
  static override readonly brand: string = '@zmcp/tools.ToolError';
  override readonly name = 'ToolError';

  constructor(
    code: ToolErrorCode,
    message: string,
    details?: Readonly<Record<string, unknown>>,
    options: { cause?: unknown } = {},
  ) {
    super(code, message, { cause: options.cause, details });
  }
}

/** True when `err` is a {@link ToolError} (from any copy of this package) with one of `codes`, or any code when none are given. */
export function isToolError(err: unknown, ...codes: ToolErrorCode[]): err is ToolError {
  return isCodedError(ToolError, err, codes);
}

/** Core's refusal of a malformed argument, as a refusal of the tool's own input. */
export function asToolInput<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (!isZmcpError(err, 'CORE_INVALID_ARGUMENT')) throw err;
    throw new ToolError('TOOLS_INVALID_INPUT', err.message, err.details);
  }
}
