import { type CallOptions, isZmcpError, readMessage, type WriteTarget } from '@zmcp/core';
import type { DeliveryEngine } from '@zmcp/delivery';
import type { Runtime } from './runtime-types.js';
import type { SentMessage } from './sent-log.js';

/** A rollback's answer (§8.6). */
export interface RollbackOutcome {
  success: boolean;
  reason?: string;
}

/** Where a sent message is now, as the access policy sees it. */
type Whereabouts =
  | { readonly kind: 'at'; readonly target: WriteTarget }
  /** Deleted, or no longer visible to the bot (Zulip would refuse the deletion too). */
  | { readonly kind: 'gone' }
  /** In a stream the policy keeps closed (moved there since it was sent). */
  | { readonly kind: 'closed'; readonly why: string };

/**
 * Finds a sent message where it is now: a DM where it was sent (Zulip never moves a DM), a stream
 * message by reading it again through core's read gate, since a person may have moved it to
 * another stream since.
 */
async function whereNow(runtime: Runtime, sent: SentMessage, call: CallOptions): Promise<Whereabouts> {
  if ('dm' in sent.sentTo) return { kind: 'at', target: sent.sentTo };
  try {
    const message = await readMessage(runtime.client, runtime.policy, sent.messageId, {
      streams: await runtime.services.directory.streamLookup(call),
      call,
    });
    return { kind: 'at', target: { stream: message.stream_id ?? String(message.display_recipient) } };
  } catch (err) {
    if (isZmcpError(err, 'CORE_NOT_FOUND', 'CORE_BAD_REQUEST')) return { kind: 'gone' };
    if (isZmcpError(err, 'CORE_ACCESS_DENIED')) return { kind: 'closed', why: err.message };
    throw err;
  }
}

/**
 * Deletes what the agent sent since a checkpoint's mark, newest first, judging each message where
 * it is now: one a person moved since into a stream the server may not write to (core's
 * `checkWrite`, the rule every tool obeys) is left in place and the rollback reports it. The
 * engine is told before each deletion, so the agent's own deletions do not come back as change
 * lines. A Zulip failure stops the rollback where it is.
 */
export async function rollBack(
  runtime: Runtime,
  engine: DeliveryEngine | undefined,
  mark: number,
  signal: AbortSignal,
): Promise<RollbackOutcome> {
  const call: CallOptions = { signal };
  const sent = runtime.sent.since(mark);
  const deleted: number[] = [];
  const left: { messageId: number; why: string }[] = [];
  for (const entry of sent) {
    const id = entry.messageId;
    try {
      const where = await whereNow(runtime, entry, call);
      if (where.kind === 'gone') {
        deleted.push(id);
        continue;
      }
      if (where.kind === 'closed') {
        left.push({ messageId: id, why: where.why });
        continue;
      }
      try {
        runtime.policy.checkWrite(where.target, await runtime.services.directory.streamLookup(call));
      } catch (err) {
        if (!isZmcpError(err)) throw err;
        left.push({ messageId: id, why: err.message });
        continue;
      }
      engine?.suppressChanges([id]);
      await runtime.client.deleteMessage(id, call);
      deleted.push(id);
    } catch (err) {
      if (isZmcpError(err, 'CORE_NOT_FOUND', 'CORE_BAD_REQUEST')) {
        // Already gone, or no longer ours to delete: nothing left to undo here.
        deleted.push(id);
        continue;
      }
      runtime.sent.forget(deleted);
      runtime.logger.warn('rollback stopped', {
        deleted: deleted.length,
        left: sent.length - deleted.length,
        err,
      });
      return {
        success: false,
        reason: `deleted ${deleted.length} of ${sent.length} messages; Zulip refused the rest`,
      };
    }
  }
  runtime.sent.forget(deleted);
  if (left.length > 0) {
    runtime.logger.warn('rollback left messages a person moved out of reach', {
      deleted: deleted.length,
      left: left.map((l) => l.messageId),
    });
    return {
      success: false,
      reason: `deleted ${deleted.length} of ${sent.length} messages; left ${left.length} (${left
        .map((l) => l.messageId)
        .join(', ')}) in place: moved since they were sent to where this server may not write. ${
        (left[0] as { why: string }).why
      }`,
    };
  }
  runtime.logger.info('rolled back', { deleted: deleted.length });
  return { success: true };
}
