import { escapeMsgName } from '@zmcp/core';
import { type DeliveryEngine, type FiltersView, isDeliveryError, streamChannelId } from '@zmcp/delivery';
import { z } from 'zod';
import type { ToolServices } from '../services.js';
import type { ToolAnnotations } from '../tool.js';

// Helpers shared by the attention tools. Internal to the package.

/** What every attention tool stands on: the services and the live-delivery engine of the session. */
export interface AttentionContext {
  readonly services: ToolServices;
  readonly engine: DeliveryEngine;
}

/** Tools that change only this server's filters (never the realm). */
export const FILTER_ANNOTATIONS: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};

/** A channel argument: a channel id, or a stream name. */
export const ChannelArgSchema = z
  .string()
  .trim()
  .min(1)
  .max(2000)
  .describe('Channel id (zulip:<stream> or zulip:dm:<user ids>), or a stream name');

/** The channel id a `channel` argument names: as given when it is one, else the stream of that name. */
export function channelIdOf(arg: string): string {
  return arg.startsWith('zulip:') ? arg : streamChannelId(arg);
}

/**
 * Runs an engine call on a channel argument. Ids are printed escaped (`&lt;` for `<`), so a
 * model may pass one back that way: an unknown id holding `&lt;` is tried once more with `<`.
 */
export async function onChannel<T>(arg: string, call: (channelId: string) => Promise<T>): Promise<T> {
  const id = channelIdOf(arg);
  try {
    return await call(id);
  } catch (err) {
    if (isDeliveryError(err, 'DELIVERY_UNKNOWN_CHANNEL') && id.includes('&lt;')) {
      return call(id.replaceAll('&lt;', '<'));
    }
    throw err;
  }
}

/**
 * Applies one filters change to a channel (through {@link onChannel}) and says what came of it:
 * whether the filters revision moved, the revision now in force, and the channel as text names it.
 */
export async function changeChannelFilters(
  context: AttentionContext,
  channel: string,
  change: (channelId: string) => Promise<{ readonly revision: number }>,
): Promise<{ changed: boolean; revision: number; label: string }> {
  const before = context.engine.filtersView().revision;
  const { revision } = await onChannel(channel, change);
  return { changed: revision !== before, revision, label: channelText(channelIdOf(channel)) };
}

/** A channel id as the model reads it: escaped, on one line. */
export function channelText(id: string): string {
  return escapeMsgName(id);
}

/** The typed fields of a filters view: counts only, `null` where a list is absent (unrestricted). */
export const FILTERS_FIELDS = {
  stale: z.boolean().describe('The filters file is broken: the last good filters stay in force'),
  revision: z.number().int(),
  streams: z.number().int().nullable().describe('Allowed streams; null: every stream'),
  dm_users: z.number().int().nullable().describe('Who may DM you; null: anyone'),
  muted_streams: z.number().int().nullable(),
  reaction_channels: z.number().int().nullable(),
  suppressed_reactions: z.number().int().describe('Operator-owned, entries not shown'),
};

/** The typed fields of a view. */
export function filtersData(view: FiltersView): {
  stale: boolean;
  revision: number;
  streams: number | null;
  dm_users: number | null;
  muted_streams: number | null;
  reaction_channels: number | null;
  suppressed_reactions: number;
} {
  const f = view.filters;
  return {
    stale: view.stale,
    revision: view.revision,
    streams: f.streams?.length ?? null,
    dm_users: f.dmUsers?.length ?? null,
    muted_streams: f.mutedStreams?.length ?? null,
    reaction_channels: f.reactionChannels?.length ?? null,
    suppressed_reactions: view.suppressedReactionEmojis.count + view.baselineSuppressedReactionEmojis.count,
  };
}

function listText(entries: readonly (string | number)[] | undefined, absent: string): string {
  if (entries === undefined) return absent;
  if (entries.length === 0) return 'none';
  return entries
    .map((e) => (typeof e === 'number' ? String(e) : JSON.stringify(escapeMsgName(e))))
    .join(', ');
}

/** The filters as the model reads them: each list escaped; the operator's list only as a count. */
export function filtersText(view: FiltersView): string {
  const f = view.filters;
  const suppressed = view.suppressedReactionEmojis.count;
  const baseline = view.baselineSuppressedReactionEmojis.count;
  const lines = [
    `streams: ${listText(f.streams, 'every stream the bot can see')}`,
    `dm_users: ${listText(f.dmUsers, 'anyone')}`,
    `muted_streams: ${listText(f.mutedStreams, 'none')}`,
    `reaction_channels: ${listText(f.reactionChannels, 'none')}`,
    `suppressed reactions: ${suppressed} set by the operator${baseline > 0 ? `, ${baseline} by the host` : ''} (operator-owned: not shown, not changeable by tools)`,
  ];
  if (view.stale) {
    lines.unshift(
      'The filters file is broken or missing: the last good filters below stay in force, and updates are refused until an operator repairs it.',
    );
  }
  return lines.join('\n');
}
