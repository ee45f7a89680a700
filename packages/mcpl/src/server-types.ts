import type {
  CallToolRequest,
  CallToolResult,
  Server,
  ServerCapabilities,
  ServerContext,
  Tool,
} from '@modelcontextprotocol/server';
import type { CheckpointRecord, CheckpointState } from './checkpoints.js';
import type { FeatureSetDeclaration } from './feature-sets.js';
import type { JsonObject, JsonValue } from './json.js';
import type { McplLogger } from './logger.js';
import type { FeatureSetsForm, McplCapabilities } from './manifest.js';
import type { McplSession } from './session.js';
import type { ChannelDescriptor, ChannelHistoryRequest, ChannelMessage, ContentBlock } from './wire.js';

/**
 * The SDK's per-request handler context (`ServerContext` of `@modelcontextprotocol/server`):
 * `mcpReq.id`, the cancel signal `mcpReq.signal`, `mcpReq._meta` (with a `progressToken`), and
 * `mcpReq.notify` for progress notifications.
 */
export type RequestExtra = ServerContext;

/** What every hook is handed. */
export interface HookContext {
  /** The connection the request arrived on. */
  session: McplSession;
  /**
   * Fires while the request is being handled when the peer cancels it, the connection closes, or
   * the library's own deadline passes; once the request is answered it no longer fires.
   */
  signal: AbortSignal;
}

/** What a `tools/list` hook is handed. */
export interface ToolListContext {
  session: McplSession;
  extra: RequestExtra;
}

/** The params of `tools/call`, with the MCPL state fields a host may add (§8.4). */
export type ToolCallParams = CallToolRequest['params'] & { state?: JsonValue; checkpoint?: string };

/** What a `tools/call` hook is handed. */
export interface ToolCallContext {
  session: McplSession;
  /** The SDK's handler context: `mcpReq.signal`, `mcpReq.id`, `mcpReq.notify` for progress. */
  extra: RequestExtra;
  /** The tool's feature set, as the `featureSet` hook named it. */
  featureSet: string | undefined;
  /**
   * Mints a checkpoint on the tool's feature set (which must declare `rollback`) for the result
   * to carry as `state` (§8.2): attach it with {@link withCheckpoint}. `data` is kept by the
   * library and handed back to the `rollback` hook.
   */
  checkpoint(data?: JsonValue): CheckpointState;
}

/**
 * The app's tools: the library serves `tools/list` and `tools/call` through these and knows
 * no tool itself. On a plain MCP connection they are ungated; on an MCPL connection a call
 * needs the `tools` grant and, for a tool with a feature set, that set enabled (`-32002`,
 * `-32001`), and listing hides the tools of disabled sets.
 */
export interface ToolHooks {
  list(context: ToolListContext): readonly Tool[] | Promise<readonly Tool[]>;
  call(params: ToolCallParams, context: ToolCallContext): CallToolResult | Promise<CallToolResult>;
  /** The feature set a tool belongs to, if any. */
  featureSet?(toolName: string): string | undefined;
}

/** What `channels/open` hands the `open` hook: the registered channel (if found) and the request. */
export interface ChannelOpenRequest {
  /** The registered channel the request resolved to, by id or by `{type, address}`. */
  channel: ChannelDescriptor | undefined;
  channelId?: string;
  type?: string;
  address?: JsonValue;
  metadata?: JsonObject;
  /** The history the host asked for, to be returned before the channel counts as open. */
  history?: ChannelHistoryRequest;
}

/** What the `open` hook answers. */
export interface ChannelOpenAnswer {
  /** The channel, when the hook found one the registry did not know (or updated it). */
  channel?: ChannelDescriptor;
  /** The requested history, oldest first. */
  history?: ChannelMessage[];
  historyTruncated?: boolean;
}

/** A finished outgoing stream (`channels/outgoing/complete`): advisory, never a delivery. */
export interface OutgoingStream {
  inferenceId: string;
  conversationId: string | undefined;
  channel: ChannelDescriptor;
  /** The full moderated content the host sent on complete. */
  content: ContentBlock[];
  /** The chunk deltas received, in `index` order. */
  chunks: string[];
}

/** The app's side of channels (§14). */
export interface ChannelHooks {
  /**
   * Opens a channel: fetch the history asked for and answer it; the library marks the channel
   * open with that answer, and whatever the session sends after it goes out behind the answer
   * and its history. Throw `MCPL_UNKNOWN_CHANNEL` for `-32023`;
   * anything else is `-32024`. Without this hook, a registered channel opens with no history.
   */
  open?(
    request: ChannelOpenRequest,
    context: HookContext,
  ): ChannelOpenAnswer | undefined | Promise<ChannelOpenAnswer | undefined>;
  /** Closes a channel; the library stops counting it open first. */
  close?(channel: ChannelDescriptor, context: HookContext): void | Promise<void>;
  /** Delivers content to the channel: the only path of delivery (§14.5). */
  publish?(
    request: {
      channel: ChannelDescriptor;
      conversationId: string | undefined;
      content: ContentBlock[];
      stream: boolean;
    },
    context: HookContext,
  ): { delivered: boolean; messageId?: string } | Promise<{ delivered: boolean; messageId?: string }>;
  /** `channels/acknowledge`: seen, not opening (or another intent). */
  acknowledge?(
    request: { channel: ChannelDescriptor; messageId: string; intent: string; value?: string },
    context: HookContext,
  ):
    | { acknowledged: boolean; representation?: string; reason?: string }
    | Promise<{ acknowledged: boolean; representation?: string; reason?: string }>;
  /** `channels/typing`: the params beyond `channelId` are passed as sent. */
  typing?(
    request: { channel: ChannelDescriptor; params: JsonObject },
    context: HookContext,
  ): void | Promise<void>;
  /** A finished outgoing stream, once per (inference, channel); it must not post anything. */
  outgoing?(stream: OutgoingStream, context: HookContext): void | Promise<void>;
}

