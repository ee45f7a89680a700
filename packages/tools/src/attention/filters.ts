import type { FiltersPatch } from '@zmcp/delivery';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { defineTool } from '../tool.js';
import {
  type AttentionContext,
  FILTER_ANNOTATIONS,
  FILTERS_FIELDS,
  filtersData,
  filtersText,
} from './shared.js';

const outputSchema = z.object(FILTERS_FIELDS);

/** `filters_get`: the filters in force (the operator-owned list only as a count). */
export const filtersGetTool = defineTool({
  name: 'filters_get',
  title: 'Show the filters',
  description:
    'Show what may reach you: allowed streams, who may DM you, muted streams, channels showing reactions. Change them with filters_update.',
  inputSchema: z.object({}),
  outputSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  write: false,
  toolset: 'attention',
  async handler(context: AttentionContext, _input, { signal }) {
    signal.throwIfAborted();
    const view = context.engine.filtersView();
    return { text: `Filters (revision ${view.revision}):\n${filtersText(view)}`, data: filtersData(view) };
  },
});

const StreamEntrySchema = z.union([z.string().trim().min(1).max(200), z.number().int().positive()]);
const UserEntrySchema = z.union([z.string().trim().min(1).max(320), z.number().int().positive()]);
const list = <T extends z.ZodType>(entry: T, what: string) =>
  z.array(entry).max(1000).nullable().optional().describe(`${what}; null removes the list (unrestricted)`);

// Strict: a key the tools may not change (the operator's suppressed reactions) is refused, not dropped.
const inputSchema = z.strictObject({
  streams: list(StreamEntrySchema, 'Streams that may reach you, by name or id'),
  dm_users: list(UserEntrySchema, 'Who may DM you, by user id or email'),
  muted_streams: list(StreamEntrySchema, 'Streams muted on every surface, by name or id'),
  reaction_channels: list(z.string().trim().min(1).max(2000), 'Channel ids that show reactions'),
});

/** `filters_update`: replaces the lists given; refused while the filters file is broken. */
export const filtersUpdateTool = defineTool({
  name: 'filters_update',
  title: 'Change the filters',
  description:
    'Replace filter lists: each list given replaces the one in force, null removes it. Refused while the filters file is broken.',
  inputSchema,
  outputSchema,
  annotations: { ...FILTER_ANNOTATIONS, destructiveHint: true },
  write: false,
  toolset: 'attention',
  async handler(context: AttentionContext, input, { signal }) {
    signal.throwIfAborted();
    const patch: { -readonly [K in keyof FiltersPatch]: FiltersPatch[K] } = {};
    if (input.streams !== undefined) patch.streams = input.streams;
    if (input.dm_users !== undefined) patch.dmUsers = input.dm_users;
    if (input.muted_streams !== undefined) patch.mutedStreams = input.muted_streams;
    if (input.reaction_channels !== undefined) patch.reactionChannels = input.reaction_channels;
    const keys = Object.keys(input).filter((k) => (input as Record<string, unknown>)[k] !== undefined);
    if (keys.length === 0) {
      throw new ToolError(
        'TOOLS_INVALID_INPUT',
        'Give at least one list to change: streams, dm_users, muted_streams or reaction_channels.',
      );
    }
    const view = await context.engine.updateFilters(patch);
    return {
      text: `Filters updated (${keys.join(', ')}); revision ${view.revision} is in force:\n${filtersText(view)}`,
      data: filtersData(view),
    };
  },
});
