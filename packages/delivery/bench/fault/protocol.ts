// The IPC messages between the fault schedule (the host) and the engine's child process.
import type { DeliveryItemKind } from '@zmcp/delivery';

export interface ChildConfig {
  site: string;
  email: string;
  apiKey: string;
  dir: string;
  /** Channels the host opens after every start. */
  open: string[];
  offerTimeoutMs: number;
  /**
   * Another state store than files in `dir`: a module exporting `openFaultStore(options)`, which
   * resolves to `{ store, events?(client), close() }` (a fleet's PostgreSQL backend, say).
   */
  store?: { module: string; options: Record<string, unknown> } | undefined;
  /** Start by waiting for the session's lock (a standby beside a running engine). */
  waitForLock?: boolean | undefined;
}

export interface WireItem {
  id: string;
  kind: DeliveryItemKind;
  messageId: number;
  channelId: string;
}

/** A delivery state as the child last wrote it (the part the checks read). */
export interface FlushedState {
  channels: Record<string, { id: string; w: number; above?: number[] }>;
}

export type ChildMessage =
  | { t: 'ready'; missedBlocks: string[] }
  | { t: 'incoming'; n: number; channelId: string; items: WireItem[] }
  | {
      t: 'push';
      n: number;
      kind: 'message' | 'change' | 'missed';
      eventId: string;
      channelId: string;
      items: WireItem[];
      elided: number;
    }
  | { t: 'writing' }
  | { t: 'flushed'; state: FlushedState }
  | { t: 'closed' }
  | { t: 'failed'; error: string };

export type ParentMessage =
  | { t: 'config'; config: ChildConfig }
  | { t: 'answer'; n: number; outcome: unknown }
  | { t: 'stop' };
