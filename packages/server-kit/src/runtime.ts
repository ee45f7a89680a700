import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  AccessPolicy,
  AdmissionGate,
  ALL_STREAMS,
  type Credentials,
  DEFAULT_MAX_MESSAGE_LENGTH,
  type Logger,
  loadCredentials,
  noopLogger,
  type StreamInfo,
  ZulipClient,
} from '@zmcp/core';
import { type OpenEventSource, stateAccount } from '@zmcp/delivery';
import { openStateBackend, type StateBackend } from '@zmcp/fleet';
import {
  createToolServices,
  loadRealmFacts,
  type RealmFacts,
  type ToolIdentity,
  type ToolServices,
  toolDefinitions,
  toolListing,
} from '@zmcp/tools';
import { DEFAULT_MAX_FILE_BYTES, UploadRoots } from '@zmcp/uploads';
import type { ServerSettings, ZulipCredentialSettings } from './settings.js';

/** Options of {@link openZulipRuntime}. */
export interface OpenZulipRuntimeOptions {
  /** The shared settings, resolved (a bin's configuration holds them). */
  settings: ServerSettings;
  /** Where the runtime and its client log. Default: nowhere. */
  logger?: Logger | undefined;
  /** The account's credentials; default: loaded as configured ({@link loadConfiguredCredentials}). */
  credentials?: Credentials | undefined;
}

/**
 * One server's Zulip runtime: everything a host composes its transport and its own features on,
 * opened once per process by {@link openZulipRuntime}.
 */
export interface ZulipRuntime {
  /** The settings it was opened with. */
  readonly settings: ServerSettings;
  readonly logger: Logger;
  /** The one Zulip client: every call under `requestTimeoutMs`; in read-only mode every non-GET refused in its transport. */
  readonly client: ZulipClient;
  /** The account and the realm's limits, read at start-up. */
  readonly facts: RealmFacts;
  /** The account the server acts as (`facts.identity`). */
  readonly identity: ToolIdentity;
  /** The access policy, its allowlists resolved to stream ids. */
  readonly policy: AccessPolicy;
  /**
   * Who may wake, steer or answer the agent (`ZULIP_ALLOWED_USERS`), resolved to user ids and
   * following address changes; `undefined` when no list is set.
   */
  readonly admission: AdmissionGate | undefined;
  /** What every tool stands on: the client, the policy, the account, the limits, the directory. */
  readonly services: ToolServices;
  /** The named upload roots, when any are configured. */
  readonly uploadRoots: UploadRoots | undefined;
  /** The state key of this realm and bot (`@zmcp/delivery`'s `stateAccount`): state is kept per realm and bot. */
  readonly account: string;
  /**
   * Where the state lives (`@zmcp/fleet`'s `openStateBackend`): PostgreSQL with
   * `settings.stateUrl`, files in `settings.stateDir` otherwise. Filters planes come from its
   * `openFilters`; the runtime closes it.
   */
  readonly backend: StateBackend;
  /** The backend's state store (with its cross-process lock); key its state by {@link account}. */
  readonly store: StateBackend['store'];
  /**
   * Where a `DeliveryEngine` of this account takes its events from (its `events` option): with
   * PostgreSQL, the one Zulip event queue the fleet shares per realm and bot; `undefined` on
   * files (each engine registers its own).
   */
  readonly events: OpenEventSource | undefined;
  /** Where this account's state is, for logs: its folder of the state directory, or `postgres://user@host/db#schema`. */
  readonly stateLocation: string;
  /** Closes the client (its connections and timers) and the state backend; safe to call twice. */
  close(): Promise<void>;
}

/**
 * The account's credentials as configured: each of site, email and key from its variable, the rest
 * from the zuliprc (core's one rule, `loadCredentials`).
 *
 * @throws ZmcpError `CORE_CONFIG_INVALID` naming the variable, or the zuliprc and its key.
 */
export function loadConfiguredCredentials(settings: {
  zulip: ZulipCredentialSettings;
}): Promise<Credentials> {
  const { site, email, apiKey, rcPath } = settings.zulip;
  return loadCredentials({
    env: { ZULIP_SITE: site, ZULIP_EMAIL: email, ZULIP_API_KEY: apiKey, ZULIP_RC_PATH: rcPath },
    homedir: homedir(),
  });
}

/** Every stream the account can see: GET /streams (public and subscribed) and its subscriptions. */
async function visibleStreams(client: ZulipClient, signal: AbortSignal): Promise<StreamInfo[]> {
  const [streams, subscriptions] = await Promise.all([
    client.getStreams({}, { signal }),
    client.getSubscriptions({}, { signal }),
  ]);
  const byId = new Map<number, StreamInfo>();
  for (const s of [...streams, ...subscriptions]) byId.set(s.stream_id, s);
  return [...byId.values()];
}

/**
 * Converts every tool's schemas for a listing ahead of the first one, one tool per turn of the
 * event loop, so the work fits in the gaps while start-up waits on the network.
 */
