import { DeliveryEngine } from '@zmcp/delivery';
import type { McplSession } from '@zmcp/mcpl';
import { attentionCatalog, type BoundTool, selectTools, ToolHost } from '@zmcp/tools';
import { ReplyRouter } from './routing.js';
import type { Runtime } from './runtime-types.js';
import { McplSink, MESSAGING } from './sink.js';

/**
 * One host connection: its tool hosts (the call contract, one per session), its reply routing,
 * and, once the host's grant is in force, its delivery engine. The engine lives and dies with the
 * connection; its watermarks are durable, so the next connection catches up from them.
 */
export class Connection {
  readonly session: McplSession;
  readonly router = new ReplyRouter();
  readonly engine: DeliveryEngine;
  readonly sink: McplSink;
  readonly #runtime: Runtime;
  #plain: ToolHost | undefined;
  #live: ToolHost | undefined;
  #started: Promise<void> | undefined;
  #closed: Promise<void> | undefined;

  constructor(runtime: Runtime, session: McplSession, previous: Promise<void>) {
    this.#runtime = runtime;
    this.session = session;
    const { config, logger } = runtime;
    this.sink = new McplSink({
      session,
      router: this.router,
      attribute: config.attributeDelivery,
      images: config.inlineImages
        ? { client: runtime.client, maxBytes: runtime.services.maxFileBytes, logger }
        : undefined,
      logger,
    });
    this.engine = new DeliveryEngine({
      client: runtime.client,
      policy: runtime.policy,
      store: runtime.store,
      account: runtime.account,
      session: config.sessionId,
      events: runtime.events,
      // A standby of a fleet (PostgreSQL) tries the session's lock every second at most.
      lockRetryMaxMs: runtime.events === undefined ? undefined : 1_000,
      filters: runtime.filters,
      sink: this.sink,
      timeStyle: config.timestampStyle,
      timeZone: config.timezone,
      catchUp: { maxMessages: config.catchUpLimit },
      markRead: config.markRead,
      admission: runtime.admission,
      onProgress: runtime.onProgress,
      logger,
    });
    session.on('close', () => void this.close());
    // A grant that enables messaging again: what waited out a backoff is offered at once.
    session.on('policy', () => {
      if (session.isFeatureSetEnabled(MESSAGING)) this.engine.retryNow();
    });
    this.#started = this.#start(previous);
  }

  /** Resolves once delivery has started (or will not: a plain MCP client, a failed start). */
  get started(): Promise<void> {
    return this.#started ?? Promise.resolve();
  }

  async #start(previous: Promise<void>): Promise<void> {
    const { logger } = this.#runtime;
    const ready = await this.session.whenReady();
    if (!ready) return;
    // The last connection's engine writes its state before this one reads it.
    await previous;
    if (this.session.isClosed) return;
    try {
      // A server that replaces one still stopping waits for its state rather than going without.
      const report = await this.engine.start({ waitForLock: true });
      logger.info('live delivery started', {
        channels: report.channels.length,
        missedBlocks: report.missedBlocks.length,
        ...(report.swept === undefined ? {} : { swept: `${report.swept.afterId}-${report.swept.throughId}` }),
      });
    } catch (err) {
      if (this.session.isClosed) return;
      logger.error('live delivery could not start; tools still work', { err });
    }
  }

  /** The call contract for this connection: the realm tools, and on MCPL the attention tools too. */
  toolHost(): ToolHost {
    const { runtime, tools } = { runtime: this.#runtime, tools: this.#runtime.tools };
    const options = {
      deadlineMs: runtime.config.toolDeadlineMs,
      logger: runtime.logger,
    };
    if (!this.session.isMcpl) {
      this.#plain ??= new ToolHost(tools, options);
      return this.#plain;
    }
    if (this.#live === undefined) {
      const attention: BoundTool[] = selectTools(attentionCatalog(runtime.services, this.engine), {
        toolsets: runtime.config.toolsets,
        readOnly: false,
      });
      this.#live = new ToolHost([...tools, ...attention], options);
    }
    return this.#live;
  }

  /** Stops delivery (offers in flight stay unaccepted and are offered again next time). */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      await this.#started?.catch(() => undefined);
      await this.engine
        .close()
        .catch((err: unknown) => this.#runtime.logger.warn('delivery state not written', { err }));
    })();
    return this.#closed;
  }
}
