import type { CallToolResult, Transport } from '@modelcontextprotocol/server';
import {
  type CallOptions,
  type Credentials,
  checkEmojiName,
  createStreamLookup,
  escapeMsgAttr,
  isZmcpError,
  type Logger,
  noopLogger,
  readMessage,
  type StreamInfo,
  sameStreamName,
} from '@zmcp/core';
import {
  CORE_TAGS,
  dmChannelId,
  type FiltersPlane,
  isDeliveryError,
  parseChannelId,
  streamChannelId,
  TAGS,
  type ChannelDescriptor as ZulipChannel,
} from '@zmcp/delivery';
import {
  type ChannelOpenRequest,
  type FeatureSetDeclaration,
  type JsonObject,
  McplError,
  McplRpcCode,
  McplServer,
  type McplSession,
  rpcError,
  withCheckpoint,
} from '@zmcp/mcpl';
import {
  addDeliveryPanel,
  addToolCallPanel,
  callMcpTool,
  deliveryProgress,
  type FleetWatch,
  instructionLines,
  listMcpTools,
  type OperatorConsole,
  openZulipRuntime,
  watchFleet,
  watchQueueOwner,
  type ZulipRuntime,
} from '@zmcp/server-kit';
import {
  attentionTools,
  type BoundTool,
  createCatalog,
  selectTools,
  type ToolIdentity,
  toMcpResult,
} from '@zmcp/tools';
import { binName, type McplConfig } from './config.js';
import { Connection } from './connection.js';
import { publishTo } from './publish.js';
import { CHANNEL_TYPE, channelMessage, MAX_OPEN_HISTORY, mcplChannel } from './render.js';
import { rollBack } from './rollback.js';
import type { Runtime } from './runtime-types.js';
import { SentLog } from './sent-log.js';
import { MESSAGING } from './sink.js';
import { packageVersion } from './version.js';
import { checkChannelWrite, writeTargetOf } from './write-policy.js';

/** The read tools' feature set, and the context hook's. */
export const HISTORY = 'zulip.history';
export const CONTEXT = 'zulip.context';

/** The tools whose results carry a message the agent sent (recorded for rollback). */
const SENDING_TOOLS = new Set(['send_message', 'send_dm']);
/** Most bytes of recent history injected before one inference, all open channels together. */
const CONTEXT_BUDGET_BYTES = 24_000;
/** Most open channels whose history is injected. */
const CONTEXT_CHANNELS = 8;

const FEATURE_SETS: Readonly<Record<string, FeatureSetDeclaration>> = {
  [MESSAGING]: {
    description:
      'Zulip streams and DMs as channels: live messages on open channels, mentions and DMs pushed from closed ones, catch-up after downtime, publishing, typing, acknowledgement, the send and attention tools, rollback of what was sent',
    // What messaging cannot work without. channels/acknowledge and channels/typing are served
    // whenever the grant holds them (§14.1 authorizes channel methods per method): a host that
    // never acknowledges, as agent-framework 0.1.0, still gets its channels and deliveries.
    uses: [
      'channels.register',
      'channels.lifecycle',
      'channels.publish',
      'channels.incoming',
      'pushEvents',
      'tools',
    ],
    rollback: true,
    tagOntology: {
      coreTags: [...CORE_TAGS],
      tags: {
        [TAGS.missed]: { desc: 'A catch-up block of what arrived while the agent was away' },
        [TAGS.moved]: { desc: 'A message moved to another topic or stream' },
      },
    },
  },
  [HISTORY]: { description: 'The Zulip read tools: history, search, streams, users', uses: ['tools'] },
  [CONTEXT]: {
    description: 'Recent history of the open channels injected before each inference',
    uses: ['contextHooks.beforeInference.inject.beforeUser'],
  },
};

/** What the model is told at `initialize`: the lines every zmcp server opens with, then publishing. */
function instructionsFor(identity: ToolIdentity, tools: readonly BoundTool[]): string {
  const served = new Set(tools.map((t) => t.definition.name));
  return [
    ...instructionLines(identity, (tool) => served.has(tool)),
    'A reply published to a channel goes to the topic of the message you are answering.',
  ].join('\n');
}

