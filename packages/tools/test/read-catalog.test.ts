import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { DEFAULT_TOOLSETS, realmTools, selectTools, sessionTools, toolListing } from '../src/index.js';
import { readTools } from '../src/read/index.js';
import { type Harness, startHarness } from './harness.js';

const NAMES = [
  'fetch_history',
  'fetch_around',
  'get_channel_history',
  'search_messages',
  'get_message',
  'get_message_link',
  'list_streams',
  'get_stream_topics',
  'list_stream_members',
  'list_users',
  'find_user',
  'get_user_profile',
  'list_emojis',
  'fetch_attachment',
  'list_attachments',
];

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ policy: { readOnly: true } });
});
afterAll(async () => {
  await h.close();
});

it('lists every read tool once, read-only and honestly annotated', () => {
  const tools = readTools;
  expect(tools.map((t) => t.name)).toEqual(NAMES);
  for (const tool of tools) {
    expect(tool.name).toMatch(/^[a-z]+(_[a-z]+)*$/);
    expect(tool.write, tool.name).toBe(false);
    expect(tool.annotations, tool.name).toEqual({
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: true,
    });
    expect(tool.title.length, tool.name).toBeGreaterThan(5);
    // Short on purpose (tools/list stays small), but enough to choose the tool.
    expect(tool.description.trim().length, tool.name).toBeGreaterThan(40);
    expect(tool.description.length, tool.name).toBeLessThanOrEqual(400);
    expect(['read', 'browse', 'files'], tool.name).toContain(tool.toolset);
    // The same tool the catalog (and so the app) registers.
    expect(h.tools.get(tool.name)?.name).toBe(tool.name);
  }
});

it('keeps the default surface within its budget, opening attachments included', () => {
  // What every turn of an agent pays for: name, description and input schema of each default tool
  // (what zulip-mcp serves unless told otherwise). 12,239 bytes is what the 15 default tools took
  // before fetch_attachment joined them; the rest was trimmed to make room, not the budget raised.
  const served = selectTools([...realmTools, ...sessionTools], {
    toolsets: [...DEFAULT_TOOLSETS],
    readOnly: false,
  });
  expect(served.map((t) => t.name)).toContain('fetch_attachment');
  let bytes = 0;
  for (const tool of served) {
    const { name, description, inputSchema } = toolListing(tool);
    bytes += Buffer.byteLength(JSON.stringify({ name, description, inputSchema }));
  }
  expect(served).toHaveLength(16);
  expect(bytes).toBeLessThanOrEqual(12_239);
});

// Fields whose name and type say all a model needs; every other field carries a short description.
const SELF_EXPLANATORY = new Set([
  'message_id',
  'stream',
  'topic',
  'has',
  'is',
  'subscribed_only',
  'include_bots',
  'include_deactivated',
  'name_contains',
]);

it('describes the input fields a name does not explain, briefly, and converts both schemas to JSON Schema', () => {
  for (const tool of readTools) {
    for (const [field, schema] of Object.entries(tool.inputSchema.shape as Record<string, z.ZodType>)) {
      if (!SELF_EXPLANATORY.has(field)) expect(schema.description, `${tool.name}.${field}`).toBeTruthy();
      if (schema.description !== undefined) {
        expect(schema.description.length, `${tool.name}.${field}`).toBeLessThanOrEqual(200);
      }
    }
    expect(() => z.toJSONSchema(tool.inputSchema, { io: 'input' }), tool.name).not.toThrow();
    expect(() => z.toJSONSchema(tool.outputSchema), tool.name).not.toThrow();
  }
});

it('works in read-only mode: every read is a GET', async () => {
  const id = h.post(h.realm.ann, 'general', 'ro', 'still readable');
  const history = await h.call('fetch_history', { stream: 'general', topic: 'ro' });
  expect(history.isError).toBeFalsy();
  expect(history.text).toContain('still readable');
  for (const [name, args] of [
    ['get_message', { message_id: id }],
    ['fetch_around', { message_id: id }],
    ['search_messages', { query: 'readable' }],
    ['list_streams', {}],
    ['get_stream_topics', { stream: 'general' }],
    ['list_stream_members', { stream: 'general' }],
    ['list_users', {}],
    ['find_user', { query: 'bo' }],
    ['get_user_profile', {}],
    ['list_emojis', {}],
  ] as const) {
    const r = await h.call(name, args);
    expect(r.isError, `${name}: ${r.text}`).toBeFalsy();
  }
  expect(h.sim.requests.filter((r) => r.method !== 'GET' && r.userId === h.realm.bot.userId)).toEqual([]);
});
