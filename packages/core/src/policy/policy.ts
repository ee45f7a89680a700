import { ZmcpError } from '../errors.js';
import { type NarrowTerm, validateNarrow } from '../history/narrow.js';
import { escapeMsgName } from '../text/escape.js';
import {
  ALL_STREAMS,
  type ResolvedStreamAllowlist,
  resolveStreamAllowlist,
  type StreamAllowlist,
} from './allowlist.js';
import type { StreamInfo, StreamInfoLookup } from './streams.js';

// Access policy rules, pure. The security model (asymmetric on purpose):
// - reads: public streams are open; private streams are closed unless their id is in the
//   private-stream allowlist or the allowlist is the all-value; DMs need the all-value;
// - writes: no write allowlist = every stream; a list = only those streams; private streams must
//   also be readable; DMs are allowed without a list and refused with one unless `dmWrites`;
// - read-only refuses every write (the transport enforces it once more on every non-GET).
// Every decision is made by stream id: names are chosen by anyone and only resolve to a stream
// through the lookup, as Zulip resolves them. Every narrow read passes `checkNarrowScope` before it
// is sent and `isReadable` on what comes back. Hidden streams are never subtracted with negated
// narrow terms: narrows ride the query string, and a realm with many private streams would break it.

/** The configuration an {@link AccessPolicy} is built from. */
export interface AccessPolicyConfig {
  /** Refuse every write. */
  readonly readOnly: boolean;
  /** Ids of the private streams that may be read; the all-value also opens DMs. Unset: none. */
  readonly privateStreams?: ResolvedStreamAllowlist | undefined;
  /** Ids of the streams that may be written to. Unset: all. */
  readonly writeStreams?: ResolvedStreamAllowlist | undefined;
  /**
   * Whether DMs may be sent. Default: allowed when `writeStreams` is unset or the all-value,
   * refused when it is a list (a list is an authorization list and a DM is not on it).
   */
  readonly dmWrites?: boolean | undefined;
  /**
   * Names of the settings, used in refusal messages so they say what to change (e.g.
   * `BOT_ALLOWED_PRIVATE_STREAMS`). Defaults: `privateStreams`, `writeStreams`, `readOnly`.
   */
  readonly settingNames?:
    | {
        readonly privateStreams?: string | undefined;
        readonly writeStreams?: string | undefined;
        readonly readOnly?: string | undefined;
        readonly dmWrites?: string | undefined;
      }
    | undefined;
}

/** A narrow as a caller hands it over: object-form terms or legacy `[operator, operand]` pairs. */
export type NarrowInput = ReadonlyArray<NarrowTerm | readonly [string, string]>;

/**
 * What a narrow reaches: one `stream`, a `dm` conversation (or all DMs), `public-streams`,
 * a `message` (an `id`/`with` term: at most one message or its conversation), or `all` of the
 * account's history (only when the policy reads everything).
 */
export type NarrowScopeKind = 'stream' | 'dm' | 'public-streams' | 'message' | 'all';

/** The outcome of {@link AccessPolicy.checkNarrowScope}. */
export interface NarrowScopeDecision {
  /** The narrow to send, in object form (with `channels:public` added when that was asked for). */
  readonly narrow: NarrowTerm[];
  readonly scope: NarrowScopeKind;
  /** Ids of the streams the narrow names. */
  readonly streams: readonly number[];
}

/** Options for {@link AccessPolicy.checkNarrowScope}. */
export interface NarrowScopeOptions {
  /**
   * What to do with a narrow that names no stream and no DM (it would reach DMs and private
   * streams) when the policy cannot read everything: `refuse` (default) throws; `public-streams`
   * adds `channels:public`, limiting it to public streams (allowlisted private streams are then
   * not searched).
   */
  readonly unscoped?: 'refuse' | 'public-streams' | undefined;
}

/** The destination of a write: a stream (name or id) or a DM (recipient ids or emails). */
export type WriteTarget =
  | { readonly stream: string | number }
  | { readonly dm: ReadonlyArray<number | string> };

/** The message fields {@link AccessPolicy.isReadable} reads. */
export interface PolicyMessage {
  readonly type: string;
  readonly display_recipient: string | ReadonlyArray<unknown>;
  readonly stream_id?: number | undefined;
}

