import type { Transport } from '@modelcontextprotocol/server';
import { advertisedPaths, INJECT, OBSERVE } from './capabilities.js';
import { CheckpointLog } from './checkpoints.js';
import { McplError } from './errors.js';
import type { FeatureSetDeclaration } from './feature-sets.js';
import type { JsonObject } from './json.js';
import { type McplLogger, silentMcplLogger } from './logger.js';
import { composeManifest, type ManifestDefinition } from './manifest.js';
import type { McplServerOptions } from './server-types.js';
import { McplSession } from './session.js';

/**
 * An MCPL server: one manifest, the app's hooks, and any number of connections (one
 * {@link McplSession} each). The library answers the MCPL methods and gates the app's tools;
 * the app never hand-writes a manifest change, a receipt or a grant check.
 *
 * @throws McplError `MCPL_INVALID_ARGUMENT` when the manifest is invalid or an advertised
 * capability has no hook to serve it.
 */
export class McplServer {
  readonly options: McplServerOptions;
  readonly logger: McplLogger;
  /** The checkpoints minted by tool calls, shared by every connection. */
  readonly checkpoints: CheckpointLog;
  #definition: ManifestDefinition;
  #manifest: JsonObject;
  readonly #sessions = new Set<McplSession>();
  #announceScheduled = false;
  #batchDepth = 0;

  constructor(options: McplServerOptions) {
    this.options = options;
    this.logger = options.logger ?? silentMcplLogger;
    this.checkpoints = new CheckpointLog(options.checkpointRetention ?? 256);
    this.#definition = { capabilities: options.capabilities ?? {}, featureSets: options.featureSets ?? {} };
    this.#manifest = this.#compose(this.#definition);
  }

  #compose(definition: ManifestDefinition): JsonObject {
    const manifest = composeManifest(definition, this.options.tools !== undefined);
    const paths = advertisedPaths(manifest);
    const needs: [string, unknown][] = [
      ['channels.publish', this.options.channels?.publish],
      ['channels.acknowledge', this.options.channels?.acknowledge],
      ['channels.typing', this.options.channels?.typing],
      [OBSERVE, this.options.beforeInference],
      [`${INJECT}system`, this.options.beforeInference],
      [`${INJECT}beforeUser`, this.options.beforeInference],
      [`${INJECT}afterUser`, this.options.beforeInference],
    ];
    for (const [path, hook] of needs) {
      if (paths.has(path) && hook === undefined) {
        throw new McplError('MCPL_INVALID_ARGUMENT', `${path} is advertised but no hook serves it`);
      }
    }
    return manifest;
  }

  /** The current manifest, object form, without `revision`. */
  get manifest(): JsonObject {
    return this.#manifest;
  }

  /** The declared feature sets. */
  get featureSets(): Readonly<Record<string, FeatureSetDeclaration>> {
    return this.#definition.featureSets;
  }

  /** The connections open now. */
  get sessions(): readonly McplSession[] {
    return [...this.#sessions];
  }

  /**
   * Replaces the manifest's capabilities and/or feature sets. Each MCPL connection is told once
   * with `mcpl/manifestChanged` (changes in one tick, or inside {@link batch}, are coalesced),
   * and only when its revision differs from the one it already has.
   *
   * @throws McplError `MCPL_INVALID_ARGUMENT` for an invalid manifest; nothing changes then.
   */
  setManifest(change: Partial<ManifestDefinition>): void {
    const next: ManifestDefinition = {
      capabilities: change.capabilities ?? this.#definition.capabilities,
      featureSets: change.featureSets ?? this.#definition.featureSets,
    };
    const manifest = this.#compose(next);
    this.#definition = next;
    this.#manifest = manifest;
    for (const session of this.#sessions) session.manifestReplaced();
    this.#scheduleAnnouncement();
  }

  /** Runs `edits` with announcements held, so several related changes make one announcement. */
  async batch<T>(edits: () => T | Promise<T>): Promise<T> {
    this.#batchDepth += 1;
    try {
      return await edits();
    } finally {
      this.#batchDepth -= 1;
      if (this.#batchDepth === 0) this.#scheduleAnnouncement();
    }
  }

  #scheduleAnnouncement(): void {
    if (this.#batchDepth > 0 || this.#announceScheduled) return;
    this.#announceScheduled = true;
    setImmediate(() => {
      this.#announceScheduled = false;
      if (this.#batchDepth > 0) return;
      for (const session of this.#sessions) session.announceManifest();
    });
  }

  /**
   * Serves one connection: wraps `transport` in an SDK server carrying the app's tools and the
   * MCPL handlers, and starts it. The returned session is usable at once; MCPL sends wait for
   * {@link McplSession.whenReady}.
   */
  async connect(transport: Transport): Promise<McplSession> {
    const session = new McplSession(this, transport);
    this.#sessions.add(session);
    session.on('close', () => this.#sessions.delete(session));
    await session.start();
    return session;
  }

  /** Closes every open connection. */
  async close(): Promise<void> {
    await Promise.all([...this.#sessions].map((session) => session.close()));
  }
}
