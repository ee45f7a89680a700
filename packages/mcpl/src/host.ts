import {
  type CallToolResult,
  Client,
  type ClientContext,
  type ClientOptions,
  type Implementation,
  isCallToolResult,
  ProtocolError,
  SUPPORTED_PROTOCOL_VERSIONS,
  type Tool,
  type Transport,
} from '@modelcontextprotocol/client';
import { advertisedPaths, CapabilityGrant, INJECT } from './capabilities.js';
import { assumedLegacyGrant, detectHostDialect, type McplHostDialect } from './dialects.js';
import { manifestRevision } from './digest.js';
import { capabilityDenied, errorCode, McplError, McplRpcCode, rpcError } from './errors.js';
import {
  deriveFeatureSets,
  type FeatureSetSelection,
  type FeatureSetStatus,
  type GrantLike,
  hasValidUses,
} from './feature-sets.js';
import { isPlainObject, type JsonObject, type JsonValue } from './json.js';
import { type McplLogger, silentMcplLogger } from './logger.js';
import { changedDomains, type ManifestDomain, MCPL_VERSION, type McplCapabilities } from './manifest.js';
import type { DegradationReceipt, PolicyUpdate } from './policy.js';
import { parsePolicyUpdate } from './policy.js';
import { RecentSet } from './recent.js';
import { anyObject, notify, request } from './rpc.js';
import type { BeforeInferenceParams, ContextInjection } from './server-types.js';
import { closeTagsLeniently } from './tags.js';
import {
  addressKey,
  type ChannelDescriptor,
  type ChannelHistoryRequest,
  type ChannelMessage,
  type ContentBlock,
  isContentBlock,
  messageProblem,
} from './wire.js';

/** A `push/event` as the host received it. */
export interface ReceivedPushEvent {
  featureSet: string;
  eventId: string;
  timestamp: string;
  origin?: JsonObject;
  payload: { content: ContentBlock[] };
  /** The producer's tags closed under §16.3 (umbrellas added, ambient dropped when addressed). */
  tags: string[];
}

/** The host's verdict on one inbound message. */
export interface IncomingVerdict {
  accepted: boolean;
  conversationId?: string;
  reason?: string;
}

/** What an `McplHost` answers with, beyond the grant rules it enforces itself. */
export interface McplHostHandlers {
  /** A push event admitted by the grant (duplicates by event id never reach it). Default: accept. */
  pushEvent?(event: ReceivedPushEvent): IncomingVerdict | Promise<IncomingVerdict>;
  /** Admitted inbound messages, in order; answer one verdict each. Default: accept all. */
  incoming?(messages: ChannelMessage[]): IncomingVerdict[] | Promise<IncomingVerdict[]>;
  /** Per-descriptor authorization of a registration (§14.5). Default: accept all. */
  authorizeChannel?(descriptor: ChannelDescriptor): boolean | { accepted: false; reason: string };
  /**
   * The answer to `model/info`; without it, `model/info` is refused (as mcpl-harness, the
   * harness's own answer: `{id: "harness/human", vendor: "mcpl-harness", ...}`).
   */
  modelInfo?: JsonObject;
  /** Answers `inference/request`; without it, the request is refused. */
  inferenceRequest?(params: JsonObject): JsonObject | Promise<JsonObject>;
}

/** Options of {@link McplHost.connect}. */
export interface McplHostOptions {
  /**
   * `clientInfo`. Servers recognise the 0.4 dialects by this name, so with `dialect`
   * `mcpl-harness` it is `mcpl-harness` or `mcpl-harness-web`, with `agent-framework` it is
   * `agent-framework`.
   */
  name: string;
  version: string;
  /**
   * `experimental.mcpl` as the host advertises it. Default: version 0.5 with push events,
   * context hooks, lifecycle, channels and feature sets; for a 0.4 dialect, what that host
   * really sends (agent-framework 0.1.0: version `0.4`, push events, `beforeInference` and a
   * blocking `afterInference`, feature sets, and no `channels` member). `null` connects as a plain
   * MCP client (not with a 0.4 dialect). A 0.4 dialect advertises a version below 0.5.
   */
  capabilities?: McplCapabilities | null;
  /**
   * How the host speaks MCPL (default `spec`, SPEC 0.5). `mcpl-harness` and `agent-framework`
   * act as the 0.4 hosts INTEROP.md records: no policy Request, a grant assumed at
   * `notifications/initialized`, their answer shapes, opening by `{type, address}` (the
   * README's dialect table lists each difference).
   */
  dialect?: McplHostDialect;
  handlers?: McplHostHandlers;
  /** Requests to the server (default 30 s). */
  requestTimeoutMs?: number;
  /** `context/beforeInference` (default 5 s, as §10.6 recommends); on timeout the turn goes on without it. */
  hookTimeoutMs?: number;
  logger?: McplLogger;
}

/** What a context hook returned, authorized per injection at receipt (§5.4). */
export interface BeforeInferenceOutcome {
  /** The feature set the server claimed (never used to authorize). */
  featureSet: string | undefined;
  accepted: ContextInjection[];
  /** Injections refused, with why. */
  dropped: { injection: unknown; reason: 'position_denied' | 'malformed' }[];
  /** The hook did not answer in time (or failed); the turn goes on without it. */
  timedOut: boolean;
}

/** What a manifest fetch found (§17.5). */
export interface ManifestFetch {
  manifest: JsonObject;
  /** The changed domains against the manifest in force before. */
  domains: ManifestDomain[];
  /** The server's `revision` equals the digest recomputed here (a mismatch is a conformance defect, not a rejection). */
  revisionMatches: boolean;
  /** Granted capabilities the new manifest no longer advertises: revoked here, host-first. */
  revoked: string[];
}

/** What a host reports to its listeners. */
export interface McplHostEvents {
  /** An admitted, non-duplicate push event. */
  push: [event: ReceivedPushEvent];
  /** Messages admitted from `channels/incoming`. */
  incoming: [messages: ChannelMessage[]];
  /** The server registered or changed channels; the registry is updated. */
  channels: [];
  /** `mcpl/manifestChanged` arrived: fetch with {@link McplHost.fetchManifest} (the host decides when). */
  manifestChanged: [revision: string, domains: string[]];
  /** The host opened a channel on its own: agent-framework's auto-open and `channels/changed` reconciliation. */
  opened: [result: ChannelOpenResult];
  /** A channel the host tried to open on its own did not open. */
  openFailed: [channelId: string, error: McplError];
  /** The connection closed. */
  close: [];
}

type Listener<A extends unknown[]> = (...args: A) => void;

type ChannelOpenResult = {
  channel: ChannelDescriptor;
  history?: ChannelMessage[];
  historyTruncated?: boolean;
};

type RequestExtra = ClientContext;