const STREAM_OPERATORS = new Set(['stream', 'channel']);
const STREAMS_OPERATORS = new Set(['streams', 'channels']);
const DM_OPERATORS = new Set(['dm', 'pm-with', 'dm-including', 'group-pm-with']);
const MESSAGE_OPERATORS = new Set(['id', 'with']);

function invalid(message: string, details: Record<string, unknown>): ZmcpError {
  return new ZmcpError('CORE_INVALID_ARGUMENT', message, { details });
}

function checkIds(value: unknown, what: string): ResolvedStreamAllowlist | undefined {
  if (value === undefined || value === ALL_STREAMS) return value;
  if (
    !Array.isArray(value) ||
    !value.every((v) => typeof v === 'number' && Number.isSafeInteger(v) && v > 0)
  ) {
    throw invalid(
      `${what} must be "${ALL_STREAMS}" or a list of stream ids (resolve names first: AccessPolicy.resolve).`,
      { setting: what },
    );
  }
  return value as readonly number[];
}

/** A stream as a refusal names it: by id when the caller named it by id (so no name leaks), else as given. */
function refName(ref: string | number): string {
  return typeof ref === 'number' ? `id ${ref}` : JSON.stringify(escapeMsgName(ref).slice(0, 100));
}

/** An {@link AccessPolicyConfig} whose allowlists are still names and ids, as configured. */
export interface AccessPolicySettings extends Omit<AccessPolicyConfig, 'privateStreams' | 'writeStreams'> {
  readonly privateStreams?: StreamAllowlist | undefined;
  readonly writeStreams?: StreamAllowlist | undefined;
}

/**
 * The access policy: which streams and DMs may be read and written, decided by stream id. Pure and
 * immutable; built once per session from configuration whose allowlists were resolved to ids
 * ({@link AccessPolicy.resolve}). Stream facts come from a {@link StreamInfoLookup} the caller
 * keeps current; a stream the lookup does not know is closed.
 */
export class AccessPolicy {
  /** Whether every write is refused. */
  readonly readOnly: boolean;
  /** Whether DMs may be read (the private-stream allowlist is the all-value). */
  readonly canReadDms: boolean;
  private readonly privateAll: boolean;
  private readonly privateIds: ReadonlySet<number>;
  private readonly writeAll: boolean;
  private readonly writeIds: ReadonlySet<number>;
  private readonly dmWrites: boolean;
  private readonly names: {
    privateStreams: string;
    writeStreams: string;
    readOnly: string;
    dmWrites: string;
  };

  /**
   * @throws `CORE_INVALID_ARGUMENT` when an allowlist is neither the all-value nor a list of stream
   *   ids, or `readOnly` is not a boolean.
   */
  constructor(config: AccessPolicyConfig) {
    if (typeof config.readOnly !== 'boolean')
      throw invalid('readOnly must be a boolean.', { setting: 'readOnly' });
    const privateStreams = checkIds(config.privateStreams, 'privateStreams');
    const writeStreams = checkIds(config.writeStreams, 'writeStreams');
    this.readOnly = config.readOnly;
    this.privateAll = privateStreams === ALL_STREAMS;
    this.privateIds = new Set(Array.isArray(privateStreams) ? privateStreams : []);
    this.writeAll = writeStreams === undefined || writeStreams === ALL_STREAMS;
    this.writeIds = new Set(Array.isArray(writeStreams) ? writeStreams : []);
    this.dmWrites = config.dmWrites ?? this.writeAll;
    this.canReadDms = this.privateAll;
    const n = config.settingNames ?? {};
    this.names = {
      privateStreams: n.privateStreams ?? 'privateStreams',
      writeStreams: n.writeStreams ?? 'writeStreams',
      readOnly: n.readOnly ?? 'readOnly',
      dmWrites: n.dmWrites ?? 'dmWrites',
    };
  }

  /**
   * Builds a policy from allowlists of names and ids, resolving each entry to a stream id against
   * the streams the account can see ({@link resolveStreamAllowlist}).
   * @throws `CORE_CONFIG_INVALID` for an entry that matches no stream or more than one, naming the setting.
   */
  static resolve(settings: AccessPolicySettings, streams: readonly StreamInfo[]): AccessPolicy {
    const names = settings.settingNames ?? {};
    return new AccessPolicy({
      ...settings,
      privateStreams: resolveStreamAllowlist(
        settings.privateStreams,
        streams,
        names.privateStreams ?? 'privateStreams',
      ),
      writeStreams: resolveStreamAllowlist(
        settings.writeStreams,
        streams,
        names.writeStreams ?? 'writeStreams',
      ),
    });
  }

