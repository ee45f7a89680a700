import {
  type CallToolResult,
  ProtocolError,
  ProtocolErrorCode,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server';
import { errorCode } from '@zmcp/core';
import {
  type AnyToolDefinition,
  isToolError,
  type ToolCallOutcome,
  type ToolHost,
  toMcpResult,
  toolListing,
} from '@zmcp/tools';
import type { McpEra, ToolCallObservation } from './mcp-server.js';

// A tool as MCP lists it, made once per definition and shared by every listing of every instance:
// a per-request HTTP instance lists from here and never converts a schema again.
const listed = new WeakMap<AnyToolDefinition, Tool>();
// A host's whole listing, in its catalog order: the same array for every instance over that host.
const listings = new WeakMap<ToolHost, readonly Tool[]>();

/** One tool as MCP's `tools/list` shows it: name, title, description, JSON schemas, annotations. */
export function mcpTool(definition: AnyToolDefinition): Tool {
  let tool = listed.get(definition);
  if (tool === undefined) {
    const listing = toolListing(definition);
    tool = {
      name: listing.name,
      title: listing.title,
      description: listing.description,
      inputSchema: listing.inputSchema as Tool['inputSchema'],
      ...(listing.outputSchema === undefined
        ? {}
        : { outputSchema: listing.outputSchema as Tool['outputSchema'] }),
      annotations: listing.annotations,
    };
    listed.set(definition, tool);
  }
  return tool;
}

/**
 * The tools a host serves, as MCP's `tools/list` answers them: in the host's catalog order (the
 * same order on every request, as the 2026-07-28 revision asks), the JSON schemas converted once
 * per definition and the array built once per host, so every instance over one host, one per HTTP
 * request included, lists the same objects.
 */
export function listMcpTools(host: ToolHost): readonly Tool[] {
  let tools = listings.get(host);
  if (tools === undefined) {
    tools = Object.freeze(host.definitions.map(mcpTool));
    listings.set(host, tools);
  }
  return tools;
}

/** How {@link callMcpTool} runs one call. */
export interface McpToolCallOptions {
  /**
   * Hand the protocol's request id to the host, so a write retried with the same id runs once (see
   * `ToolHost.call`). Right where one host serves one connection and its ids; leave it off where
   * every request is its own instance (2026-era HTTP): there an id names nothing beyond its request.
   * Default true.
   */
  dedupByRequestId?: boolean | undefined;
  /**
   * Told of the call once it is answered (its tool, era, client, outcome and latency; never its
   * arguments or result): an operator's figures, measured here once for every entry that calls
   * tools (see `ToolServerOptions.observe`).
   */
  observe?: ((call: ToolCallObservation) => void) | undefined;
  /** The era and client name the observation reports. Default: `legacy`, `unknown`. */
  caller?: { era: McpEra; client: string } | undefined;
}

/**
 * The MCP protocol error a failed call maps to: an unknown tool is `-32602` (invalid params), a
 * write request id reused for other arguments is `-32600` (invalid request). Anything else is
 * returned as it is (the SDK answers an uncoded error with `-32603`).
 */
export function toolCallError(err: unknown): unknown {
  if (isToolError(err, 'TOOLS_UNKNOWN_TOOL'))
    return new ProtocolError(ProtocolErrorCode.InvalidParams, err.message);
  if (isToolError(err, 'TOOLS_REQUEST_ID_REUSED'))
    return new ProtocolError(ProtocolErrorCode.InvalidRequest, err.message);
  return err;
}

/**
 * Runs one `tools/call` through the host with what the request carries: its cancellation signal,
 * its progress token (each progress update becomes `notifications/progress` about this request)
 * and, unless turned off, its request id for de-duplication. Every failure of the tool is an
 * `isError` outcome; only the two protocol errors of {@link toolCallError} are thrown.
 *
 * @throws ProtocolError `-32602` for an unknown tool, `-32600` for a reused write request id.
 */
export async function callMcpTool(
  host: ToolHost,
  params: { name: string; arguments?: Record<string, unknown> | undefined },
  ctx: ServerContext,
  options: McpToolCallOptions = {},
): Promise<ToolCallOutcome> {
  const progressToken = ctx.mcpReq._meta?.progressToken;
  const started = performance.now();
  const seen = (outcome: ToolCallObservation['outcome'], code: string | undefined) => {
    if (options.observe === undefined) return;
    try {
      options.observe({
        tool: params.name.slice(0, 100),
        era: options.caller?.era ?? 'legacy',
        client: options.caller?.client ?? 'unknown',
        outcome,
        code,
        durationMs: performance.now() - started,
      });
    } catch {
      // An observer's failure is its own: the call's answer stands.
    }
  };
  let outcome: ToolCallOutcome;
  try {
    outcome = await host.call(params.name, params.arguments ?? {}, {
      requestId: options.dedupByRequestId === false ? undefined : ctx.mcpReq.id,
      signal: ctx.mcpReq.signal,
      progress:
        progressToken === undefined
          ? undefined
          : (update) =>
              ctx.mcpReq.notify({
                method: 'notifications/progress',
                params: { progressToken, ...update },
              }),
    });
  } catch (err) {
    seen('protocol-error', errorCode(err));
    throw toolCallError(err);
  }
  seen(outcome.isError ? 'error' : 'ok', outcome.isError ? outcome.code : undefined);
  return outcome;
}

/** {@link callMcpTool}, answered as MCP's `CallToolResult` (`@zmcp/tools`' one rendering, `toMcpResult`). */
export async function callMcpToolResult(
  host: ToolHost,
  params: { name: string; arguments?: Record<string, unknown> | undefined },
  ctx: ServerContext,
  options: McpToolCallOptions = {},
): Promise<CallToolResult> {
  return toMcpResult(await callMcpTool(host, params, ctx, options));
}
