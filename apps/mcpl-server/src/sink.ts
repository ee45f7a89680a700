import type { Logger } from '@zmcp/core';
import { errorCode } from '@zmcp/core';
import type {
  AnnounceOutcome,
  ChannelAnnouncement,
  DeliveryItem,
  DeliverySink,
  IncomingBatch,
  IncomingOutcome,
  PushEvent,
  PushOutcome,
} from '@zmcp/delivery';
import type { ChannelMessage, ContentBlock, JsonObject, McplSession } from '@zmcp/mcpl';
import { type ImageInliner, inlineImages } from './media.js';
import { channelMessage, itemText, mcplChannel } from './render.js';
import type { ReplyRouter } from './routing.js';

/** The feature set live delivery runs under. */
export const MESSAGING = 'zulip.messaging';

/** How long a batch for a channel being opened waits for the open's answer to be on the wire. */
const OPEN_WAIT_MS = 5_000;
/** How long a publish or typing waits for the host's answer to an offer still in flight on its channel. */
const SETTLE_WAIT_MS = 2_000;

/** What the sink needs from its connection. */
export interface SinkOptions {
  session: McplSession;
  router: ReplyRouter;
  attribute: boolean;
  images: ImageInliner | undefined;
  logger: Logger;
}

function codeOf(err: unknown): string {
  return errorCode(err) ?? 'UNKNOWN';
}

/**
 * The delivery engine's sink on one MCPL connection: `incoming` → `channels/incoming` with the
 * host's per-item acceptance, `push` → `push/event` (accepted or duplicate counts as delivered),
 * `announce` → `channels/register` the first time and `channels/changed` after. Nothing is sent
 * while `zulip.messaging` is disabled: the engine holds it and offers it again later.
 */
export class McplSink implements DeliverySink {
  readonly #o: SinkOptions;
  #registered = false;
  readonly #inflight = new Map<string, Promise<unknown>>();

  constructor(options: SinkOptions) {
    this.#o = options;
  }

  /** Waits until the host has the channel's open answer, so no live message overtakes its history. */
  async #opened(channelId: string, signal: AbortSignal): Promise<void> {
    const session = this.#o.session;
    if (session.isChannelOpen(channelId)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        off();
        offClose();
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const off = session.on('channelOpened', (channel) => {
        if (channel.id === channelId) done();
      });
      const offClose = session.on('close', done);
      const timer = setTimeout(done, OPEN_WAIT_MS);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  async #images(item: DeliveryItem, signal: AbortSignal): Promise<ContentBlock[]> {
    return this.#o.images === undefined ? [] : inlineImages(this.#o.images, item, signal);
  }

  /**
   * Resolves once the offers in flight on a channel are answered (or after a short wait): a publish
   * right after the host accepted a message goes to that message's topic, not an older one.
   */
  async settled(channelId: string): Promise<void> {
    const pending = this.#inflight.get(channelId);
    if (pending === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      pending.catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, SETTLE_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
  }

  #track<T>(channelId: string, work: Promise<T>): Promise<T> {
    this.#inflight.set(channelId, work);
    const clear = () => {
      if (this.#inflight.get(channelId) === work) this.#inflight.delete(channelId);
    };
    work.then(clear, clear);
    return work;
  }

  incoming(batch: IncomingBatch, signal: AbortSignal): Promise<IncomingOutcome> {
    return this.#track(batch.channel.id, this.#incoming(batch, signal));
  }

  push(event: PushEvent, signal: AbortSignal): Promise<PushOutcome> {
    return this.#track(event.channel.id, this.#push(event, signal));
  }

  async #incoming(batch: IncomingBatch, signal: AbortSignal): Promise<IncomingOutcome> {
    const { session, attribute } = this.#o;
    if (!session.isFeatureSetEnabled(MESSAGING))
      return { kind: 'refused', reason: `${MESSAGING} is not enabled` };
    // The common case goes out in the same turn: no wait for an open, no image to fetch.
    const images =
      this.#o.images !== undefined && batch.items.some((item) => item.tags.includes('chat:has-image'));
    if (session.isChannelOpen(batch.channel.id) && !images) {
      return this.#offer(
        batch,
        batch.items.map((item) => channelMessage(item, attribute)),
      );
    }
    await this.#opened(batch.channel.id, signal);
    const messages = await Promise.all(
      batch.items.map(async (item) => channelMessage(item, attribute, await this.#images(item, signal))),
    );
    return this.#offer(batch, messages);
  }

  async #offer(batch: IncomingBatch, messages: ChannelMessage[]): Promise<IncomingOutcome> {
    const { session, router } = this.#o;
    let outcomes: Awaited<ReturnType<McplSession['incoming']>>;
    try {
      outcomes = await session.incoming(messages);
    } catch (err) {
      return { kind: 'refused', reason: codeOf(err) };
    }
    const accepted: string[] = [];
    let answered = false;
    outcomes.forEach((outcome, index) => {
      if (outcome.status === 'unanswered') return;
      answered = true;
      if (outcome.status !== 'accepted') return;
      accepted.push(outcome.messageId);
      router.accepted(batch.channel, batch.items[index] as DeliveryItem, outcome.conversationId);
    });
    if (!answered) return { kind: 'lost', reason: outcomes[0]?.reason ?? 'no answer' };
    return { kind: 'answered', accepted };
  }

