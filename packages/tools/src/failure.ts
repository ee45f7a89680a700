import { errorCode, escapeMsgName } from '@zmcp/core';
import { z } from 'zod';
import type { ToolFailure } from './tool.js';

/**
 * Builds the failure a tool returns when it refuses on its own terms. What failed is folded onto
 * one line and escaped like every name (refusals echo arguments and names, which may be hostile);
 * the hint is the server's own.
 */
export function toolFailure(code: string, what: string, hint?: string): ToolFailure {
  const said = escapeMsgName(what);
  return { isError: true, code, text: hint === undefined ? said : `${said}\nHint: ${hint}` };
}

// What a model can do about each failure, by error code. Codes not listed get no hint.
const hints: Readonly<Record<string, string>> = {
  CORE_ACCESS_DENIED:
    'This server is configured not to read or write there; choose a stream it may use (list_streams).',
  CORE_READ_ONLY: 'The server runs in read-only mode; no tool can change the realm.',
  CORE_MESSAGE_TOO_LONG: 'Shorten the content, or split it into several messages.',
  CORE_USER_NOT_FOUND: 'Look the person up with find_user and pass their user id.',
  CORE_USER_AMBIGUOUS: 'Several users match; pass the user id of the one you mean.',
  CORE_NOT_FOUND: 'Check the id or name; list_streams, get_stream_topics and find_user show what exists.',
  CORE_TIMEOUT: 'Zulip did not answer in time; try again, perhaps with a smaller limit.',
  CORE_RATE_LIMITED: 'Zulip is rate limiting this bot; wait before calling again.',
  CORE_UNAUTHORIZED: 'The server’s Zulip credentials were refused; an operator must fix them.',
  CORE_NETWORK: 'Zulip could not be reached; try again shortly.',
  CORE_SERVER_ERROR: 'Zulip failed; try again shortly.',
  CORE_BAD_REQUEST: 'Zulip refused the request; read its message above and correct the arguments.',
  CORE_TOPIC_CREATION_DENIED:
    'This channel does not let this bot start new topics: reply in a topic that already exists (get_stream_topics lists them), or ask a channel administrator to add the bot (or its owner) to who may start topics.',
  TOOLS_INVALID_INPUT: 'Correct the arguments named above and call again.',
  TOOLS_AMBIGUOUS: 'Pass the user id (or email) of the one you mean.',
  TOOLS_DEADLINE: 'The call ran out of time; try again, perhaps with a smaller limit.',
  TOOLS_CANCELLED: 'The call was cancelled; call again if it is still wanted.',
  TOOLS_ALREADY_SENT:
    'Nothing was sent. If you mean to post the same text there again, call again with repeat: true.',
};

/** Describes a zod validation failure by naming each offending field. */
export function describeInvalidInput(error: z.ZodError): string {
  const issues = error.issues.slice(0, 8).map((issue) => {
    const where = issue.path.length > 0 ? issue.path.map(String).join('.').slice(0, 120) : '(arguments)';
    return `${where}: ${issue.message.slice(0, 200)}`;
  });
  const more = error.issues.length > 8 ? `; and ${error.issues.length - 8} more` : '';
  return `Invalid arguments: ${issues.join('; ')}${more}`;
}

// Failures after which the request may still have reached Zulip and taken effect: it left, and
// no answer (or a broken one) came back.
const uncertain = new Set([
  'TOOLS_DEADLINE',
  'TOOLS_CANCELLED',
  'CORE_TIMEOUT',
  'CORE_ABORTED',
  'CORE_NETWORK',
  'CORE_SERVER_ERROR',
  'CORE_BAD_RESPONSE',
]);

/** True for a failure after which a request may still have reached Zulip and taken effect. */
export function mayHaveTakenEffect(code: string): boolean {
  return uncertain.has(code);
}
const uncertainHint =
  'The change may or may not have been made: check (read the conversation or the message) before trying again, so nothing happens twice.';

function hintFor(code: string, idempotent: boolean): string | undefined {
  return !idempotent && uncertain.has(code) ? uncertainHint : hints[code];
}

// The code families whose messages are written for the model. Any other code (a Node errno, a
// third-party error) is internal: its message may carry host details, so it never reaches the model.
const KNOWN_CODE = /^(CORE|UPLOAD|DELIVERY|TOOLS)_[A-Z0-9_]+$/;
// Known codes whose messages name host paths or operator configuration: the model gets a summary.
const HOST_DETAIL: Readonly<Record<string, string>> = {
  DELIVERY_IO_FAILED: 'The server could not read or write its state files.',
  DELIVERY_STATE_CORRUPT: 'The server’s state file is damaged; an operator must repair it.',
  DELIVERY_STATE_LOCKED:
    'Another server delivers live for this session; this one takes over when that one stops, or an operator gives it its own session id.',
  DELIVERY_FILTERS_STALE:
    'The filters file is broken or missing: the last good filters stay in force, and updates are refused until an operator repairs it.',
  UPLOAD_ROOT_MISSING: 'An upload root of this server is missing; an operator must fix it.',
  UPLOAD_ROOT_CHANGED: 'An upload root of this server changed since start-up; an operator must fix it.',
  UPLOAD_LOCAL_FILES_UNSUPPORTED:
    'This server cannot read local files on its platform; pass the data inline.',
  CORE_CONFIG_INVALID: 'The server’s configuration is invalid; an operator must fix it.',
};

/** A thrown value with a string code and message, from whichever package (or copy) threw it. */
function isCoded(err: unknown): err is { code: string; message: string } {
  return errorCode(err) !== undefined && typeof (err as { message?: unknown }).message === 'string';
}

function abortKind(signal: AbortSignal | undefined): 'deadline' | 'cancel' | undefined {
  if (signal?.aborted !== true) return undefined;
  const reason = signal.reason as { name?: unknown } | undefined;
  return reason?.name === 'TimeoutError' ? 'deadline' : 'cancel';
}

/**
 * Turns anything a handler threw into a failure the model can act on. Only codes of the zmcp
 * families (`CORE_`, `UPLOAD_`, `DELIVERY_`, `TOOLS_`) pass with their message, and those whose
 * messages name host paths pass with a summary instead; anything else is `TOOLS_INTERNAL` without
 * its message. After the call's signal fired, the failure says whether the deadline passed
 * (`TOOLS_DEADLINE`) or the host cancelled (`TOOLS_CANCELLED`). For a tool that is not idempotent,
 * a failure that may have come after Zulip acted says to check before retrying. Credentials never
 * appear: core errors are redacted at the source.
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
  const aborted = abortKind(signal);
  if (aborted !== undefined && !(isCoded(err) && KNOWN_CODE.test(err.code) && err.code !== 'CORE_ABORTED')) {
    const code = aborted === 'deadline' ? 'TOOLS_DEADLINE' : 'TOOLS_CANCELLED';
    const what =
      aborted === 'deadline' ? 'The tool call ran past its deadline.' : 'The tool call was cancelled.';
    return toolFailure(code, what, hintFor(code, idempotent));
  }
  if (isCoded(err) && KNOWN_CODE.test(err.code)) {
    return toolFailure(err.code, HOST_DETAIL[err.code] ?? err.message, hintFor(err.code, idempotent));
  }
  return toolFailure(
    'TOOLS_INTERNAL',
    'The tool failed unexpectedly.',
    'Try again; if it keeps failing, report it.',
  );
}
