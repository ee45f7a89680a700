import { SimError } from './errors.js';
import { FaultSet } from './faults.js';
import { HttpFront } from './http.js';
import { QueueManager } from './queues.js';
import { RateLimiter } from './rate-limit.js';
import {
  MAX_FEATURE_LEVEL,
  MIN_FEATURE_LEVEL,
  Realm,
  versionForFeatureLevel,
  ZULIP_FEATURE_LEVEL,
} from './realm.js';
import { SimRealmApi } from './sim-realm.js';
import type {
  SimFaults,
  SimKnobs,
  SimLogger,
  SimQueueInfo,
  SimRealm,
  SimRequestRecord,
  ZulipSim,
  ZulipSimOptions,
} from './types.js';

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new SimError('SIM_INVALID_ARGUMENT', `${name} must be a positive number, got ${String(value)}`);
  }
  return value;
}

function checkRateLimit(value: ZulipSimOptions['rateLimit']): { requests: number; windowMs: number } | false {
  if (value === false) return false;
  if (value === undefined) return { requests: 200, windowMs: 60_000 };
  return {
    requests: positive('rateLimit.requests', value.requests, 200),
    windowMs: positive('rateLimit.windowMs', value.windowMs, 60_000),
  };
}

class RunningSim implements ZulipSim {
  readonly realm: SimRealm;
  readonly faults: SimFaults;
  private readonly core: Realm;
  private readonly queueManager: QueueManager;
  private readonly front: HttpFront;
  private readonly host: string;
  private readonly log: SimRequestRecord[] = [];
  private readonly logSize: number;
  private readonly listeners = new Map<(r: SimRequestRecord) => void, { responses: boolean }>();
  private limiter: RateLimiter | null;
  private closed = false;

  constructor(
    core: Realm,
    queues: QueueManager,
    api: SimRealmApi,
    faults: FaultSet,
    host: string,
    limiter: RateLimiter | null,
    logSize: number,
    logger: SimLogger,
  ) {
    this.core = core;
    this.queueManager = queues;
    this.realm = api;
    this.faults = faults;
    this.host = host;
    this.limiter = limiter;
    this.logSize = logSize;
    this.front = new HttpFront({
      realm: core,
      queues,
      faults,
      limiter: () => this.limiter,
      site: () => this.url,
      record: (r, response) => this.record(r, response),
      recording: () => this.logSize > 0 || this.listeners.size > 0,
      logger,
    });
  }

  async listen(port: number): Promise<void> {
    try {
      await this.front.listen(this.host, port);
    } catch (error) {
      throw new SimError('SIM_LISTEN_FAILED', `cannot listen on ${this.host}:${port}`, { cause: error });
    }
  }

  get url(): string {
    const host = this.host.includes(':') ? `[${this.host}]` : this.host;
    return `http://${host}:${this.front.port}`;
  }

  get requests(): readonly SimRequestRecord[] {
    return this.log.slice();
  }

  private record(r: SimRequestRecord, response: () => unknown): void {
    if (this.logSize > 0) {
      this.log.push(r);
      if (this.log.length > this.logSize) this.log.shift();
    }
    let withResponse: SimRequestRecord | undefined;
    for (const [listener, options] of this.listeners) {
      if (options.responses) {
        withResponse ??= { ...r, response: response() };
        listener(withResponse);
      } else {
        listener(r);
      }
    }
  }

  onRequest(
    listener: (request: SimRequestRecord) => void,
    options: { responses?: boolean } = {},
  ): () => void {
    this.listeners.set(listener, { responses: options.responses === true });
    return () => this.listeners.delete(listener);
  }

  deliverDueReminders(): number {
    this.assertOpen();
    return this.core.deliverDueReminders();
  }

  get zulipFeatureLevel(): number {
    return this.core.config.featureLevel;
  }

  get zulipVersion(): string {
    return this.core.config.zulipVersion;
  }

  configure(knobs: SimKnobs): void {
    const heartbeat = positive(
      'heartbeatIntervalMs',
      knobs.heartbeatIntervalMs,
      this.queueManager.heartbeatMs,
    );
    const idle = positive('queueIdleTimeoutMs', knobs.queueIdleTimeoutMs, this.queueManager.idleMs);
    this.queueManager.setTimings(heartbeat, idle);
    if (knobs.rateLimit !== undefined) {
      const rule = checkRateLimit(knobs.rateLimit);
      this.limiter = rule ? new RateLimiter(() => this.core.now(), rule.requests, rule.windowMs) : null;
    }
  }

  expireQueue(queueId: string): void {
    if (!this.queueManager.remove(queueId)) throw new SimError('SIM_NOT_FOUND', `No live queue ${queueId}`);
  }

  expireAllQueues(): void {
    this.queueManager.removeAll();
  }