/** One context injection (§10.4). */
export interface ContextInjection {
  namespace: string;
  position: 'system' | 'beforeUser' | 'afterUser';
  content: string | ContentBlock[];
  metadata?: JsonObject;
}

/** The params of `context/beforeInference` (§10.1). */
export interface BeforeInferenceParams {
  inferenceId: string;
  conversationId?: string;
  turnIndex?: number;
  /** `null` unless `contextHooks.beforeInference.observe` is granted. */
  userMessage: string | null;
  model?: JsonObject;
  /** §14.4 channel context, when the host sends it. */
  channels?: JsonObject;
  [extra: string]: JsonValue | undefined;
}

/** What the `beforeInference` hook answers. */
export interface BeforeInferenceAnswer {
  featureSet: string;
  contextInjections: ContextInjection[];
}

/** The params of `inference/lifecycle` (§10.5). */
export interface LifecycleParams {
  inferenceId: string;
  phase: 'started' | 'completed' | 'aborted' | 'failed';
  conversationId?: string;
  turnIndex?: number;
  model?: JsonObject;
  usage?: JsonObject;
}

/** What the `rollback` hook is handed: a checkpoint the library still retains. */
export interface RollbackRequest {
  featureSet: string;
  checkpoint: CheckpointRecord;
}

/** How a server treats a host that advertises MCPL before 0.5 and never sends a policy. */
export type LegacyHostPolicy =
  /**
   * Default. At `notifications/initialized`, assume a grant of what the server advertises and the
   * host speaks (what it advertises, and for agent-framework 0.1.0 the channel methods it handles
   * without advertising them), plus `tools`, minus `contextHooks.beforeInference.inject.system`
   * (§13.4 says to deny it by default), every feature set selected; Notification-form `disabled`
   * still narrows it.
   */
  | 'advertised'
  /** Serve it as a plain MCP client: tools ungated, no MCPL message sent or answered. */
  | 'mcp-only'
  /** The 0.5 rule: nothing capability-dependent until a Request-form policy arrives. */
  | 'inert';

/** The least grant a server will run MCPL under; below it, the receipt refuses (§6.7). */
export interface MinimumGrant {
  capabilities: readonly string[];
  /** What happens instead: serve plain MCP, or close after answering. */
  fallback: 'mcp-only' | 'close';
  reason?: string;
}

/** Options of {@link McplServer}. */
export interface McplServerOptions {
  /** `serverInfo.name`. */
  name: string;
  /** `serverInfo.version`. */
  version: string;
  instructions?: string | undefined;
  /** What the server can do (§5.1). Default: nothing beyond tools. */
  capabilities?: McplCapabilities | undefined;
  /** Its feature sets (§6.1). */
  featureSets?: Readonly<Record<string, FeatureSetDeclaration>> | undefined;
  /** The app's tools; without them the server declares no `tools` capability. */
  tools?: ToolHooks | undefined;
  /** The app's side of channels. */
  channels?: ChannelHooks | undefined;
  /** Answers `context/beforeInference` within `timeouts.beforeInferenceMs`. */
  beforeInference?:
    | ((
        params: BeforeInferenceParams,
        context: HookContext,
      ) => BeforeInferenceAnswer | undefined | Promise<BeforeInferenceAnswer | undefined>)
    | undefined;
  /** Hears `inference/lifecycle`, terminals deduplicated by inference id. */
  lifecycle?: ((params: LifecycleParams, context: HookContext) => void | Promise<void>) | undefined;
  /** Undoes to a checkpoint; unknown checkpoints never reach it (`-32005`). */
  rollback?:
    | ((
        request: RollbackRequest,
        context: HookContext,
      ) => { success: boolean; reason?: string } | Promise<{ success: boolean; reason?: string }>)
    | undefined;
  /** Plain MCP parts the app serves itself (resources, prompts, logging). */
  mcp?:
    | {
        /** Capabilities declared beside `tools` and `experimental.mcpl`. */
        capabilities?: ServerCapabilities | undefined;
        /** Called with each connection's SDK server before it connects, to add request handlers. */
        setup?: ((server: Server, session: McplSession) => void) | undefined;
      }
    | undefined;
  /** Hosts that never send the initial policy (default `advertised`). */
  legacyHosts?: LegacyHostPolicy | undefined;
  /** `featureSets` on the wire: `auto` (default) picks per host dialect. */
  featureSetsForm?: 'auto' | FeatureSetsForm | undefined;
  /** Refuse MCPL below this grant (the receipt names the fallback). */
  minimumGrant?: MinimumGrant | undefined;
  /** `channels/changed` as a Notification (default; the harness refuses the Request) or a Request. */
  channelsChanged?: 'notification' | 'request' | undefined;
  timeouts?:
    | {
        /** Server→host requests (default 30 s). */
        requestMs?: number | undefined;
        /** `channels/changed` sent as a Request (default 5 s). */
        channelsChangedMs?: number | undefined;
        /** How long the `beforeInference` hook may take before the answer goes out empty (default 4 s, inside the host's recommended 5 s). */
        beforeInferenceMs?: number | undefined;
      }
    | undefined;
  /** How many checkpoints are retained (default 256); older ones answer `-32005`. */
  checkpointRetention?: number | undefined;
  logger?: McplLogger | undefined;
}
