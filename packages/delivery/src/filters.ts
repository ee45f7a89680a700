import { createHash } from 'node:crypto';
import {
  type AdmissionList,
  foldStreamName,
  isAdmissionEntry,
  parseAdmissionList,
  parseStreamAllowlist,
} from '@zmcp/core';
import { z } from 'zod';
import { type ChannelKey, dmKey, parseChannelId } from './channel-id.js';
import { DeliveryError } from './errors.js';

const MAX_ENTRIES = 10_000;
const MAX_ENTRY_LENGTH = 320;

// A stream is named by id (rename-proof) or by name (matched as Zulip does, ignoring case).
const StreamEntrySchema = z.union([
  z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  z
    .string()
    .min(1)
    .max(MAX_ENTRY_LENGTH)
    .refine((s) => s.trim() !== '', 'a stream name cannot be blank'),
]);
// A DM sender is named by user id (number or digits) or by email: core's one admission rule.
const UserEntrySchema = z.union([
  z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  z.string().min(1).max(MAX_ENTRY_LENGTH).refine(isAdmissionEntry, 'expected a user id or an email'),
]);
const ChannelEntrySchema = z
  .string()
  .min(1)
  .max(2_000)
  .refine((s) => {
    try {
      parseChannelId(s);
      return true;
    } catch {
      return false;
    }
  }, 'expected a channel id such as "zulip:general" or "zulip:dm:8,21"');
const EmojiEntrySchema = z
  .string()
  .min(1)
  .max(100)
  .refine((s) => s.trim() === s && s !== '', 'an emoji is a name ("biohazard") or a glyph ("☣️")');

const list = <T extends z.ZodType>(entry: T) => z.array(entry).max(MAX_ENTRIES);

/**
 * The filters file: what reaches the agent. Every key is an authorization list; an absent key
 * is unrestricted, a wrong type makes the whole document invalid, and unknown keys are refused
 * (a misspelt key must not read as "unrestricted").
 */
export const FiltersDocumentSchema = z.strictObject({
  /** Streams that may reach the agent (absent: every stream the bot can see; `[]`: none). */
  streams: list(StreamEntrySchema).optional(),
  /** Who may DM the agent, by user id or email (absent or `[]`: anyone). */
  dmUsers: list(UserEntrySchema).optional(),
  /** Streams from which nothing reaches the agent on any surface. */
  mutedStreams: list(StreamEntrySchema).optional(),
  /** Channels that show live reactions. */
  reactionChannels: list(ChannelEntrySchema).optional(),
  /** Reaction markers withheld from every model-visible surface; operator-owned. */
  suppressedReactionEmojis: list(EmojiEntrySchema).optional(),
});

/** A filters document as stored in the file. */
export type FiltersDocument = z.infer<typeof FiltersDocumentSchema>;

/** The part of a filters document the agent's tools may read and write (no operator-owned key). */
export type ToolFilters = Omit<FiltersDocument, 'suppressedReactionEmojis'>;

/** The keys the tools may change. */
export const TOOL_FILTER_KEYS = ['streams', 'dmUsers', 'mutedStreams', 'reactionChannels'] as const;

/** A change the tools ask for: each key given replaces the list; `null` removes the key (unrestricted). */
export type FiltersPatch = { readonly [K in keyof ToolFilters]?: ToolFilters[K] | null };

/** A count and digest of an operator-owned list: enough to tell it changed, nothing of its entries. */
export interface ListDigest {
  readonly count: number;
  /** The first 16 hex digits of SHA-256 over the sorted, de-duplicated entries; `""` when empty. */
  readonly digest: string;
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'invalid';
  const path = issue.path.length === 0 ? 'the document' : issue.path.map(String).join('.');
  return `${path}: ${issue.message}`;
}

/**
 * Validates a filters document.
 *
 * @throws DeliveryError `DELIVERY_FILTERS_INVALID` naming the first wrong key (never its value).
 */
export function parseFiltersDocument(value: unknown, where = 'the filters document'): FiltersDocument {
  const parsed = FiltersDocumentSchema.safeParse(value);
  if (!parsed.success) {
    const reason = describeIssue(parsed.error);
    throw new DeliveryError('DELIVERY_FILTERS_INVALID', `${where} is invalid: ${reason}`, {
      cause: parsed.error,
      details: { reason },
    });
  }
  return parsed.data;
}

/**
 * Applies a tool's patch to a document, keeping the operator-owned key as it is.
 *
 * @throws DeliveryError `DELIVERY_FILTERS_OPERATOR_ONLY` when the patch names
 *   `suppressedReactionEmojis`; `DELIVERY_FILTERS_INVALID` for an unknown key or a wrong type.
 */