/** A running zulip-mcpl: the MCPL server and what its connections share. */
export interface ZulipMcpl {
  readonly server: McplServer;
  readonly identity: ToolIdentity;
  /** The filters plane (its file is hot-reloaded; subscribe to hear of reloads). */
  readonly filters: FiltersPlane;
  /** Serves one host connection; resolves once it is connected. */
  serve(transport: Transport): Promise<McplSession>;
  /** The connection of a session (while it is open). */
  connection(session: McplSession): Connection | undefined;
  /** Closes every connection, the filters plane and the client. */
  close(): Promise<void>;
}

/** Options of {@link createZulipMcpl}. */
export interface ZulipMcplOptions {
  config: McplConfig;
  logger?: Logger | undefined;
  /** The account's credentials; default: loaded as configured (variables, then the zuliprc). */
  credentials?: Credentials | undefined;
  /**
   * The process's operator console (`runServer`'s): it gets the tool-call and delivery panels and
   * metrics, and the catch-up and re-registration sweeps as progress. Default: none.
   */
  console?: OperatorConsole | undefined;
}

/**
 * Builds zulip-mcpl from its configuration: the Zulip runtime (`@zmcp/server-kit`'s
 * `openZulipRuntime`: the one client with every call under `ZULIP_REQUEST_TIMEOUT_MS`, the account
 * and the realm's limits, the access policy, the tool services, the state store), the tool catalog,
 * the filters plane (created from the environment on first start; an invalid file stops start-up),
 * and the MCPL server with feature sets `zulip.messaging`, `zulip.history` and `zulip.context`.
 *
 * @throws the core codes for credentials and the realm (`CORE_CONFIG_INVALID`, `CORE_UNAUTHORIZED`,
 *   request codes), `UPLOAD_ROOT_MISSING`, `DELIVERY_FILTERS_INVALID`, `DELIVERY_IO_FAILED`.
 */
export async function createZulipMcpl(options: ZulipMcplOptions): Promise<ZulipMcpl> {
  const { config } = options;
  const logger = options.logger ?? noopLogger;
  const zulip = await openZulipRuntime({ settings: config, logger, credentials: options.credentials });
  let filters: FiltersPlane | undefined;
  try {
    // A file (ZULIP_FILTERS_FILE, or the session's in the account's folder) or, with
    // ZULIP_STATE_URL, the session's row in PostgreSQL, hot-reloaded in every process.
    filters = await zulip.backend.openFilters({
      account: zulip.account,
      session: config.sessionId,
      seed: config.filters.seed,
      baseline: config.filters.baseline,
      file: config.filtersFile,
    });
    filters.subscribe((event) => {
      if (event.kind === 'stale')
        logger.warn('the filters file is broken; the last good filters stay in force', {
          reason: event.reason,
        });
      else logger.info('filters reloaded', { revision: event.revision, source: event.source });
    });
    logger.info('filters in force', {
      file:
        config.filtersFile ??
        zulip.backend.locationOf({ account: zulip.account, session: config.sessionId, kind: 'filters' }),
    });
    const runtime: Runtime = {
      config,
      logger,
      client: zulip.client,
      policy: zulip.policy,
      admission: zulip.admission,
      services: zulip.services,
      tools: selectTools(createCatalog(zulip.services), { toolsets: config.toolsets, readOnly: false }),
      // Watermarks are message ids, which mean something on one realm only: state is kept per realm and bot.
      store: zulip.store,
      account: zulip.account,
      events: zulip.events,
      filters,
      sent: new SentLog(),
      onProgress: options.console === undefined ? undefined : deliveryProgress(options.console),
    };
    // With ZULIP_STATE_URL: this process in the fleet's registry, the fleet on the process panel.
    const fleet =
      options.console === undefined
        ? undefined
        : await watchFleet(options.console, {
            backend: zulip.backend,
            bin: binName,
            queues: [{ account: zulip.account, bot: zulip.identity.email }],
          });
    return assemble(runtime, zulip, filters, options.console, fleet);
  } catch (err) {
    await filters?.close().catch(() => undefined);
    await zulip.close();
    throw err;
  }
}

