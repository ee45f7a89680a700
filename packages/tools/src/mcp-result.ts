import type { ToolCallOutcome } from './host.js';

/** One block of an MCP tool result's `content`. */
export type McpContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string };

/**
 * A tool call's outcome as MCP's `tools/call` answers it, typed by its shape so that this package
 * needs no MCP SDK: it is assignable to the SDK's `CallToolResult`.
 */
export type McpToolResult = {
  content: McpContentBlock[];
  /** On success: the same text first, then the typed fields. */
  structuredContent?: Record<string, unknown>;
  /** On failure only. */
  isError?: true;
  /** On failure: the stable code, under `zmcp/error`. */
  _meta?: { 'zmcp/error': { code: string } };
};

/**
 * The one MCP rendering of a call outcome, for every host that answers `tools/call`. A success
 * carries the text block (then any images) and `structuredContent`, which leads with the same
 * text, so a client hands the model the same thing whichever field it shows (a `textOnly` tool's
 * success carries the text alone); a failure carries
 * its text, `isError: true` and its stable code in `_meta['zmcp/error'].code`.
 */
export function toMcpResult(outcome: ToolCallOutcome): McpToolResult {
  if (outcome.isError) {
    return {
      content: [{ type: 'text', text: outcome.text }],
      isError: true,
      _meta: { 'zmcp/error': { code: outcome.code } },
    };
  }
  const images = outcome.images.map(
    (image): McpContentBlock => ({ type: 'image', data: image.data, mimeType: image.mimeType }),
  );
  if (outcome.textOnly === true) return { content: [{ type: 'text', text: outcome.text }, ...images] };
  return {
    content: [{ type: 'text', text: outcome.text }, ...images],
    structuredContent: outcome.structured,
  };
}
