import { expect } from 'vitest';
import type { ToolCallOutcome } from '../src/host.js';
import type { ToolServices } from '../src/services.js';
import { bindTool, type ToolDefinition, type ToolFailure } from '../src/tool.js';
import { callThrough, checkedOk, testHost } from './call.js';
import type { Harness } from './harness.js';

// Helpers shared by the write-tool tests.

/**
 * Asserts a tool call succeeded and that its structured output matches the tool's output
 * schema exactly (nothing stripped), then returns the text and the structured output.
 */
export function expectOk(
  h: Harness,
  name: string,
  result: ToolCallOutcome,
): { text: string; structured: Record<string, unknown> } {
  return checkedOk(h.tools, name, result);
}

/** Asserts a tool call failed with `code` and returns the failure. */
export function expectFail(result: ToolCallOutcome, code: string): ToolFailure {
  if (result.isError !== true) throw new Error(`expected ${code}, got success: ${result.text}`);
  expect(result.code, result.text).toBe(code);
  return result;
}

/** Calls a tool built from different services (another Markdown setting, a smaller limit...). */
export async function callWith(
  // biome-ignore lint/suspicious/noExplicitAny: any tool of the realm catalog.
  definition: ToolDefinition<any, any, ToolServices>,
  services: ToolServices,
  args: unknown,
): Promise<ToolCallOutcome> {
  const { host } = testHost([bindTool(definition, services)]);
  return callThrough(host, definition.name, args);
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
