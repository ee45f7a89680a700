import {
  type AccessPolicy,
  type CallOptions,
  createMessageLineFormatter,
  type FormattableMessage,
  type MessageLineFormatter,
  type TimeStyle,
  type ZulipClient,
} from '@zmcp/core';
import type { UploadRoots } from '@zmcp/uploads';
import { RealmDirectory } from './directory.js';
import { DEFAULT_PAGE_BUDGET_BYTES } from './page.js';
import { SendOnce, type SendOnceOptions } from './write/send-once.js';

/** The account the server acts as, fixed when the server starts. */
export interface ToolIdentity {
  user_id: number;
  email: string;
  full_name: string;
  is_bot: boolean;
}

/** What {@link createToolServices} needs; everything is bound once, when the server starts. */
export interface ToolServicesOptions {
  /** The one Zulip client (read-only mode is enforced in its transport). */
  client: ZulipClient;
  /** Which streams and DMs may be read and written. */
  policy: AccessPolicy;
  /** The realm's origin, `https://acme.zulipchat.com`, for permalinks and absolute upload URLs. */
  site: string;
  /** The account the server acts as (GET /users/me at start-up). */
  identity: ToolIdentity;
  /** The realm's longest message in code points (`max_message_length`), or an operator override. */
  maxMessageLength: number;
  /** The realm's per-file upload cap in bytes, or an operator override. */
  maxFileBytes: number;
  /** IANA zone the agent reads times in and natural dates are interpreted in. Default UTC. */
  timeZone?: string | undefined;
  /** How message lines print time. Default `iso`. */
  timeStyle?: TimeStyle | undefined;
  /** Apply the markdown fixes to outgoing text. Default true. */
  markdownAutofix?: boolean | undefined;
  /** Byte budget of one page of tool output. */
  pageBudgetBytes?: number | undefined;
  /** Named directories local attachments may come from; none means inline data only. */
  uploadRoots?: UploadRoots | undefined;
  /** Millisecond clock; tests inject one. */
  now?: (() => number) | undefined;
  /**
   * The send-once rule's memory (a {@link SendOnce}, or its options): default five minutes, in
   * memory. A server passes its state store and account so a restart remembers too.
   */
  sendOnce?: SendOnce | SendOnceOptions | undefined;
}

/** Everything a tool handler stands on, shared by every tool of one server. */
export interface ToolServices {
  readonly client: ZulipClient;
  readonly policy: AccessPolicy;
  readonly site: string;
  readonly identity: ToolIdentity;
  readonly maxMessageLength: number;
  readonly maxFileBytes: number;
  readonly timeZone: string;
  readonly timeStyle: TimeStyle;
  readonly markdownAutofix: boolean;
  readonly pageBudgetBytes: number;
  readonly uploadRoots: UploadRoots | undefined;
  readonly directory: RealmDirectory;
  readonly now: () => number;
  /** The memory of recent successful sends every post consults (see `postMessage`). */
  readonly sendOnce: SendOnce;
  /**
   * Formats one message as the message line every tool prints, telling people apart by the names
   * the directory knows so far (`directory.people`).
   */
  line(message: FormattableMessage): string;
  /**
   * Formats messages as message lines once the directory knows the realm's names (the user list
   * is fetched first when stale), so a sender whose name another person shares is printed with
   * the user id.
   */
  lines(messages: readonly FormattableMessage[], call?: CallOptions): Promise<string[]>;
}

/** Binds the services every tool of one server shares. */
export function createToolServices(options: ToolServicesOptions): ToolServices {
  const timeZone = options.timeZone ?? 'UTC';
  const timeStyle = options.timeStyle ?? 'iso';
  const now = options.now ?? Date.now;
  const directory = new RealmDirectory(options.client, { now });
  const formatter: MessageLineFormatter = createMessageLineFormatter({
    timeZone,
    timeStyle,
    selfUserId: options.identity.user_id,
    escape: true,
    people: directory.people,
  });
  return {
    client: options.client,
    policy: options.policy,
    site: options.site.replace(/\/+$/, ''),
    identity: options.identity,
    maxMessageLength: options.maxMessageLength,
    maxFileBytes: options.maxFileBytes,
    timeZone,
    timeStyle,
    markdownAutofix: options.markdownAutofix ?? true,
    pageBudgetBytes: options.pageBudgetBytes ?? DEFAULT_PAGE_BUDGET_BYTES,
    uploadRoots: options.uploadRoots,
    directory,
    now,
    sendOnce:
      options.sendOnce instanceof SendOnce ? options.sendOnce : new SendOnce({ now, ...options.sendOnce }),
    line: (message) => formatter(message),
    lines: async (messages, call) => {
      if (messages.length > 0) await directory.knownPeople(call);
      return messages.map((message) => formatter(message));
    },
  };
}

/** What the tools need to know about the realm and the account, read once at start-up. */
export interface RealmFacts {
  identity: ToolIdentity;
  /** `max_message_length`, when the realm told it (it only does through POST /register). */
  maxMessageLength: number | undefined;
  /** `max_file_upload_size_mib` in bytes, when the realm told it. */
  maxFileBytes: number | undefined;
  /**
   * The realm's API feature level (`zulip_feature_level`). The client remembers it too, so the
   * tools' feature checks (`client.hasFeature`) cost no request after start-up.
   */
  featureLevel: number;
}

/**
 * Reads the account (GET /users/me), the realm's feature level and, unless `readOnly`, the
 * realm's limits: Zulip reports them only in POST /register, so a queue is registered for the
 * `realm` state alone and deleted at once (its answer carries the feature level). In read-only
 * mode nothing but GETs may leave, and nothing is sent that the limits would bound, so the limits
 * stay unknown and the feature level comes from GET /server_settings.
 */
export async function loadRealmFacts(
  client: ZulipClient,
  options: { readOnly: boolean; signal?: AbortSignal | undefined },
): Promise<RealmFacts> {
  const call = { signal: options.signal };
  const me = await client.getOwnUser(call);
  const identity: ToolIdentity = {
    user_id: me.user_id,
    email: me.email,
    full_name: me.full_name,
    is_bot: me.is_bot === true,
  };
  if (options.readOnly) {
    const featureLevel = await client.getFeatureLevel(call);
    return { identity, maxMessageLength: undefined, maxFileBytes: undefined, featureLevel };
  }
  const state = await client.register({ eventTypes: ['heartbeat'], fetchEventTypes: ['realm'] }, call);
  await client.deleteQueue(state.queue_id, call).catch(() => undefined);
  const mib = state.max_file_upload_size_mib;
  return {
    identity,
    maxMessageLength: state.max_message_length,
    maxFileBytes: mib === undefined ? undefined : Math.floor(mib * 1024 * 1024),
    featureLevel: await client.getFeatureLevel(call),
  };
}