function assemble(
  runtime: Runtime,
  zulip: ZulipRuntime,
  filters: FiltersPlane,
  operatorConsole: OperatorConsole | undefined,
  fleet: FleetWatch | undefined,
): ZulipMcpl {
  const { config, logger, client, policy, services } = runtime;
  const { identity } = zulip;
  const connections = new WeakMap<McplSession, Connection>();
  const open = new Set<Connection>();
  const observe = operatorConsole === undefined ? undefined : addToolCallPanel(operatorConsole);
  // With ZULIP_STATE_URL the bot's event queue may be owned by another process of the fleet.
  const queueOwner = operatorConsole === undefined ? undefined : watchQueueOwner(zulip);
  if (operatorConsole !== undefined) {
    addDeliveryPanel(operatorConsole, {
      owner: queueOwner?.label,
      // One host delivers at a time: the newest connection whose engine started.
      snapshot: () =>
        [...open]
          .reverse()
          .find((c) => c.engine.status().state !== 'idle')
          ?.engine.snapshot(),
      idleText: 'No host is connected: live delivery starts when one is (its watermarks are kept).',
    });
  }
  let previous: Promise<void> = Promise.resolve();

  const connectionOf = (session: McplSession): Connection => {
    const conn = connections.get(session);
    if (conn === undefined) throw new McplError('MCPL_CLOSED', 'the connection is not served here');
    return conn;
  };
  // Sending, editing and attention tools run under zulip.messaging (and mint checkpoints); reads under zulip.history.
  const featureSets = new Map<string, string>();
  for (const t of runtime.tools) featureSets.set(t.definition.name, t.definition.write ? MESSAGING : HISTORY);
  for (const d of attentionTools) featureSets.set(d.name, MESSAGING);

  /**
   * The channel a `channels/open` names (by id, or by `{type, address}`), made ready to open: a
   * stream the bot can see but is not in is joined first, since Zulip sends stream events only to
   * subscribers. A stream that does not exist, one the bot cannot see and one the access policy
   * keeps closed get one and the same answer (`-32023`, the library's own for an unknown channel):
   * a refusal tells nothing of what it refused, as core's read gate does. Joining is a write in the
   * stream, so core's write check decides it (`-32017`); nothing unknown is ever subscribed to
   * (subscribing to a name that does not exist would create it), and one Zulip answers under
   * `unauthorized` is `-32024`.
   */
  const prepareOpen = async (
    conn: Connection,
    request: ChannelOpenRequest,
    call: CallOptions,
  ): Promise<string> => {
    const unknown = () =>
      new McplError('MCPL_UNKNOWN_CHANNEL', 'no channel this server may read is named so');
    const named = request.channel?.id ?? request.channelId;
    // What the engine registered (only what the policy lets it read) opens as it is.
    if (named !== undefined && conn.engine.channels().some((c) => c.channel.id === named)) return named;
    const address = request.address as JsonObject | undefined;
    const byAddress =
      named === undefined &&
      request.type === CHANNEL_TYPE &&
      typeof address === 'object' &&
      address !== null &&
      !Array.isArray(address)
        ? address
        : undefined;
    if (byAddress !== undefined && Array.isArray(byAddress.userIds)) {
      if (!byAddress.userIds.every((u) => typeof u === 'number')) throw unknown();
      return dmChannelId(byAddress.userIds as number[]);
    }
    let match: (stream: StreamInfo) => boolean;
    if (named !== undefined) {
      let parsed: ReturnType<typeof parseChannelId>;
      try {
        parsed = parseChannelId(named);
      } catch {
        throw unknown();
      }
      // DM channels: the engine decides (DMs are read only with ZULIP_PRIVATE_STREAMS=__ALL__).
      if (parsed.kind === 'dm') return named;
      const { name } = parsed;
      match = (stream) => sameStreamName(stream.name, name);
    } else if (byAddress !== undefined && typeof byAddress.streamId === 'number') {
      const streamId = byAddress.streamId;
      const known = conn.engine.channels().find((c) => c.channel.streamId === streamId);
      if (known !== undefined) return known.channel.id;
      match = (stream) => stream.stream_id === streamId;
    } else {
      throw unknown();
    }
    services.directory.invalidate('streams');
    services.directory.invalidate('subscriptions');
    const [streams, subscriptions] = await Promise.all([
      services.directory.streams(call),
      services.directory.subscriptions(call),
    ]);
    const stream = [...subscriptions, ...streams].find(match);
    if (stream === undefined || !policy.canReadStream(stream.stream_id, createStreamLookup([stream]))) {
      throw unknown();
    }
    const channelId = streamChannelId(stream.name);
    if (subscriptions.some((s) => s.stream_id === stream.stream_id)) return channelId;
    // Joining a stream is something the bot does in it: the write policy decides, as for the subscribe tool.
    await checkChannelWrite(runtime, { stream: stream.stream_id }, channelId, call);
    const res = await client.subscribe(
      { subscriptions: [{ name: stream.name }], authorizationErrorsFatal: false },
      call,
    );
    services.directory.invalidate('subscriptions');
    if ((res.unauthorized ?? []).some((n) => sameStreamName(n, stream.name))) {
      throw rpcError(
        McplRpcCode.ChannelOpenFailed,
        `Zulip refused to subscribe the bot to ${channelId} (a private stream it was not invited to); nothing was opened`,
        { channelId },
      );
    }
    return channelId;
  };

  const deliveryChannel = (conn: Connection, channelId: string): ZulipChannel => {
    const info = conn.engine.channels().find((c) => c.channel.id === channelId);
    if (info === undefined) throw rpcError(McplRpcCode.UnknownChannel, undefined, { channelId });
    return info.channel;
  };

  const server = new McplServer({
    name: 'zulip-mcpl',
    version: packageVersion(),
    instructions: instructionsFor(identity, runtime.tools),
    capabilities: {
      pushEvents: true,
      contextHooks: { beforeInference: { inject: { beforeUser: true } } },
      channels: {
        register: true,
        lifecycle: true,
        publish: true,
        incoming: true,
        acknowledge: true,
        typing: true,
      },
    },
    featureSets: FEATURE_SETS,
    legacyHosts: config.legacyHosts,
    logger,
    mcp: {
      // Each connection's state exists before its first message is read.
      setup: (_sdk, session) => {
        const conn = new Connection(runtime, session, previous);
        connections.set(session, conn);
        open.add(conn);
        previous = new Promise<void>((resolve) => {
          session.on('close', () => {
            void conn.close().then(() => {
              open.delete(conn);
              resolve();
            });
          });
        });
      },
    },
    tools: {
      list: ({ session }) => listMcpTools(connectionOf(session).toolHost()),
      featureSet: (name) => featureSets.get(name),
      call: async (params, context) => {
        const host = connectionOf(context.session).toolHost();
        const outcome = await callMcpTool(host, params, context.extra, {
          observe,
          // MCPL and its plain-MCP hosts speak the 2025 era.
          caller: { era: 'legacy', client: context.session.hostInfo?.name ?? 'unknown' },
        });
        if (!outcome.isError && SENDING_TOOLS.has(params.name)) {
          const { message_id: id, stream_id: streamId, recipient_ids: recipients } = outcome.structured;
          // Where it went: send_message gives its stream's id, send_dm its recipients.
          const sentTo = Array.isArray(recipients)
            ? { dm: recipients.filter((u): u is number => typeof u === 'number') }
            : { stream: typeof streamId === 'number' ? streamId : String(streamId) };
          if (typeof id === 'number') runtime.sent.record(id, sentTo);
        }
        const result: CallToolResult = toMcpResult(outcome);
        if (outcome.isError || !context.session.isMcpl || context.featureSet !== MESSAGING) return result;
        return withCheckpoint(result, context.checkpoint({ sent: runtime.sent.mark }));
      },
    },
    channels: {
      open: async (request, { session, signal }) => {
        const conn = connectionOf(session);
        const call: CallOptions = { signal };
        const channelId = await prepareOpen(conn, request, call);
        const limit = Math.min(Math.max(0, Math.floor(request.history?.limit ?? 0)), MAX_OPEN_HISTORY);
        try {
          const opened = await conn.engine.openChannel(channelId, { backscroll: limit });
          const history = opened.backscroll.map((item) => channelMessage(item, config.attributeDelivery));
          return { channel: mcplChannel(opened.channel), history };
        } catch (err) {
          if (isDeliveryError(err, 'DELIVERY_UNKNOWN_CHANNEL', 'DELIVERY_INVALID_ARGUMENT')) {
            throw new McplError('MCPL_UNKNOWN_CHANNEL', (err as Error).message);
          }
          throw err;
        }
      },
      close: async (channel, { session }) => {
        await connectionOf(session).engine.closeChannel(channel.id);
      },
      publish: async ({ channel, conversationId, content }, { session, signal }) => {
        const conn = connectionOf(session);
        await conn.sink.settled(channel.id);
        return publishTo(
          runtime,
          conn.router,
          deliveryChannel(conn, channel.id),
          { conversationId, content },
          signal,
        );
      },
      acknowledge: async ({ channel, messageId, value }, { session, signal }) => {
        const conn = connectionOf(session);
        if (!/^[1-9][0-9]{0,15}$/.test(messageId)) return { acknowledged: false, reason: 'not a message id' };
        const id = Number(messageId);
        const call: CallOptions = { signal };
        const target = deliveryChannel(conn, channel.id);
        // A reaction is a write in the message's conversation: the one the channel names (checked below).
        await checkChannelWrite(runtime, writeTargetOf(target), channel.id, call);
        let emoji = config.ackEmoji;
        if (value !== undefined) {
          try {
            emoji = checkEmojiName(value);
          } catch {
            return { acknowledged: false, reason: 'not an emoji name' };
          }
        }
        const message = await readMessage(client, policy, id, {
          streams: await services.directory.streamLookup(call),
          call,
        }).catch(() => undefined);
        const here =
          message !== undefined &&
          (target.kind === 'stream'
            ? message.stream_id === target.streamId
            : Array.isArray(message.display_recipient));
        if (!here) return { acknowledged: false, reason: 'no such message on this channel' };
        try {
          await client.addReaction(id, { emojiName: emoji }, call);
        } catch (err) {
          // Already there: the acknowledgement stands.
          if (!isZmcpError(err, 'CORE_BAD_REQUEST')) throw err;
        }
        return { acknowledged: true, representation: `reaction:${emoji}` };
      },
      typing: async ({ channel, params }, { session, signal }) => {
        const conn = connectionOf(session);
        await conn.sink.settled(channel.id);
        const target = conn.router.target(
          deliveryChannel(conn, channel.id),
          typeof params.conversationId === 'string' ? params.conversationId : undefined,
        );
        if (target === undefined) return;
        await checkChannelWrite(runtime, writeTargetOf(target), channel.id, { signal });
        const stop = params.state === 'stop' || params.typing === false || params.active === false;
        const op = stop ? 'stop' : 'start';
        await client.setTyping(
          target.kind === 'stream'
            ? { op, type: 'stream', streamId: target.streamId, topic: target.topic }
            : { op, type: 'direct', to: target.userIds },
          { signal },
        );
      },
    },
    beforeInference: async (params, { session }) => {
      if (config.contextMessages === 0 || !session.isFeatureSetEnabled(CONTEXT)) return undefined;
      const conn = connectionOf(session);
      const incoming = (params.channels as { incoming?: { channelId?: unknown } } | undefined)?.incoming
        ?.channelId;
      const ids = session
        .channels()
        .filter((c) => c.open)
        .map((c) => c.descriptor.id)
        .sort((a, b) => (a === incoming ? -1 : b === incoming ? 1 : 0))
        .slice(0, CONTEXT_CHANNELS);
      if (ids.length === 0) return undefined;
      const blocks = await Promise.all(
        ids.map(async (id) => {
          const items = await conn.engine.recent(id, config.contextMessages).catch(() => []);
          return { id, lines: items.map((i) => i.text) };
        }),
      );
      let budget = CONTEXT_BUDGET_BYTES;
      const parts: string[] = [];
      for (const block of blocks) {
        if (block.lines.length === 0) continue;
        const kept: string[] = [];
        for (let i = block.lines.length - 1; i >= 0; i--) {
          const cost = Buffer.byteLength(block.lines[i] as string) + 1;
          if (cost > budget) break;
          budget -= cost;
          kept.unshift(block.lines[i] as string);
        }
        if (kept.length === 0) break;
        parts.push(
          `<recent channel="${escapeMsgAttr(block.id)}" messages="${kept.length}">\n${kept.join('\n')}\n</recent>`,
        );
      }
      if (parts.length === 0) return undefined;
      return {
        featureSet: CONTEXT,
        contextInjections: [{ namespace: 'zulip', position: 'beforeUser', content: parts.join('\n') }],
      };
    },
    rollback: async ({ checkpoint }, { session, signal }) => {
      const data = checkpoint.data as { sent?: unknown } | undefined;
      const mark = typeof data?.sent === 'number' ? data.sent : undefined;
      if (mark === undefined) return { success: false, reason: 'the checkpoint carries no send mark' };
      return rollBack(runtime, connections.get(session)?.engine, mark, signal);
    },
  });

  return {
    server,
    identity,
    filters,
    serve: (transport) => server.connect(transport),
    connection: (session) => connections.get(session),
    async close() {
      queueOwner?.close();
      await fleet?.close();
      await server.close();
      await Promise.all([...open].map((c) => c.close()));
      await filters.close();
      await zulip.close();
    },
  };
}
