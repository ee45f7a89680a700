import { createHash } from 'node:crypto';
import {
  type CallToolResult,
  type Implementation,
  type JSONRPCRequest,
  ProtocolError,
  type Result,
  Server,
  type ServerCapabilities,
  type ServerContext,
  type Transport,
} from '@modelcontextprotocol/server';
import { advertisedPaths, CapabilityGrant, INJECT, OBSERVE } from './capabilities.js';
import type { CheckpointState } from './checkpoints.js';
import { assumedLegacyGrant, detectHostDialect, type HostDialect } from './dialects.js';
import { canonicalJson } from './digest.js';
import { capabilityDenied, errorCode, McplError, McplRpcCode, rpcError } from './errors.js';
import { deriveFeatureSets, type FeatureSetStatus } from './feature-sets.js';
import { isPlainObject, type JsonObject, type JsonValue } from './json.js';
import type { McplLogger } from './logger.js';
import { changedDomains, type FeatureSetsForm, presentManifest } from './manifest.js';
import {
  acceptingReceipt,
  type DegradationReceipt,
  NO_POLICY,
  type PolicyState,
  parsePolicyUpdate,
  policyFromNotification,
  policyFromRequest,
} from './policy.js';
import { RecentSet } from './recent.js';
import { anyObject, notify, request } from './rpc.js';
import type { McplServer } from './server.js';
import type {
  BeforeInferenceParams,
  ContextInjection,
  HookContext,
  LifecycleParams,
  McplServerOptions,
  RequestExtra,
  ToolCallParams,
} from './server-types.js';
import { closeTags, sameTags } from './tags.js';
import {
  addressKey,
  type ChannelDescriptor,
  type ChannelHistoryRequest,
  type ChannelMessage,
  type ContentBlock,
  checkDescriptor,
  checkMessage,
  isContentBlock,
} from './wire.js';

/** How the host stands on one registered channel. */
export type ChannelRegistration = 'pending' | 'accepted' | 'refused';

/** One channel on a connection: its descriptor, what the host said, whether it is open. */
export interface ChannelRecord {
  descriptor: ChannelDescriptor;
  /** `pending` until the host itemizes it (silence is not refusal); `refused` is final until re-registered. */
  registration: ChannelRegistration;
  /** Opened by the host's `channels/open` (and not closed since). */
  open: boolean;
  /** The host's reason, when it refused. */
  reason?: string;
}

/** What `registerChannels` and a Request-form announcement learn. */
export interface RegistrationOutcome {
  accepted: string[];
  refused: { id: string; reason: string | undefined }[];
  /** Not itemized by the host (or the request failed): still usable, not confirmed. */
  pending: string[];
  /** Why the host's answer was not read, when it was not. */
  error?: McplError;
}

/** What happened to one message of a `channels/incoming` batch. */
export interface IncomingOutcome {
  messageId: string;
  channelId: string;
  /** `unanswered`: the host said nothing about it (timeout, closed connection, missing item). */
  status: 'accepted' | 'refused' | 'unanswered';
  conversationId?: string;
  reason?: string;
}

/** What happened to a `push/event`. */
export interface PushOutcome {
  eventId: string;
  /** `duplicate`: the host already had this event id, so it is delivered. */
  status: 'accepted' | 'duplicate' | 'refused' | 'unanswered';
  inferenceId?: string;
  reason?: string;
}

/** A push event as the app hands it (§9.2); the library fills `eventId` and `timestamp`. */
export interface PushEventInput {
  featureSet: string;
  content: ContentBlock[];
  /** Stable across retries; default: a digest of feature set, origin, content, tags and timestamp. */
  eventId?: string;
  /** ISO 8601; default now (and then not part of the default event id). */
  timestamp?: string;
  origin?: JsonObject;
  tags?: readonly string[];
}

/** What a session reports to its listeners. */
export interface McplSessionEvents {
  /** The initial policy was established (or assumed for a legacy host). */
  ready: [];
  /** The grant or the feature-set statuses changed. */
  policy: [statuses: readonly FeatureSetStatus[]];
  /** A channel opened: its `channels/open` answer is decided, and every send after it goes out behind that answer. */
  channelOpened: [channel: ChannelDescriptor];
  /** A channel closed (by the host, or refused, or removed). */
  channelClosed: [channel: ChannelDescriptor];
  /** The connection closed. */
  close: [];
}

type Listener<A extends unknown[]> = (...args: A) => void;

