import { ZmcpError } from '../errors.js';

// Access policy rules, pure. The security model (asymmetric on purpose):
// - reads: public streams are open; private streams are closed unless named in the private-stream
//   allowlist or the allowlist is the all-value; DMs need the all-value;
// - writes: no write allowlist = every stream; a list = only those streams; private streams must
//   also be readable; DMs are allowed without a list and refused with one unless `dmWrites`;
// - read-only refuses every write (the transport enforces it once more on every non-GET).
// Every narrow read passes `checkNarrowScope` before it is sent and `isReadable` on what comes
// back. Hidden streams are never subtracted with negated narrow terms: narrows ride the query
// string, and a realm with many private streams would break it.

/** The all-value of a stream allowlist: every stream (and, for reads, every DM). */
export const ALL_STREAMS = '__ALL__';

/** A stream allowlist: the all-value, or stream names (matched case-insensitively, like Zulip). */
export type StreamAllowlist = typeof ALL_STREAMS | readonly string[];

/** The configuration an {@link AccessPolicy} is built from. */
export interface AccessPolicyConfig {
  /** Refuse every write. */
  readonly readOnly: boolean;
  /** Private streams that may be read; the all-value also opens DMs. Unset: none. */
  readonly privateStreams?: StreamAllowlist | undefined;
  /** Streams that may be written to. Unset: all. */
  readonly writeStreams?: StreamAllowlist | undefined;
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

/** What the policy needs to know about a stream. */
export interface StreamInfo {
  readonly name: string;
  readonly stream_id?: number | undefined;
  /** True for a private stream. */
  readonly invite_only: boolean;
}

/**
 * Looks a stream up by name (case-insensitive) or id. `undefined` means unknown, which the policy
 * treats as private.
 */
export type StreamInfoLookup = (ref: string | number) => StreamInfo | undefined;

function normalizeName(name: string): string {
  return name.normalize('NFC').trim().toLowerCase();
}

/** Builds a {@link StreamInfoLookup} over a list of streams (e.g. from `GET /streams`). */
export function createStreamLookup(streams: Iterable<StreamInfo>): StreamInfoLookup {
  const byName = new Map<string, StreamInfo>();
  const byId = new Map<number, StreamInfo>();
  for (const s of streams) {
    byName.set(normalizeName(s.name), s);
    if (s.stream_id !== undefined) byId.set(s.stream_id, s);
  }
  return (ref) => (typeof ref === 'number' ? byId.get(ref) : byName.get(normalizeName(ref)));
}

/** A narrow operand: a string, an id, or a list of user ids. */
export type NarrowOperand = string | number | readonly number[];

/** One narrow term in Zulip's object form. */
export interface NarrowTermInput {
  readonly operator: string;
  readonly operand: NarrowOperand;
  readonly negated?: boolean | undefined;
}

/** A narrow: terms in object form or legacy `[operator, operand]` pairs. */
export type NarrowInput = ReadonlyArray<NarrowTermInput | readonly [string, string]>;

/**
 * What a narrow reaches: one `stream`, a `dm` conversation (or all DMs), `public-streams`,
 * a `message` (an `id`/`with` term: at most one message or its conversation), or `all` of the
 * account's history (only when the policy reads everything).
 */
export type NarrowScopeKind = 'stream' | 'dm' | 'public-streams' | 'message' | 'all';

/** The outcome of {@link AccessPolicy.checkNarrowScope}. */
export interface NarrowScopeDecision {
  /** The narrow to send, in object form (with `channels:public` added when that was asked for). */
  readonly narrow: NarrowTermInput[];
  readonly scope: NarrowScopeKind;
  /** Names (as the lookup spells them, else as written) of the streams the narrow names. */
  readonly streams: readonly string[];
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

function normalizeTerm(term: unknown, index: number): NarrowTermInput {
  if (Array.isArray(term)) {
    const [operator, operand] = term as unknown[];
    if (term.length !== 2 || typeof operator !== 'string' || typeof operand !== 'string') {
      throw invalid(`Narrow term ${index} must be [operator, operand] with string values.`, { index });
    }
    return { operator, operand };
  }
  if (typeof term !== 'object' || term === null)
    throw invalid(`Narrow term ${index} is not an object.`, { index });
  const t = term as { operator?: unknown; operand?: unknown; negated?: unknown };
  const okOperand =
    typeof t.operand === 'string' ||
    (typeof t.operand === 'number' && Number.isFinite(t.operand)) ||
    (Array.isArray(t.operand) && t.operand.every((x) => typeof x === 'number' && Number.isSafeInteger(x)));
  if (typeof t.operator !== 'string' || t.operator === '' || !okOperand) {
    throw invalid(
      `Narrow term ${index} needs a string operator and a string, number or list-of-ids operand.`,
      {
        index,
      },
    );
  }
  if (t.negated !== undefined && typeof t.negated !== 'boolean') {
    throw invalid(`Narrow term ${index}: negated must be a boolean.`, { index });
  }
  return t.negated === true
    ? { operator: t.operator, operand: t.operand as NarrowOperand, negated: true }
    : { operator: t.operator, operand: t.operand as NarrowOperand };
}

function validateAllowlist(value: unknown, what: string): StreamAllowlist | undefined {
  if (value === undefined || value === ALL_STREAMS) return value;
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v.trim() !== '')) {
    throw invalid(`${what} must be "${ALL_STREAMS}" or a list of non-empty stream names.`, { setting: what });
  }
  return value as readonly string[];
}

