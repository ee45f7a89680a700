/** Codes of the failures the tools layer itself reports (core, upload and delivery codes pass through). */
export type ToolErrorCode =
  | 'TOOLS_INVALID_INPUT'
  | 'TOOLS_INVALID_CURSOR'
  | 'TOOLS_NOT_FOUND'
  | 'TOOLS_DEADLINE'
  | 'TOOLS_NO_SESSION'
  | 'TOOLS_SESSION_ENDED'
  | 'TOOLS_SESSION_BUSY'
  | 'TOOLS_INTERNAL';

/** A refusal of the tool's own arguments; `runTool` turns it into an `isError` result with a hint. */
export class ToolInputError extends Error {
  override readonly name = 'ToolInputError';
  readonly code: ToolErrorCode;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: ToolErrorCode, message: string, details?: Readonly<Record<string, unknown>>) {
    super(message);
    this.code = code;
    this.details = details;
  }
}
