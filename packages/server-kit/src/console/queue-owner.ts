import { hostname } from 'node:os';
import type { EventQueueOwner } from '@zmcp/fleet';
import type { ZulipRuntime } from '../runtime.js';

/** How the console names a queue's owner: `this process`, `pid 4711 on web-2`, or `nobody (…)`. */
export function ownerLabel(owner: EventQueueOwner | undefined): string {
  if (owner === undefined) return 'nobody (no process reads its events yet)';
  if (!owner.owned) return 'nobody (another process takes it within a second)';
  if (owner.pid === process.pid && owner.host === hostname()) return 'this process';
  return `pid ${owner.pid ?? '?'} on ${owner.host ?? '?'}`;
}

/** What {@link watchQueueOwner} gives: the owner's label now, and the watch's end. */
export interface QueueOwnerWatch {
  /** `this process`, `pid 4711 on web-2`, or `nobody` while the fleet elects one. */
  label(): string;
  /** Reads the owner now (the watch reads it every `intervalMs` by itself) and gives the new label. */
  refresh(): Promise<string>;
  close(): void;
}

/**
 * Who owns the bot's Zulip event queue, for the console's delivery panel (its `owner`): read from
 * the fleet's database every `intervalMs` (default 2 s) with `ZULIP_STATE_URL`; `this process`
 * without it, where each engine polls its own queue.
 */
export function watchQueueOwner(
  runtime: Pick<ZulipRuntime, 'backend' | 'account'>,
  intervalMs = 2_000,
): QueueOwnerWatch {
  const events = runtime.backend.events;
  if (events === undefined) {
    return { label: () => 'this process', refresh: async () => 'this process', close: () => undefined };
  }
  let label = 'unknown yet';
  const read = async () => {
    try {
      label = ownerLabel(await events.owner(runtime.account));
    } catch {
      label = 'unknown (the state database does not answer)';
    }
    return label;
  };
  void read();
  const timer = setInterval(() => void read(), intervalMs);
  timer.unref();
  return { label: () => label, refresh: read, close: () => clearInterval(timer) };
}