  /** Whether the stream (name or id) may be read: public, allowlisted by id, or everything is open. */
  canReadStream(ref: string | number, streams: StreamInfoLookup): boolean {
    return this.readable(streams(ref));
  }

  /** Whether the policy lets a stream be read; one the lookup does not know only when everything is open. */
  private readable(info: StreamInfo | undefined): boolean {
    if (info === undefined) return this.privateAll;
    if (!info.invite_only) return true;
    return this.privateAll || this.privateIds.has(info.stream_id);
  }

  private denyStream(ref: string | number): ZmcpError {
    return new ZmcpError(
      'CORE_ACCESS_DENIED',
      `Reading stream ${refName(ref)} is not allowed: it is not a public stream this session can see, and private streams stay closed unless listed. To open a private stream, add it to ${this.names.privateStreams} (or set ${this.names.privateStreams}=${ALL_STREAMS}).`,
      { details: { reason: 'private-stream' } },
    );
  }

  private denyDms(): ZmcpError {
    return new ZmcpError(
      'CORE_ACCESS_DENIED',
      `Reading direct messages is not allowed: DM reads need ${this.names.privateStreams}=${ALL_STREAMS}.`,
      { details: { reason: 'dm' } },
    );
  }

  /**
   * The one scope check every narrow read passes before fetching. The narrow is validated by the
   * one narrow validator (`validateNarrow`), then must name a scope the policy allows: a readable
   * stream (`channel`/`stream` by name or id), a DM (`dm`, `dm-including`, `is:dm`, … — needs DM
   * reads), public streams (`channels:public`), or a single message or its conversation (`id`,
   * `with`). Negated terms never name a scope. A narrow naming none of these reaches DMs and
   * private streams, so it passes only when the policy reads everything, or, with
   * `unscoped: 'public-streams'`, after `channels:public` is added. Results must still go through
   * {@link AccessPolicy.isReadable} (a `message` scope relies on it entirely).
   *
   * @throws `CORE_ACCESS_DENIED` naming the stream as the narrow named it (or DMs, or the missing
   *   scope) and the setting that would open it.
   * @throws `CORE_INVALID_ARGUMENT` for a malformed narrow or term.
   */
  checkNarrowScope(
    narrow: NarrowInput,
    streams: StreamInfoLookup,
    options: NarrowScopeOptions = {},
  ): NarrowScopeDecision {
    const terms = [...validateNarrow(narrow)];
    const ids: number[] = [];
    let scope: NarrowScopeKind | undefined;
    for (const term of terms) {
      if (term.negated === true) continue;
      const op = term.operator;
      if (STREAM_OPERATORS.has(op)) {
        const ref = term.operand as string | number;
        const info = streams(ref);
        if (!this.readable(info)) throw this.denyStream(ref);
        if (info !== undefined) ids.push(info.stream_id);
        scope = 'stream';
      } else if (
        DM_OPERATORS.has(op) ||
        (op === 'is' && (term.operand === 'dm' || term.operand === 'private'))
      ) {
        if (!this.canReadDms) throw this.denyDms();
        scope ??= 'dm';
      } else if (STREAMS_OPERATORS.has(op) && (term.operand === 'public' || term.operand === 'web-public')) {
        scope ??= 'public-streams';
      } else if (MESSAGE_OPERATORS.has(op)) {
        scope ??= 'message';
      }
    }
    if (scope !== undefined) return { narrow: terms, scope, streams: ids };
    if (this.privateAll) return { narrow: terms, scope: 'all', streams: ids };
    if (options.unscoped === 'public-streams') {
      return {
        narrow: [...terms, { operator: 'channels', operand: 'public' }],
        scope: 'public-streams',
        streams: ids,
      };
    }
    throw new ZmcpError(
      'CORE_ACCESS_DENIED',
      `This narrow names no stream and no DM conversation, so it would also reach DMs and private streams. Name a stream (channel:<name>), limit it to public streams (channels:public), or set ${this.names.privateStreams}=${ALL_STREAMS} to read everything.`,
      { details: { reason: 'unscoped' } },
    );
  }

