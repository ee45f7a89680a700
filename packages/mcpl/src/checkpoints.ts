import { randomBytes } from 'node:crypto';
import type { JsonValue } from './json.js';

/** The `state` member a stateful tool result carries (§8.2). */
export interface CheckpointState {
  checkpoint: string;
  parent: string | null;
  /** Full state for the host to keep and send back (§8.3). */
  data?: JsonValue;
}

/** One checkpoint the server minted. */
export interface CheckpointRecord {
  checkpoint: string;
  parent: string | null;
  featureSet: string;
  /** What the app attached when minting: what it needs to undo to this point. */
  data: JsonValue | undefined;
  /** When it was minted, ms since the epoch. */
  createdAt: number;
}

/**
 * The checkpoints a server minted, per feature set, as a tree (§8.2): each new one's parent is
 * the feature set's head, and a rollback moves the head back, so the next one branches. The
 * oldest are pruned past `retention`; a rollback to a pruned one is `-32005`.
 */
export class CheckpointLog {
  readonly #retention: number;
  readonly #records = new Map<string, CheckpointRecord>();
  readonly #heads = new Map<string, string>();
  readonly #now: () => number;

  constructor(retention = 256, now: () => number = Date.now) {
    this.#retention = retention;
    this.#now = now;
  }

  /** Mints a checkpoint on `featureSet`'s current head and makes it the head. */
  mint(featureSet: string, data?: JsonValue): CheckpointRecord {
    const checkpoint = `chk_${randomBytes(9).toString('base64url')}`;
    const record: CheckpointRecord = {
      checkpoint,
      parent: this.#heads.get(featureSet) ?? null,
      featureSet,
      data,
      createdAt: this.#now(),
    };
    this.#records.set(checkpoint, record);
    this.#heads.set(featureSet, checkpoint);
    while (this.#records.size > this.#retention) {
      const oldest = this.#records.keys().next().value as string;
      this.#records.delete(oldest);
    }
    return record;
  }

  /** The record of a checkpoint still retained. */
  get(checkpoint: string): CheckpointRecord | undefined {
    return this.#records.get(checkpoint);
  }

  /** The feature set's latest checkpoint. */
  head(featureSet: string): string | undefined {
    return this.#heads.get(featureSet);
  }

  /** Makes `checkpoint` its feature set's head, after a successful rollback. */
  moveHead(checkpoint: string): void {
    const record = this.#records.get(checkpoint);
    if (record !== undefined) this.#heads.set(record.featureSet, checkpoint);
  }
}

/** A tool result with a checkpoint attached, as §8.2 places it. */
export function withCheckpoint<R extends object>(
  result: R,
  state: CheckpointState,
): R & { state: CheckpointState } {
  return { ...result, state };
}
