import { expect } from 'vitest';
import { type ToolCallOutcome, ToolHost } from '../src/host.js';
import type { AnyToolDefinition, BoundTool } from '../src/tool.js';

// How every tools test calls a tool: through the call contract, as a host would.

/** A host over bound tools with the deadline tests use, and its definitions by name. */
export function testHost(
  tools: readonly BoundTool[],
  deadlineMs = 15_000,
): {
  host: ToolHost;
  tools: Map<string, AnyToolDefinition>;
} {
  const host = new ToolHost(tools, { deadlineMs });
  return { host, tools: new Map(host.definitions.map((d) => [d.name, d])) };
}

/** Calls one tool through the host; an unknown name is a test bug. */
export function callThrough(
  host: ToolHost,
  name: string,
  args: unknown,
  options: {
    signal?: AbortSignal | undefined;
    progress?: ((update: { progress: number; total?: number; message?: string }) => void) | undefined;
  } = {},
): Promise<ToolCallOutcome> {
  if (!host.has(name)) throw new Error(`no tool named ${name}`);
  return host.call(name, args, { signal: options.signal, progress: options.progress });
}

/**
 * Asserts a call succeeded, that its structured result is `{ text, ...data }` with the same text,
 * and that `data` matches the tool's output schema exactly (nothing stripped). Returns the text and
 * `data` (the structured result without its `text`).
 */
export function checkedOk(
  tools: Map<string, AnyToolDefinition>,
  name: string,
  result: ToolCallOutcome,
): { text: string; structured: Record<string, unknown> } {
  if (result.isError === true) throw new Error(`${name} failed: ${result.code}: ${result.text}`);
  const tool = tools.get(name) as AnyToolDefinition;
  const { text, ...data } = result.structured;
  expect(text).toBe(result.text);
  const parsed = tool.outputSchema.safeParse(data);
  expect(parsed.success, parsed.success ? '' : parsed.error.message).toBe(true);
  expect(parsed.data).toEqual(data);
  return { text: result.text, structured: data };
}

/** A signal that fired because a deadline passed (as the host's own deadline does). */
export function expiredSignal(): AbortSignal {
  return AbortSignal.abort(new DOMException('The deadline passed.', 'TimeoutError'));
}

/**
 * Asserts a successful result fits the page budget whichever field a client shows the model: its
 * text, and the JSON of its whole structured result (`{ text, ...data }`).
 */
export function expectWithinBudget(result: ToolCallOutcome, budgetBytes: number): void {
  if (result.isError === true) throw new Error(`expected a result, got ${result.code}: ${result.text}`);
  expect(Buffer.byteLength(result.text), 'text bytes').toBeLessThanOrEqual(budgetBytes);
  expect(Buffer.byteLength(JSON.stringify(result.structured)), 'structured JSON bytes').toBeLessThanOrEqual(
    budgetBytes,
  );
}
