import { createHash } from 'node:crypto';
import { type Logger, noopLogger } from '@zmcp/core';
import { RequestDeduplicator } from './dedup.js';
import { ToolError } from './errors.js';
import { failureFromError, toolFailure } from './failure.js';
import { type ToolListing, toolListing } from './listing.js';
import { stableJson } from './page.js';
import type { AnyToolDefinition, BoundTool, ToolFailure, ToolImage } from './tool.js';

/** What a host gets back from a tool call: one rendering for every client. */
export type ToolCallOutcome =
  | {
      isError: false;
      /** What the model reads. */
      text: string;
      /** `{ text, ...data }`: the same text, then the typed fields; what `structuredContent` carries. */
      structured: Record<string, unknown>;
      images: readonly ToolImage[];
      /** The tool's result is its text alone (`textOnly`): hosts leave `structured` out of what they send. */
      textOnly?: true;
    }
  | ToolFailure;

/** One call as the host received it. */
export interface ToolCallRequest {
  /**
   * The protocol's request id. A write tool called again with the same id and arguments gets the
   * first answer instead of running twice; with other arguments it is refused.
   */
  requestId?: string | number | undefined;
  /** The host's cancellation: the client cancelled, or the session closed. */
  signal?: AbortSignal | undefined;
  /**
   * Sends one progress update. Updates go out in order, and the call resolves only after every
   * update it sent has been handed over. Unset: the tool's progress reports are dropped.
   */
  progress?:
    | ((update: { progress: number; total?: number; message?: string }) => Promise<void> | void)
    | undefined;
}

/** Options of {@link ToolHost}. */
export interface ToolHostOptions {
  /** One deadline shared by all the work of a tool call, in milliseconds. */
  deadlineMs: number;
  /**
   * How long a tool whose deadline passed (or that was cancelled) may still take to return before
   * the call is answered with a deadline failure anyway, in milliseconds. Default 1000.
   */
  graceMs?: number | undefined;
  /** How many write-call request ids a host remembers for de-duplication. Default 1024. */
  dedupCapacity?: number | undefined;
  /** Where each call's outcome is logged (never arguments but at debug, never bodies). */
  logger?: Logger | undefined;
}

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * Resolves with `work`, or, once `signal` has fired and `graceMs` more have passed, with
 * `onLate()`: a handler that ignores its signal cannot hold a call past its deadline.
 */
function settleWithin<T>(
  work: Promise<T>,
  signal: AbortSignal,
  graceMs: number,
  onLate: () => T,
): Promise<T> {
  return new Promise<T>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      timer = setTimeout(() => resolve(onLate()), graceMs);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    void work.then(resolve).finally(() => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    });
  });
}

/**
 * The one tool-call contract, for every host (the MCP server, the MCPL server, a custom host): a
 * host is a transport adapter that lists {@link ToolHost.listing} and forwards each call to
 * {@link ToolHost.call}. A call validates its arguments (a failure names each field), runs under
 * one shared deadline (or the tool's own, for a tool that waits on purpose) and the host's
 * cancellation, is answered a grace period after either even if the handler ignores its signal,
 * has its result checked against the output schema, and maps every failure to a stable code. A
 * write call retried with the same request id runs once. Build one host per session.
 */
export class ToolHost {
  /** The definitions served, in catalog order. */
  readonly definitions: readonly AnyToolDefinition[];
  private readonly byName = new Map<string, BoundTool>();
  private readonly graceMs: number;
  private readonly logger: Logger;
  private readonly dedup: RequestDeduplicator<ToolCallOutcome>;

  /**
   * @throws ToolError `TOOLS_INVALID_CATALOG` when two tools share a name or a name is not 1-128
   *   of `A-Z a-z 0-9 _ . -`.
   */
  constructor(
    tools: readonly BoundTool[],
    private readonly options: ToolHostOptions,
  ) {
    for (const tool of tools) {
      const name = tool.definition.name;
      if (!TOOL_NAME.test(name)) {
        throw new ToolError('TOOLS_INVALID_CATALOG', `tool name ${JSON.stringify(name)} is not valid`);
      }
      if (this.byName.has(name)) throw new ToolError('TOOLS_INVALID_CATALOG', `two tools are named ${name}`);
      this.byName.set(name, tool);
    }
    this.definitions = tools.map((t) => t.definition);
    this.graceMs = options.graceMs ?? 1000;
    this.logger = options.logger ?? noopLogger;
    this.dedup = new RequestDeduplicator(options.dedupCapacity ?? 1024);
  }

  /** Every served tool as a host lists it (schemas converted once per tool and shared). */
  listing(): ToolListing[] {
    return this.definitions.map(toolListing);
  }

