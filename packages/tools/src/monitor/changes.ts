import type { MonitorWatcher, MonitorWatcherEvent } from '@zmcp/delivery';
import type { ResourceChanges } from '../tool.js';
import { channelUri, STATUS_URI, SUMMARY_URI } from './shared.js';

/**
 * The changes of the monitor's resources: what the monitor tools change (monitored streams,
 * cursors) and, while someone listens, what the watcher sees arrive in the realm. The first
 * listener starts the watcher's event queue; the last one leaving stops it.
 */
export class MonitorChanges implements ResourceChanges {
  readonly #watcher: MonitorWatcher | undefined;
  readonly #listeners = new Set<(uri: string) => void>();
  #unwatch: (() => Promise<void>) | undefined;

  constructor(watcher: MonitorWatcher | undefined) {
    this.#watcher = watcher;
  }

  /**
   * Calls `listener` with each changed URI until the returned function is called; that
   * function resolves once the event queue is stopped, when it removed the last listener.
   */
  subscribe(listener: (uri: string) => void): () => Promise<void> {
    const entry = (uri: string) => listener(uri);
    this.#listeners.add(entry);
    if (this.#listeners.size === 1 && this.#watcher !== undefined) {
      this.#unwatch = this.#watcher.watch((event) => this.#fromWatcher(event));
    }
    let removed = false;
    return async () => {
      if (removed) return;
      removed = true;
      this.#listeners.delete(entry);
      if (this.#listeners.size > 0) return;
      const unwatch = this.#unwatch;
      this.#unwatch = undefined;
      await unwatch?.();
    };
  }

  /** How many listeners are subscribed. */
  get listenerCount(): number {
    return this.#listeners.size;
  }

  /** Tells every listener that these URIs changed (duplicates are sent once, in order). */
  notify(uris: Iterable<string>): void {
    const unique = [...new Set(uris)];
    for (const listener of [...this.#listeners]) {
      for (const uri of unique) {
        try {
          listener(uri);
        } catch {
          // A listener's failure is its own; the others still hear of the change.
        }
      }
    }
  }

  /** The monitored set changed (streams started or stopped): every resource may read differently. */
  monitoringChanged(streams: Iterable<string>): void {
    this.notify([STATUS_URI, SUMMARY_URI, ...[...streams].map(channelUri)]);
  }

  /** Cursors moved on these streams. */
  cursorsMoved(streams: Iterable<string>): void {
    this.notify([SUMMARY_URI, STATUS_URI, ...[...streams].map(channelUri)]);
  }

  #fromWatcher(event: MonitorWatcherEvent): void {
    if (event.kind === 'state') this.notify([STATUS_URI]);
    else this.notify([SUMMARY_URI, ...event.streams.map((s) => channelUri(s.name))]);
  }
}
