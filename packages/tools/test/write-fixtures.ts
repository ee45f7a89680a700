import { expect } from 'vitest';
import { runTool } from '../src/run.js';
import type { ToolServices } from '../src/services.js';
import type { ToolDefinition, ToolFailure, ToolResult } from '../src/tool.js';
import type { Harness } from './harness.js';

// Helpers shared by the write-tool tests.

/**
 * Asserts a tool call succeeded and that its structured output matches the tool's output
 * schema exactly (nothing stripped), then returns the text and the structured output.
 */
export function expectOk(
  h: Harness,
  name: string,
  result: ToolResult<Record<string, unknown>>,
): { text: string; structured: Record<string, unknown> } {
  if (result.isError === true) throw new Error(`${name} failed: ${result.code}: ${result.text}`);
  const tool = h.tools.get(name) as ToolDefinition;
  const parsed = tool.outputSchema.safeParse(result.structured);
  expect(parsed.success, parsed.success ? '' : parsed.error.message).toBe(true);
  expect(parsed.data).toEqual(result.structured);
  return { text: result.text, structured: result.structured };
}

/** Asserts a tool call failed with `code` and returns the failure. */
export function expectFail(result: ToolResult<Record<string, unknown>>, code: string): ToolFailure {
  if (result.isError !== true) throw new Error(`expected ${code}, got success: ${result.text}`);
  expect(result.code, result.text).toBe(code);
  return result;
}

/** Calls a tool built from different services (another Markdown setting, a smaller limit...). */
export async function callWith<T extends ToolDefinition>(
  factory: (services: ToolServices) => T,
  services: ToolServices,
  args: unknown,
): Promise<ToolResult<Record<string, unknown>>> {
  return (await runTool(factory(services), args, {
    signal: AbortSignal.timeout(15_000),
    progress: () => {},
  })) as ToolResult<Record<string, unknown>>;
}

/** Requests that could have changed the realm (anything but a GET). */
export function writesSeen(h: Harness, since = 0): number {
  return h.sim.requests.filter((r) => r.method !== 'GET' && r.time >= since).length;
}

/** A message the bot posts straight into the realm (not through a tool). */
export function botPost(
  h: Harness,
  stream: string,
  topic: string,
  content: string,
  timestamp?: number,
): number {
  return h.sim.realm.sendMessage({
    senderId: h.realm.bot.userId,
    type: 'stream',
    stream,
    topic,
    content,
    ...(timestamp === undefined ? {} : { timestamp }),
  });
}