const DEFAULT_HOST_CAPABILITIES: McplCapabilities = {
  version: MCPL_VERSION,
  pushEvents: true,
  contextHooks: { beforeInference: true },
  inferenceLifecycle: true,
  modelInfo: true,
  channels: true,
  featureSets: true,
};

/**
 * What each 0.4 dialect sends in `initialize` unless told otherwise: the host's own greeting, read
 * from its sources. agent-framework 0.1.0 (tag v0.1.0: `src/framework.ts` builds the
 * `experimental.mcpl` object, `src/mcpl/server-connection.ts` writes the request) has no
 * `channels` member, though it speaks channels. mcpl-harness 0.1.1 (`src/session.ts`) has no
 * context hooks and no `featureSets` member; `scopedAccess` is a 0.3 capability 0.5 removed.
 */
const LEGACY_GREETINGS: Readonly<
  Record<Exclude<McplHostDialect, 'spec'>, { protocolVersion: string; capabilities: McplCapabilities }>
> = {
  'mcpl-harness': {
    protocolVersion: '2024-11-05',
    capabilities: { version: '0.4', pushEvents: true, channels: true, modelInfo: true, scopedAccess: true },
  },
  'agent-framework': {
    protocolVersion: '2024-11-05',
    capabilities: {
      version: '0.4',
      pushEvents: true,
      contextHooks: { beforeInference: true, afterInference: { blocking: true } },
      featureSets: true,
    },
  },
};

const DIALECTS: readonly McplHostDialect[] = ['spec', 'mcpl-harness', 'agent-framework'];

/** What mcpl-harness 0.1.1 answers `model/info` with (a human plays the model at the harness). */
const HARNESS_MODEL_INFO: JsonObject = {
  id: 'harness/human',
  vendor: 'mcpl-harness',
  contextWindow: 200000,
  capabilities: ['text'],
};

const ACCEPTED: IncomingVerdict = Object.freeze({ accepted: true });

function invalidOption(message: string): McplError {
  return new McplError('MCPL_INVALID_ARGUMENT', message);
}

/**
 * The dialect and the advertisement of a host, checked: a known dialect, and for a 0.4 one an
 * advertisement below 0.5 under a name servers recognise as that dialect.
 *
 * @throws McplError `MCPL_INVALID_ARGUMENT` naming the option.
 */
function hostProfile(options: McplHostOptions): {
  dialect: McplHostDialect;
  advertised: McplCapabilities | null;
} {
  const dialect = options.dialect ?? 'spec';
  if (!DIALECTS.includes(dialect)) {
    throw invalidOption(
      `dialect ${JSON.stringify(String(dialect)).slice(0, 80)} is not one of ${DIALECTS.join(', ')}`,
    );
  }
  if (dialect === 'spec') {
    return {
      dialect,
      advertised: options.capabilities === undefined ? DEFAULT_HOST_CAPABILITIES : options.capabilities,
    };
  }
  if (options.capabilities === null) {
    throw invalidOption(`the ${dialect} dialect speaks MCPL: capabilities cannot be null with it`);
  }
  const advertised = options.capabilities ?? LEGACY_GREETINGS[dialect].capabilities;
  const seen = detectHostDialect(options.name, advertised.version);
  if (!seen.legacy) {
    throw invalidOption(
      `the ${dialect} dialect is a 0.4 host: capabilities.version must be below 0.5, not ${JSON.stringify(
        advertised.version ?? null,
      )}`,
    );
  }
  if (seen.name !== dialect) {
    const names = dialect === 'mcpl-harness' ? 'mcpl-harness or mcpl-harness-web' : 'agent-framework';
    throw invalidOption(
      `servers recognise the ${dialect} dialect by clientInfo.name: name must be ${names}, not ${JSON.stringify(
        String(options.name).slice(0, 80),
      )}`,
    );
  }
  if (dialect === 'agent-framework' && options.handlers?.modelInfo !== undefined) {
    throw invalidOption(
      'agent-framework 0.1.0 never answers model/info: handlers.modelInfo cannot be given with it',
    );
  }
  return { dialect, advertised };
}

function unsupported(message: string, dialect: McplHostDialect): McplError {
  return new McplError('MCPL_DIALECT_UNSUPPORTED', message, { details: { dialect } });
}

/** A request handler that never answers: the SDK sends nothing for a request aborted by cancel or close. */
function neverAnswered(_params: unknown, extra: RequestExtra): Promise<Record<string, unknown>> {
  return new Promise((resolve) =>
    extra.mcpReq.signal.addEventListener('abort', () => resolve({}), { once: true }),
  );
}

/**
 * The SDK's `Client`, with the one point a 0.4 host acts at during the handshake: just before
 * `notifications/initialized` goes out. `assertNotificationCapability` is the SDK's check that a
 * notification may be sent now; for `notifications/initialized` it asks the host whether it can
 * go on with the server it has just read (a 0.4 host refuses a manifest form it cannot read, which
 * ends the handshake there) and lets it take the grant both ends then assume.
 */
class McplSdkClient extends Client {
  /** Runs before `notifications/initialized` is sent; throwing stops the handshake. */
  beforeInitialized: (() => void) | undefined;

  protected override assertNotificationCapability(method: string): void {
    super.assertNotificationCapability(method);
    if (method === 'notifications/initialized') this.beforeInitialized?.();
  }
}

const grantOf = (a: GrantLike, b?: GrantLike): GrantLike => ({
  has: (path: string) => a.has(path) && (b === undefined || b.has(path)),
});

/**
 * The host role of MCPL on the SDK's `Client`: it advertises `experimental.mcpl`, reads the
 * server's manifest (object or array `featureSets`), negotiates the grant with
 * `featureSets/update` Requests in the §6.7 order (reductions first, expansions after the
 * receipt), enforces the grant on every server→host request (`-32002` before the policy or
 * outside it), authorizes channels per descriptor and inbound messages at receipt, and drives
 * the server: hooks, lifecycle, channels, publish, rollback, manifest fetch, tools.
 */
