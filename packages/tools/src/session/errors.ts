import type { ToolErrorCode } from '../errors.js';

/**
 * Codes of the refusals the session tools report on their own terms: no conversation is bound
 * (`TOOLS_NO_SESSION`: call set_context first), the people in the conversation ended the session
 * (`TOOLS_SESSION_ENDED`: nothing was done), or a listen is already running (`TOOLS_SESSION_BUSY`).
 */
export type SessionErrorCode = Extract<
  ToolErrorCode,
  'TOOLS_NO_SESSION' | 'TOOLS_SESSION_ENDED' | 'TOOLS_SESSION_BUSY'
>;

/**
 * A refusal caused by the session's state rather than by the arguments; `runTool` turns it into
 * an `isError` result carrying `code` and the message (which says what to do next).
 */
export class SessionError extends Error {
  override readonly name = 'SessionError';
  readonly code: SessionErrorCode;

  constructor(code: SessionErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
