import { afterAll, beforeAll, expect, it } from 'vitest';
import type { z } from 'zod';
import { writeTools } from '../src/write/index.js';
import { type Harness, startHarness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const DESTRUCTIVE = new Set([
  'edit_message',
  'delete_message',
  'remove_reaction',
  'unsubscribe',
  'resolve_topic',
]);
const NOT_IDEMPOTENT = new Set(['send_message', 'send_dm', 'upload_file']);

it('lists every write tool once, with honest annotations', () => {
  const tools = writeTools;
  expect(tools.map((t) => t.name)).toEqual([
    'send_message',
    'send_dm',
    'upload_file',
    'edit_message',
    'delete_message',
    'add_reaction',
    'remove_reaction',
    'resolve_topic',
    'mark_read',
    'subscribe',
    'unsubscribe',
  ]);
  for (const tool of tools) {
    expect(tool.name).toMatch(/^[a-z]+(_[a-z]+)*$/);
    expect(tool.write, tool.name).toBe(true);
    expect(tool.annotations, tool.name).toEqual({
      readOnlyHint: false,
      destructiveHint: DESTRUCTIVE.has(tool.name),
      idempotentHint: !NOT_IDEMPOTENT.has(tool.name),
      openWorldHint: true,
    });
    // Short on purpose (tools/list stays small), but enough to choose the tool.
    expect(tool.description.trim().length, tool.name).toBeGreaterThan(40);
    expect(tool.description.length, tool.name).toBeLessThanOrEqual(400);
    expect(['write', 'files', 'manage'], tool.name).toContain(tool.toolset);
    expect(h.tools.get(tool.name), tool.name).toBeDefined();
  }
});

// Fields whose name and type say all a model needs; every other field carries a short description.
const SELF_EXPLANATORY = new Set(['message_id']);

it('describes the input fields a name does not explain, briefly', () => {
  for (const tool of writeTools) {
    for (const [field, schema] of Object.entries(tool.inputSchema.shape as Record<string, z.ZodType>)) {
      if (!SELF_EXPLANATORY.has(field)) expect(schema.description, `${tool.name}.${field}`).toBeTruthy();
      if (schema.description !== undefined) {
        expect(schema.description.length, `${tool.name}.${field}`).toBeLessThanOrEqual(200);
      }
    }
  }
});