async function warmListings(): Promise<void> {
  for (const definition of toolDefinitions()) {
    toolListing(definition);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/**
 * Opens the Zulip runtime of one server process: the credentials (given, or loaded as configured),
 * the upload roots, the one Zulip client (read-only enforced in its transport), the account and the
 * realm's limits (tool listings converted meanwhile), the streams the account can see when an
 * allowlist names any (every later decision is by id), the access policy, the tool services and
 * the state backend (PostgreSQL with `stateUrl`, files otherwise), keyed by realm and bot. Logs `connected to Zulip` once open.
 *
 * @throws ZmcpError `CORE_CONFIG_INVALID` for missing or malformed credentials or an allowlist
 *   entry that names no stream (or two); `CORE_UNAUTHORIZED` for credentials the realm refuses, and
 *   the client's request codes when it cannot be reached. UploadError `UPLOAD_ROOT_MISSING`,
 *   `UPLOAD_CONFIG_INVALID` for an upload root. FleetError `FLEET_CONNECT_FAILED`,
 *   `FLEET_SCHEMA_TOO_NEW` for the state database (`ZULIP_STATE_URL`, never shown with its
 *   password). On a throw nothing is left open.
 */
export async function openZulipRuntime(options: OpenZulipRuntimeOptions): Promise<ZulipRuntime> {
  const { settings } = options;
  const logger = options.logger ?? noopLogger;
  const credentials = options.credentials ?? (await loadConfiguredCredentials(settings));
  const uploadRoots =
    settings.uploadRoots.length > 0 ? await UploadRoots.open(settings.uploadRoots) : undefined;
  // The state first: an unreachable database stops start-up before anything else is opened.
  const backend = await openStateBackend({ url: settings.stateUrl, dir: settings.stateDir, logger });
  let client: ZulipClient;
  try {
    client = new ZulipClient({
      site: credentials.site,
      email: credentials.email,
      apiKey: credentials.apiKey,
      allowInsecureHttp: settings.zulip.allowInsecureHttp,
      readOnly: settings.readOnly,
      timeoutMs: settings.requestTimeoutMs,
      logger,
    });
  } catch (err) {
    await backend.close();
    throw err;
  }
  let admission: AdmissionGate | undefined;
  try {
    // The schema conversions a listing needs run in the gaps while the realm answers.
    const [facts] = await Promise.all([
      loadRealmFacts(client, {
        readOnly: settings.readOnly,
        signal: AbortSignal.timeout(settings.toolDeadlineMs),
      }),
      warmListings(),
    ]);
    // Allowlist entries become stream ids now, against the streams this account can see: every
    // decision after this is by id, and an entry that names nothing (or two streams) stops start-up.
    const lists = [settings.privateStreams, settings.writeStreams];
    const visible = lists.some((l) => l !== undefined && l !== ALL_STREAMS)
      ? await visibleStreams(client, AbortSignal.timeout(settings.toolDeadlineMs))
      : [];
    const policy = AccessPolicy.resolve(
      {
        readOnly: settings.readOnly,
        privateStreams: settings.privateStreams,
        writeStreams: settings.writeStreams,
        dmWrites: settings.writeDms,
        settingNames: {
          privateStreams: 'ZULIP_PRIVATE_STREAMS',
          writeStreams: 'ZULIP_WRITE_STREAMS',
          readOnly: 'ZULIP_READ_ONLY',
          dmWrites: 'ZULIP_WRITE_DMS',
        },
      },
      visible,
    );
    // Who may reach the agent: emails become user ids now (one that names nobody stops start-up).
    admission =
      settings.admissionList === undefined
        ? undefined
        : await AdmissionGate.open(client, settings.admissionList, {
            setting: settings.admissionSetting,
            logger,
            call: { signal: AbortSignal.timeout(settings.toolDeadlineMs) },
          });
    // Cursors and watermarks are message ids, which mean something on one realm only: state is
    // kept per realm and bot, so a second realm (or the demo) never reads this one's.
    const { store } = backend;
    const account = stateAccount({ site: client.site, userId: facts.identity.user_id });
    const stateLocation = backend.kind === 'files' ? join(backend.location, account) : backend.location;
    const services = createToolServices({
      client,
      policy,
      site: client.site,
      identity: facts.identity,
      maxMessageLength: settings.maxMessageLength ?? facts.maxMessageLength ?? DEFAULT_MAX_MESSAGE_LENGTH,
      maxFileBytes: settings.uploadMaxBytes ?? facts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES,
      timeZone: settings.timezone,
      timeStyle: settings.timestampStyle,
      markdownAutofix: settings.markdownAutofix,
      pageBudgetBytes: settings.pageBudgetBytes,
      uploadRoots,
      // Send once, remembered per realm and bot in the state store: a restart remembers too.
      sendOnce: { windowMs: settings.sendOnceWindowMs, store, account },
    });
    logger.info('connected to Zulip', {
      site: client.site,
      account: facts.identity.email,
      readOnly: settings.readOnly,
      uploadRoots: uploadRoots?.names.join(',') ?? 'none',
      state: stateLocation,
      session: settings.sessionId,
      ...(settings.stateDirSource === 'earlier default'
        ? { stateNote: 'the earlier TypeScript server’s default directory, since only it exists' }
        : {}),
    });
    let closed: Promise<void> | undefined;
    return {
      settings,
      logger,
      client,
      facts,
      identity: facts.identity,
      policy,
      admission,
      services,
      uploadRoots,
      account,
      backend,
      store,
      events: backend.events?.source(client, account),
      stateLocation,
      close() {
        closed ??= (async () => {
          await admission?.close();
          await client.close();
          await backend.close();
        })();
        return closed;
      },
    };
  } catch (err) {
    await admission?.close();
    await client.close();
    await backend.close();
    throw err;
  }
}