  queues(userId?: number): SimQueueInfo[] {
    return this.queueManager
      .all()
      .filter((q) => userId === undefined || q.settings.userId === userId)
      .map((q) => ({
        queueId: q.id,
        userId: q.settings.userId,
        lastEventId: q.nextEventId - 1,
        acknowledgedEventId: q.newestPrunedId,
        pending: q.events.length,
        polling: q.poll !== null,
        eventTypes: q.settings.eventTypes ? [...q.settings.eventTypes] : null,
        narrow: q.settings.narrow.map(([a, b]) => [a, b] as const),
        allPublicStreams: q.settings.allPublicStreams,
        applyMarkdown: q.settings.applyMarkdown,
        clientGravatar: q.settings.clientGravatar,
        capabilities: { ...q.settings.capabilities },
      }));
  }

  async restart(options: { keepQueues?: boolean } = {}): Promise<void> {
    if (this.closed) throw new SimError('SIM_CLOSED', 'the simulator is closed');
    const port = this.front.port;
    await this.front.close();
    this.queueManager.dropPolls();
    if (options.keepQueues === false) this.queueManager.removeAll();
    await this.listen(port);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.queueManager.dispose();
    this.core.dispose();
    await this.front.close();
  }

  assertOpen(): void {
    if (this.closed) throw new SimError('SIM_CLOSED', 'the simulator is closed');
  }

  credentials(userIdOrEmail: number | string): { site: string; email: string; apiKey: string } {
    const user =
      typeof userIdOrEmail === 'number'
        ? this.core.user(userIdOrEmail)
        : this.core.userByEmail(userIdOrEmail);
    if (!user || user.system) throw new SimError('SIM_NOT_FOUND', `No user ${JSON.stringify(userIdOrEmail)}`);
    return { site: this.url, email: user.deliveryEmail, apiKey: user.apiKey };
  }

  zuliprc(userIdOrEmail: number | string): string {
    const c = this.credentials(userIdOrEmail);
    return `[api]\nemail=${c.email}\nkey=${c.apiKey}\nsite=${c.site}\n`;
  }
}

/**
 * Starts a simulated Zulip 11.0 (feature level 421) realm over HTTP on loopback, seeds it
 * with `options.seed`, and resolves once it is listening.
 * @throws SimError `SIM_INVALID_ARGUMENT` for a bad option, `SIM_LISTEN_FAILED` if the port cannot be opened.
 */
export async function startZulipSim(options: ZulipSimOptions = {}): Promise<ZulipSim> {
  const now = options.now ?? Date.now;
  if (typeof now !== 'function') throw new SimError('SIM_INVALID_ARGUMENT', 'now must be a function');
  const heartbeat = positive('heartbeatIntervalMs', options.heartbeatIntervalMs, 50_000);
  const idle = positive('queueIdleTimeoutMs', options.queueIdleTimeoutMs, 600_000);
  const rule = checkRateLimit(options.rateLimit);
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new SimError('SIM_INVALID_ARGUMENT', `port must be an integer in 0..65535, got ${String(port)}`);
  }
  const subdomain = options.realmSubdomain ?? 'zulip';
  if (!/^[a-z0-9-]*$/.test(subdomain)) {
    throw new SimError('SIM_INVALID_ARGUMENT', `realmSubdomain must be lowercase letters, digits or dashes`);
  }
  const featureLevel = options.zulipFeatureLevel ?? ZULIP_FEATURE_LEVEL;
  if (
    !Number.isInteger(featureLevel) ||
    featureLevel < MIN_FEATURE_LEVEL ||
    featureLevel > MAX_FEATURE_LEVEL
  ) {
    throw new SimError(
      'SIM_INVALID_ARGUMENT',
      `zulipFeatureLevel must be an integer in ${MIN_FEATURE_LEVEL}..${MAX_FEATURE_LEVEL}, got ${String(featureLevel)}`,
    );
  }
  const zulipVersion = options.zulipVersion ?? versionForFeatureLevel(featureLevel);
  if (typeof zulipVersion !== 'string' || zulipVersion.trim() === '') {
    throw new SimError('SIM_INVALID_ARGUMENT', 'zulipVersion must be a non-empty string');
  }
  const queues = new QueueManager(now, heartbeat, idle);
  const realm = new Realm(
    {
      realmName: options.realmName ?? 'Zulip Simulator',
      subdomain,
      emailDomain: `${subdomain || 'zulip'}.example`,
      maxMessageLength: positive('maxMessageLength', options.maxMessageLength, 10_000),
      editLimitSeconds: positive('messageEditLimitSeconds', options.messageEditLimitSeconds, 600),
      maxUploadMib: positive('maxFileUploadMib', options.maxFileUploadMib, 25),
      now,
      featureLevel,
      zulipVersion,
    },
    queues,
  );
  const logger = options.logger ?? {};
  const limiter = rule ? new RateLimiter(now, rule.requests, rule.windowMs) : null;
  let sim: RunningSim | undefined;
  const api = new SimRealmApi(realm, () => sim?.assertOpen());
  sim = new RunningSim(
    realm,
    queues,
    api,
    new FaultSet(),
    options.host ?? '127.0.0.1',
    limiter,
    options.requestLogSize ?? 1000,
    logger,
  );
  realm.site = () => sim?.url ?? '';
  try {
    if (options.seed) await options.seed(api);
    await sim.listen(port);
  } catch (error) {
    queues.dispose();
    realm.dispose();
    throw error;
  }
  return sim;
}
