import type { z } from 'zod';
import { attentionTools } from './attention/index.js';
import { channelTools } from './channels/index.js';
import { ToolError } from './errors.js';
import { monitorTools } from './monitor/index.js';
import { readTools } from './read/index.js';
import { reminderTools } from './reminders/index.js';
import type { ToolServices } from './services.js';
import { sessionTools } from './session/index.js';
import {
  type AnyToolDefinition,
  type BoundTool,
  bindTools,
  type ToolDefinition,
  type Toolset,
} from './tool.js';
import { writeTools } from './write/index.js';

/** Every toolset, in the order hosts list them. */
export const TOOLSETS: readonly Toolset[] = [
  'read',
  'write',
  'session',
  'browse',
  'files',
  'manage',
  'monitor',
  'attention',
  'reminders',
];

/** What a host serves when the operator chose nothing: what agents do most. */
export const DEFAULT_TOOLSETS: readonly Toolset[] = ['read', 'write', 'session'];

/** The realm tools (read, write and reminders), unbound: they stand on {@link ToolServices} alone. */
export const realmTools: readonly ToolDefinition<z.ZodObject, z.ZodObject, ToolServices>[] = [
  ...readTools,
  ...writeTools,
  ...reminderTools,
];

/**
 * Every tool of the product as a static definition, listable without building services: the realm
 * tools, the monitor tools, the session tools, the attention tools and the Claude Code channel tools.
 */
export function toolDefinitions(): AnyToolDefinition[] {
  return [...realmTools, ...monitorTools, ...sessionTools, ...attentionTools, ...channelTools];
}

/** The realm tools bound to one server's services; the monitor and session tools are bound by their catalogs. */
export function createCatalog(services: ToolServices): BoundTool[] {
  return bindTools(realmTools, services);
}

/**
 * Parses a toolset setting: a comma-separated list of toolset names, or `all`. Unset or empty
 * means {@link DEFAULT_TOOLSETS}.
 * @throws ToolError `TOOLS_INVALID_TOOLSET` naming the unknown entry and the valid ones.
 */
export function parseToolsets(raw: string | undefined): Toolset[] {
  if (raw === undefined || raw.trim() === '') return [...DEFAULT_TOOLSETS];
  const entries = raw
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '');
  if (entries.includes('all')) return [...TOOLSETS];
  const chosen = new Set<Toolset>();
  for (const entry of entries) {
    if (entry === 'default') {
      for (const t of DEFAULT_TOOLSETS) chosen.add(t);
      continue;
    }
    if (!(TOOLSETS as readonly string[]).includes(entry)) {
      throw new ToolError(
        'TOOLS_INVALID_TOOLSET',
        `unknown toolset ${JSON.stringify(entry.slice(0, 40))}; expected "all", "default" or a list of ${TOOLSETS.join(', ')}`,
        { toolset: entry },
      );
    }
    chosen.add(entry as Toolset);
  }
  return TOOLSETS.filter((t) => chosen.has(t));
}

/** Which tools a host serves: those of the chosen toolsets, and in read-only mode none that writes. */
export interface ToolSelection {
  toolsets: readonly Toolset[];
  readOnly: boolean;
}

/** True when a host with this selection serves `definition`. */
export function isServed(definition: AnyToolDefinition, selection: ToolSelection): boolean {
  return selection.toolsets.includes(definition.toolset) && !(selection.readOnly && definition.write);
}

/** The tools of a list that a host with this selection serves, in order. */
export function selectTools<T extends BoundTool | AnyToolDefinition>(
  tools: readonly T[],
  selection: ToolSelection,
): T[] {
  return tools.filter((t) => isServed('definition' in t ? t.definition : t, selection));
}
