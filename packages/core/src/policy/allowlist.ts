import { ZmcpError } from '../errors.js';
import { type StreamInfo, sameStreamName } from './streams.js';

/** The all-value of a stream allowlist: every stream (and, for reads, every DM). */
export const ALL_STREAMS = '__ALL__';

/**
 * A stream allowlist as configured: the all-value, or entries that are stream names or stream ids.
 * {@link resolveStreamAllowlist} turns the entries into ids before any decision is made.
 */
export type StreamAllowlist = typeof ALL_STREAMS | readonly (string | number)[];

/** A resolved stream allowlist: the all-value, or the ids of the streams it names. */
export type ResolvedStreamAllowlist = typeof ALL_STREAMS | readonly number[];

const ID_ENTRY = /^[1-9][0-9]{0,15}$/;

/**
 * Reads a stream allowlist setting: comma-separated entries (`general, dev, 42`) or a JSON list
 * (`["a, b", 42]`, for names containing commas), or the all-value `__ALL__` (any case) alone. An
 * entry of digits only is a stream id; anything else is a name. Entries are trimmed and
 * de-duplicated; unset or empty is `undefined`.
 *
 * @throws `CORE_CONFIG_INVALID` for a malformed JSON list, a list without entries (`,,`), or the
 *   all-value mixed with entries.
 */
export function parseStreamAllowlist(
  value: string | undefined,
  name = 'stream allowlist',
): StreamAllowlist | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const raw = value.trim();
  let entries: (string | number)[];
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
    if (
      !Array.isArray(parsed) ||
      !parsed.every(
        (x) => typeof x === 'string' || (typeof x === 'number' && Number.isSafeInteger(x) && x > 0),
      )
    ) {
      throw new ZmcpError('CORE_CONFIG_INVALID', `${name} must be a JSON list of stream names and ids.`, {
        details: { setting: name },
      });
    }
    entries = parsed as (string | number)[];
  } else {
    entries = raw.split(',');
  }
  const seen = new Set<string>();
  const out: (string | number)[] = [];
  for (const entry of entries) {
    const e = typeof entry === 'number' ? entry : entry.trim();
    if (e === '') continue;
    const value = typeof e === 'string' && ID_ENTRY.test(e) ? Number(e) : e;
    const key = `${typeof value}:${value}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(value);
  }
  if (out.length === 0) {
    throw new ZmcpError('CORE_CONFIG_INVALID', `${name} lists no streams.`, { details: { setting: name } });
  }
  if (out.some((e) => typeof e === 'string' && e.toUpperCase() === ALL_STREAMS)) {
    if (out.length > 1) {
      throw new ZmcpError(
        'CORE_CONFIG_INVALID',
        `${name}: ${ALL_STREAMS} must stand alone, not beside streams.`,
        {
          details: { setting: name },
        },
      );
    }
    return ALL_STREAMS;
  }
  return out;
}

function shown(entry: string | number): string {
  return typeof entry === 'number' ? `id ${entry}` : JSON.stringify(entry.slice(0, 100));
}

/**
 * Resolves an allowlist's entries to stream ids against the streams the account can see, as Zulip
 * names them: an id must be one of them (or digits the exact name of one); a name matches the
 * stream spelled exactly so, else the one spelled so up to case — never a look-alike (no Unicode
 * normalization, no trimming inside).
 *
 * @throws `CORE_CONFIG_INVALID` naming the setting and the entry, for an entry that matches no
 *   stream or more than one.
 */
export function resolveStreamAllowlist(
  list: StreamAllowlist | undefined,
  streams: readonly StreamInfo[],
  setting = 'stream allowlist',
): ResolvedStreamAllowlist | undefined {
  if (list === undefined || list === ALL_STREAMS) return list;
  const ids: number[] = [];
  for (const entry of list) {
    let matches: readonly StreamInfo[];
    if (typeof entry === 'number') {
      // Digits name a stream id, or a stream named so: both at once is ambiguous.
      matches = streams.filter((s) => s.stream_id === entry || s.name === String(entry));
    } else {
      const exact = streams.filter((s) => s.name === entry);
      matches = exact.length > 0 ? exact : streams.filter((s) => sameStreamName(s.name, entry));
    }
    if (matches.length === 0) {
      throw new ZmcpError(
        'CORE_CONFIG_INVALID',
        `${setting}: the entry ${shown(entry)} matches no stream this account can see. List streams by their exact name or their id.`,
        { details: { setting, entry: shown(entry), reason: 'no-match' } },
      );
    }
    if (matches.length > 1) {
      throw new ZmcpError(
        'CORE_CONFIG_INVALID',
        `${setting}: the entry ${shown(entry)} matches ${matches.length} streams (ids ${matches.map((s) => s.stream_id).join(', ')}); list the one you mean by its id.`,
        { details: { setting, entry: shown(entry), reason: 'ambiguous' } },
      );
    }
    const id = (matches[0] as StreamInfo).stream_id;
    if (!ids.includes(id)) ids.push(id);
  }
  return ids;
}