export function applyFiltersPatch(doc: FiltersDocument, patch: FiltersPatch): FiltersDocument {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) {
    throw new DeliveryError('DELIVERY_FILTERS_INVALID', 'a filters update must be an object of lists', {
      details: { reason: 'not an object' },
    });
  }
  if (Object.hasOwn(patch, 'suppressedReactionEmojis')) {
    throw new DeliveryError(
      'DELIVERY_FILTERS_OPERATOR_ONLY',
      'suppressedReactionEmojis is operator-owned: only the operator edits it, in the filters file',
      { details: { key: 'suppressedReactionEmojis' } },
    );
  }
  const next: Record<string, unknown> = { ...doc };
  for (const [key, value] of Object.entries(patch)) {
    if (!(TOOL_FILTER_KEYS as readonly string[]).includes(key)) {
      throw new DeliveryError(
        'DELIVERY_FILTERS_INVALID',
        `unknown filters key ${JSON.stringify(key.slice(0, 40))}; expected one of ${TOOL_FILTER_KEYS.join(', ')}`,
        { details: { reason: 'unknown key', key: key.slice(0, 40) } },
      );
    }
    if (value === null) delete next[key];
    else next[key] = value;
  }
  return parseFiltersDocument(next, 'the updated filters');
}

/** The tool-visible part of a document. */
export function toolView(doc: FiltersDocument): ToolFilters {
  const { suppressedReactionEmojis: _operatorOnly, ...rest } = doc;
  return rest;
}

/** Count and digest of a list, for reporting an operator-owned list without its entries. */
export function digestList(entries: readonly string[]): ListDigest {
  const unique = [...new Set(entries)].sort();
  if (unique.length === 0) return { count: 0, digest: '' };
  const digest = createHash('sha256').update(JSON.stringify(unique)).digest('hex').slice(0, 16);
  return { count: unique.length, digest };
}

// An emoji entry is a glyph when it has anything beyond printable ASCII; names may carry colons.
function emojiKey(entry: string): { kind: 'name' | 'code'; value: string } {
  if (/[^\u0020-\u007e]/.test(entry)) {
    const points = [...entry]
      .map((c) => (c.codePointAt(0) as number).toString(16))
      .filter((hex) => hex !== 'fe0f' && hex !== 'fe0e');
    return { kind: 'code', value: points.join('-') };
  }
  return { kind: 'name', value: entry.replace(/^:|:$/g, '').toLowerCase() };
}

/** A stream as the filters judge it. */
export interface FilterStream {
  readonly streamId: number;
  readonly name: string;
}

/** A reaction as the filters judge it (Zulip's fields). */
export interface FilterReaction {
  readonly emoji_name: string;
  readonly emoji_code: string;
  readonly reaction_type: string;
}

/** A filters document compiled for fast checks; immutable. */
export class CompiledFilters {
  readonly document: FiltersDocument;
  readonly #streamIds: ReadonlySet<number> | undefined;
  readonly #streamNames: ReadonlySet<string> | undefined;
  readonly #mutedIds: ReadonlySet<number>;
  readonly #mutedNames: ReadonlySet<string>;
  /**
   * Who may DM the agent, as core's admission list (ids, and emails a gate resolves to ids);
   * `undefined` when anyone may (the key absent or empty).
   */
  readonly dmList: AdmissionList | undefined;
  readonly #reactionStreams: ReadonlySet<string>;
  readonly #reactionDms: ReadonlySet<ChannelKey>;
  readonly #suppressedNames: ReadonlySet<string>;
  readonly #suppressedCodes: ReadonlySet<string>;

  /** Compiles `document`, with `baseline` emoji (the host's) suppressed on top of the file's. */
  constructor(document: FiltersDocument, baseline: readonly string[] = []) {
    this.document = document;
    const split = (entries: ReadonlyArray<string | number>) => {
      const ids = new Set<number>();
      const names = new Set<string>();
      for (const e of entries) {
        if (typeof e === 'number') ids.add(e);
        else names.add(foldStreamName(e));
      }
      return { ids, names };
    };
    if (document.streams === undefined) {
      this.#streamIds = undefined;
      this.#streamNames = undefined;
    } else {
      const s = split(document.streams);
      this.#streamIds = s.ids;
      this.#streamNames = s.names;
    }
    const muted = split(document.mutedStreams ?? []);
    this.#mutedIds = muted.ids;
    this.#mutedNames = muted.names;
    this.dmList =
      document.dmUsers === undefined || document.dmUsers.length === 0
        ? undefined
        : parseAdmissionList(document.dmUsers, 'dmUsers');
    const reactionStreams = new Set<string>();
    const reactionDms = new Set<ChannelKey>();
    for (const id of document.reactionChannels ?? []) {
      const parsed = parseChannelId(id);
      if (parsed.kind === 'stream') reactionStreams.add(foldStreamName(parsed.name));
      else reactionDms.add(dmKey(parsed.userIds));
    }
    this.#reactionStreams = reactionStreams;
    this.#reactionDms = reactionDms;
    const names = new Set<string>();
    const codes = new Set<string>();
    for (const e of [...(document.suppressedReactionEmojis ?? []), ...baseline]) {
      const k = emojiKey(e);
      (k.kind === 'name' ? names : codes).add(k.value);
    }
    this.#suppressedNames = names;
    this.#suppressedCodes = codes;
  }

