// The engine under fault: a child process the schedule kills at random points. It serves one
// session from a state directory, hands every offer to the parent (the host) over IPC and
// waits for its answer; it tells the parent when a state write starts and when one is done.
// Usage: node --import tsx --conditions @zmcp/source child.ts  (configuration on IPC).
import { pathToFileURL } from 'node:url';
import { AccessPolicy, ZulipClient } from '@zmcp/core';
import {
  type ChannelAnnouncement,
  DeliveryEngine,
  type DeliverySink,
  FileStateStore,
  type IncomingBatch,
  type IncomingOutcome,
  MemoryFiltersPlane,
  type OpenEventSource,
  type PushEvent,
  type PushOutcome,
  type StateKey,
  type StateStore,
} from '@zmcp/delivery';
import type { ChildConfig, ChildMessage, ParentMessage, WireItem } from './protocol.js';

function send(message: ChildMessage): void {
  process.send?.(message);
}

const pending = new Map<number, (answer: unknown) => void>();
let next = 0;

type Offer = Extract<ChildMessage, { n: number }>;
type Unnumbered = Offer extends infer O ? (O extends Offer ? Omit<O, 'n'> : never) : never;

function ask<T>(message: Unnumbered, signal: AbortSignal): Promise<T> {
  const n = next++;
  return new Promise<T>((resolve, reject) => {
    pending.set(n, resolve as (answer: unknown) => void);
    signal.addEventListener(
      'abort',
      () => {
        pending.delete(n);
        reject(new Error('aborted'));
      },
      { once: true },
    );
    send({ ...message, n } as ChildMessage);
  });
}

const wire = (items: IncomingBatch['items']): WireItem[] =>
  items.map((i) => ({ id: i.id, kind: i.kind, messageId: i.messageId, channelId: i.channelId }));

const sink: DeliverySink = {
  incoming: (batch: IncomingBatch, signal) =>
    ask<IncomingOutcome>({ t: 'incoming', channelId: batch.channel.id, items: wire(batch.items) }, signal),
  push: (event: PushEvent, signal) =>
    ask<PushOutcome>(
      {
        t: 'push',
        kind: event.kind,
        eventId: event.eventId,
        channelId: event.channel.id,
        items: wire(event.items),
        elided: event.missed?.elided?.count ?? 0,
      },
      signal,
    ),
  announce: async (change: ChannelAnnouncement) => ({
    kind: 'answered',
    results: change.added.map((d) => ({ id: d.id, accepted: true })),
  }),
};

/** What a store module (`config.store.module`) opens: a fleet's backend, say. */
interface OtherStore {
  store: StateStore;
  events?: ((client: ZulipClient) => OpenEventSource | undefined) | undefined;
}

async function openOtherStore(spec: NonNullable<ChildConfig['store']>): Promise<OtherStore> {
  const mod = (await import(pathToFileURL(spec.module).href)) as {
    openFaultStore(options: Record<string, unknown>): Promise<OtherStore>;
  };
  return mod.openFaultStore(spec.options);
}

async function run(config: ChildConfig): Promise<void> {
  const client = new ZulipClient({
    site: config.site,
    email: config.email,
    apiKey: config.apiKey,
    timeoutMs: 10_000,
    retry: { baseDelayMs: 5, maxDelayMs: 50, maxAttempts: 6 },
  });
  const other = config.store === undefined ? undefined : await openOtherStore(config.store);
  const files: StateStore =
    other?.store ??
    new FileStateStore({
      dir: config.dir,
      fs: {
        open: async (path, flags, mode) => {
          const { open } = await import('node:fs/promises');
          if (flags === 'wx') send({ t: 'writing' });
          return open(path, flags, mode);
        },
      },
    });
  // Every completed write is reported with what it holds: the parent learns what is durable.
  const store: StateStore = {
    read: files.read.bind(files),
    update: files.update.bind(files),
    delete: files.delete.bind(files),
    async write<T>(key: StateKey, value: T): Promise<void> {
      if (other !== undefined) send({ t: 'writing' });
      await files.write(key, value);
      send({ t: 'flushed', state: value as never });
    },
    ...(files.lock === undefined ? {} : { lock: files.lock.bind(files) }),
  };
  const engine = new DeliveryEngine({
    client,
    policy: new AccessPolicy({ readOnly: false, privateStreams: '__ALL__' }),
    store,
    session: 'fault',
    filters: new MemoryFiltersPlane({}),
    sink,
    events: other?.events?.(client),
    offerTimeoutMs: config.offerTimeoutMs,
    announceTimeoutMs: 200,
    retry: { initialMs: 5, maxMs: 40 },
    catchUp: { maxMessages: 100_000, maxBytes: 100_000_000 },
    recentDms: 0,
    queue: { backoff: { initialMs: 5, maxMs: 40 }, longPollTimeoutMs: 5_000 },
    ...(process.env.FAULT_DEBUG === undefined
      ? {}
      : {
          logger: {
            debug: (m: string, f?: unknown) => process.stderr.write(`D ${m} ${JSON.stringify(f)}\n`),
            info: (m: string, f?: unknown) => process.stderr.write(`I ${m} ${JSON.stringify(f)}\n`),
            warn: (m: string, f?: unknown) => process.stderr.write(`W ${m} ${JSON.stringify(f)}\n`),
            error: (m: string, f?: unknown) => process.stderr.write(`E ${m} ${JSON.stringify(f)}\n`),
          },
        }),
  });
  process.on('message', (raw) => {
    const message = raw as ParentMessage;
    if (message.t === 'answer') {
      pending.get(message.n)?.(message.outcome);
      pending.delete(message.n);
    } else if (message.t === 'stop') {
      void engine.close().then(
        () => {
          send({ t: 'closed' });
          process.exit(0);
        },
        (err: unknown) => {
          send({ t: 'failed', error: String(err) });
          process.exit(1);
        },
      );
    }
  });
  const report = await engine.start({ open: config.open, waitForLock: config.waitForLock === true });
  send({ t: 'ready', missedBlocks: [...report.missedBlocks] });
}

process.once('message', (raw) => {
  const message = raw as ParentMessage;
  if (message.t !== 'config') return;
  run(message.config).catch((err: unknown) => {
    send({
      t: 'failed',
      error: err instanceof Error ? `${err.message} ${(err as { code?: string }).code}` : String(err),
    });
    process.exit(1);
  });
});