  async #push(event: PushEvent, signal: AbortSignal): Promise<PushOutcome> {
    const { session, router, attribute } = this.#o;
    if (!session.isFeatureSetEnabled(MESSAGING)) {
      return { kind: 'answered', accepted: false, reason: `${MESSAGING} is not enabled` };
    }
    const item = event.kind === 'missed' ? undefined : event.items[0];
    const text = item === undefined ? event.text : itemText(item, attribute);
    const images = item === undefined ? [] : await this.#images(item, signal);
    const origin: JsonObject = { source: 'zulip', channelId: event.channel.id, kind: event.kind };
    if (item !== undefined) {
      origin.zulipMessageId = item.messageId;
      if (item.kind === 'message' && item.topic !== undefined) origin.threadId = item.topic;
      if (attribute) {
        origin.attributed = true;
        origin.attributionHeader = item.head;
      }
    }
    if (event.missed !== undefined) {
      origin.missed = {
        throughId: event.missed.throughId,
        messages: event.missed.messages,
        shown: event.missed.shown,
        wasOpen: event.missed.wasOpen,
      };
    }
    let outcome: Awaited<ReturnType<McplSession['pushEvent']>>;
    try {
      outcome = await session.pushEvent({
        featureSet: MESSAGING,
        eventId: event.eventId,
        timestamp: event.timestamp,
        content: [{ type: 'text', text }, ...images],
        tags: [...event.tags],
        origin,
      });
    } catch (err) {
      return { kind: 'answered', accepted: false, reason: codeOf(err) };
    }
    if (outcome.status === 'unanswered') return { kind: 'lost', reason: outcome.reason ?? 'no answer' };
    const accepted = outcome.status === 'accepted' || outcome.status === 'duplicate';
    if (accepted && item !== undefined) router.accepted(event.channel, item);
    return {
      kind: 'answered',
      accepted,
      ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
    };
  }

  async announce(change: ChannelAnnouncement): Promise<AnnounceOutcome> {
    const session = this.#o.session;
    const added = change.added.map(mcplChannel);
    let outcome: Awaited<ReturnType<McplSession['registerChannels']>>;
    try {
      if (!this.#registered && added.length > 0) {
        this.#registered = true;
        outcome = await session.registerChannels(added);
      } else {
        outcome = await session.announceChannels({ added, removed: change.removed });
      }
    } catch (err) {
      this.#o.logger.debug('channels not announced', { code: codeOf(err) });
      return { kind: 'lost', reason: codeOf(err) };
    }
    return {
      kind: 'answered',
      results: [
        ...outcome.accepted.map((id) => ({ id, accepted: true })),
        ...outcome.refused.map((r) => ({
          id: r.id,
          accepted: false,
          ...(r.reason === undefined ? {} : { reason: r.reason }),
        })),
      ],
    };
  }
}