  /**
   * Whether the policy lets this message be read: the gate for single-message reads, for messages
   * from an event queue, and the filter that drops strays after a narrow read. A stream message is
   * looked up by `stream_id` (by its stream's name only when it carries no id); an unknown stream
   * is closed.
   */
  isReadable(message: PolicyMessage, streams: StreamInfoLookup): boolean {
    if (message.type === 'private') return this.canReadDms;
    if (message.type !== 'stream') return false;
    if (message.stream_id !== undefined) return this.readable(streams(message.stream_id));
    if (typeof message.display_recipient !== 'string') return false;
    return this.readable(streams(message.display_recipient));
  }

  /** The messages {@link AccessPolicy.isReadable} lets through, in order. */
  filterReadable<M extends PolicyMessage>(messages: Iterable<M>, streams: StreamInfoLookup): M[] {
    const kept: M[] = [];
    for (const m of messages) if (this.isReadable(m, streams)) kept.push(m);
    return kept;
  }

  /**
   * Refuses a write the policy does not allow: anything in read-only mode; a stream outside the
   * write allowlist (by id), or one that is not readable (an unknown or closed private stream); a
   * DM when DM writes are off (see {@link AccessPolicyConfig.dmWrites}). Everything the bot does
   * in a stream — a message, an edit, a reaction, a typing notice, a subscription — passes here.
   *
   * @throws `CORE_READ_ONLY` in read-only mode.
   * @throws `CORE_ACCESS_DENIED` naming the stream as the target named it (or DMs) and the setting
   *   that would allow it.
   * @throws `CORE_INVALID_ARGUMENT` for a malformed target.
   */
  checkWrite(target: WriteTarget, streams: StreamInfoLookup): void {
    if (this.readOnly) {
      throw new ZmcpError(
        'CORE_READ_ONLY',
        `Read-only mode (${this.names.readOnly}) refuses every write; nothing was sent.`,
        {
          details: { reason: 'read-only' },
        },
      );
    }
    if ('dm' in target) {
      if (!Array.isArray(target.dm)) throw invalid('A DM write target needs a list of recipients.', {});
      if (!this.dmWrites) {
        throw new ZmcpError(
          'CORE_ACCESS_DENIED',
          `Sending direct messages is not allowed: ${this.names.writeStreams} lists the streams this session may write to, and DMs are not on it. Set ${this.names.dmWrites}=true to allow DMs.`,
          { details: { reason: 'dm-write' } },
        );
      }
      return;
    }
    const ref = (target as { stream?: unknown }).stream;
    if (typeof ref !== 'string' && typeof ref !== 'number')
      throw invalid('A stream write target needs a name or id.', {});
    const info = streams(ref);
    if (!this.readable(info)) {
      throw new ZmcpError(
        'CORE_ACCESS_DENIED',
        `Writing to stream ${refName(ref)} is not allowed: it is not a stream this session may read. To open a private stream, add it to ${this.names.privateStreams}.`,
        { details: { reason: 'private-stream' } },
      );
    }
    if (this.writeAll) return;
    if (info === undefined || !this.writeIds.has(info.stream_id)) {
      throw new ZmcpError(
        'CORE_ACCESS_DENIED',
        `Writing to stream ${refName(ref)} is not allowed: it is not in ${this.names.writeStreams}. Add it there to allow writes.`,
        { details: { reason: 'write-allowlist' } },
      );
    }
  }
}

const TRUE_VALUES = new Set(['1', 'true', 'yes', 'on']);
const FALSE_VALUES = new Set(['0', 'false', 'no', 'off']);

/**
 * Reads a read-only flag strictly: `1/true/yes/on` and `0/false/no/off` (any case, trimmed);
 * unset or empty is `false`.
 *
 * @throws `CORE_CONFIG_INVALID` for any other value, naming it (and `name`, the setting).
 */
export function parseReadOnlyFlag(value: string | undefined, name = 'read-only flag'): boolean {
  if (value === undefined) return false;
  const v = value.trim().toLowerCase();
  if (v === '' || FALSE_VALUES.has(v)) return false;
  if (TRUE_VALUES.has(v)) return true;
  throw new ZmcpError(
    'CORE_CONFIG_INVALID',
    `${name} has the value ${JSON.stringify(value.slice(0, 40))}; use one of 1/0, true/false, yes/no, on/off.`,
    { details: { setting: name, value: value.slice(0, 40) } },
  );
}