type Handler = (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>;

/**
 * The SDK's `Server`, with the one thing MCPL adds to it: the `initialize` answer carries the
 * host's own `experimental.mcpl`, which depends on the host (the `featureSets` form its dialect
 * reads, nothing at all for a plain MCP client), where the SDK answers from one static
 * capabilities object. `_wrapHandler` is the SDK's hook for a role class to wrap a registered
 * handler; the SDK's own `initialize` handler still runs (it records the client and negotiates
 * the version), and its result is then given `experimental.mcpl`.
 */
class McplSdkServer extends Server {
  /** Turns the SDK's `initialize` result into this host's answer; set by the session. */
  answerInitialize: ((request: JSONRPCRequest, result: Result) => Result) | undefined;

  protected override _wrapHandler(method: string, handler: Handler): Handler {
    const wrapped = super._wrapHandler(method, handler);
    if (method !== 'initialize') return wrapped;
    return async (request, ctx) => {
      const result = await wrapped(request, ctx);
      return this.answerInitialize === undefined ? result : this.answerInitialize(request, result);
    };
  }
}

function invalidParams(message: string): ProtocolError {
  return rpcError(McplRpcCode.InvalidParams, message);
}

function paramsObject(params: unknown, method: string): Record<string, unknown> {
  if (params === undefined) return {};
  if (!isPlainObject(params)) throw invalidParams(`${method}: params must be an object`);
  return params;
}

function stringField(params: Record<string, unknown>, field: string, method: string): string {
  const value = params[field];
  if (typeof value !== 'string' || value === '')
    throw invalidParams(`${method}: ${field} must be a non-empty string`);
  return value;
}

function optionalString(params: Record<string, unknown>, field: string, method: string): string | undefined {
  const value = params[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalidParams(`${method}: ${field} must be a string`);
  return value;
}

function contentOf(value: unknown, method: string): ContentBlock[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  if (Array.isArray(value) && value.every(isContentBlock)) return value;
  throw invalidParams(`${method}: content must be a string or an array of content blocks`);
}

/**
 * One connection of an {@link McplServer}: what the host negotiated, the grant in force, the
 * channels registered on it, and the server→host sends. Every capability-dependent send checks
 * the grant at the moment it is sent.
 */
export class McplSession {
  readonly #server: McplServer;
  readonly #options: McplServerOptions;
  readonly #logger: McplLogger;
  readonly #transport: Transport;
  readonly #sdk: McplSdkServer;
  #hostInfo: Implementation | undefined;
  /**
   * Set while an answer that changes what may be sent (a channel opened, a grant widened) is being
   * written: server → host sends wait for it, so nothing they carry can overtake that answer.
   */
  #answering: Promise<void> | undefined;
  #mode: 'pending' | 'mcp' | 'mcpl' | 'mcp-only' = 'pending';
  #dialect: HostDialect | undefined;
  #hostAdvertisement: unknown;
  #form: FeatureSetsForm = 'object';
  #announced: { presented: JsonObject; manifest: JsonObject } | undefined;
  #policy: PolicyState = NO_POLICY;
  /** A replacing Request's policy, until its receipt is written: until then only the narrowing half applies. */
  #incoming: PolicyState | undefined;
  #ready = false;
  #closed = false;
  #statuses: FeatureSetStatus[] = [];
  #toolsBasis: string | undefined;
  #advertisedFor: JsonObject | undefined;
  #advertisedPaths = new Set<string>();
  readonly #channels = new Map<string, ChannelRecord>();
  readonly #streams = new Map<string, { chunks: Map<number, string>; bytes: number }>();
  readonly #completed = new RecentSet();
  readonly #started = new RecentSet();
  readonly #terminated = new RecentSet();
  readonly #listeners: { [K in keyof McplSessionEvents]: Set<Listener<McplSessionEvents[K]>> } = {
    ready: new Set(),
    policy: new Set(),
    channelOpened: new Set(),
    channelClosed: new Set(),
    close: new Set(),
  };
  readonly #aborts = new AbortController();
  /** The hook signals of the requests being handled, each with what unlinks it, by request. */
  readonly #linked = new Map<RequestExtra, { controller: AbortController; unlink: () => void }[]>();

  /** @internal Built by {@link McplServer.connect}. */
  constructor(server: McplServer, transport: Transport) {
    this.#server = server;
    this.#options = server.options;
    this.#logger = server.logger;
    this.#transport = transport;
    const capabilities: ServerCapabilities = { ...this.#options.mcp?.capabilities };
    if (this.#options.tools !== undefined) capabilities.tools = { listChanged: true };
    this.#sdk = new McplSdkServer(
      { name: this.#options.name, version: this.#options.version },
      {
        capabilities,
        ...(this.#options.instructions === undefined ? {} : { instructions: this.#options.instructions }),
      },
    );
    this.#sdk.answerInitialize = (request, result) => this.#withManifest(request, result);
    this.#statuses = this.#derive();
    this.#install();
    this.#options.mcp?.setup?.(this.#sdk, this);
  }

  /** @internal */
  async start(): Promise<void> {
    await this.#sdk.connect(this.#transport);
  }

  /** The SDK server under this connection, for plain MCP handlers the app adds itself. */
  get sdk(): Server {
    return this.#sdk;
  }

  /** True once the host advertised `experimental.mcpl` (and MCPL was not refused since). */
  get isMcpl(): boolean {
    return this.#mode === 'mcpl';
  }

  /** True once the initial policy is established: capability-dependent behaviour may begin. */
  get isReady(): boolean {
    return this.#ready && this.#mode === 'mcpl' && !this.#closed;
  }

  /** True once the connection closed. */
  get isClosed(): boolean {
    return this.#closed;
  }

  /** How the host speaks MCPL (after `initialize`; undefined for a plain MCP client). */
  get dialect(): HostDialect | undefined {
    return this.#dialect;
  }

  /** The host's `clientInfo`. */
  get hostInfo(): Implementation | undefined {
    return this.#hostInfo;
  }

  /** Where the policy in force came from. */
  get policySource(): PolicyState['source'] {
    return this.#policy.source;
  }

  /** The effective grant in force (the narrower of two while a replacing policy is being acknowledged). */
  get grant(): CapabilityGrant {
    return this.#policy.grant;
  }

  /** Every declared feature set's status now. */
  get featureSets(): readonly FeatureSetStatus[] {
    return this.#statuses;
  }

  /** Whether a capability may be used now: MCPL negotiated, ready, advertised and granted. */
  isGranted(path: string): boolean {
    return this.isReady && this.#usable(path);
  }

  /** Whether a declared feature set is enabled now; false for any set before the policy. */
  isFeatureSetEnabled(name: string): boolean {
    return this.isReady && this.#statuses.some((status) => status.name === name && status.enabled);
  }

  /** Resolves true once ready, false if the connection closes first or is not MCPL. */
  whenReady(): Promise<boolean> {
    if (this.isReady) return Promise.resolve(true);
    if (this.#closed || this.#mode === 'mcp' || this.#mode === 'mcp-only') return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const done = (value: boolean) => {
        offReady();
        offClose();
        offPolicy();
        resolve(value);
      };
      const offReady = this.on('ready', () => done(true));
      const offClose = this.on('close', () => done(false));
      const offPolicy = this.on('policy', () => {
        if (this.#mode !== 'mcpl') done(false);
      });
    });
  }

  /** Listens to a session event; returns the function that stops listening. */
  on<K extends keyof McplSessionEvents>(event: K, listener: Listener<McplSessionEvents[K]>): () => void {
    const set = this.#listeners[event] as Set<Listener<McplSessionEvents[K]>>;
    set.add(listener);
    return () => set.delete(listener);
  }

  #emit<K extends keyof McplSessionEvents>(event: K, ...args: McplSessionEvents[K]): void {
    for (const listener of [...(this.#listeners[event] as Set<Listener<McplSessionEvents[K]>>)]) {
      try {
        listener(...args);
      } catch (err) {
        this.#logger.warn('a session listener threw', { event, error: errorCode(err) });
      }
    }
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    await this.#sdk.close();
  }

  // ---- negotiation and policy ------------------------------------------------------------

  /**
   * The SDK answers `initialize` from one static capabilities object; its answer is given this
   * host's `experimental.mcpl` here, from the client capabilities in the request it answers.
   */
  #withManifest(request: JSONRPCRequest, result: Result): Result {
    const params = isPlainObject(request.params) ? request.params : {};
    const info = isPlainObject(params.clientInfo) ? (params.clientInfo as Implementation) : undefined;
    this.#hostInfo ??= info;
    const mcpl = this.#negotiate(isPlainObject(params.capabilities) ? params.capabilities : undefined, info);
    if (mcpl === undefined) return result;
    const capabilities = (
      isPlainObject(result.capabilities) ? result.capabilities : {}
    ) as ServerCapabilities;
    return {
      ...result,
      capabilities: { ...capabilities, experimental: { ...capabilities.experimental, mcpl } },
    };
  }

  #negotiate(
    client: Record<string, unknown> | undefined,
    info: Implementation | undefined,
  ): JsonObject | undefined {
    if (this.#mode !== 'pending') return this.#mode === 'mcpl' ? this.#announced?.presented : undefined;
    const advertised = (isPlainObject(client?.experimental) ? client.experimental : undefined)?.mcpl;
    if (!isPlainObject(advertised)) {
      this.#mode = 'mcp';
      this.#emit('policy', this.#statuses);
      return undefined;
    }
    this.#mode = 'mcpl';
    this.#hostAdvertisement = advertised;
    this.#dialect = detectHostDialect(info?.name, advertised.version);
    const form = this.#options.featureSetsForm ?? 'auto';
    this.#form = form === 'auto' ? this.#dialect.featureSetsForm : form;
    const presented = presentManifest(this.#server.manifest, this.#form);
    this.#announced = { presented, manifest: this.#server.manifest };
    this.#logger.debug('MCPL negotiated', {
      host: info?.name,
      version: this.#dialect.version,
      dialect: this.#dialect.name,
      featureSets: this.#form,
    });
    return presented;
  }

  #initialized(): void {
    if (this.#mode !== 'mcpl' || this.#dialect?.legacy !== true || this.#policy.source !== 'none') return;
    const policy = this.#options.legacyHosts ?? 'advertised';
    this.#logger.info('the host predates capability grants', { version: this.#dialect.version, policy });
    if (policy === 'mcp-only') {
      this.#mode = 'mcp-only';
      this.#emit('policy', this.#statuses);
      return;
    }
    if (policy === 'inert') return;
    const grant = assumedLegacyGrant(this.#advertised(), this.#hostAdvertisement, this.#dialect.name);
    this.#setPolicy({ source: 'legacy', grant, selection: { disabled: [] } });
    this.#becomeReady();
  }

  #advertised(): Set<string> {
    const manifest = this.#server.manifest;
    if (this.#advertisedFor !== manifest) {
      const paths = advertisedPaths(manifest);
      if (this.#options.tools !== undefined) paths.add('tools');
      this.#advertisedPaths = paths;
      this.#advertisedFor = manifest;
    }
    return this.#advertisedPaths;
  }

  #usable(path: string): boolean {
    if (!this.#policy.grant.has(path)) return false;
    if (this.#incoming !== undefined && !this.#incoming.grant.has(path)) return false;
    return this.#advertised().has(path);
  }

  #derive(): FeatureSetStatus[] {
    const declarations = this.#server.featureSets;
    if (this.#policy.source === 'none') return deriveFeatureSets(declarations, undefined, { disabled: [] });
    const advertised = this.#advertised();
    const grant = { has: (path: string) => this.#usable(path) && advertised.has(path) };
    const current = deriveFeatureSets(declarations, grant, this.#policy.selection);
    if (this.#incoming === undefined) return current;
    const next = deriveFeatureSets(declarations, grant, this.#incoming.selection);
    return current.map((status, index) => {
      const other = next[index] as FeatureSetStatus;
      return status.enabled && !other.enabled ? other : status;
    });
  }

  #setPolicy(policy: PolicyState, incoming?: PolicyState): void {
    this.#policy = policy;
    this.#incoming = incoming;
    this.#refresh();
  }

  /** @internal The server's manifest changed: statuses are re-derived against it. */
  manifestReplaced(): void {
    this.#refresh();
  }

  #refresh(): void {
    this.#statuses = this.#derive();
    this.#emit('policy', this.#statuses);
    this.#toolsChanged();
  }

  #becomeReady(): void {
    if (this.#ready) return;
    this.#ready = true;
    this.#emit('ready');
    this.#toolsChanged();
  }

  /** Tells the host the tool list changed when the gating behind it did. */
  #toolsChanged(): void {
    if (this.#options.tools === undefined || !this.isReady) return;
    const basis = `${this.#usable('tools')}|${this.#statuses
      .filter((status) => status.enabled)
      .map((status) => status.name)
      .join(',')}`;
    if (this.#toolsBasis === undefined) {
      this.#toolsBasis = basis;
      return;
    }
    if (basis === this.#toolsBasis) return;
    this.#toolsBasis = basis;
    const send = () =>
      this.#sdk.sendToolListChanged().catch((err: unknown) => {
        this.#logger.debug('tools/list_changed not sent', { error: errorCode(err) });
      });
    if (this.#answering === undefined) void send();
    else void this.#afterAnswers().then(send);
  }

  /**
   * Applies `change`, which the answer to this request announces (a receipt that widens the
   * grant, an open channel), and holds every server → host send until that answer is written:
   * the SDK writes a handler's answer in the microtasks after the handler returns, so a send
   * held to the next turn of the event loop cannot overtake it. Nothing changes for a request
   * the peer cancelled, since the SDK then writes no answer.
   */
  #withAnswer(extra: RequestExtra, change: () => void): void {
    if (extra.mcpReq.signal.aborted) return;
    this.#answering ??= new Promise<void>((resolve) =>
      setImmediate(() => {
        this.#answering = undefined;
        resolve();
      }),
    );
    change();
  }

  /** Waits until the answers being written are out; `path`, if given, is checked again after. */
  async #afterAnswers(path?: string): Promise<void> {
    while (this.#answering !== undefined) {
      await this.#answering;
      if (path !== undefined) this.#require(path);
    }
  }

  #policyRequest(params: unknown, extra: RequestExtra): DegradationReceipt {
    let update: ReturnType<typeof parsePolicyUpdate>;
    try {
      update = parsePolicyUpdate(params);
    } catch (err) {
      if (err instanceof McplError && err.code === 'MCPL_INVALID_ARGUMENT') throw invalidParams(err.message);
      throw err;
    }
    const next = policyFromRequest(update);
    const minimum = this.#options.minimumGrant;
    if (minimum !== undefined) {
      const missing = minimum.capabilities.filter((path) => !next.grant.has(path));
      if (missing.length > 0) {
        this.#logger.warn('the grant is below the minimum; refusing MCPL', { missing: missing.join(',') });
        this.#setPolicy(NO_POLICY);
        if (minimum.fallback === 'mcp-only') this.#mode = 'mcp-only';
        else this.#withAnswer(extra, () => void this.#afterAnswers().then(() => this.close()));
        this.#emit('policy', this.#statuses);
        return {
          accepted: false,
          fallback: minimum.fallback,
          missingCapabilities: missing,
          reason: minimum.reason ?? 'the grant lacks capabilities this server cannot run without',
        };
      }
    }
    // Reductions take effect now; what the new policy adds comes with the receipt, and no send
    // that uses it can go out before that receipt.
    this.#setPolicy(
      this.#policy.source === 'none' ? { ...next, grant: CapabilityGrant.empty() } : this.#policy,
      next,
    );
    const receipt = acceptingReceipt(
      deriveFeatureSets(
        this.#server.featureSets,
        { has: (path: string) => next.grant.has(path) && this.#advertised().has(path) },
        next.selection,
      ),
    );
    this.#withAnswer(extra, () => {
      if (this.#incoming !== next) return;
      this.#setPolicy(next);
      this.#becomeReady();
    });
    this.#logger.debug('policy received', { capabilities: next.grant.patterns.length });
    return receipt;
  }

  #policyNotification(params: unknown): void {
    let update: ReturnType<typeof parsePolicyUpdate>;
    try {
      update = parsePolicyUpdate(params);
    } catch (err) {
      this.#logger.warn('dropped a malformed featureSets/update notification', {
        error: err instanceof Error ? err.message : String(err),
      });
      return;
    }
    const { state, ignored } = policyFromNotification(this.#policy, update);
    if (ignored.length > 0) {
      this.#logger.warn('a featureSets/update notification can only narrow; ignored fields', {
        fields: ignored.join(','),
      });
    }
    const incoming =
      this.#incoming === undefined ? undefined : policyFromNotification(this.#incoming, update).state;
    this.#setPolicy(state, incoming);
  }

  // ---- handlers ----------------------------------------------------------------------------

  /**
   * A hook's context for one request: its signal fires when the peer cancels the request, the
   * connection closes, or `timeoutMs` passes. It is linked by hand and unlinked when the request
   * settles ({@link #handle}): `AbortSignal.any` over the session's own signal would keep a trace of
   * every request for as long as the connection lives.
   */
  #context(extra: RequestExtra, timeoutMs?: number): HookContext {
    const controller = new AbortController();
    const cancelled = extra.mcpReq.signal;
    if (this.#aborts.signal.aborted || cancelled.aborted) {
      controller.abort(this.#aborts.signal.aborted ? this.#aborts.signal.reason : cancelled.reason);
      return { session: this, signal: controller.signal };
    }
    const onCancel = () => controller.abort(cancelled.reason);
    cancelled.addEventListener('abort', onCancel, { once: true });
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(
            () => controller.abort(new DOMException('The hook ran past its deadline.', 'TimeoutError')),
            timeoutMs,
          );
    const unlink = () => {
      clearTimeout(timer);
      cancelled.removeEventListener('abort', onCancel);
    };
    const linked = this.#linked.get(extra);
    if (linked === undefined) this.#linked.set(extra, [{ controller, unlink }]);
    else linked.push({ controller, unlink });
    return { session: this, signal: controller.signal };
  }

  /** Unlinks the contexts made for a request once it has settled. */
  #release(extra: RequestExtra): void {
    const linked = this.#linked.get(extra);
    if (linked === undefined) return;
    this.#linked.delete(extra);
    for (const { unlink } of linked) unlink();
  }

  #notificationContext(): HookContext {
    return { session: this, signal: this.#aborts.signal };
  }

  /**
   * Serves an MCPL method through the SDK (a custom-schema request handler: params pass as the
   * object they are, each method reads its own); a plain MCP peer gets -32601 from it.
   */
  #handle(method: string, handler: (params: unknown, extra: RequestExtra) => unknown): void {
    this.#sdk.setRequestHandler(method, { params: anyObject }, async (params, extra) => {
      if (this.#mode !== 'mcpl') throw rpcError(McplRpcCode.MethodNotFound, 'Method not found');
      try {
        return (await handler(params, extra)) as Record<string, unknown>;
      } catch (err) {
        if (err instanceof ProtocolError) throw err;
        this.#logger.error('an MCPL handler failed', { method, error: errorCode(err) });
        throw rpcError(McplRpcCode.InternalError, `${method} failed`);
      } finally {
        this.#release(extra);
      }
    });
  }

  /** Hears an MCPL notification through the SDK; ignored on a plain MCP connection. */
  #hear(method: string, handler: (params: unknown) => unknown): void {
    this.#sdk.setNotificationHandler(method, { params: anyObject }, async (params) => {
      if (this.#mode !== 'mcpl') return;
      try {
        await handler(params);
      } catch (err) {
        this.#logger.warn('an MCPL notification handler failed', { method, error: errorCode(err) });
      }
    });
  }

  #requireGrant(path: string): void {
    if (!this.isReady || !this.#usable(path)) throw capabilityDenied(path);
  }

  #install(): void {
    this.#sdk.oninitialized = () => this.#initialized();
    this.#sdk.onclose = () => this.#onClose();
    this.#sdk.onerror = (err) => {
      this.#logger.warn('protocol error', { error: err.message.slice(0, 300) });
    };

    this.#handle('featureSets/update', (params, extra) => this.#policyRequest(params, extra));
    this.#hear('featureSets/update', (params) => this.#policyNotification(params));

    this.#handle('mcpl/manifest', () => {
      const presented = presentManifest(this.#server.manifest, this.#form);
      this.#announced = { presented, manifest: this.#server.manifest };
      return presented;
    });

    this.#handle('context/beforeInference', (params, extra) => this.#beforeInference(params, extra));
    this.#hear('inference/lifecycle', (params) => this.#lifecycle(params));
    // Removed in 0.5 and still sent by 0.4 hosts: answered, and otherwise ignored.
    this.#handle('context/afterInference', () => ({}));
    this.#hear('context/afterInference', () => {});

    this.#handle('state/rollback', (params, extra) => this.#rollback(params, extra));

    this.#handle('channels/list', () => {
      this.#requireGrant('channels.register');
      return {
        channels: this.channels()
          .filter((c) => c.registration !== 'refused')
          .map((c) => c.descriptor),
      };
    });
    this.#handle('channels/open', (params, extra) => this.#open(params, extra));
    this.#handle('channels/close', (params, extra) => this.#close(params, extra));
    this.#handle('channels/publish', (params, extra) => this.#publish(params, this.#context(extra)));
    this.#hear('channels/publish', async (params) => {
      await this.#publish(params, this.#notificationContext()).catch((err: unknown) => {
        this.#logger.warn('a channels/publish notification was not delivered', { error: describe(err) });
      });
    });
    this.#handle('channels/acknowledge', (params, extra) => this.#acknowledge(params, extra));
    this.#handle('channels/typing', (params, extra) => this.#typing(params, this.#context(extra)));
    this.#hear('channels/typing', async (params) => {
      await this.#typing(params, this.#notificationContext()).catch((err: unknown) => {
        this.#logger.debug('a channels/typing notification was dropped', { error: describe(err) });
      });
    });
    this.#hear('channels/outgoing/chunk', (params) => this.#chunk(params));
    this.#hear('channels/outgoing/complete', (params) => this.#complete(params));

    const tools = this.#options.tools;
    if (tools !== undefined) {
      this.#sdk.setRequestHandler('tools/list', async (_request, extra) => {
        let listed: Awaited<ReturnType<typeof tools.list>>;
        try {
          listed = await tools.list({ session: this, extra });
        } catch (err) {
          if (err instanceof ProtocolError) throw err;
          this.#logger.error('a tools/list hook threw', { error: errorCode(err) });
          throw rpcError(McplRpcCode.InternalError, 'tools/list failed');
        }
        if (this.#mode !== 'mcpl' || !this.#ready) return { tools: [...listed] };
        if (!this.#usable('tools')) return { tools: [] };
        return {
          tools: listed.filter((tool) => {
            const featureSet = tools.featureSet?.(tool.name);
            return featureSet === undefined || this.isFeatureSetEnabled(featureSet);
          }),
        };
      });
      // Params as sent: the MCPL `state` and `checkpoint` a host adds beside the arguments reach
      // the hook (§8.4); the SDK still checks the request and the result against tools/call.
      this.#sdk.setRequestHandler('tools/call', { params: anyObject }, async (params, extra) =>
        this.#callTool(params as ToolCallParams, extra),
      );
    }
  }

  async #callTool(params: ToolCallParams, extra: RequestExtra): Promise<CallToolResult> {
    const tools = this.#options.tools;
    if (tools === undefined) throw rpcError(McplRpcCode.MethodNotFound, 'Method not found');
    const featureSet = tools.featureSet?.(params.name);
    if (this.#mode === 'mcpl') {
      if (!this.isReady || !this.#usable('tools')) throw capabilityDenied('tools');
      if (featureSet !== undefined) {
        const declaration = this.#server.featureSets[featureSet];
        if (declaration === undefined) {
          throw rpcError(McplRpcCode.UnknownFeatureSet, undefined, { featureSet });
        }
        if (!declaration.uses.includes('tools')) {
          this.#logger.warn('declaration mismatch: a tool ran under a feature set that does not use tools', {
            featureSet,
            tool: params.name,
          });
          throw capabilityDenied('tools');
        }
        if (!this.isFeatureSetEnabled(featureSet)) {
          throw rpcError(McplRpcCode.FeatureSetNotEnabled, undefined, { featureSet });
        }
      }
    }
    try {
      return await tools.call(params, {
        session: this,
        extra,
        featureSet,
        checkpoint: (data?: JsonValue): CheckpointState => {
          if (featureSet === undefined || this.#server.featureSets[featureSet]?.rollback !== true) {
            throw new McplError(
              'MCPL_INVALID_ARGUMENT',
              `tool ${params.name} has no feature set that declares rollback, so it cannot mint a checkpoint`,
            );
          }
          const record = this.#server.checkpoints.mint(featureSet, data);
          return { checkpoint: record.checkpoint, parent: record.parent };
        },
      });
    } catch (err) {
      // A tool's own failure is the app's to turn into an isError result; anything that
      // escapes is answered without its message, which may carry what the peer must not see.
      if (err instanceof ProtocolError) throw err;
      this.#logger.error('a tools/call hook threw', { tool: params.name, error: errorCode(err) });
      throw rpcError(McplRpcCode.InternalError, 'tools/call failed');
    }
  }

  async #beforeInference(params: unknown, extra: RequestExtra): Promise<Record<string, unknown>> {
    const hook = this.#options.beforeInference;
    const body = paramsObject(params, 'context/beforeInference');
    const inferenceId = stringField(body, 'inferenceId', 'context/beforeInference');
    const positions = ['system', 'beforeUser', 'afterUser'] as const;
    const anyPosition = positions.some((position) => this.isGranted(`${INJECT}${position}`));
    if (hook === undefined || !this.isReady || !(anyPosition || this.isGranted(OBSERVE))) {
      return { contextInjections: [] };
    }
    const timeoutMs = this.#options.timeouts?.beforeInferenceMs ?? 4000;
    const observed = this.isGranted(OBSERVE);
    const input = {
      ...(body as Record<string, JsonValue>),
      inferenceId,
      userMessage: observed && typeof body.userMessage === 'string' ? body.userMessage : null,
    } as BeforeInferenceParams;
    const context = this.#context(extra, timeoutMs);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), timeoutMs);
    });
    let answer: Awaited<ReturnType<NonNullable<typeof hook>>> | 'late';
    try {
      answer = await Promise.race([Promise.resolve(hook(input, context)), late]);
    } catch (err) {
      this.#logger.warn('the beforeInference hook failed; answering without injections', {
        error: errorCode(err),
      });
      return { contextInjections: [] };
    } finally {
      clearTimeout(timer);
    }
    if (answer === 'late') {
      this.#logger.warn('the beforeInference hook ran past its deadline; answering without injections', {
        inferenceId,
        timeoutMs,
      });
      return { contextInjections: [] };
    }
    if (answer === undefined) return { contextInjections: [] };
    // Checked now, against the grant current as the answer goes out.
    const featureSet = answer.featureSet;
    const declaration = this.#server.featureSets[featureSet];
    if (declaration === undefined || !this.isFeatureSetEnabled(featureSet)) {
      this.#logger.warn('dropped injections of a feature set that is not enabled', { featureSet });
      return { contextInjections: [] };
    }
    const kept: ContextInjection[] = [];
    for (const injection of answer.contextInjections) {
      const path = `${INJECT}${injection.position}`;
      if (!positions.includes(injection.position) || !this.isGranted(path)) {
        this.#logger.debug('dropped an injection at a position not granted', {
          position: String(injection.position),
        });
        continue;
      }
      if (!declaration.uses.includes(path)) {
        this.#logger.warn('declaration mismatch: dropped an injection its feature set does not declare', {
          featureSet,
          position: injection.position,
        });
        continue;
      }
      if (typeof injection.namespace !== 'string') continue;
      if (
        typeof injection.content !== 'string' &&
        !(Array.isArray(injection.content) && injection.content.every(isContentBlock))
      ) {
        continue;
      }
      kept.push(injection);
    }
    return { featureSet, contextInjections: kept };
  }

  async #lifecycle(params: unknown): Promise<void> {
    if (!this.isGranted('inferenceLifecycle')) return;
    if (!isPlainObject(params) || typeof params.inferenceId !== 'string') {
      this.#logger.warn('dropped a malformed inference/lifecycle notification');
      return;
    }
    const { inferenceId, phase } = params;
    if (phase === 'started') {
      this.#started.add(inferenceId);
    } else if (phase === 'completed' || phase === 'aborted' || phase === 'failed') {
      if (this.#terminated.has(inferenceId)) {
        this.#logger.warn('a second terminal phase for one inference (conformance defect); ignored', {
          inferenceId,
        });
        return;
      }
      this.#terminated.add(inferenceId);
      if (!this.#started.has(inferenceId)) {
        this.#logger.warn('a terminal phase with no started (conformance defect)', { inferenceId });
      }
    } else {
      this.#logger.warn('dropped an inference/lifecycle notification with an unknown phase');
      return;
    }
    await this.#options.lifecycle?.(params as unknown as LifecycleParams, this.#notificationContext());
  }

  async #rollback(params: unknown, extra: RequestExtra): Promise<Record<string, unknown>> {
    const body = paramsObject(params, 'state/rollback');
    const checkpoint = stringField(body, 'checkpoint', 'state/rollback');
    const named = optionalString(body, 'featureSet', 'state/rollback');
    const record = this.#server.checkpoints.get(checkpoint);
    if (record === undefined || (named !== undefined && named !== record.featureSet)) {
      throw rpcError(McplRpcCode.CheckpointNotFound, undefined, { checkpoint });
    }
    if (!this.isReady) throw capabilityDenied('tools');
    if (!this.isFeatureSetEnabled(record.featureSet)) {
      throw rpcError(McplRpcCode.FeatureSetNotEnabled, undefined, { featureSet: record.featureSet });
    }
    const hook = this.#options.rollback;
    if (hook === undefined) return { checkpoint, success: false, reason: 'this server cannot roll back' };
    const outcome = await hook({ featureSet: record.featureSet, checkpoint: record }, this.#context(extra));
    if (outcome.success) this.#server.checkpoints.moveHead(checkpoint);
    const result: Record<string, unknown> = { checkpoint, success: outcome.success };
    if (outcome.reason !== undefined) result.reason = outcome.reason;
    return result;
  }

  #resolveChannel(body: Record<string, unknown>): ChannelRecord | undefined {
    if (typeof body.channelId === 'string') {
      const byId = this.#channels.get(body.channelId);
      if (byId !== undefined) return byId;
    }
    if (typeof body.type === 'string') {
      const key = addressKey(body.type, body.address);
      for (const record of this.#channels.values()) {
        if (addressKey(record.descriptor.type, record.descriptor.address) === key) return record;
      }
    }
    return undefined;
  }

  async #open(params: unknown, extra: RequestExtra): Promise<Record<string, unknown>> {
    this.#requireGrant('channels.lifecycle');
    const body = paramsObject(params, 'channels/open');
    const channelId = optionalString(body, 'channelId', 'channels/open');
    const type = optionalString(body, 'type', 'channels/open');
    if (channelId === undefined && type === undefined)
      throw invalidParams('channels/open: give channelId or type');
    const record = this.#resolveChannel(body);
    const hook = this.#options.channels?.open;
    let answer: Awaited<ReturnType<NonNullable<typeof hook>>>;
    try {
      answer = await hook?.(
        {
          channel: record?.descriptor,
          ...(channelId === undefined ? {} : { channelId }),
          ...(type === undefined ? {} : { type }),
          ...(body.address === undefined ? {} : { address: body.address as JsonValue }),
          ...(isPlainObject(body.metadata) ? { metadata: body.metadata as JsonObject } : {}),
          ...(isPlainObject(body.history) ? { history: body.history as ChannelHistoryRequest } : {}),
        },
        this.#context(extra),
      );
    } catch (err) {
      if (err instanceof ProtocolError) throw err;
      if (err instanceof McplError && err.code === 'MCPL_UNKNOWN_CHANNEL') {
        throw rpcError(McplRpcCode.UnknownChannel, undefined, { channelId: channelId ?? null });
      }
      this.#logger.warn('a channel could not be opened', { channelId, error: errorCode(err) });
      throw rpcError(McplRpcCode.ChannelOpenFailed, undefined, {
        channelId: channelId ?? record?.descriptor.id ?? null,
      });
    }
    const descriptor = answer?.channel ?? record?.descriptor;
    if (descriptor === undefined)
      throw rpcError(McplRpcCode.UnknownChannel, undefined, { channelId: channelId ?? null });
    checkDescriptor(descriptor);
    const result: Record<string, unknown> = { channel: descriptor };
    if (answer?.history !== undefined) {
      result.history = answer.history.map((message) => this.#outgoingMessage(message));
    }
    if (answer?.historyTruncated === true) result.historyTruncated = true;
    // The channel is open from this answer on: nothing sent for it can overtake the answer and
    // its history.
    this.#withAnswer(extra, () => {
      const existing = this.#channels.get(descriptor.id);
      const wasOpen = existing?.open === true;
      this.#channels.set(descriptor.id, { descriptor, registration: 'accepted', open: true });
      if (!wasOpen) this.#emit('channelOpened', descriptor);
    });
    return result;
  }

  async #close(params: unknown, extra: RequestExtra): Promise<Record<string, unknown>> {
    this.#requireGrant('channels.lifecycle');
    const body = paramsObject(params, 'channels/close');
    const channelId = stringField(body, 'channelId', 'channels/close');
    const record = this.#channels.get(channelId);
    if (record === undefined) throw rpcError(McplRpcCode.UnknownChannel, undefined, { channelId });
    const wasOpen = record.open;
    this.#channels.set(channelId, { descriptor: record.descriptor, registration: 'accepted', open: false });
    if (wasOpen) this.#emit('channelClosed', record.descriptor);
    await this.#options.channels?.close?.(record.descriptor, this.#context(extra));
    return { closed: true };
  }

  #knownChannel(body: Record<string, unknown>, method: string): ChannelRecord {
    const channelId = stringField(body, 'channelId', method);
    const record = this.#channels.get(channelId);
    if (record === undefined || record.registration === 'refused') {
      throw rpcError(McplRpcCode.UnknownChannel, undefined, { channelId });
    }
    return record;
  }

  async #publish(params: unknown, context: HookContext): Promise<Record<string, unknown>> {
    this.#requireGrant('channels.publish');
    const body = paramsObject(params, 'channels/publish');
    const record = this.#knownChannel(body, 'channels/publish');
    const content = contentOf(body.content, 'channels/publish');
    const hook = this.#options.channels?.publish;
    if (hook === undefined) throw rpcError(McplRpcCode.MethodNotFound, 'Method not found');
    const outcome = await hook(
      {
        channel: record.descriptor,
        conversationId: typeof body.conversationId === 'string' ? body.conversationId : undefined,
        content,
        stream: body.stream === true,
      },
      context,
    );
    const result: Record<string, unknown> = { delivered: outcome.delivered };
    if (outcome.messageId !== undefined) result.messageId = outcome.messageId;
    return result;
  }

  async #acknowledge(params: unknown, extra: RequestExtra): Promise<Record<string, unknown>> {
    this.#requireGrant('channels.acknowledge');
    const body = paramsObject(params, 'channels/acknowledge');
    const record = this.#knownChannel(body, 'channels/acknowledge');
    const messageId = stringField(body, 'messageId', 'channels/acknowledge');
    const intent = stringField(body, 'intent', 'channels/acknowledge');
    const value = optionalString(body, 'value', 'channels/acknowledge');
    const hook = this.#options.channels?.acknowledge;
    if (hook === undefined) throw rpcError(McplRpcCode.MethodNotFound, 'Method not found');
    const outcome = await hook(
      { channel: record.descriptor, messageId, intent, ...(value === undefined ? {} : { value }) },
      this.#context(extra),
    );
    return { ...outcome };
  }

  async #typing(params: unknown, context: HookContext): Promise<Record<string, unknown>> {
    this.#requireGrant('channels.typing');
    const body = paramsObject(params, 'channels/typing');
    const record = this.#knownChannel(body, 'channels/typing');
    const hook = this.#options.channels?.typing;
    if (hook === undefined) throw rpcError(McplRpcCode.MethodNotFound, 'Method not found');
    await hook({ channel: record.descriptor, params: body as JsonObject }, context);
    return {};
  }

  #chunk(params: unknown): void {
    if (!this.isGranted('channels.streaming')) {
      this.#logger.debug('dropped channels/outgoing/chunk: channels.streaming is not granted');
      return;
    }
    if (
      !isPlainObject(params) ||
      typeof params.inferenceId !== 'string' ||
      typeof params.channelId !== 'string' ||
      !Number.isInteger(params.index) ||
      typeof params.delta !== 'string'
    ) {
      this.#logger.warn('dropped a malformed channels/outgoing/chunk');
      return;
    }
    const key = `${params.inferenceId}\u0000${params.channelId}`;
    if (this.#completed.has(key)) return;
    let stream = this.#streams.get(key);
    if (stream === undefined) {
      if (this.#streams.size >= 64) {
        const oldest = this.#streams.keys().next().value as string;
        this.#streams.delete(oldest);
      }
      stream = { chunks: new Map(), bytes: 0 };
      this.#streams.set(key, stream);
    }
    if (stream.bytes + params.delta.length > 1_048_576) {
      this.#logger.warn('dropped outgoing chunks past 1 MiB for one stream');
      return;
    }
    stream.bytes += params.delta.length;
    stream.chunks.set(params.index as number, params.delta);
  }

  async #complete(params: unknown): Promise<void> {
    if (!this.isGranted('channels.streaming')) {
      this.#logger.debug('dropped channels/outgoing/complete: channels.streaming is not granted');
      return;
    }
    if (
      !isPlainObject(params) ||
      typeof params.inferenceId !== 'string' ||
      typeof params.channelId !== 'string'
    ) {
      this.#logger.warn('dropped a malformed channels/outgoing/complete');
      return;
    }
    const key = `${params.inferenceId}\u0000${params.channelId}`;
    if (this.#completed.has(key)) {
      this.#logger.debug('ignored a second channels/outgoing/complete for one stream', {
        inferenceId: params.inferenceId,
      });
      return;
    }
    this.#completed.add(key);
    const stream = this.#streams.get(key);
    this.#streams.delete(key);
    const record = this.#channels.get(params.channelId);
    if (record === undefined) return;
    const content = Array.isArray(params.content) ? params.content.filter(isContentBlock) : [];
    const chunks = [...(stream?.chunks.entries() ?? [])]
      .sort((a, b) => a[0] - b[0])
      .map(([, delta]) => delta);
    await this.#options.channels?.outgoing?.(
      {
        inferenceId: params.inferenceId,
        conversationId: typeof params.conversationId === 'string' ? params.conversationId : undefined,
        channel: record.descriptor,
        content,
        chunks,
      },
      this.#notificationContext(),
    );
  }

  #onClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#aborts.abort();
    for (const linked of [...this.#linked.values()]) {
      for (const { controller } of linked) controller.abort(this.#aborts.signal.reason);
    }
    this.#emit('close');
  }

  // ---- manifest announcements --------------------------------------------------------------

  /** @internal Sends `mcpl/manifestChanged` when this connection's revision moved. */
  announceManifest(): void {
    if (this.#mode !== 'mcpl' || this.#closed || this.#announced === undefined) return;
    const presented = presentManifest(this.#server.manifest, this.#form);
    if (presented.revision === this.#announced.presented.revision) return;
    const domains = changedDomains(this.#announced.manifest, this.#server.manifest);
    this.#announced = { presented, manifest: this.#server.manifest };
    if (domains.length === 0) return;
    notify(this.#sdk, 'mcpl/manifestChanged', { revision: presented.revision as string, domains }).catch(
      (err: unknown) => this.#logger.debug('mcpl/manifestChanged not sent', { error: errorCode(err) }),
    );
  }

  // ---- server → host ----------------------------------------------------------------------

  #timeout(): number {
    return this.#options.timeouts?.requestMs ?? 30_000;
  }

  /** Throws unless the connection is open, MCPL negotiated, ready, and `path` granted now. */
  #require(path: string): void {
    if (this.#closed) throw new McplError('MCPL_CLOSED', 'the connection is closed');
    if (this.#mode !== 'mcpl') {
      throw new McplError('MCPL_NOT_NEGOTIATED', 'the host did not negotiate MCPL on this connection');
    }
    if (!this.#ready) throw new McplError('MCPL_NOT_READY', 'the initial policy has not been established');
    if (!this.#usable(path)) {
      throw new McplError('MCPL_CAPABILITY_DENIED', `${path} is not in the effective grant`, {
        details: { capability: path },
      });
    }
  }

  #requireFeatureSet(featureSet: string, path: string): void {
    const declaration = this.#server.featureSets[featureSet];
    if (declaration === undefined) {
      throw new McplError('MCPL_UNKNOWN_FEATURE_SET', `feature set ${featureSet} is not declared`, {
        details: { featureSet },
      });
    }
    if (!declaration.uses.includes(path)) {
      this.#logger.warn('declaration mismatch: refused a send its feature set does not declare', {
        featureSet,
        capability: path,
      });
      throw new McplError('MCPL_DECLARATION_MISMATCH', `feature set ${featureSet} does not declare ${path}`, {
        details: { featureSet, capability: path },
      });
    }
    if (!this.isFeatureSetEnabled(featureSet)) {
      throw new McplError('MCPL_FEATURE_SET_DISABLED', `feature set ${featureSet} is not enabled`, {
        details: { featureSet },
      });
    }
  }

  /** The channels registered on this connection. */
  channels(): ChannelRecord[] {
    return [...this.#channels.values()].map((record) => ({ ...record }));
  }

  /** One channel's record. */
  channel(id: string): ChannelRecord | undefined {
    const record = this.#channels.get(id);
    return record === undefined ? undefined : { ...record };
  }

  /** True when the host has the channel open. */
  isChannelOpen(id: string): boolean {
    return this.#channels.get(id)?.open === true;
  }

  #record(descriptors: readonly ChannelDescriptor[]): string[] {
    const ids = new Set<string>();
    for (const descriptor of descriptors) {
      checkDescriptor(descriptor);
      if (ids.has(descriptor.id)) {
        throw new McplError(
          'MCPL_INVALID_ARGUMENT',
          `channel ${descriptor.id} appears twice in one registration`,
        );
      }
      ids.add(descriptor.id);
    }
    for (const descriptor of descriptors) {
      const existing = this.#channels.get(descriptor.id);
      const registration = existing?.registration === 'accepted' ? 'accepted' : 'pending';
      this.#channels.set(descriptor.id, { descriptor, registration, open: existing?.open ?? false });
    }
    return [...ids];
  }

  /** Reads the three result shapes hosts send: itemized `results`, `{registered}`, or `{}`. */
  #readRegistration(ids: readonly string[], result: Record<string, unknown>): RegistrationOutcome {
    const verdicts = new Map<string, { accepted: boolean; reason: string | undefined }>();
    if (Array.isArray(result.results)) {
      for (const item of result.results) {
        if (isPlainObject(item) && typeof item.id === 'string' && typeof item.accepted === 'boolean') {
          verdicts.set(item.id, {
            accepted: item.accepted,
            reason: typeof item.reason === 'string' ? item.reason : undefined,
          });
        }
      }
    } else if (Array.isArray(result.registered)) {
      for (const id of result.registered)
        if (typeof id === 'string') verdicts.set(id, { accepted: true, reason: undefined });
    }
    const outcome: RegistrationOutcome = { accepted: [], refused: [], pending: [] };
    for (const id of ids) {
      const verdict = verdicts.get(id);
      const record = this.#channels.get(id);
      if (record === undefined) continue;
      if (verdict === undefined) {
        outcome.pending.push(id);
      } else if (verdict.accepted) {
        record.registration = 'accepted';
        outcome.accepted.push(id);
      } else {
        const wasOpen = record.open;
        record.registration = 'refused';
        record.open = false;
        if (verdict.reason !== undefined) record.reason = verdict.reason;
        outcome.refused.push({ id, reason: verdict.reason });
        if (wasOpen) this.#emit('channelClosed', record.descriptor);
      }
    }
    return outcome;
  }

  /**
   * Registers channels (`channels/register`, a Request): each is recorded before the request
   * goes out (so an open that races the answer succeeds), then marked as the host itemized it.
   * A failed request leaves them pending and is reported in `error`, not thrown.
   *
   * @throws McplError `MCPL_CLOSED`, `MCPL_NOT_NEGOTIATED`, `MCPL_NOT_READY`, `MCPL_CAPABILITY_DENIED`
   * (`channels.register`), `MCPL_INVALID_ARGUMENT` for a bad descriptor.
   */
  async registerChannels(descriptors: readonly ChannelDescriptor[]): Promise<RegistrationOutcome> {
    this.#require('channels.register');
    const ids = this.#record(descriptors);
    if (this.#answering !== undefined) await this.#afterAnswers('channels.register');
    try {
      const result = await request(
        this.#sdk,
        'channels/register',
        { channels: descriptors },
        this.#timeout(),
      );
      return this.#readRegistration(ids, result);
    } catch (err) {
      if (!(err instanceof McplError)) throw err;
      this.#logger.warn('channels/register was not answered; the channels stay pending', { error: err.code });
      return { accepted: [], refused: [], pending: ids, error: err };
    }
  }

  /**
   * Announces channel changes (`channels/changed`). As a Notification by default (mcpl-harness
   * refuses the Request form), and then every added channel stays pending; as a Request when
   * the server is configured so, read like a registration with a short timeout.
   *
   * @throws McplError as {@link registerChannels}.
   */
  async announceChannels(change: {
    added?: readonly ChannelDescriptor[];
    removed?: readonly string[];
    updated?: readonly ChannelDescriptor[];
  }): Promise<RegistrationOutcome> {
    this.#require('channels.register');
    const added = change.added ?? [];
    const updated = change.updated ?? [];
    const removed = change.removed ?? [];
    const ids = this.#record([...added, ...updated]);
    for (const id of removed) {
      const record = this.#channels.get(id);
      this.#channels.delete(id);
      if (record?.open === true) this.#emit('channelClosed', record.descriptor);
    }
    const params: Record<string, unknown> = {};
    if (added.length > 0) params.added = added;
    if (removed.length > 0) params.removed = removed;
    if (updated.length > 0) params.updated = updated;
    if (this.#answering !== undefined) await this.#afterAnswers('channels.register');
    if ((this.#options.channelsChanged ?? 'notification') === 'notification') {
      await notify(this.#sdk, 'channels/changed', params);
      return { accepted: [], refused: [], pending: ids };
    }
    try {
      const result = await request(
        this.#sdk,
        'channels/changed',
        params,
        this.#options.timeouts?.channelsChangedMs ?? 5000,
      );
      return this.#readRegistration(ids, result);
    } catch (err) {
      if (!(err instanceof McplError)) throw err;
      this.#logger.warn('channels/changed was not answered; the channels stay pending', { error: err.code });
      return { accepted: [], refused: [], pending: ids, error: err };
    }
  }

  #outgoingMessage(message: ChannelMessage): ChannelMessage {
    checkMessage(message);
    if (message.tags === undefined) return message;
    const tags = closeTags(message.tags);
    // Already closed (the usual case): sent as given, not copied.
    return sameTags(tags, message.tags) ? message : { ...message, tags };
  }

  /**
   * Delivers a batch of inbound messages (`channels/incoming`) and reads the host's per-item
   * answer. Messages for a channel not registered here (or refused) are refused locally and not
   * sent; a failed request leaves every sent item `unanswered`.
   *
   * @throws McplError `MCPL_CLOSED`, `MCPL_NOT_NEGOTIATED`, `MCPL_NOT_READY`, `MCPL_CAPABILITY_DENIED`
   * (`channels.incoming`), `MCPL_INVALID_ARGUMENT` for a malformed message or tag.
   */
  async incoming(messages: readonly ChannelMessage[]): Promise<IncomingOutcome[]> {
    this.#require('channels.incoming');
    const outcomes: IncomingOutcome[] = new Array(messages.length);
    const sent: ChannelMessage[] = [];
    for (let index = 0; index < messages.length; index += 1) {
      const message = messages[index] as ChannelMessage;
      const wire = this.#outgoingMessage(message);
      const record = this.#channels.get(message.channelId);
      if (record === undefined || record.registration === 'refused') {
        outcomes[index] = {
          messageId: message.messageId,
          channelId: message.channelId,
          status: 'refused',
          reason: 'unknown_channel',
        };
        continue;
      }
      sent.push(wire);
      outcomes[index] = { messageId: message.messageId, channelId: message.channelId, status: 'unanswered' };
    }
    if (sent.length === 0) return outcomes;
    if (this.#answering !== undefined) await this.#afterAnswers('channels.incoming');
    let result: Record<string, unknown>;
    try {
      result = await request(this.#sdk, 'channels/incoming', { messages: sent }, this.#timeout());
    } catch (err) {
      if (!(err instanceof McplError)) throw err;
      for (const outcome of outcomes) {
        if (outcome.status === 'refused') continue;
        if (err.code === 'MCPL_PEER_ERROR') {
          outcome.status = 'refused';
          outcome.reason = `rpc ${String(err.details?.rpcCode)}`;
        } else {
          outcome.reason = err.code;
        }
      }
      return outcomes;
    }
    const verdicts = Array.isArray(result.results) ? result.results : [];
    const byId = verdicts.length > 8 ? verdictIndex(verdicts) : undefined;
    for (const outcome of outcomes) {
      if (outcome.status === 'refused') continue;
      const item =
        byId === undefined ? lastVerdict(verdicts, outcome.messageId) : byId.get(outcome.messageId);
      if (item === undefined || typeof item.accepted !== 'boolean') {
        outcome.reason = 'no verdict';
        continue;
      }
      outcome.status = item.accepted ? 'accepted' : 'refused';
      if (typeof item.conversationId === 'string') outcome.conversationId = item.conversationId;
      if (typeof item.reason === 'string') outcome.reason = item.reason;
    }
    return outcomes;
  }

  /**
   * Sends a `push/event` under a feature set and reads the host's verdict (an error object and
   * an `{accepted: false}` result are both refusals; agent-framework's `duplicate` is a delivery).
   *
   * @throws McplError `MCPL_CLOSED`, `MCPL_NOT_NEGOTIATED`, `MCPL_NOT_READY`, `MCPL_CAPABILITY_DENIED`
   * (`pushEvents`), `MCPL_UNKNOWN_FEATURE_SET`, `MCPL_DECLARATION_MISMATCH`,
   * `MCPL_FEATURE_SET_DISABLED`, `MCPL_INVALID_ARGUMENT` (content or tags).
   */
  async pushEvent(input: PushEventInput): Promise<PushOutcome> {
    this.#require('pushEvents');
    this.#requireFeatureSet(input.featureSet, 'pushEvents');
    if (!Array.isArray(input.content) || !input.content.every(isContentBlock)) {
      throw new McplError('MCPL_INVALID_ARGUMENT', 'push event content must be an array of content blocks');
    }
    const tags = input.tags === undefined ? undefined : closeTags(input.tags);
    const payload = { content: input.content };
    const eventId =
      input.eventId ??
      `evt_${createHash('sha256')
        .update(
          canonicalJson({
            featureSet: input.featureSet,
            origin: input.origin ?? null,
            payload,
            tags: tags ?? null,
            timestamp: input.timestamp ?? null,
          }),
        )
        .digest('base64url')
        .slice(0, 22)}`;
    const params: Record<string, unknown> = {
      featureSet: input.featureSet,
      eventId,
      timestamp: input.timestamp ?? new Date().toISOString(),
      payload,
    };
    if (input.origin !== undefined) params.origin = input.origin;
    if (tags !== undefined) params.tags = tags;
    if (this.#answering !== undefined) await this.#afterAnswers('pushEvents');
    let result: Record<string, unknown>;
    try {
      result = await request(this.#sdk, 'push/event', params, this.#timeout());
    } catch (err) {
      if (!(err instanceof McplError)) throw err;
      if (err.code === 'MCPL_PEER_ERROR')
        return { eventId, status: 'refused', reason: `rpc ${String(err.details?.rpcCode)}` };
      return { eventId, status: 'unanswered', reason: err.code };
    }
    const reason = typeof result.reason === 'string' ? result.reason : undefined;
    if (result.accepted === true) {
      return typeof result.inferenceId === 'string'
        ? { eventId, status: 'accepted', inferenceId: result.inferenceId }
        : { eventId, status: 'accepted' };
    }
    if (result.accepted === false) {
      if (reason === 'duplicate') return { eventId, status: 'duplicate', reason };
      return reason === undefined ? { eventId, status: 'refused' } : { eventId, status: 'refused', reason };
    }
    return { eventId, status: 'unanswered', reason: 'no verdict' };
  }

  /**
   * Asks the host for its channels (`channels/list`, server → host).
   *
   * @throws McplError the gating codes (`channels.register`), `MCPL_TIMEOUT`, `MCPL_PEER_ERROR`.
   */
  async listHostChannels(): Promise<ChannelDescriptor[]> {
    this.#require('channels.register');
    if (this.#answering !== undefined) await this.#afterAnswers('channels.register');
    const result = await request(this.#sdk, 'channels/list', {}, this.#timeout());
    if (!Array.isArray(result.channels))
      throw new McplError('MCPL_BAD_RESPONSE', 'channels/list: no channels array');
    return result.channels.filter(
      (item): item is ChannelDescriptor => isPlainObject(item) && typeof item.id === 'string',
    );
  }

  /**
   * Asks the host which model it runs (`model/info`, §12).
   *
   * @throws McplError the gating codes (`modelInfo`), `MCPL_TIMEOUT`, `MCPL_PEER_ERROR`.
   */
  async modelInfo(): Promise<Record<string, unknown>> {
    this.#require('modelInfo');
    if (this.#answering !== undefined) await this.#afterAnswers('modelInfo');
    return request(this.#sdk, 'model/info', {}, this.#timeout());
  }

  /**
   * Asks the host for an inference (`inference/request`, §11, non-streaming).
   *
   * @throws McplError the gating codes (`inferenceRequest` and the feature set), `MCPL_TIMEOUT`,
   * `MCPL_PEER_ERROR`.
   */
  async requestInference(params: {
    featureSet: string;
    messages: readonly { role: string; content: string }[];
    conversationId?: string;
    preferences?: JsonObject;
  }): Promise<Record<string, unknown>> {
    this.#require('inferenceRequest');
    this.#requireFeatureSet(params.featureSet, 'inferenceRequest');
    if (this.#answering !== undefined) await this.#afterAnswers('inferenceRequest');
    return request(this.#sdk, 'inference/request', { ...params, stream: false }, this.#timeout());
  }
}

function describe(err: unknown): string {
  if (err instanceof ProtocolError) return `rpc ${err.code}`;
  return errorCode(err);
}

/** The host's verdicts by message id; a later item for the same id wins. */
function verdictIndex(items: readonly unknown[]): Map<string, Record<string, unknown>> {
  const byId = new Map<string, Record<string, unknown>>();
  for (const item of items) {
    if (isPlainObject(item) && typeof item.messageId === 'string') byId.set(item.messageId, item);
  }
  return byId;
}

/** The last verdict for `messageId` in a short list, as {@link verdictIndex} would find it. */
function lastVerdict(items: readonly unknown[], messageId: string): Record<string, unknown> | undefined {
  for (let index = items.length - 1; index >= 0; index -= 1) {
    const item = items[index];
    if (isPlainObject(item) && item.messageId === messageId) return item;
  }
  return undefined;
}