  /** True when a tool of this name is served. */
  has(name: string): boolean {
    return this.byName.has(name);
  }

  /**
   * The question a person must answer yes to before this call runs (the tool's `confirm`), or
   * undefined when the tool asks none or the arguments are invalid (the call then fails as usual).
   */
  confirmation(name: string, args: unknown): string | undefined {
    const definition = this.byName.get(name)?.definition;
    if (definition?.confirm === undefined) return undefined;
    const parsed = definition.inputSchema.safeParse(args);
    return parsed.success ? definition.confirm(parsed.data) : undefined;
  }

  /**
   * Calls one tool. Every failure of the tool comes back as an `isError` outcome with its code;
   * only a request the host must refuse at the protocol level throws.
   * @throws ToolError `TOOLS_UNKNOWN_TOOL` when no tool of that name is served, and
   *   `TOOLS_REQUEST_ID_REUSED` when a write call reuses an id for other arguments.
   */
  async call(name: string, args: unknown, request: ToolCallRequest = {}): Promise<ToolCallOutcome> {
    const tool = this.byName.get(name);
    if (tool === undefined) {
      throw new ToolError('TOOLS_UNKNOWN_TOOL', `Unknown tool: ${name.slice(0, 128)}`, { name });
    }
    const definition = tool.definition;
    const parsed = definition.inputSchema.safeParse(args ?? {});
    if (!parsed.success) return this.logged(name, failureFromError(parsed.error), performance.now());
    const input = parsed.data as Record<string, unknown>;
    if (definition.write && request.requestId !== undefined) {
      // The validated input: bounded in depth by the schema, however deep the raw arguments were.
      const fingerprint = createHash('sha256')
        .update(stableJson([name, input]))
        .digest('base64url');
      return this.dedup.run(request.requestId, fingerprint, () => this.execute(tool, input, request));
    }
    return this.execute(tool, input, request);
  }

  private async execute(
    tool: BoundTool,
    input: Record<string, unknown>,
    request: ToolCallRequest,
  ): Promise<ToolCallOutcome> {
    const definition = tool.definition;
    const started = performance.now();
    const deadlineMs = definition.deadlineMs?.(input) ?? this.options.deadlineMs;
    // One signal for the deadline and the host's cancellation, whichever comes first (linked by
    // hand: AbortSignal.any costs more per call and keeps its sources alive longer).
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException('The tool call ran past its deadline.', 'TimeoutError')),
      deadlineMs,
    );
    const cancel = request.signal;
    const onCancel = () => deadline.abort(cancel?.reason);
    if (cancel?.aborted) onCancel();
    else cancel?.addEventListener('abort', onCancel, { once: true });
    const signal = deadline.signal;
    const idempotent = definition.annotations.idempotentHint as boolean;
    let progressSent: Promise<void> = Promise.resolve();
    const send = request.progress;
    const progress =
      send === undefined
        ? () => {}
        : (update: { progress: number; total?: number; message?: string }) => {
            progressSent = progressSent
              .then(() => send(update))
              .catch((err: unknown) =>
                this.logger.debug('progress update failed', { tool: definition.name, err }),
              );
          };
    try {
      const result = await settleWithin(
        tool
          .run(input, { signal, progress })
          .catch((err: unknown) => failureFromError(err, signal, { idempotent })),
        signal,
        this.graceMs,
        () => failureFromError(signal.reason, signal, { idempotent }),
      );
      await progressSent;
      if (result.isError === true) return this.logged(definition.name, result, started);
      if (!definition.outputSchema.safeParse(result.data).success) {
        this.logger.error('tool result does not match its output schema', { tool: definition.name });
        return this.logged(
          definition.name,
          toolFailure(
            'TOOLS_INTERNAL',
            'The tool produced a malformed result.',
            'Try again; if it keeps failing, report it.',
          ),
          started,
        );
      }
      return this.logged(
        definition.name,
        {
          isError: false,
          text: result.text,
          structured: { text: result.text, ...result.data },
          images: result.images ?? [],
          ...(definition.textOnly === true ? { textOnly: true as const } : {}),
        },
        started,
      );
    } finally {
      clearTimeout(timer);
      cancel?.removeEventListener('abort', onCancel);
    }
  }

  private logged(tool: string, outcome: ToolCallOutcome, started: number): ToolCallOutcome {
    this.logger.info('tool call', {
      tool,
      outcome: outcome.isError ? 'error' : 'ok',
      code: outcome.isError ? outcome.code : undefined,
      ms: Math.round(performance.now() - started),
    });
    return outcome;
  }
}