export class McplHost {
  /** The SDK client under the host, for plain MCP calls the host makes itself. */
  readonly client: Client;
  readonly #options: McplHostOptions;
  readonly #logger: McplLogger;
  readonly #dialect: McplHostDialect;
  /** The host's own `experimental.mcpl` (null for a plain MCP client). */
  readonly #advertisement: McplCapabilities | null;
  #handshakeChannels: ChannelDescriptor[] | undefined;
  /** Channels this host opened and has not closed (agent-framework reconciles against it). */
  readonly #open = new Set<string>();
  #manifest: JsonObject | undefined;
  #declarations: Record<string, { uses?: unknown; rollback?: unknown }> = {};
  #grant: GrantLike = CapabilityGrant.empty();
  #selection: FeatureSetSelection = { disabled: [] };
  #established = false;
  readonly #channels = new Map<string, ChannelDescriptor>();
  readonly #seenEvents = new RecentSet(4096);
  /**
   * `openChannel` calls in flight, with the channel each names (undefined when it opens by an
   * address no registered channel has): live messages for those channels wait until they settle.
   */
  readonly #opening = new Map<Promise<unknown>, string | undefined>();
  /** `setPolicy` calls in flight: server → host requests wait for the grant they settle to. */
  readonly #policies = new Set<Promise<unknown>>();
  #closed = false;
  readonly #listeners: { [K in keyof McplHostEvents]: Set<Listener<McplHostEvents[K]>> } = {
    push: new Set(),
    incoming: new Set(),
    channels: new Set(),
    manifestChanged: new Set(),
    opened: new Set(),
    openFailed: new Set(),
    close: new Set(),
  };

  private constructor(options: McplHostOptions) {
    const { dialect, advertised } = hostProfile(options);
    this.#options = options;
    this.#dialect = dialect;
    this.#advertisement = advertised;
    this.#logger = options.logger ?? silentMcplLogger;
    const clientOptions: ClientOptions = {
      capabilities: advertised === null ? {} : { experimental: { mcpl: advertised as JsonObject } },
    };
    if (dialect !== 'spec') {
      // The protocol version the 0.4 host offers (the SDK offers the first one listed).
      const offered = LEGACY_GREETINGS[dialect].protocolVersion;
      clientOptions.supportedProtocolVersions = [
        offered,
        ...SUPPORTED_PROTOCOL_VERSIONS.filter((version) => version !== offered),
      ];
    }
    const client = new McplSdkClient({ name: options.name, version: options.version }, clientOptions);
    if (dialect !== 'spec') client.beforeInitialized = () => this.#assumeLegacyGrant();
    this.client = client;
    this.#install();
  }

  /**
   * Connects to a server over `transport` and reads its manifest. In a 0.4 dialect the grant
   * is assumed just before `notifications/initialized` goes out, and `mcpl-harness` then calls
   * `channels/list` (its answer is {@link handshakeChannels}).
   *
   * @throws McplError `MCPL_INVALID_ARGUMENT` for a bad option, `MCPL_BAD_RESPONSE` when the
   * manifest's `featureSets` is not in the form the dialect reads (the handshake stops before
   * `initialized`), `MCPL_TRANSPORT` or `MCPL_CLOSED` when the handshake fails.
   */
  static async connect(transport: Transport, options: McplHostOptions): Promise<McplHost> {
    const host = new McplHost(options);
    try {
      await host.client.connect(transport, { timeout: options.requestTimeoutMs ?? 30_000 });
    } catch (err) {
      if (err instanceof McplError) throw err;
      throw new McplError(
        'MCPL_TRANSPORT',
        `the handshake failed: ${err instanceof Error ? err.message : String(err)}`,
        {
          cause: err,
        },
      );
    }
    if (host.#dialect === 'spec') {
      const mcpl = host.#serverMcpl();
      if (mcpl !== undefined) host.#adopt(mcpl);
    }
    if (host.#dialect === 'mcpl-harness' && host.#manifest !== undefined) await host.#listAtHandshake();
    return host;
  }

  #serverMcpl(): JsonObject | undefined {
    const mcpl = (this.client.getServerCapabilities()?.experimental as Record<string, unknown> | undefined)
      ?.mcpl;
    return isPlainObject(mcpl) ? (mcpl as JsonObject) : undefined;
  }

  /**
   * A 0.4 host never sends a policy: once it has read the manifest it holds the grant the
   * server assumes for it (`legacyHosts: 'advertised'`), before anything can ask for one.
   */
  #assumeLegacyGrant(): void {
    const mcpl = this.#serverMcpl();
    if (mcpl === undefined) return;
    const sets = mcpl.featureSets;
    const wantsArray = this.#dialect === 'mcpl-harness';
    if (sets !== undefined && (wantsArray ? !Array.isArray(sets) : !isPlainObject(sets))) {
      throw new McplError(
        'MCPL_BAD_RESPONSE',
        wantsArray
          ? 'mcpl-harness iterates featureSets as an array: the form the server sent ends its handshake'
          : 'agent-framework 0.1.0 reads featureSets keyed by name: the form the server sent is not one it reads',
        { details: { dialect: this.#dialect, featureSets: Array.isArray(sets) ? 'array' : typeof sets } },
      );
    }
    this.#adopt(mcpl);
    this.#grant = assumedLegacyGrant(this.#advertised(), this.#advertisement, this.#dialect);
    this.#established = true;
  }

  /** mcpl-harness calls `channels/list` right after the handshake; a failure is logged, not fatal. */
  async #listAtHandshake(): Promise<void> {
    try {
      const result = await request(this.client, 'channels/list', {}, this.#timeout());
      this.#handshakeChannels = Array.isArray(result.channels)
        ? (result.channels as unknown as ChannelDescriptor[])
        : [];
    } catch (err) {
      this.#logger.warn('the channels/list after the handshake failed', { error: errorCode(err) });
    }
  }

  /** The dialect this host speaks. */
  get dialect(): McplHostDialect {
    return this.#dialect;
  }

  /**
   * The answer to the `channels/list` an `mcpl-harness` host sends right after the handshake;
   * undefined in the other dialects, or when that request failed.
   */
  get handshakeChannels(): ChannelDescriptor[] | undefined {
    return this.#handshakeChannels;
  }

  /** The server's manifest in force (undefined for a plain MCP server). */
  get manifest(): JsonObject | undefined {
    return this.#manifest;
  }

  /** The server's `serverInfo`. */
  get serverInfo(): Implementation | undefined {
    return this.client.getServerVersion();
  }

  /**
   * True once a policy Request was answered with an accepting receipt, or, in a 0.4 dialect,
   * once the grant was assumed at `initialized`.
   */
  get policyEstablished(): boolean {
    return this.#established;
  }

  /** Whether the host's effective grant includes `path` now. */
  isGranted(path: string): boolean {
    return this.#grant.has(path);
  }

  /** The server's feature sets as this host derives them from its grant (§6.4). */
  get featureSets(): FeatureSetStatus[] {
    return deriveFeatureSets(
      this.#declarations,
      this.#established ? this.#grant : undefined,
      this.#selection,
    );
  }

  /** The channels the server registered and this host accepted. */
  get channels(): ChannelDescriptor[] {
    return [...this.#channels.values()];
  }

  /** Listens to a host event; returns the function that stops listening. */
  on<K extends keyof McplHostEvents>(event: K, listener: Listener<McplHostEvents[K]>): () => void {
    const set = this.#listeners[event] as Set<Listener<McplHostEvents[K]>>;
    set.add(listener);
    return () => set.delete(listener);
  }

  #emit<K extends keyof McplHostEvents>(event: K, ...args: McplHostEvents[K]): void {
    for (const listener of [...(this.#listeners[event] as Set<Listener<McplHostEvents[K]>>)]) {
      try {
        listener(...args);
      } catch (err) {
        this.#logger.warn('a host listener threw', { event, error: errorCode(err) });
      }
    }
  }

  #adopt(manifest: JsonObject): void {
    this.#manifest = manifest;
    const sets = manifest.featureSets;
    const declarations: Record<string, { uses?: unknown; rollback?: unknown }> = {};
    if (Array.isArray(sets)) {
      for (const entry of sets) {
        if (isPlainObject(entry) && typeof entry.name === 'string') declarations[entry.name] = entry;
      }
    } else if (isPlainObject(sets)) {
      for (const [name, declaration] of Object.entries(sets)) {
        declarations[name] = isPlainObject(declaration) ? declaration : {};
      }
    }
    this.#declarations = declarations;
  }

  #advertised(): Set<string> {
    const paths = advertisedPaths(this.#manifest ?? {});
    if (this.client.getServerCapabilities()?.tools !== undefined) paths.add('tools');
    return paths;
  }

  #timeout(): number {
    return this.#options.requestTimeoutMs ?? 30_000;
  }

  #requireMcpl(): void {
    if (this.#manifest === undefined)
      throw new McplError('MCPL_NOT_NEGOTIATED', 'the server does not speak MCPL');
    if (this.#closed) throw new McplError('MCPL_CLOSED', 'the connection is closed');
  }

  #requireGrant(path: string): void {
    this.#requireMcpl();
    if (!this.#established) throw new McplError('MCPL_NOT_READY', 'no policy has been established yet');
    if (!this.#grant.has(path)) {
      throw new McplError('MCPL_CAPABILITY_DENIED', `${path} is not in the grant`, {
        details: { capability: path },
      });
    }
  }

  // ---- policy ----------------------------------------------------------------------------

  /**
   * Sends the effective grant as a `featureSets/update` Request (§5.3, §6.7) and returns the
   * server's receipt. What it removes applies before the Request goes out; what it adds only
   * once an accepting receipt is back (an unanswered expansion never activates). A refusal is
   * returned, never acted on: the host does not widen anything because of a receipt.
   *
   * @throws McplError `MCPL_INVALID_ARGUMENT` for a malformed policy, `MCPL_TIMEOUT`,
   * `MCPL_PEER_ERROR`, `MCPL_BAD_RESPONSE` (a receipt that is not one),
   * `MCPL_DIALECT_UNSUPPORTED` in a 0.4 dialect (those hosts never send the Request).
   */
  setPolicy(policy: PolicyUpdate): Promise<DegradationReceipt> {
    // A server → host request read while this is in flight is judged under the grant it settles
    // to: the receipt and a request the server writes right behind it can arrive together.
    const call = this.#setPolicy(policy);
    this.#policies.add(call);
    const settled = () => this.#policies.delete(call);
    call.then(settled, settled);
    return call;
  }

  async #setPolicy(policy: PolicyUpdate): Promise<DegradationReceipt> {
    if (this.#dialect !== 'spec') {
      throw unsupported(`${this.#dialect} never sends a featureSets/update Request`, this.#dialect);
    }
    this.#requireMcpl();
    parsePolicyUpdate(policy);
    const next = CapabilityGrant.of(policy.effectiveCapabilities ?? []);
    const selection: FeatureSetSelection = { enabled: policy.enabled, disabled: policy.disabled ?? [] };
    // Revocation first: in force now is what both the old and the new grant allow.
    this.#grant = grantOf(this.#grant, next);
    const params: Record<string, unknown> = { ...policy };
    const result = await request(this.client, 'featureSets/update', params, this.#timeout());
    if (typeof result.accepted !== 'boolean') {
      throw new McplError('MCPL_BAD_RESPONSE', 'featureSets/update: the receipt has no accepted flag');
    }
    if (result.accepted) {
      this.#grant = next;
      this.#selection = selection;
      this.#established = true;
    } else if (typeof result.fallback !== 'string') {
      this.#logger.warn('a refusing receipt without fallback (conformance defect)');
    }
    return result as unknown as DegradationReceipt;
  }

  /**
   * Sends `featureSets/update` as a Notification: a server applies only its `disabled` list.
   * As agent-framework 0.1.0 it carries only `enabled` and `disabled`, applies them to this
   * host's own feature sets first, and is sent only when one of them is non-empty.
   *
   * @throws McplError `MCPL_INVALID_ARGUMENT` for a malformed policy (or, as agent-framework,
   * one with capabilities), `MCPL_DIALECT_UNSUPPORTED` as mcpl-harness (it never sends a policy).
   */
  async notifyPolicy(policy: PolicyUpdate): Promise<void> {
    if (this.#dialect === 'mcpl-harness') {
      throw unsupported('mcpl-harness never sends featureSets/update', this.#dialect);
    }
    this.#requireMcpl();
    if (this.#dialect === 'agent-framework') {
      const update = parsePolicyUpdate(policy);
      if (update.effectiveCapabilities !== undefined || update.deniedCapabilities !== undefined) {
        throw new McplError(
          'MCPL_INVALID_ARGUMENT',
          'agent-framework 0.1.0 predates capability grants: its featureSets/update carries enabled and disabled only',
        );
      }
      const enabled = update.enabled ?? [];
      const disabled = update.disabled ?? [];
      this.#selection = {
        enabled: update.enabled ?? this.#selection.enabled,
        disabled: [...new Set([...this.#selection.disabled, ...disabled])],
      };
      if (enabled.length === 0 && disabled.length === 0) return;
      const params: Record<string, unknown> = {};
      if (update.enabled !== undefined) params.enabled = enabled;
      if (update.disabled !== undefined) params.disabled = disabled;
      await notify(this.client, 'featureSets/update', params);
      return;
    }
    await notify(this.client, 'featureSets/update', { ...policy });
  }

  // ---- host → server -----------------------------------------------------------------------

  /**
   * Runs `context/beforeInference` for one turn and authorizes each returned injection by its
   * position against the grant current when the answer arrives; `userMessage` is sent only
   * when `observe` is granted. A timeout or failure yields no injections (fail-open).
   *
   * @throws McplError `MCPL_NOT_READY` before the policy.
   */
  async beforeInference(
    params: Omit<BeforeInferenceParams, 'userMessage'> & { userMessage?: string | null },
  ) {
    this.#requireMcpl();
    if (!this.#established) throw new McplError('MCPL_NOT_READY', 'no policy has been established yet');
    const observe = this.#grant.has('contextHooks.beforeInference.observe');
    const outcome: BeforeInferenceOutcome = {
      featureSet: undefined,
      accepted: [],
      dropped: [],
      timedOut: false,
    };
    const positions = ['system', 'beforeUser', 'afterUser'];
    if (!observe && !positions.some((position) => this.#grant.has(`${INJECT}${position}`))) return outcome;
    let result: Record<string, unknown>;
    try {
      result = await request(
        this.client,
        'context/beforeInference',
        { ...params, userMessage: observe ? (params.userMessage ?? null) : null },
        this.#options.hookTimeoutMs ?? 5000,
      );
    } catch (err) {
      this.#logger.warn('context/beforeInference failed; going on without it', { error: errorCode(err) });
      outcome.timedOut = true;
      return outcome;
    }
    if (typeof result.featureSet === 'string') outcome.featureSet = result.featureSet;
    const injections = Array.isArray(result.contextInjections) ? result.contextInjections : [];
    for (const injection of injections) {
      if (
        !isPlainObject(injection) ||
        typeof injection.namespace !== 'string' ||
        typeof injection.position !== 'string' ||
        !positions.includes(injection.position) ||
        !(
          typeof injection.content === 'string' ||
          (Array.isArray(injection.content) && injection.content.every(isContentBlock))
        )
      ) {
        outcome.dropped.push({ injection, reason: 'malformed' });
        continue;
      }
      if (!this.#grant.has(`${INJECT}${injection.position}`)) {
        outcome.dropped.push({ injection, reason: 'position_denied' });
        continue;
      }
      outcome.accepted.push(injection as unknown as ContextInjection);
    }
    return outcome;
  }

  /** Sends `inference/lifecycle` (only when `inferenceLifecycle` is granted; otherwise nothing is sent). */
  async lifecycle(params: JsonObject & { inferenceId: string; phase: string }): Promise<void> {
    this.#requireMcpl();
    if (!this.#established || !this.#grant.has('inferenceLifecycle')) return;
    await notify(this.client, 'inference/lifecycle', params);
  }

  /**
   * Sends `context/afterInference` as a Request, as the 0.4 hosts still do (0.5 removed it) and
   * returns the server's answer as is.
   *
   * @throws McplError `MCPL_DIALECT_UNSUPPORTED` in the spec dialect, `MCPL_INVALID_ARGUMENT`
   * without a string `inferenceId`, `MCPL_PEER_ERROR`, `MCPL_TIMEOUT`.
   */
  async afterInference(params: JsonObject & { inferenceId: string }): Promise<JsonObject> {
    if (this.#dialect === 'spec') {
      throw unsupported(
        'context/afterInference was removed in MCPL 0.5; only the 0.4 dialects send it',
        'spec',
      );
    }
    this.#requireMcpl();
    if (!isPlainObject(params) || typeof params.inferenceId !== 'string') {
      throw new McplError('MCPL_INVALID_ARGUMENT', 'afterInference: inferenceId must be a string');
    }
    return (await request(
      this.client,
      'context/afterInference',
      { ...params },
      this.#timeout(),
    )) as JsonObject;
  }

  /**
   * Opens a channel (`channels/open`) by id or by `{type, address}`, optionally with history.
   * A live message for that channel reaches `incoming` only once the returned promise has
   * settled, so its callers see the answer (and history) first. The 0.4 dialects open by
   * `{type, address}` only: a `channelId` is sent as its registered descriptor's type and address.
   *
   * @throws McplError gating codes (`channels.lifecycle`), `MCPL_PEER_ERROR` (`-32023`, `-32024`),
   * `MCPL_UNKNOWN_CHANNEL` in a 0.4 dialect for an id not registered here.
   */
  openChannel(
    target: { channelId: string } | { type: string; address?: JsonValue },
    options: { history?: ChannelHistoryRequest; metadata?: JsonObject } = {},
  ): Promise<{ channel: ChannelDescriptor; history?: ChannelMessage[]; historyTruncated?: boolean }> {
    // The caller's reactions go on this very promise, ahead of the delivery of any live message
    // for the channel, which waits on it (see the `channels/incoming` handler).
    const call = this.#openChannel(target, options);
    this.#opening.set(call, this.#namedChannel(target));
    const settled = () => this.#opening.delete(call);
    call.then(settled, settled);
    return call;
  }

  /** The registered channel an open names, by id or by `{type, address}`; undefined when none does. */
  #namedChannel(target: { channelId: string } | { type: string; address?: JsonValue }): string | undefined {
    if ('channelId' in target) return target.channelId;
    const key = addressKey(target.type, target.address);
    for (const descriptor of this.#channels.values()) {
      if (addressKey(descriptor.type, descriptor.address) === key) return descriptor.id;
    }
    return undefined;
  }

  /** The opens in flight that live messages of this batch wait for: those of their channels, and any open of a channel not registered yet. */
  #opensBefore(params: Record<string, unknown>): Promise<unknown>[] | undefined {
    const messages = Array.isArray(params.messages) ? params.messages : [];
    let waits: Promise<unknown>[] | undefined;
    for (const [call, channelId] of this.#opening) {
      const named =
        channelId === undefined ||
        messages.some((message) => isPlainObject(message) && message.channelId === channelId);
      if (!named) continue;
      waits ??= [];
      waits.push(call);
    }
    return waits;
  }

  async #openChannel(
    target: { channelId: string } | { type: string; address?: JsonValue },
    options: { history?: ChannelHistoryRequest; metadata?: JsonObject },
  ): Promise<{ channel: ChannelDescriptor; history?: ChannelMessage[]; historyTruncated?: boolean }> {
    this.#requireGrant('channels.lifecycle');
    const params: Record<string, unknown> = { ...this.#openTarget(target) };
    if (options.history !== undefined) params.history = options.history;
    if (options.metadata !== undefined) params.metadata = options.metadata;
    const result = await request(this.client, 'channels/open', params, this.#timeout());
    if (!isPlainObject(result.channel) || typeof result.channel.id !== 'string') {
      throw new McplError('MCPL_BAD_RESPONSE', 'channels/open: the result has no channel');
    }
    const channel = result.channel as unknown as ChannelDescriptor;
    this.#channels.set(channel.id, channel);
    this.#open.add(channel.id);
    return result as unknown as ChannelOpenResult;
  }

  /** What `channels/open` names: as given, or for a 0.4 dialect the descriptor's `{type, address}`. */
  #openTarget(
    target: { channelId: string } | { type: string; address?: JsonValue },
  ): { channelId: string } | { type: string; address?: JsonValue } {
    if (this.#dialect === 'spec' || !('channelId' in target)) return target;
    const descriptor = this.#channels.get(target.channelId);
    if (descriptor === undefined) {
      throw new McplError(
        'MCPL_UNKNOWN_CHANNEL',
        `${this.#dialect} opens channels by {type, address}, and ${target.channelId} is not registered here`,
      );
    }
    return descriptor.address === undefined
      ? { type: descriptor.type }
      : { type: descriptor.type, address: descriptor.address };
  }

  /** Opens, one after another, each of these registered channels this host has not open yet. */
  async #autoOpen(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      if (this.#open.has(id) || !this.#channels.has(id) || this.#closed) continue;
      try {
        this.#emit('opened', await this.openChannel({ channelId: id }));
      } catch (err) {
        const error =
          err instanceof McplError
            ? err
            : new McplError('MCPL_TRANSPORT', 'channels/open failed', { cause: err });
        this.#logger.warn('a channel the host opened on its own did not open', {
          channelId: id.slice(0, 120),
          error: errorCode(err),
        });
        this.#emit('openFailed', id, error);
      }
    }
  }

  /**
   * Closes a channel (`channels/close`).
   *
   * @throws McplError gating codes (`channels.lifecycle`), `MCPL_PEER_ERROR`.
   */
  async closeChannel(channelId: string): Promise<{ closed: boolean }> {
    this.#requireGrant('channels.lifecycle');
    const result = await request(this.client, 'channels/close', { channelId }, this.#timeout());
    this.#open.delete(channelId);
    return { closed: result.closed === true };
  }

  /**
   * Asks the server to deliver content to a channel (`channels/publish`): as a Request with
   * `ack` (the default), returning `{ delivered, messageId }`, or as a Notification.
   *
   * @throws McplError gating codes (`channels.publish`), `MCPL_UNKNOWN_CHANNEL` for a channel
   * not registered here, `MCPL_PEER_ERROR`.
   */
  async publish(
    params: {
      channelId: string;
      content: ContentBlock[] | string;
      conversationId?: string;
      stream?: boolean;
    },
    options: { ack?: boolean } = {},
  ): Promise<{ delivered: boolean; messageId?: string } | undefined> {
    this.#requireGrant('channels.publish');
    if (!this.#channels.has(params.channelId)) {
      throw new McplError('MCPL_UNKNOWN_CHANNEL', `channel ${params.channelId} is not registered`);
    }
    const content =
      typeof params.content === 'string' ? [{ type: 'text', text: params.content }] : params.content;
    const body = { ...params, content };
    if (options.ack === false) {
      await notify(this.client, 'channels/publish', body);
      return undefined;
    }
    const result = await request(this.client, 'channels/publish', body, this.#timeout());
    return result as { delivered: boolean; messageId?: string };
  }

  /**
   * Sends `channels/acknowledge`.
   *
   * @throws McplError gating codes (`channels.acknowledge`), `MCPL_PEER_ERROR`.
   */
  async acknowledge(params: { channelId: string; messageId: string; intent: string; value?: string }) {
    this.#requireGrant('channels.acknowledge');
    return request(this.client, 'channels/acknowledge', { ...params }, this.#timeout());
  }

  /**
   * Sends `channels/typing` as a Notification.
   *
   * @throws McplError gating codes (`channels.typing`).
   */
  async typing(params: JsonObject & { channelId: string }): Promise<void> {
    this.#requireGrant('channels.typing');
    await notify(this.client, 'channels/typing', params);
  }

  /**
   * Streams moderated outgoing text to the channel's server (`channels/outgoing/chunk`).
   *
   * @throws McplError gating codes (`channels.streaming`).
   */
  async outgoingChunk(params: {
    inferenceId: string;
    conversationId: string;
    channelId: string;
    index: number;
    delta: string;
  }): Promise<void> {
    this.#requireGrant('channels.streaming');
    await notify(this.client, 'channels/outgoing/chunk', { ...params });
  }

  /**
   * Closes an outgoing stream (`channels/outgoing/complete`) with the full moderated content.
   *
   * @throws McplError gating codes (`channels.streaming`).
   */
  async outgoingComplete(params: {
    inferenceId: string;
    conversationId: string;
    channelId: string;
    content: ContentBlock[];
  }): Promise<void> {
    this.#requireGrant('channels.streaming');
    await notify(this.client, 'channels/outgoing/complete', { ...params });
  }

  /**
   * Asks the server to roll a feature set back to a checkpoint (`state/rollback`).
   *
   * @throws McplError `MCPL_PEER_ERROR` (`-32005` for an unknown checkpoint), `MCPL_TIMEOUT`.
   */
  async rollback(params: { checkpoint: string; featureSet?: string }): Promise<{
    checkpoint: string;
    success: boolean;
    reason?: string;
  }> {
    this.#requireMcpl();
    const result = await request(this.client, 'state/rollback', { ...params }, this.#timeout());
    return result as { checkpoint: string; success: boolean; reason?: string };
  }

  /**
   * Fetches the server's current manifest (`mcpl/manifest`, §17.4), diffs it against the one in
   * force and applies removals at once: a granted capability the server stopped advertising is
   * revoked here. Additions never widen the grant; that takes a new {@link setPolicy}.
   *
   * @throws McplError `MCPL_PEER_ERROR`, `MCPL_TIMEOUT`; an unparseable answer leaves the old manifest standing.
   */
  async fetchManifest(): Promise<ManifestFetch> {
    this.#requireMcpl();
    const manifest = (await request(this.client, 'mcpl/manifest', {}, this.#timeout())) as JsonObject;
    const previous = this.#manifest ?? {};
    let revisionMatches = false;
    try {
      revisionMatches = manifestRevision(manifest) === manifest.revision;
    } catch {
      revisionMatches = false;
    }
    const domains = changedDomains(previous, manifest);
    const before = this.#advertised();
    this.#adopt(manifest);
    const after = this.#advertised();
    const revoked = [...before].filter((path) => !after.has(path) && this.#grant.has(path));
    if (revoked.length > 0) {
      const current = this.#grant;
      this.#grant = { has: (path: string) => current.has(path) && after.has(path) };
    }
    if (!revisionMatches)
      this.#logger.warn('the manifest revision does not match its digest (conformance defect)');
    return { manifest, domains, revisionMatches, revoked };
  }

  /**
   * Lists the server's channels (`channels/list`, host → server).
   *
   * @throws McplError gating codes (`channels.register`), `MCPL_PEER_ERROR`.
   */
  async listChannels(): Promise<ChannelDescriptor[]> {
    this.#requireGrant('channels.register');
    const result = await request(this.client, 'channels/list', {}, this.#timeout());
    return Array.isArray(result.channels) ? (result.channels as unknown as ChannelDescriptor[]) : [];
  }

  /** Lists the server's tools (`tools/list`). */
  async listTools(): Promise<Tool[]> {
    const result = await this.client.request({ method: 'tools/list', params: {} });
    return result.tools;
  }

  /**
   * Calls a tool (`tools/call`) and returns the raw result, `state` included. `state` and
   * `checkpoint` are sent beside the arguments when given (§8.4).
   *
   * @throws McplError `MCPL_PEER_ERROR` (`-32002`, `-32001`, unknown tool), `MCPL_TIMEOUT`.
   */
  async callTool(
    name: string,
    args: Record<string, unknown> = {},
    extra: { state?: JsonValue; checkpoint?: string } = {},
  ): Promise<CallToolResult & { state?: JsonObject }> {
    const result = await request(
      this.client,
      'tools/call',
      { name, arguments: args, ...extra },
      this.#timeout(),
    );
    if (!isCallToolResult(result))
      throw new McplError('MCPL_BAD_RESPONSE', 'tools/call: the result is not a tool result');
    return result as CallToolResult & { state?: JsonObject };
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    await this.client.close();
  }

  // ---- server → host -----------------------------------------------------------------------

  /** Answers `method` through the SDK (a custom-schema handler: params pass as the object they are). */
  #answer(method: string, handler: (params: Record<string, unknown>, extra: RequestExtra) => unknown): void {
    this.client.setRequestHandler(
      method,
      { params: anyObject },
      (params, extra) => handler(params, extra) as Record<string, unknown> | Promise<Record<string, unknown>>,
    );
  }

  /** Hears `method` notifications through the SDK. */
  #hear(method: string, handler: (params: Record<string, unknown>) => void): void {
    this.client.setNotificationHandler(method, { params: anyObject }, (params) => handler(params));
  }

  /** Serves `method` through the SDK, behind the manifest and the grant. */
  #serve(
    method: string,
    capability: string,
    handler: (params: Record<string, unknown>, extra: RequestExtra) => unknown,
  ): void {
    this.#answer(method, this.#guarded(method, capability, handler));
  }

  #guarded(
    method: string,
    capability: string,
    handler: (params: Record<string, unknown>, extra: RequestExtra) => unknown,
  ): (params: Record<string, unknown>, extra: RequestExtra) => unknown {
    const failed = (err: unknown): never => {
      if (err instanceof ProtocolError) throw err;
      this.#logger.error('a host handler failed', { method, error: errorCode(err) });
      throw rpcError(McplRpcCode.InternalError, `${method} failed`);
    };
    const judged = (params: Record<string, unknown>, extra: RequestExtra): unknown => {
      if (this.#manifest === undefined) throw rpcError(McplRpcCode.MethodNotFound, 'Method not found');
      // Before the policy, and outside it, privileged methods are refused (§5.3, §5.4).
      if (!this.#established || !this.#grant.has(capability)) throw capabilityDenied(capability);
      // Synchronous answers stay synchronous: no promise is made for them here.
      let answer: unknown;
      try {
        answer = handler(params, extra);
      } catch (err) {
        return failed(err);
      }
      return isThenable(answer) ? Promise.resolve(answer).catch(failed) : answer;
    };
    return (params, extra) =>
      this.#policies.size === 0
        ? judged(params, extra)
        : Promise.allSettled([...this.#policies]).then(() => judged(params, extra));
  }

  /** Admits a `channels/incoming` batch item by item and answers one verdict each. */
  #receiveIncoming(params: Record<string, unknown>): unknown {
    const messages = Array.isArray(params.messages) ? params.messages : [];
    const results: Record<string, unknown>[] = new Array(messages.length);
    const admitted: ChannelMessage[] = [];
    const slots: number[] = [];
    for (let index = 0; index < messages.length; index += 1) {
      const message: unknown = messages[index];
      const messageId =
        isPlainObject(message) && typeof message.messageId === 'string' ? message.messageId : '';
      // Validated at receipt against the registered channel, not the id the message claims alone.
      if (
        !isPlainObject(message) ||
        typeof message.channelId !== 'string' ||
        !this.#channels.has(message.channelId)
      ) {
        results[index] = { messageId, accepted: false, reason: 'unknown_channel' };
        continue;
      }
      const problem = messageProblem(message);
      if (problem !== undefined) {
        this.#logger.warn('refused a malformed channels/incoming message', {
          messageId: messageId.slice(0, 80),
          problem,
        });
        results[index] = { messageId, accepted: false, reason: 'malformed' };
        continue;
      }
      const tags = Array.isArray(message.tags) ? closeTagsLeniently(message.tags) : undefined;
      const copy = { ...message } as unknown as ChannelMessage;
      if (tags !== undefined) copy.tags = tags;
      admitted.push(copy);
      slots.push(index);
    }
    if (admitted.length === 0) return { results };
    const handler = this.#options.handlers?.incoming;
    if (handler === undefined) return this.#answerIncoming(results, admitted, slots, undefined);
    const verdicts = handler(admitted);
    return isThenable(verdicts)
      ? Promise.resolve(verdicts).then((given) => this.#answerIncoming(results, admitted, slots, given))
      : this.#answerIncoming(results, admitted, slots, verdicts);
  }

  /** Fills the admitted slots with the handler's verdicts (all accepted without a handler). */
  #answerIncoming(
    results: Record<string, unknown>[],
    admitted: readonly ChannelMessage[],
    slots: readonly number[],
    verdicts: readonly IncomingVerdict[] | null | undefined,
  ): { results: Record<string, unknown>[] } {
    const accepted: ChannelMessage[] = [];
    for (let position = 0; position < admitted.length; position += 1) {
      const message = admitted[position] as ChannelMessage;
      const verdict =
        verdicts == null ? ACCEPTED : (verdicts[position] ?? { accepted: false, reason: 'no verdict' });
      results[slots[position] as number] = { messageId: message.messageId, ...verdict };
      if (verdict.accepted === true) accepted.push(message);
    }
    if (accepted.length > 0 && this.#listeners.incoming.size > 0) this.#emit('incoming', accepted);
    return { results };
  }

  #authorize(descriptor: unknown): { id: string; accepted: boolean; reason?: string } {
    if (
      !isPlainObject(descriptor) ||
      typeof descriptor.id !== 'string' ||
      typeof descriptor.type !== 'string'
    ) {
      return {
        id: isPlainObject(descriptor) ? String(descriptor.id) : '',
        accepted: false,
        reason: 'malformed',
      };
    }
    const verdict =
      this.#options.handlers?.authorizeChannel?.(descriptor as unknown as ChannelDescriptor) ?? true;
    if (verdict === true) {
      this.#channels.set(descriptor.id, descriptor as unknown as ChannelDescriptor);
      return { id: descriptor.id, accepted: true };
    }
    this.#channels.delete(descriptor.id);
    return {
      id: descriptor.id,
      accepted: false,
      reason: verdict === false ? 'capability_denied' : verdict.reason,
    };
  }

  #applyChange(params: Record<string, unknown>): { id: string; accepted: boolean; reason?: string }[] {
    const results: { id: string; accepted: boolean; reason?: string }[] = [];
    for (const list of [params.added, params.updated]) {
      if (Array.isArray(list)) for (const descriptor of list) results.push(this.#authorize(descriptor));
    }
    if (Array.isArray(params.removed)) {
      for (const id of params.removed) {
        if (typeof id !== 'string') continue;
        this.#channels.delete(id);
        this.#open.delete(id);
      }
    }
    return results;
  }

  #install(): void {
    this.client.onclose = () => {
      if (this.#closed) return;
      this.#closed = true;
      this.#emit('close');
    };
    this.client.onerror = (err) => this.#logger.warn('protocol error', { error: err.message.slice(0, 300) });

    this.#serve('push/event', 'pushEvents', async (params) => {
      const featureSet = params.featureSet;
      if (typeof featureSet !== 'string' || typeof params.eventId !== 'string') {
        throw rpcError(McplRpcCode.InvalidParams, 'push/event: featureSet and eventId are required');
      }
      const declaration = this.#declarations[featureSet];
      if (declaration === undefined) throw rpcError(McplRpcCode.UnknownFeatureSet, undefined, { featureSet });
      if (!hasValidUses(declaration) || !(declaration.uses as string[]).includes('pushEvents')) {
        this.#logger.warn('declaration mismatch: a push under a feature set that does not use pushEvents', {
          featureSet,
        });
        throw rpcError(McplRpcCode.CapabilityDenied, undefined, { capability: 'pushEvents', featureSet });
      }
      if (!this.featureSets.some((status) => status.name === featureSet && status.enabled)) {
        throw rpcError(McplRpcCode.FeatureSetNotEnabled, undefined, { featureSet });
      }
      const payload = params.payload;
      if (
        !isPlainObject(payload) ||
        !Array.isArray(payload.content) ||
        !payload.content.every(isContentBlock)
      ) {
        throw rpcError(McplRpcCode.InvalidParams, 'push/event: payload.content must be content blocks');
      }
      if (this.#seenEvents.has(params.eventId)) {
        // agent-framework 0.1.0 answers a duplicate with a refusal-shaped result.
        return this.#dialect === 'agent-framework'
          ? { accepted: false, reason: 'duplicate' }
          : { accepted: true };
      }
      this.#seenEvents.add(params.eventId);
      const tags = Array.isArray(params.tags) ? closeTagsLeniently(params.tags) : [];
      const event: ReceivedPushEvent = {
        featureSet,
        eventId: params.eventId,
        timestamp: typeof params.timestamp === 'string' ? params.timestamp : '',
        payload: { content: payload.content as ContentBlock[] },
        tags,
      };
      if (isPlainObject(params.origin)) event.origin = params.origin as JsonObject;
      const verdict = (await this.#options.handlers?.pushEvent?.(event)) ?? { accepted: true };
      if (verdict.accepted) this.#emit('push', event);
      return { ...verdict };
    });

    this.#serve('channels/register', 'channels.register', (params, extra) => {
      const channels = Array.isArray(params.channels) ? params.channels : [];
      const results = channels.map((descriptor) => this.#authorize(descriptor));
      this.#emit('channels');
      if (this.#dialect === 'mcpl-harness') return {};
      if (this.#dialect === 'agent-framework') {
        const registered = acceptedIds(results);
        // It answers first, then opens every channel it registered: the SDK writes this answer in
        // the microtasks after the handler returns, so the opens go out on the next turn.
        if (!extra.mcpReq.signal.aborted) setImmediate(() => void this.#autoOpen(registered));
        return { registered };
      }
      return { results };
    });

    if (this.#dialect === 'mcpl-harness') {
      // The harness knows channels/changed only as a Notification.
      this.#answer('channels/changed', () => {
        throw rpcError(McplRpcCode.MethodNotFound, 'Method not found');
      });
    } else {
      this.#serve('channels/changed', 'channels.register', async (params) => {
        const results = this.#applyChange(params);
        this.#emit('channels');
        // agent-framework reconciles (a blocking channels/open per descriptor) before it answers.
        if (this.#dialect === 'agent-framework') await this.#autoOpen(acceptedIds(results));
        return { results };
      });
    }
    this.#hear('channels/changed', (params) => {
      if (!this.#established || !this.#grant.has('channels.register')) {
        this.#logger.warn('dropped channels/changed: channels.register is not granted');
        return;
      }
      const results = this.#applyChange(params);
      const refused = results.filter((result) => !result.accepted);
      if (refused.length > 0) {
        this.#logger.warn('filtered descriptors from a channels/changed notification', {
          refused: refused.map((result) => result.id).join(','),
        });
      }
      this.#emit('channels');
      if (this.#dialect === 'agent-framework') void this.#autoOpen(acceptedIds(results));
    });

    // agent-framework 0.1.0 never answers an inbound channels/list or model/info.
    if (this.#dialect === 'agent-framework') this.#answer('channels/list', neverAnswered);
    else this.#serve('channels/list', 'channels.register', () => ({ channels: this.channels }));

    this.#serve('channels/incoming', 'channels.incoming', (params) => {
      // An open of their channel stays ahead of these messages: history before live.
      const opens = this.#opening.size === 0 ? undefined : this.#opensBefore(params);
      return opens === undefined
        ? this.#receiveIncoming(params)
        : Promise.allSettled(opens).then(() => this.#receiveIncoming(params));
    });

    if (this.#dialect === 'agent-framework') this.#answer('model/info', neverAnswered);
    else {
      this.#serve('model/info', 'modelInfo', () => {
        const info =
          this.#options.handlers?.modelInfo ??
          (this.#dialect === 'mcpl-harness' ? HARNESS_MODEL_INFO : undefined);
        if (info === undefined)
          throw rpcError(McplRpcCode.MethodNotFound, 'model/info is not offered by this host');
        return info;
      });
    }

    this.#serve('inference/request', 'inferenceRequest', (params) => {
      const handler = this.#options.handlers?.inferenceRequest;
      if (handler === undefined)
        throw rpcError(McplRpcCode.MethodNotFound, 'inference/request is not offered by this host');
      return handler(params as JsonObject);
    });

    this.#hear('mcpl/manifestChanged', (params) => {
      if (typeof params.revision !== 'string' || !Array.isArray(params.domains)) {
        this.#logger.warn('dropped a malformed mcpl/manifestChanged');
        return;
      }
      this.#emit(
        'manifestChanged',
        params.revision,
        params.domains.filter((domain): domain is string => typeof domain === 'string'),
      );
    });
  }
}

function acceptedIds(results: readonly { id: string; accepted: boolean }[]): string[] {
  return results.filter((result) => result.accepted).map((result) => result.id);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
