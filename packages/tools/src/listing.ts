import { z } from 'zod';
import type { AnyToolDefinition, ToolAnnotations } from './tool.js';

/** A JSON Schema object, as hosts put it on the wire. */
export type JsonSchema = {
  type: 'object';
  properties?: Record<string, object>;
  required?: string[];
} & Record<string, unknown>;

/** A tool as a host lists it: its zod schemas as JSON Schema (draft 7), converted once per schema. */
export interface ToolListing {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema;
  /** The schema every structured result meets (`text`, beside typed fields); see {@link typedOutputSchema}. */
  /** Absent for a `textOnly` tool, whose result has no structured part. */
  outputSchema?: JsonSchema;
  annotations: ToolAnnotations;
}

// Converted once per zod schema and shared by every session and host: converting some thirty
// tools' schemas on each listing would cost a cold start dearly.
const inputSchemas = new WeakMap<z.ZodObject, JsonSchema>();
const outputSchemas = new WeakMap<z.ZodObject, JsonSchema>();

// Integer bounds no argument a model writes comes near: safe-integer and int32 limits.
const NOISE_MAXIMUM = 2_147_483_647;
// String bounds that only guard the server against abuse.
const NOISE_MAX_LENGTH = 1000;

/**
 * Drops what only costs context: regular expressions (a MIME type's grammar), integer bounds at
 * the int32 and safe-integer limits, and string length caps that guard the server rather than
 * guide the model. The server still validates every argument against the full zod schema.
 */
function lean(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(lean);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'pattern' && typeof value === 'string') continue;
    if (key === 'maximum' && typeof value === 'number' && value >= NOISE_MAXIMUM) continue;
    if (key === 'minimum' && typeof value === 'number' && value <= -NOISE_MAXIMUM) continue;
    if (key === 'maxLength' && typeof value === 'number' && value > NOISE_MAX_LENGTH) continue;
    out[key] = lean(value);
  }
  return out;
}

function convert(schema: z.ZodObject, io: 'input' | 'output'): JsonSchema {
  const json = lean(z.toJSONSchema(schema, { target: 'draft-7', io })) as JsonSchema;
  // The dialect is implied by the protocol; the key is bytes in every agent's context.
  delete json.$schema;
  return json;
}

/**
 * The output schema every tool lists: an object whose `text` is the model-facing text, beside the
 * tool's typed fields. One schema for all tools, under one `$id`, because a client compiles a
 * validator for each output schema at its first tools/list: with one shared `$id` it compiles one
 * (the SDK's AJV caches by `$id`) instead of one per tool, which cost some 10× a minimal server's
 * round trip. The typed fields are checked by the server against each tool's own zod schema
 * before a result leaves (see {@link ToolHost}), and {@link typedOutputSchema} describes them.
 */
const RESULT_SCHEMA: JsonSchema = Object.freeze({
  $id: 'urn:zmcp:tool-result:1',
  type: 'object',
  properties: { text: { type: 'string' } },
  required: ['text'],
}) as JsonSchema;

/**
 * The whole structured result of one tool as JSON Schema: `text` first, then the tool's typed
 * fields (what its output zod schema checks). For documentation and for hosts that want it.
 */
export function typedOutputSchema(tool: AnyToolDefinition): JsonSchema {
  let json = outputSchemas.get(tool.outputSchema);
  if (json === undefined) {
    const fields = convert(tool.outputSchema, 'output');
    json = {
      type: 'object',
      properties: { text: { type: 'string' }, ...fields.properties },
      required: ['text', ...(fields.required ?? [])],
    };
    outputSchemas.set(tool.outputSchema, json);
  }
  return json;
}

/** Lists one tool: name, title, description, JSON schemas and annotations. */
export function toolListing(tool: AnyToolDefinition): ToolListing {
  let input = inputSchemas.get(tool.inputSchema);
  if (input === undefined) {
    input = convert(tool.inputSchema, 'input');
    inputSchemas.set(tool.inputSchema, input);
  }
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: input,
    ...(tool.textOnly === true ? {} : { outputSchema: RESULT_SCHEMA }),
    annotations: tool.annotations,
  };
}
