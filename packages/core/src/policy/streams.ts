// Stream identity for the access policy. Names are chosen by anyone, so the policy decides by
// stream id; a name only ever resolves to the stream Zulip itself would take it for: the one
// spelled exactly so, or, failing that, the one spelled so up to case (Zulip keeps names unique
// case-insensitively). No Unicode normalization: `cafe\u0301` and `café` are different streams.

/** What the policy needs to know about a stream. */
export interface StreamInfo {
  readonly name: string;
  readonly stream_id: number;
  /** True for a private stream. */
  readonly invite_only: boolean;
}

/**
 * Looks a stream up by id, or by name as Zulip resolves names (exact, else case-insensitive).
 * `undefined` means unknown, which the policy treats as closed.
 */
export type StreamInfoLookup = (ref: string | number) => StreamInfo | undefined;

/**
 * A stream name folded as Zulip matches stream names: case-insensitively, and nothing more (no
 * trimming, no Unicode normalization), since Zulip keeps names unique only up to case: a looser
 * fold would take `cafe\u0301`, a different stream anyone may create, for `café`. For a name a
 * person typed; decide by stream id wherever one exists.
 */
export function foldStreamName(name: string): string {
  return name.toLowerCase();
}

/** Whether two stream names name one stream as Zulip matches names ({@link foldStreamName}). */
export function sameStreamName(a: string, b: string): boolean {
  return foldStreamName(a) === foldStreamName(b);
}

/** Builds a {@link StreamInfoLookup} over a list of streams (e.g. from `GET /streams`). */
export function createStreamLookup(streams: Iterable<StreamInfo>): StreamInfoLookup {
  const byId = new Map<number, StreamInfo>();
  const byName = new Map<string, StreamInfo>();
  const byFolded = new Map<string, StreamInfo | null>();
  for (const s of streams) {
    byId.set(s.stream_id, s);
    byName.set(s.name, s);
    const folded = foldStreamName(s.name);
    // Two streams equal up to case cannot both exist in Zulip; if a list holds both, neither wins.
    byFolded.set(folded, byFolded.has(folded) && byFolded.get(folded) !== s ? null : s);
  }
  return (ref) => {
    if (typeof ref === 'number') return byId.get(ref);
    return byName.get(ref) ?? byFolded.get(foldStreamName(ref)) ?? undefined;
  };
}