  /** Whether the stream allowlist lets the stream through (by id, or by its current name). */
  allowsStream(stream: FilterStream): boolean {
    if (this.#streamIds === undefined || this.#streamNames === undefined) return true;
    return this.#streamIds.has(stream.streamId) || this.#streamNames.has(foldStreamName(stream.name));
  }

  /** Whether the stream is muted. */
  isMuted(stream: FilterStream): boolean {
    return this.#mutedIds.has(stream.streamId) || this.#mutedNames.has(foldStreamName(stream.name));
  }

  /** Whether a stream reaches the agent at all: allowed and not muted. */
  passesStream(stream: FilterStream): boolean {
    return this.allowsStream(stream) && !this.isMuted(stream);
  }

  /** Whether a stream channel (by its current name) or a DM channel (by key) shows reactions. */
  showsReactions(target: { readonly streamName: string } | { readonly key: ChannelKey }): boolean {
    return 'streamName' in target
      ? this.#reactionStreams.has(foldStreamName(target.streamName))
      : this.#reactionDms.has(target.key);
  }

  /** Whether a reaction's marker is suppressed: by name, or a glyph matched on its code points. */
  suppresses(reaction: FilterReaction): boolean {
    if (this.#suppressedNames.has(reaction.emoji_name.toLowerCase())) return true;
    if (reaction.reaction_type !== 'unicode_emoji') return false;
    const code = reaction.emoji_code
      .toLowerCase()
      .split('-')
      .filter((hex) => hex !== 'fe0f' && hex !== 'fe0e')
      .join('-');
    return this.#suppressedCodes.has(code);
  }
}

/** The environment variables {@link filtersSeedFromEnv} reads. */
export const FILTER_ENV_VARIABLES = {
  streams: 'ZULIP_STREAMS',
  dmUsers: 'ZULIP_DM_USERS',
  mutedStreams: 'ZULIP_MUTED_STREAMS',
  reactionChannels: 'ZULIP_REACTION_CHANNELS',
  suppressedReactionEmojis: 'ZULIP_SUPPRESSED_REACTIONS',
  baseline: 'ZULIP_SUPPRESSED_REACTIONS_BASELINE',
} as const;

/** What {@link filtersSeedFromEnv} returns: the seed of a new filters file and the host's baseline. */
export interface FiltersSeed {
  readonly seed: FiltersDocument;
  /** Suppressed on top of the file at every start; never written into it. */
  readonly baseline: readonly string[];
}

/**
 * Reads the seed of a new filters file from the environment: comma-separated lists (or JSON
 * lists, for entries containing commas) in the variables of {@link FILTER_ENV_VARIABLES}; unset
 * variables leave their key absent (unrestricted). `ZULIP_STREAMS=__ALL__` is every stream.
 *
 * @throws ZmcpError `CORE_CONFIG_INVALID` for a malformed list (naming the variable);
 *   DeliveryError `DELIVERY_FILTERS_INVALID` for an entry of the wrong shape.
 */
export function filtersSeedFromEnv(env: Readonly<Record<string, string | undefined>>): FiltersSeed {
  const read = (name: string): string[] | undefined => {
    const parsed = parseStreamAllowlist(env[name], name);
    if (parsed === undefined) return undefined;
    return parsed === '__ALL__' ? undefined : parsed.map(String);
  };
  const seed: Record<string, unknown> = {};
  const v = FILTER_ENV_VARIABLES;
  const streams = read(v.streams);
  if (streams !== undefined) seed.streams = streams;
  const dmUsers = read(v.dmUsers);
  if (dmUsers !== undefined) seed.dmUsers = dmUsers;
  const muted = read(v.mutedStreams);
  if (muted !== undefined) seed.mutedStreams = muted;
  const reactions = read(v.reactionChannels);
  if (reactions !== undefined) seed.reactionChannels = reactions;
  const suppressed = read(v.suppressedReactionEmojis);
  if (suppressed !== undefined) seed.suppressedReactionEmojis = suppressed;
  const baseline = read(v.baseline) ?? [];
  return {
    seed: parseFiltersDocument(seed, 'the filters seed from the environment'),
    baseline: parseFiltersDocument({ suppressedReactionEmojis: baseline }, v.baseline)
      .suppressedReactionEmojis as string[],
  };
}