/**
 * The access policy: which streams and DMs may be read and written. Pure and immutable; built
 * once per session from configuration. Stream facts come from a {@link StreamInfoLookup} the
 * caller keeps current.
 */
export class AccessPolicy {
  /** Whether every write is refused. */
  readonly readOnly: boolean;
  /** Whether DMs may be read (the private-stream allowlist is the all-value). */
  readonly canReadDms: boolean;
  private readonly privateAll: boolean;
  private readonly privateNames: ReadonlySet<string>;
  private readonly writeAll: boolean;
  private readonly writeNames: ReadonlySet<string>;
  private readonly dmWrites: boolean;
  private readonly names: {
    privateStreams: string;
    writeStreams: string;
    readOnly: string;
    dmWrites: string;
  };

  /**
   * @throws `CORE_INVALID_ARGUMENT` when an allowlist is neither the all-value nor a list of
   *   non-empty names, or `readOnly` is not a boolean.
   */
  constructor(config: AccessPolicyConfig) {
    if (typeof config.readOnly !== 'boolean')
      throw invalid('readOnly must be a boolean.', { setting: 'readOnly' });
    const privateStreams = validateAllowlist(config.privateStreams, 'privateStreams');
    const writeStreams = validateAllowlist(config.writeStreams, 'writeStreams');
    this.readOnly = config.readOnly;
    this.privateAll = privateStreams === ALL_STREAMS;
    this.privateNames = new Set(Array.isArray(privateStreams) ? privateStreams.map(normalizeName) : []);
    this.writeAll = writeStreams === undefined || writeStreams === ALL_STREAMS;
    this.writeNames = new Set(Array.isArray(writeStreams) ? writeStreams.map(normalizeName) : []);
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

  /** Whether the stream (name or id) may be read: public, allowlisted, or everything is open. */
  canReadStream(ref: string | number, streams: StreamInfoLookup): boolean {
    return this.streamVerdict(ref, streams).readable;
  }

  private streamVerdict(
    ref: string | number,
    streams: StreamInfoLookup,
  ): { readable: boolean; name: string; known: boolean } {
    const info = streams(ref);
    const name = info?.name ?? String(ref);
    if (info !== undefined && !info.invite_only) return { readable: true, name, known: true };
    if (this.privateAll) return { readable: true, name, known: info !== undefined };
    const byName = info !== undefined || typeof ref === 'string';
    return {
      readable: byName && this.privateNames.has(normalizeName(name)),
      name,
      known: info !== undefined,
    };
  }

  private denyStream(name: string, known: boolean): ZmcpError {
    const why = known ? 'it is private' : 'it is not known to be public';
    return new ZmcpError(
      'CORE_ACCESS_DENIED',
      `Reading stream ${JSON.stringify(name)} is not allowed: ${why}, and private streams stay closed unless listed. To open it, add it to ${this.names.privateStreams} (or set ${this.names.privateStreams}=${ALL_STREAMS}).`,
      { details: { stream: name, reason: 'private-stream' } },
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
   * The one scope check every narrow read passes before fetching. A narrow must name a scope the
   * policy allows: a readable stream (`channel`/`stream` by name or id), a DM (`dm`, `dm-including`,
   * `is:dm`, … — needs DM reads), public streams (`channels:public`), or a single message or its
   * conversation (`id`, `with`). Negated terms never name a scope. A narrow naming none of these
   * reaches DMs and private streams, so it passes only when the policy reads everything, or, with
   * `unscoped: 'public-streams'`, after `channels:public` is added. Results must still go through
   * {@link AccessPolicy.isReadable} (a `message` scope relies on it entirely).
   *
   * @throws `CORE_ACCESS_DENIED` naming the stream (or DMs, or the missing scope) and the setting
   *   that would open it.
   * @throws `CORE_INVALID_ARGUMENT` for a malformed narrow or term.
   */
  checkNarrowScope(
    narrow: NarrowInput,
    streams: StreamInfoLookup,
    options: NarrowScopeOptions = {},
  ): NarrowScopeDecision {
    if (!Array.isArray(narrow)) throw invalid('A narrow must be a list of terms.', {});
    const terms = narrow.map((t, i) => normalizeTerm(t, i));
    const names: string[] = [];
    let scope: NarrowScopeKind | undefined;
    for (const term of terms) {
      if (term.negated === true) continue;
      const op = term.operator.toLowerCase();
      if (STREAM_OPERATORS.has(op)) {
        if (Array.isArray(term.operand))
          throw invalid(`Narrow operator ${op} takes a stream name or id.`, { operator: op });
        const ref = term.operand as string | number;
        const verdict = this.streamVerdict(ref, streams);
        if (!verdict.readable) throw this.denyStream(verdict.name, verdict.known);
        names.push(verdict.name);
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
    if (scope !== undefined) return { narrow: terms, scope, streams: names };
    if (this.privateAll) return { narrow: terms, scope: 'all', streams: names };
    if (options.unscoped === 'public-streams') {
      return {
        narrow: [...terms, { operator: 'channels', operand: 'public' }],
        scope: 'public-streams',
        streams: names,
      };
    }
    throw new ZmcpError(
      'CORE_ACCESS_DENIED',
      `This narrow names no stream and no DM conversation, so it would also reach DMs and private streams. Name a stream (channel:<name>), limit it to public streams (channels:public), or set ${this.names.privateStreams}=${ALL_STREAMS} to read everything.`,
      { details: { reason: 'unscoped' } },
    );
  }

  /**
   * Whether the policy lets this message be read: the gate for single-message reads and the
   * filter that drops strays after a narrow read. A stream message is looked up by `stream_id`,
   * then by name; an unknown stream counts as private.
   */
  isReadable(message: PolicyMessage, streams: StreamInfoLookup): boolean {
    if (message.type === 'private') return this.canReadDms;
    if (message.type !== 'stream' || typeof message.display_recipient !== 'string') return false;
    const name = message.display_recipient;
    const info = (message.stream_id === undefined ? undefined : streams(message.stream_id)) ?? streams(name);
    if (info !== undefined && !info.invite_only) return true;
    if (this.privateAll) return true;
    return this.privateNames.has(normalizeName(info?.name ?? name));
  }

  /** The messages {@link AccessPolicy.isReadable} lets through, in order. */
  filterReadable<M extends PolicyMessage>(messages: Iterable<M>, streams: StreamInfoLookup): M[] {
    const kept: M[] = [];
    for (const m of messages) if (this.isReadable(m, streams)) kept.push(m);
    return kept;
  }

  /**
   * Refuses a write the policy does not allow: anything in read-only mode; a stream outside the
   * write allowlist, or a private (or unknown) stream that is not readable; a DM when DM writes are
   * off (see {@link AccessPolicyConfig.dmWrites}).
   *
   * @throws `CORE_READ_ONLY` in read-only mode.
   * @throws `CORE_ACCESS_DENIED` naming the stream (or DMs) and the setting that would allow it.
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
          `Sending direct messages is not allowed: ${this.names.writeStreams} lists the streams this session may write to, and DMs are not on it. Set ${this.names.dmWrites} to allow DMs.`,
          { details: { reason: 'dm-write' } },
        );
      }
      return;
    }
    const ref = (target as { stream?: unknown }).stream;
    if (typeof ref !== 'string' && typeof ref !== 'number')
      throw invalid('A stream write target needs a name or id.', {});
    const info = streams(ref);
    const verdict = this.streamVerdict(ref, streams);
    if (info === undefined || info.invite_only) {
      if (!verdict.readable) {
        throw new ZmcpError(
          'CORE_ACCESS_DENIED',
          `Writing to stream ${JSON.stringify(verdict.name)} is not allowed: ${info === undefined ? 'it is not known to be public' : 'it is private'} and not open to this session. To open it, add it to ${this.names.privateStreams}.`,
          { details: { stream: verdict.name, reason: 'private-stream' } },
        );
      }
    }
    if (this.writeAll) return;
    const nameKnown = info !== undefined || typeof ref === 'string';
    if (!nameKnown || !this.writeNames.has(normalizeName(verdict.name))) {
      throw new ZmcpError(
        'CORE_ACCESS_DENIED',
        `Writing to stream ${JSON.stringify(verdict.name)} is not allowed: it is not in ${this.names.writeStreams}. Add it there to allow writes.`,
        { details: { stream: verdict.name, reason: 'write-allowlist' } },
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

/**
 * Reads a stream allowlist setting: comma-separated names (`general, dev`) or a JSON list of
 * names (`["a, b", "c"]`, for names containing commas), or the all-value `__ALL__` (any case)
 * alone. Names are trimmed and de-duplicated; unset or empty is `undefined`.
 *
 * @throws `CORE_CONFIG_INVALID` for a malformed JSON list, a list without names (`,,`), or the
 *   all-value mixed with names.
 */
export function parseStreamAllowlist(
  value: string | undefined,
  name = 'stream allowlist',
): StreamAllowlist | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const raw = value.trim();
  let entries: string[];
  if (raw.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (cause) {
      throw new ZmcpError('CORE_CONFIG_INVALID', `${name} looks like a JSON list but does not parse.`, {
        cause,
        details: { setting: name },
      });
    }
    if (!Array.isArray(parsed) || !parsed.every((x) => typeof x === 'string')) {
      throw new ZmcpError('CORE_CONFIG_INVALID', `${name} must be a JSON list of stream names.`, {
        details: { setting: name },
      });
    }
    entries = parsed;
  } else {
    entries = raw.split(',');
  }
  const names = [...new Set(entries.map((e) => e.trim()).filter((e) => e !== ''))];
  if (names.length === 0) {
    throw new ZmcpError('CORE_CONFIG_INVALID', `${name} lists no stream names.`, {
      details: { setting: name },
    });
  }
  const hasAll = names.some((n) => n.toUpperCase() === ALL_STREAMS);
  if (hasAll) {
    if (names.length > 1) {
      throw new ZmcpError(
        'CORE_CONFIG_INVALID',
        `${name}: ${ALL_STREAMS} must stand alone, not beside stream names.`,
        {
          details: { setting: name },
        },
      );
    }
    return ALL_STREAMS;
  }
  return names;
}
