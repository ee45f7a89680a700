/** Codes of the refusals the session tools report on their own terms. */
export type SessionErrorCode =
  /** No conversation is bound: call set_context first. */
  | 'TOOLS_NO_SESSION'
  /** The session was ended by the people in the conversation (dismissed) and nothing was done. */
  | 'TOOLS_SESSION_ENDED'
  /** A listen is already running in this session. */
  | 'TOOLS_SESSION_BUSY';

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
